/* opreg supported NAME [--device D] [--explain]: exit 0 when op NAME of the
 * default registry is supported (on device D, or on some backend other than
 * Meta), 1 when not. --explain prints which kernel would run, or why none. */
#include "opreg/opreg.h"
#include "tools/commands.h"

#include <string.h>

static void help(void) {
    printf("usage: opreg supported NAME [--device D] [--explain]\n\n"
           "Says whether op NAME of the default registry would run on device D (cpu,\n"
           "cuda, cuda:1, meta, or a plugin's device), or, without --device, on some\n"
           "available backend other than Meta. --explain prints one line: the kernel\n"
           "that would run (its key, and whether direct, composite or fallback) or why\n"
           "none would (no such op, no kernel for the key, backend unavailable).\n\n"
           "exit codes: 0 supported, 1 not supported, 2 usage error\n");
}

int cmd_supported(int argc, char **argv) {
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    const char *name = NULL, *dev = NULL;
    bool explain = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--explain") == 0)
            explain = true;
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            dev = argv[++i];
        else if (!name && argv[i][0] != '-')
            name = argv[i];
        else {
            fprintf(stderr, "opreg supported: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!name) {
        fprintf(stderr, "opreg supported: missing NAME\n");
        return 2;
    }
    /* The default registry first: its plugins bring their devices' names. */
    opreg_registry *reg = opreg_registry_default();
    DLDevice device;
    if (dev && opreg_device_parse(&device, dev) != OPREG_OK) {
        fprintf(stderr, "opreg supported: %s\n", opreg_last_error());
        return 2;
    }
    if (!reg) {
        fprintf(stderr, "opreg supported: %s\n", opreg_last_error());
        return 1;
    }
    opreg_support_info info;
    if (opreg_explain_support(&info, reg, name, dev ? &device : NULL) != OPREG_OK) {
        fprintf(stderr, "opreg supported: %s\n", opreg_last_error());
        return 1;
    }
    if (explain) printf("%s\n", info.message);
    return info.supported ? 0 : 1;
}
