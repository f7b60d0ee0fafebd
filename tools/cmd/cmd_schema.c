/* opreg schema NAME [--torch] [--json]: print the schema of an op of the
 * default registry, in opreg's canonical form or, with --torch, as PyTorch
 * prints it. */
#include "opreg/opreg.h"
#include "tools/cmd/commands.h"
#include "tools/cmd/util.h"

#include <string.h>

static void help(void) {
    printf("usage: opreg schema NAME [--torch] [--json]\n\n"
           "Prints the schema of op NAME (ns::name, ns::name.overload, or name alone when\n"
           "one namespace has it) of the default registry on one line: opreg's canonical\n"
           "form, or PyTorch's with --torch. --json prints one object with both,\n"
           "{\"name\":...,\"schema\":...,\"torch\":...}, or {\"name\":...,\"error\":...}\n"
           "for an unknown op.\n\n"
           "exit codes: 0 printed, 1 no such op (the message names the nearest ops),\n"
           "2 usage error\n");
}

int cmd_schema(int argc, char **argv) {
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    const char *name = NULL;
    bool json = false;
    opreg_schema_style style = OPREG_SCHEMA_CANONICAL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--torch") == 0)
            style = OPREG_SCHEMA_TORCH;
        else if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (!name && argv[i][0] != '-')
            name = argv[i];
        else {
            fprintf(stderr, "opreg schema: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!name) {
        fprintf(stderr, "opreg schema: missing NAME\n");
        return 2;
    }
    opreg_registry *reg = opreg_registry_default();
    const opreg_op *op = NULL;
    char buf[256];
    if (!reg || opreg_op_find(&op, reg, tool_op_name(reg, name, buf, sizeof buf)) != OPREG_OK) {
        if (json) {
            printf("{\"name\":");
            tool_json_str(stdout, name);
            printf(",\"error\":");
            tool_json_str(stdout, opreg_last_error());
            printf("}\n");
        } else {
            fprintf(stderr, "opreg schema: %s\n", opreg_last_error());
        }
        return 1;
    }
    const opreg_schema *schema = opreg_op_schema(op);
    /* --json prints both forms; text, the one asked for. */
    char *text = opreg_schema_to_string(schema, json ? OPREG_SCHEMA_CANONICAL : style);
    char *torch = json ? opreg_schema_to_string(schema, OPREG_SCHEMA_TORCH) : NULL;
    int rc = 0;
    if (!text || (json && !torch)) {
        fprintf(stderr, "opreg schema: out of memory\n");
        rc = 1;
    } else if (json) {
        printf("{\"name\":");
        tool_json_str(stdout, opreg_op_name(op));
        printf(",\"schema\":");
        tool_json_str(stdout, text);
        printf(",\"torch\":");
        tool_json_str(stdout, torch);
        printf("}\n");
    } else {
        printf("%s\n", text);
    }
    opreg_string_free(text);
    opreg_string_free(torch);
    return rc;
}
