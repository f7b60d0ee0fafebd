/* opreg bench python: the cost of a call of opreg.ops._C.rms_norm from Python,
 * beside a trivial Python function call. The measurement is a Python script,
 * tools/bench/bench_python.py; this suite runs it with the build's package on
 * PYTHONPATH and the interpreter whose headers built the binding ($OPREG_PYTHON
 * overrides it), and passes --json on. */
#define _POSIX_C_SOURCE 200809L
#include "tools/bench/bench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int bench_python(const struct bench_ctx *ctx) {
#ifndef OPREG_BENCH_PYTHON_SCRIPT
    (void)ctx;
    fprintf(stderr, "opreg bench python: this build has no Python binding (it needs the Python "
                    "headers, python3-dev, and OPREG_PYTHON not OFF)\n");
    return 1;
#else
    const char *py = getenv("OPREG_PYTHON");
    if (!py || !*py) py = OPREG_BENCH_PYTHON_EXE;
    if (access(OPREG_BENCH_PYTHON_SCRIPT, R_OK) != 0) {
        fprintf(stderr, "opreg bench python: %s is missing\n", OPREG_BENCH_PYTHON_SCRIPT);
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("opreg bench python: fork");
        return 1;
    }
    if (pid == 0) {
        const char *old = getenv("PYTHONPATH");
        size_t n = strlen(OPREG_BENCH_PYTHON_PATH) + (old ? strlen(old) + 1 : 0) + 1;
        char *path = malloc(n);
        if (!path) _exit(127);
        strcpy(path, OPREG_BENCH_PYTHON_PATH);
        if (old && *old) {
            strcat(path, ":");
            strcat(path, old);
        }
        setenv("PYTHONPATH", path, 1);
        char *argv[] = { (char *)py, (char *)OPREG_BENCH_PYTHON_SCRIPT,
                         ctx->json ? (char *)"--json" : NULL, NULL };
        execvp(py, argv);
        perror("opreg bench python: could not run the interpreter");
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) return 1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
#endif
}
