/* opreg plugins [--load PATH]... [--json]: the plugins of the default
 * registry (those found on OPREG_PLUGIN_PATH and in the installed plugin
 * folder, then each --load PATH), loaded or refused, with the reason. */
#include "opreg/opreg.h"
#include "tools/cmd/commands.h"

#include <string.h>

static void help(void) {
    printf("usage: opreg plugins [--load PATH]... [--json]\n\n"
           "Lists the plugins of the default registry: those found in the folders of\n"
           "OPREG_PLUGIN_PATH (separated by ':') and in the installed plugin folder\n"
           "(%s), then each --load PATH, in load order. One line a plugin:\n"
           "STATE NAME VERSION ABI KEY PATH, and for a refused plugin the reason on the\n"
           "next line. With --json, one object: {\"plugin_dir\":...,\"plugins\":[{\"path\":...,\n"
           "\"name\":...,\"version\":...,\"abi\":\"1.1\",\"state\":\"loaded\",\"key\":...,\n"
           "\"reason\":...},...]}.\n\n"
           "exit codes: 0 listed and every --load PATH loaded, 1 a --load PATH was refused\n"
           "(it is listed with its reason) or the registry could not be created, 2 usage\n"
           "error\n",
           opreg_plugin_dir());
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static const char *state_word(opreg_plugin_state s) {
    return s == OPREG_PLUGIN_LOADED ? "loaded" : s == OPREG_PLUGIN_REFUSED ? "refused" : "unloaded";
}

int cmd_plugins(int argc, char **argv) {
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--load") == 0 && i + 1 < argc) {
            i++;
        } else {
            fprintf(stderr, "opreg plugins: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    opreg_registry *reg = opreg_registry_default();
    if (!reg) {
        fprintf(stderr, "opreg plugins: %s\n", opreg_last_error());
        return 1;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--load") == 0 && opreg_plugin_load(NULL, reg, argv[++i]) != OPREG_OK)
            rc = 1;
    size_t n = opreg_plugin_count(reg);
    if (json) {
        printf("{\"plugin_dir\":");
        json_str(opreg_plugin_dir());
        printf(",\"plugins\":[");
    } else if (n == 0) {
        printf("no plugins (OPREG_PLUGIN_PATH and %s hold none)\n", opreg_plugin_dir());
    } else {
        printf("%-8s %-12s %-8s %-5s %-8s %s\n", "state", "name", "version", "abi", "key", "path");
    }
    for (size_t i = 0; i < n; i++) {
        opreg_plugin_info p;
        if (opreg_plugin_info_at(&p, reg, i) != OPREG_OK) break;
        char abi[16] = "-";
        if (p.abi_version)
            snprintf(abi, sizeof abi, "%u.%u", p.abi_version >> 16, p.abi_version & 0xffffu);
        const char *key = p.key == OPREG_KEY_NONE ? "" : opreg_key_name(p.key);
        if (json) {
            printf("%s{\"path\":", i ? "," : "");
            json_str(p.path);
            printf(",\"name\":");
            json_str(p.name);
            printf(",\"version\":");
            json_str(p.version);
            printf(",\"abi\":");
            json_str(abi);
            printf(",\"state\":\"%s\",\"key\":", state_word(p.state));
            json_str(key ? key : "");
            printf(",\"reason\":");
            json_str(p.reason);
            printf("}");
        } else {
            printf("%-8s %-12s %-8s %-5s %-8s %s\n", state_word(p.state), p.name[0] ? p.name : "?",
                   p.version[0] ? p.version : "-", abi, key && key[0] ? key : "-", p.path);
            if (p.state == OPREG_PLUGIN_REFUSED) printf("  reason: %s\n", p.reason);
        }
    }
    if (json) printf("]}\n");
    return rc;
}
