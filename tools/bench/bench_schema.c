/* The schema suite: parse the whole native_functions corpus repeatedly. */
#include "opreg/opreg.h"
#include "tools/bench/bench.h"

#include <stdlib.h>
#include <string.h>

struct corpus {
    char *text;
    size_t *starts;
    size_t *lens;
    size_t n;
    size_t bytes;
};

static int load(struct corpus *c, const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/native_functions.schemas", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    c->text = malloc((size_t)size + 1);
    size_t got = c->text ? fread(c->text, 1, (size_t)size, f) : 0;
    fclose(f);
    if (got != (size_t)size) return -1;
    c->text[size] = '\n';
    size_t lines = 0;
    for (long i = 0; i < size; i++)
        lines += c->text[i] == '\n';
    c->starts = malloc((lines + 1) * sizeof *c->starts);
    c->lens = malloc((lines + 1) * sizeof *c->lens);
    c->n = c->bytes = 0;
    size_t start = 0;
    for (size_t i = 0; i <= (size_t)size; i++) {
        if (c->text[i] != '\n') continue;
        if (i > start) {
            c->starts[c->n] = start;
            c->lens[c->n] = i - start;
            c->bytes += i - start;
            c->n++;
        }
        start = i + 1;
    }
    return 0;
}

/* Parse every schema `rounds` times; returns the seconds taken, or -1 when a
 * schema fails to parse. */
static double run(const struct corpus *c, int rounds, bool print) {
    char buf[4096];
    uint64_t t0 = bench_now_ns();
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < c->n; i++) {
            opreg_schema *s;
            if (opreg_schema_parse(&s, c->text + c->starts[i], c->lens[i], 0, NULL) != OPREG_OK)
                return -1;
            if (print) opreg_schema_format(s, OPREG_SCHEMA_CANONICAL, buf, sizeof buf);
            opreg_schema_free(s);
        }
    }
    return (double)(bench_now_ns() - t0) / 1e9;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const struct bench_ctx *ctx, const char *name, const struct corpus *c,
                   int rounds, double best, double median) {
    double per_s = (double)c->n * rounds / best;
    double median_per_s = (double)c->n * rounds / median;
    double mb_s = (double)c->bytes * rounds / best / 1e6;
    if (ctx->json)
        printf("{\"suite\":\"schema\",\"case\":\"%s\",\"schemas\":%zu,\"rounds\":%d,"
               "\"schemas_per_s\":%.0f,\"mb_per_s\":%.1f,\"ns_per_schema\":%.1f,"
               "\"median_schemas_per_s\":%.0f}\n",
               name, c->n, rounds, per_s, mb_s, 1e9 / per_s, median_per_s);
    else
        printf("schema  %-26s %9.0f schemas/s (median %9.0f)  %6.1f MB/s  %6.1f ns/schema\n", name,
               per_s, median_per_s, mb_s, 1e9 / per_s);
    fflush(stdout);
}

int bench_schema(const struct bench_ctx *ctx) {
    struct corpus c = { 0 };
    if (!ctx->corpus_dir || load(&c, ctx->corpus_dir) != 0) {
        fprintf(stderr, "opreg bench schema: native_functions.schemas not found (use --corpus DIR "
                        "or OPREG_CORPUS_DIR)\n");
        return 1;
    }
    int rc = 0;
    double median;
    static const struct {
        const char *name;
        bool print;
    } cases[] = { { "parse_native_functions", false }, { "parse_and_print_canonical", true } };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        /* Warm up, then time 7 runs of about 0.2 s each: the machine may be
         * shared, so the best run is the figure, and the median comes along. */
        double secs = run(&c, 1, cases[k].print);
        if (secs < 0) {
            fprintf(stderr, "opreg bench schema: a corpus schema failed to parse: %s\n",
                    opreg_last_error());
            rc = 1;
            break;
        }
        int rounds = secs > 0 ? (int)(0.2 / secs) + 1 : 20;
        double times[7];
        for (int r = 0; r < 7; r++) {
            bench_progress(ctx, "schema %s: run %d of 7 (%d rounds of %zu schemas)", cases[k].name,
                           r + 1, rounds, c.n);
            times[r] = run(&c, rounds, cases[k].print);
        }
        if (ctx->progress) fputs("\r\033[K", stderr);
        qsort(times, 7, sizeof times[0], compare_double);
        secs = times[0];
        median = times[3];
        report(ctx, cases[k].name, &c, rounds, secs, median);
    }
    free(c.text);
    free(c.starts);
    free(c.lens);
    return rc;
}
