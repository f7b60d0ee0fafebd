/* opreg bench [--json] [--corpus DIR] [SUITE...] */
#define _POSIX_C_SOURCE 200809L
#include "tools/bench/bench.h"
#include "tools/cmd/commands.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct suite {
    const char *name;
    const char *summary;
    int (*run)(const struct bench_ctx *ctx);
};

static const struct suite suites[] = {
#define X(name, summary) { #name, summary, bench_##name },
    OPREG_BENCH_SUITES(X)
#undef X
};
#define NSUITES (sizeof suites / sizeof suites[0])

uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_progress(const struct bench_ctx *ctx, const char *fmt, ...) {
    if (!ctx->progress) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("\r\033[K", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
}

static void help(void) {
    printf("usage: opreg bench [--json] [--corpus DIR] [--device D [--quick]] [SUITE...]\n\n"
           "Runs the named benchmark suites, or all of them. Each case prints one line;\n"
           "with --json, one JSON object per line ({\"suite\":...,\"case\":...,...}).\n"
           "A progress line is shown on stderr when it is a terminal.\n\n"
           "  --corpus DIR  folder of the schema corpus (default: $OPREG_CORPUS_DIR,\n"
           "                then ../shared/corpus and the paths the build knows)\n"
           "  --device D    where the ops suite runs: cpu (default), or another device\n"
           "                (cuda, cuda:1, a plugin's such as opencl): the memory-bound ops'\n"
           "                GB/s beside a copy within the device's memory; ops the device\n"
           "                has no kernel for are listed as such. Without the device, or\n"
           "                when its backend has no copy_on_device, it says so and the\n"
           "                suite fails (exit 1)\n"
           "  --quick       with --device: a 64th of the sizes and one timed run, to check\n"
           "                that the suite runs there (not a measurement)\n\nsuites:\n");
    for (size_t i = 0; i < NSUITES; i++)
        printf("  %-10s %s\n", suites[i].name, suites[i].summary);
    printf("\nexit codes: 0 all suites ran, 1 a suite could not run, 2 usage error\n");
}

static const char *find_corpus(const char *given) {
    if (given) return given;
    const char *env = getenv("OPREG_CORPUS_DIR");
    if (env && *env) return env;
    static const char *candidates[] = { "../shared/corpus", "../../shared/corpus",
#ifdef OPREG_DEFAULT_CORPUS_DIR
                                        OPREG_DEFAULT_CORPUS_DIR,
#endif
                                        NULL };
    for (int i = 0; candidates[i]; i++)
        if (access(candidates[i], R_OK) == 0) return candidates[i];
    return NULL;
}

int cmd_bench(int argc, char **argv) {
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    struct bench_ctx ctx = {
        .json = false, .progress = isatty(2) != 0, .corpus_dir = NULL, .device = NULL
    };
    const char *corpus = NULL;
    bool selected[NSUITES] = { false };
    bool any = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            ctx.json = true;
        } else if (strcmp(argv[i], "--corpus") == 0 && i + 1 < argc) {
            corpus = argv[++i];
        } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            DLDevice dev;
            ctx.device = argv[++i];
            (void)opreg_registry_default(); /* loads the plugins, whose devices parse too */
            if (opreg_device_parse(&dev, ctx.device) != OPREG_OK) {
                fprintf(stderr, "opreg bench: --device: %s\n", opreg_last_error());
                return 2;
            }
        } else if (strcmp(argv[i], "--quick") == 0) {
            ctx.quick = true;
        } else {
            size_t k = 0;
            while (k < NSUITES && strcmp(argv[i], suites[k].name) != 0)
                k++;
            if (k == NSUITES) {
                fprintf(stderr, "opreg bench: unknown suite or option '%s'\n", argv[i]);
                return 2;
            }
            selected[k] = any = true;
        }
    }
    if (ctx.quick && (!ctx.device || strcmp(ctx.device, "cpu") == 0)) {
        fprintf(stderr, "opreg bench: --quick is for the ops suite on a device other than the "
                        "CPU (--device D)\n");
        return 2;
    }
    ctx.corpus_dir = find_corpus(corpus);
    int rc = 0;
    for (size_t k = 0; k < NSUITES; k++) {
        if (any && !selected[k]) continue;
        if (suites[k].run(&ctx) != 0) rc = 1;
        if (ctx.progress) fputs("\r\033[K", stderr); /* no suite leaves its line behind */
    }
    return rc;
}
