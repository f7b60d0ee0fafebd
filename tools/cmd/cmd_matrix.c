/* opreg matrix [--json] [--namespace NS]: the op x backend support matrix of
 * the default registry: for each op and each backend key, how its kernel is
 * found (direct, composite, fallback) or "-". */
#include "opreg/opreg.h"
#include "tools/cmd/commands.h"

#include <string.h>

static void help(void) {
    printf("usage: opreg matrix [--json] [--namespace NS]\n\n"
           "Prints the support matrix of the default registry: one row per defined op\n"
           "(of namespace NS, when given), one column per backend key, and in each cell\n"
           "how the key's kernel is found: direct, composite, fallback, or - for none.\n"
           "A key whose backend cannot run here is marked with *. --json prints one\n"
           "object: {\"keys\":[{\"name\":\"CPU\",\"available\":true},...],\n"
           "\"ops\":[{\"name\":\"_C::rms_norm\",\"kernels\":{\"CPU\":\"direct\",...}},...]}.\n\n"
           "exit codes: 0 printed, 1 the registry could not be created, 2 usage error\n");
}

static const char *cell(opreg_kernel_kind k) {
    return k == OPREG_KERNEL_DIRECT      ? "direct"
           : k == OPREG_KERNEL_COMPOSITE ? "composite"
           : k == OPREG_KERNEL_FALLBACK  ? "fallback"
                                         : "-";
}

/* True when op @p op is defined and in namespace @p ns (any when NULL). */
static bool selected(const opreg_op *op, const char *ns) {
    const char *name = opreg_op_name(op);
    size_t n = ns ? strlen(ns) : 0;
    if (!opreg_op_is_defined(op)) return false;
    return !ns || (strncmp(name, ns, n) == 0 && strncmp(name + n, "::", 2) == 0);
}

static void print_json(const opreg_registry *reg, const char *ns, int nkeys) {
    printf("{\"keys\":[");
    for (int k = 0; k < nkeys; k++)
        printf("%s{\"name\":\"%s\",\"available\":%s}", k ? "," : "", opreg_key_name(k),
               opreg_key_is_available(k, NULL, 0) ? "true" : "false");
    printf("],\"ops\":[");
    for (size_t i = 0, n = 0; i < opreg_registry_num_ops(reg); i++) {
        const opreg_op *op = opreg_registry_op(reg, i);
        if (!selected(op, ns)) continue;
        printf("%s{\"name\":\"%s\",\"kernels\":{", n++ ? "," : "", opreg_op_name(op));
        for (int k = 0; k < nkeys; k++)
            printf("%s\"%s\":\"%s\"", k ? "," : "", opreg_key_name(k),
                   cell(opreg_op_kernel_kind(op, k)));
        printf("}}");
    }
    printf("]}\n");
}

static void print_table(const opreg_registry *reg, const char *ns, int nkeys) {
    bool any_unavailable = false;
    printf("%-30s", "op");
    for (int k = 0; k < nkeys; k++) {
        char head[40];
        bool ok = opreg_key_is_available(k, NULL, 0);
        any_unavailable |= !ok;
        snprintf(head, sizeof head, "%s%s", opreg_key_name(k), ok ? "" : "*");
        printf(" %-10s", head);
    }
    printf("\n");
    for (size_t i = 0; i < opreg_registry_num_ops(reg); i++) {
        const opreg_op *op = opreg_registry_op(reg, i);
        if (!selected(op, ns)) continue;
        printf("%-30s", opreg_op_name(op));
        for (int k = 0; k < nkeys; k++)
            printf(" %-10s", cell(opreg_op_kernel_kind(op, k)));
        printf("\n");
    }
    if (any_unavailable) printf("* backend unavailable here (opreg devices says why)\n");
}

int cmd_matrix(int argc, char **argv) {
    const char *ns = NULL;
    bool json = false;
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--namespace") == 0 && i + 1 < argc) {
            ns = argv[++i];
        } else {
            fprintf(stderr, "opreg matrix: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    opreg_registry *reg = opreg_registry_default();
    if (!reg) {
        fprintf(stderr, "opreg matrix: %s\n", opreg_last_error());
        return 1;
    }
    if (json)
        print_json(reg, ns, opreg_key_count());
    else
        print_table(reg, ns, opreg_key_count());
    return 0;
}
