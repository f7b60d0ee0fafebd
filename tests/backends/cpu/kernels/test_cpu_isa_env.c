/* OPREG_CPU_ISA caps the kernels' instruction-set path at the named one
 * (never above what the CPU runs) and is ignored when it names no path. The
 * variable is read once, at the first detection, so each setting runs in a
 * fresh copy of this program, which reports the path it got as its exit
 * status. */
#define _POSIX_C_SOURCE 200809L
#include "kern_test.h"

#include <sys/wait.h>
#include <unistd.h>

static char *self_path;

/* The path a fresh process picks with OPREG_CPU_ISA set to @p value (unset
 * when NULL); -1 when the child failed to run. */
static int path_with(const char *value) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (value)
            setenv("OPREG_CPU_ISA", value, 1);
        else
            unsetenv("OPREG_CPU_ISA");
        setenv("OPREG_TEST_ISA_CHILD", "1", 1);
        execl(self_path, self_path, (char *)NULL);
        _exit(100);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status) <= OPREG__ISA_AVX512_BF16 ? WEXITSTATUS(status) : -1;
}

TEST(cap_applies_below_the_detected_path) {
    int detected = opreg__cpu_isa_detected();
    CHECK_EQ_INT(path_with(NULL), detected);
    for (int isa = OPREG__ISA_PORTABLE; isa <= OPREG__ISA_AVX512_BF16; isa++) {
        int want = isa < detected ? isa : detected;
        int got = path_with(opreg__cpu_isa_name(isa));
        if (got != want)
            TEST_FAIL_AT("OPREG_CPU_ISA=%s: path %d, want %d", opreg__cpu_isa_name(isa), got, want);
    }
}

TEST(unknown_names_are_ignored) {
    int detected = opreg__cpu_isa_detected();
    CHECK_EQ_INT(path_with("sse9"), detected);
    CHECK_EQ_INT(path_with(""), detected);
    CHECK_EQ_INT(path_with("AVX2"), detected); /* names are lower case, as printed */
}

int main(int argc, char **argv) {
    (void)argc;
    if (getenv("OPREG_TEST_ISA_CHILD")) return opreg__cpu_isa();
    self_path = argv[0];
    unsetenv("OPREG_CPU_ISA");
    RUN(cap_applies_below_the_detected_path);
    RUN(unknown_names_are_ignored);
    return test_summary();
}
