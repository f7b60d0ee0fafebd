/* Runs tools/bench_ops_gemm.c on its own, with the two helpers that
 * tools/cmd_bench.c gives the real `opreg bench`:
 *   bench_ops_gemm_driver [--json] */
#define _POSIX_C_SOURCE 200809L
#include "tools/bench.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int bench_ops_gemm(const struct bench_ctx *ctx);

uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_progress(const struct bench_ctx *ctx, const char *fmt, ...) {
    va_list ap;
    if (!ctx->progress) return;
    va_start(ap, fmt);
    fputs("\r\033[K", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
}

int main(int argc, char **argv) {
    struct bench_ctx ctx = { false, isatty(2) != 0, NULL, NULL };
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--json") == 0) ctx.json = true;
    return bench_ops_gemm(&ctx);
}
