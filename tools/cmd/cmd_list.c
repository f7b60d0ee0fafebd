/* opreg list [--json] [--namespace NS]: the defined ops of the default
 * registry, sorted by name, each with the keys that have kernels for it.
 *
 * Text: one line an op, "NAME<TAB>KEYS<TAB>SCHEMA", KEYS comma-separated
 * ("Composite" for a composite kernel, "-" for none).
 * JSON: one array of {"name":...,"schema":...,"keys":[...]} objects. */
#include "opreg/opreg.h"
#include "tools/cmd/commands.h"
#include "tools/cmd/util.h"

#include <stdlib.h>
#include <string.h>

static void help(void) {
    printf("usage: opreg list [--json] [--namespace NS]\n\n"
           "Lists the ops of the default registry, sorted by name: one line an op,\n"
           "NAME<TAB>KEYS<TAB>SCHEMA, where KEYS are the dispatch keys with a direct kernel\n"
           "(and Composite), or '-'. With --json, one JSON array of objects\n"
           "{\"name\":...,\"schema\":...,\"keys\":[...]}.\n\n"
           "exit codes: 0 success, 1 the default registry could not be created, 2 usage error\n");
}

static int by_name(const void *a, const void *b) {
    return strcmp(opreg_op_name(*(const opreg_op *const *)a),
                  opreg_op_name(*(const opreg_op *const *)b));
}

/* The keys with kernels, as "CPU,Meta,Composite" or "-". */
static void keys_of(const opreg_op *op, bool json) {
    int n = 0;
    for (int k = 0; k < opreg_key_count(); k++) {
        if (opreg_op_kernel_kind(op, k) != OPREG_KERNEL_DIRECT) continue;
        if (json) {
            printf("%s", n ? "," : "");
            tool_json_str(stdout, opreg_key_name(k));
        } else {
            printf("%s%s", n ? "," : "", opreg_key_name(k));
        }
        n++;
    }
    if (opreg_op_has_composite(op)) {
        printf("%s%sComposite%s", n ? "," : "", json ? "\"" : "", json ? "\"" : "");
        n++;
    }
    if (!n && !json) printf("-");
}

int cmd_list(int argc, char **argv) {
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    bool json = false;
    const char *ns = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--namespace") == 0 && i + 1 < argc)
            ns = argv[++i];
        else {
            fprintf(stderr, "opreg list: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    opreg_registry *reg = opreg_registry_default();
    if (!reg) {
        fprintf(stderr, "opreg list: %s\n", opreg_last_error());
        return 1;
    }
    size_t total = opreg_registry_num_ops(reg), n = 0;
    const opreg_op **ops = malloc((total ? total : 1) * sizeof *ops);
    if (!ops) return 1;
    size_t nslen = ns ? strlen(ns) : 0;
    for (size_t i = 0; i < total; i++) {
        const opreg_op *op = opreg_registry_op(reg, i);
        if (!opreg_op_is_defined(op)) continue;
        const char *name = opreg_op_name(op);
        if (ns && (strncmp(name, ns, nslen) != 0 || strncmp(name + nslen, "::", 2) != 0)) continue;
        ops[n++] = op;
    }
    qsort(ops, n, sizeof *ops, by_name);
    if (json) printf("[");
    for (size_t i = 0; i < n; i++) {
        char *schema = opreg_schema_to_string(opreg_op_schema(ops[i]), OPREG_SCHEMA_CANONICAL);
        if (json) {
            printf("%s{\"name\":", i ? ",\n " : "");
            tool_json_str(stdout, opreg_op_name(ops[i]));
            printf(",\"schema\":");
            tool_json_str(stdout, schema ? schema : "");
            printf(",\"keys\":[");
            keys_of(ops[i], true);
            printf("]}");
        } else {
            printf("%s\t", opreg_op_name(ops[i]));
            keys_of(ops[i], false);
            printf("\t%s\n", schema ? schema : "");
        }
        opreg_string_free(schema);
    }
    if (json) printf("]\n");
    free(ops);
    return 0;
}
