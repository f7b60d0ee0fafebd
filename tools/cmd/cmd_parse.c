/* opreg parse [--torch] [--strict] [--json] [FILE|-]
 *
 * One schema a line in, exactly one line out for each: the canonical form,
 * PyTorch's printed form (--torch), or "error: <col>: <message>". Exit 1 when
 * any line failed, 2 on a usage or I/O error. Scripts rely on this contract.
 * --json prints one JSON array instead, one object per input line. */
#define _POSIX_C_SOURCE 200809L
#include "opreg/opreg.h"
#include "tools/cmd/commands.h"
#include "tools/cmd/util.h"

#include <stdlib.h>
#include <string.h>

static void help(void) {
    printf(
        "usage: opreg parse [--torch] [--strict] [--json] [FILE|-]\n\n"
        "Reads one schema a line from FILE (or standard input) and writes exactly one\n"
        "line for each input line:\n"
        "  the canonical form (it parses back to an equal schema),\n"
        "  PyTorch's printed form with --torch (str(torch._C.parse_schema(s))),\n"
        "  or 'error: <column>: <message>'.\n\n"
        "  --torch   print what PyTorch prints, including forms that do not re-parse\n"
        "  --strict  registration mode: refuse type variables (as m.def does),\n"
        "            except in schemas starting with aten:: or prim::\n"
        "  --json    one JSON array, an object per input line: {\"line\":1,\"input\":...,\n"
        "            \"schema\":...} or {\"line\":2,\"input\":...,\"error\":{\"status\":\n"
        "            \"OPREG_ERR_SCHEMA_SYNTAX\",\"column\":12,\"offset\":11,\"message\":...}}\n\n"
        "exit codes: 0 every line parsed, 1 some line failed, 2 usage or I/O error\n");
}

/* Messages quote user text; keep the output to one line. */
static void put_message(const char *m) {
    for (; *m; m++) {
        unsigned char c = (unsigned char)*m;
        if (c < 0x20 || c == 0x7f)
            printf("\\x%02x", c);
        else
            putchar(c);
    }
}

int cmd_parse(int argc, char **argv) {
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    opreg_schema_style style = OPREG_SCHEMA_CANONICAL;
    unsigned flags = OPREG_SCHEMA_ALLOW_TYPEVARS;
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--torch") == 0) {
            style = OPREG_SCHEMA_TORCH;
        } else if (strcmp(argv[i], "--strict") == 0) {
            flags = OPREG_SCHEMA_STRICT;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "opreg parse: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (path) {
            fprintf(stderr, "opreg parse: more than one input given\n");
            return 2;
        } else {
            path = argv[i];
        }
    }
    FILE *in = stdin;
    if (path && strcmp(path, "-") != 0) {
        in = fopen(path, "rb");
        if (!in) {
            fprintf(stderr, "opreg parse: cannot open '%s'\n", path);
            return 2;
        }
    }
    char *line = NULL, *out = NULL;
    size_t line_cap = 0, out_cap = 0;
    ssize_t n;
    int failed = 0;
    size_t lineno = 0;
    if (json) printf("[");
    while ((n = getline(&line, &line_cap, in)) >= 0) {
        if (n > 0 && line[n - 1] == '\n') n--;
        lineno++;
        if (json) {
            printf("%s{\"line\":%zu,\"input\":", lineno > 1 ? ",\n " : "", lineno);
            tool_json_strn(stdout, line, (size_t)n);
        }
        opreg_schema *s;
        opreg_schema_error err;
        if (opreg_schema_parse(&s, line, (size_t)n, flags, &err) != OPREG_OK) {
            if (json) {
                printf(",\"error\":{\"status\":\"%s\",\"column\":%zu,\"offset\":%zu,\"message\":",
                       opreg_status_name(err.status), err.column, err.offset);
                tool_json_str(stdout, err.message);
                printf("}}");
            } else {
                printf("error: %zu: ", err.column);
                put_message(err.message);
                putchar('\n');
            }
            failed = 1;
            continue;
        }
        size_t need = opreg_schema_format(s, style, out, out_cap);
        if (need >= out_cap) {
            out_cap = need + 1;
            char *grown = realloc(out, out_cap);
            if (!grown) {
                fprintf(stderr, "opreg parse: out of memory\n");
                return 2;
            }
            out = grown;
            opreg_schema_format(s, style, out, out_cap);
        }
        if (json) {
            printf(",\"schema\":");
            tool_json_strn(stdout, out, need);
            printf("}");
        } else {
            fwrite(out, 1, need, stdout);
            putchar('\n');
        }
        opreg_schema_free(s);
    }
    if (json) printf("]\n");
    int io_error = ferror(in);
    free(line);
    free(out);
    if (in != stdin) fclose(in);
    if (io_error) {
        fprintf(stderr, "opreg parse: read error\n");
        return 2;
    }
    return failed;
}
