/* The subcommands of the opreg tool. Each lives in its own file as
 *   int cmd_NAME(int argc, char **argv);
 * where argv[0] is the subcommand's name. Exit codes: 0 success, 1 a negative
 * answer or a failed item (documented per command), 2 a usage error. Each
 * command's --help ends with a line "exit codes: 0 ...", and --json, where a
 * command has it, prints one JSON document (bench: JSON Lines); tests/tools
 * checks every command listed here (docs/tool.md). */
#ifndef OPREG_TOOLS_COMMANDS_H
#define OPREG_TOOLS_COMMANDS_H

#include <stdio.h>

/* X(name, summary): one line a command, in the order `opreg --help` lists them. */
#define OPREG_TOOL_COMMANDS(X)                                                                     \
    X(parse, "parse schemas, one a line, and print their canonical or PyTorch form")               \
    X(list, "list the ops of the default registry, with the keys that have kernels")               \
    X(schema, "print the schema of an op")                                                         \
    X(supported, "say whether an op is supported (on a device), and why")                          \
    X(devices, "list the backends, whether each is available here, and why not")                   \
    X(matrix, "print the op x backend support matrix")                                             \
    X(run, "run an op on random inputs and compare it with the reference")                         \
    X(check, "check ops' contracts on generated inputs, on every key (opcheck)")                   \
    X(bench, "run benchmark suites")                                                               \
    X(plugins, "list the plugins loaded and refused, with the reason")

#define X(name, summary) int cmd_##name(int argc, char **argv);
OPREG_TOOL_COMMANDS(X)
#undef X

/* True when argv holds -h or --help. */
int tool_wants_help(int argc, char **argv);

#endif
