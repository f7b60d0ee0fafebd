/* opreg devices [--json]: each backend key of the process, whether it can
 * run here, and why not. */
#include "opreg/opreg.h"
#include "tools/cmd/commands.h"
#include "tools/cmd/util.h"

#include <string.h>

static void help(void) {
    printf("usage: opreg devices [--json]\n\n"
           "Lists each backend key (CPU, CUDA, Meta, Reference, and any a plugin added):\n"
           "its number, its name, the device its tensors live on, whether its backend can\n"
           "run here and, when not, why. The Reference key runs on CPU tensors and is\n"
           "chosen explicitly (opreg run --device reference). --json prints one object:\n"
           "{\"devices\":[{\"key\":0,\"name\":\"CPU\",\"device\":\"cpu\",\"available\":true,\n"
           "\"reason\":\"\"},...]}.\n\n"
           "exit codes: 0 listed, 2 usage error\n");
}

int cmd_devices(int argc, char **argv) {
    bool json = false;
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else {
            fprintf(stderr, "opreg devices: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    (void)opreg_registry_default(); /* built-in backends and plugins register their keys */
    if (json)
        printf("{\"devices\":[");
    else
        printf("%-4s %-12s %-10s %-11s %s\n", "key", "name", "device", "available", "reason");
    for (int k = 0; k < opreg_key_count(); k++) {
        char why[256] = "";
        const char *name = opreg_key_name(k);
        const opreg_backend *be = opreg_key_backend(k);
        bool ok = opreg_key_is_available(k, why, sizeof why);
        const char *device = be && be->name ? be->name : "";
        if (!ok && !why[0]) snprintf(why, sizeof why, "no backend attached");
        if (json) {
            printf("%s{\"key\":%d,\"name\":", k ? "," : "", k);
            tool_json_str(stdout, name ? name : "");
            printf(",\"device\":");
            tool_json_str(stdout, device);
            printf(",\"available\":%s,\"reason\":", ok ? "true" : "false");
            tool_json_str(stdout, ok ? "" : why);
            printf("}");
        } else {
            printf("%-4d %-12s %-10s %-11s %s\n", k, name ? name : "?", device[0] ? device : "-",
                   ok ? "yes" : "no", ok ? "" : why);
        }
    }
    if (json) printf("]}\n");
    return 0;
}
