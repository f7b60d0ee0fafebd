/* `opreg parse`: one output line per input line, the canonical form, the
 * PyTorch form with --torch, `error: <col>: <message>` otherwise; exit 1 when
 * a line failed, 2 on usage and I/O errors; --strict refuses type variables. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char input_path[] = "/tmp/opreg_test_parse_XXXXXX";
static char output[65536];

/* Write `input` to the input file (no newline added). */
static void write_input(const char *input) {
    FILE *f = fopen(input_path, "wb");
    if (!f) abort();
    fputs(input, f);
    fclose(f);
}

/* Run the tool with `args`; its stdout goes to `output`. Returns the exit code. */
static int run(const char *args) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>/dev/null", OPREG_TOOL, args);
    FILE *p = popen(cmd, "r");
    if (!p) abort();
    size_t n = fread(output, 1, sizeof output - 1, p);
    output[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

TEST(one_line_per_input_line) {
    write_input("foo(Tensor! x) -> ()\n"
                "foo(Tensor in) -> ()\n"
                "\n"
                "ns::bar.out(int[2] s=[3, 3], *, Tensor(a!) out) -> Tensor(a!)\n"
                "foo(Tensor x) -> Tensor;\n"
                "foo(Tensor x) -> Tensor"); /* no final newline */
    char args[256];
    snprintf(args, sizeof args, "parse %s", input_path);
    CHECK_EQ_INT(run(args), 1);
    CHECK_EQ_INT(count_lines(output), 6);
    CHECK_EQ_STR(output, "foo(Tensor! x) -> ()\n"
                         "error: 12: expected ident but found 'in' here\n"
                         "error: 1: expected ident but found 'eof' here\n"
                         "ns::bar.out(int[2] s=3, *, Tensor(a!) out) -> Tensor(a!)\n"
                         "error: 24: expected a valid token but found ';' here\n"
                         "foo(Tensor x) -> Tensor\n");
}

TEST(torch_form) {
    write_input("foo(Tensor! x, Tensor(a|b) y, Device d=\"cuda:0\") -> ()\n");
    char args[256];
    snprintf(args, sizeof args, "parse --torch %s", input_path);
    CHECK_EQ_INT(run(args), 0);
    CHECK_EQ_STR(output, "foo(Tensor($0! -> ) x, Tensor(b|a) y, Device d=cuda:0) -> ()\n");
}

TEST(strict_refuses_type_variables) {
    write_input("foo(t x) -> t\naten::foo(t x) -> t\n");
    char args[256];
    snprintf(args, sizeof args, "parse %s", input_path);
    CHECK_EQ_INT(run(args), 0);
    CHECK_EQ_STR(output, "foo(t x) -> t\naten::foo(t x) -> t\n");
    snprintf(args, sizeof args, "parse --strict %s", input_path);
    CHECK_EQ_INT(run(args), 1);
    CHECK_CONTAINS(output, "error: 5: unknown type specifier");
    CHECK_CONTAINS(output, "\naten::foo(t x) -> t\n");
}

TEST(standard_input) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "parse - < %s", input_path);
    write_input("silu_and_mul(Tensor! out, Tensor input) -> ()\n");
    CHECK_EQ_INT(run(cmd), 0);
    CHECK_EQ_STR(output, "silu_and_mul(Tensor! out, Tensor input) -> ()\n");
}

TEST(messages_stay_on_one_line) {
    write_input("foo(Device d=\"a\\nb\") -> ()\n");
    char args[256];
    snprintf(args, sizeof args, "parse %s", input_path);
    CHECK_EQ_INT(run(args), 1);
    CHECK_EQ_INT(count_lines(output), 1);
    CHECK_CONTAINS(output, "error: 14: Invalid device string: 'a\\x0ab'");
}

TEST(usage_errors) {
    CHECK_EQ_INT(run("parse --bogus"), 2);
    CHECK_EQ_INT(run("parse /nonexistent/schemas.txt"), 2);
    CHECK_EQ_INT(run("parse a b"), 2);
    CHECK_EQ_INT(run("parse --help"), 0);
    CHECK_CONTAINS(output, "usage: opreg parse");
    CHECK_CONTAINS(output, "exit codes");
    CHECK_EQ_INT(run("nosuchcommand"), 2);
    CHECK_EQ_INT(run("--version"), 0);
    CHECK_CONTAINS(output, "opreg ");
}

int main(void) {
    int fd = mkstemp(input_path);
    if (fd < 0) return 1;
    close(fd);
    RUN(one_line_per_input_line);
    RUN(torch_form);
    RUN(strict_refuses_type_variables);
    RUN(standard_input);
    RUN(messages_stay_on_one_line);
    RUN(usage_errors);
    unlink(input_path);
    return test_summary();
}
