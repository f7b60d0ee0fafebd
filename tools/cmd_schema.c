/* opreg schema NAME [--torch]: print the schema of an op of the default
 * registry, in opreg's canonical form or, with --torch, as PyTorch prints it. */
#include "opreg/opreg.h"
#include "tools/commands.h"

#include <string.h>

static void help(void) {
    printf("usage: opreg schema NAME [--torch]\n\n"
           "Prints the schema of op NAME (ns::name or ns::name.overload) of the default\n"
           "registry on one line: opreg's canonical form, or PyTorch's with --torch.\n\n"
           "exit codes: 0 printed, 1 no such op (the nearest names go to stderr), 2 usage error\n");
}

int cmd_schema(int argc, char **argv) {
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    const char *name = NULL;
    opreg_schema_style style = OPREG_SCHEMA_CANONICAL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--torch") == 0)
            style = OPREG_SCHEMA_TORCH;
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
    if (!reg || opreg_op_find(&op, reg, name) != OPREG_OK) {
        fprintf(stderr, "opreg schema: %s\n", opreg_last_error());
        return 1;
    }
    char *text = opreg_schema_to_string(opreg_op_schema(op), style);
    if (!text) {
        fprintf(stderr, "opreg schema: out of memory\n");
        return 1;
    }
    printf("%s\n", text);
    opreg_string_free(text);
    return 0;
}
