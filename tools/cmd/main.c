/* opreg: the command-line tool. It uses the public API only. */
#include "opreg/opreg.h"
#include "tools/cmd/commands.h"

#include <string.h>

struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
#define X(name, summary) { #name, summary, cmd_##name },
    OPREG_TOOL_COMMANDS(X)
#undef X
};

int tool_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
        if (strcmp(argv[i], "--") == 0) break;
    }
    return 0;
}

/* opreg prints nothing by itself: the tool shows its warnings and errors
 * (a mutation sanitizer's report, an ignored environment variable). */
static void log_to_stderr(void *user, opreg_log_level level, const char *message) {
    (void)user;
    (void)level;
    fprintf(stderr, "opreg: %s\n", message);
}

static void usage(FILE *to) {
    fprintf(to, "usage: opreg COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(to, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(to, "\n'opreg COMMAND --help' describes a command and its exit codes.\n"
                "'opreg --version' prints the library version.\n");
}

int main(int argc, char **argv) {
    opreg_set_log_callback(log_to_stderr, NULL, OPREG_LOG_WARN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("opreg %s\n", opreg_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "opreg: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
