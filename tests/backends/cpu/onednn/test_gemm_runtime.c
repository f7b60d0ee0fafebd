/* The oneDNN runtime under the GEMM kernels: the primitive cache (a repeated
 * call creates nothing, scale configurations share a primitive, eviction
 * keeps results right), calls from several threads at once, and the ISA and
 * AMX queries behind the "bf16 runs on AMX where the CPU has it". */
#include "backends/cpu/onednn/onednn.h"
#include "gemm_util.h"
#include "test.h"

#include <pthread.h>
#include <stdio.h>

/* One linear call on fresh random data; returns the status and checks one
 * element against a double dot product so reused primitives stay right. */
static opreg_status linear_once(opreg_dtype dt, int64_t m, int64_t n, int64_t k, int *ok) {
    tt x, w, out;
    opreg_status st;
    tt_2d(&x, dt, m, k);
    tt_2d(&w, dt, n, k);
    tt_2d(&out, dt, m, n);
    tt_fill(&x, 1.0f);
    tt_fill(&w, 1.0f);
    st = opreg__onednn_linear(&out.t, &x.t, &w.t, NULL);
    if (st == OPREG_OK) {
        double ref = 0, mag = 0;
        for (int64_t p = 0; p < k; p++) {
            double prod = tt_get(&x, (size_t)((m - 1) * k + p)) * tt_get(&w, (size_t)p);
            ref += prod;
            mag += fabs(prod);
        }
        *ok = fabs(tt_get(&out, (size_t)((m - 1) * n)) - ref) <=
              1e-5 * mag + (dt == OPREG_DTYPE_BF16 ? fabs(ref) / 256 : 0);
    }
    tt_free(&x);
    tt_free(&w);
    tt_free(&out);
    return st;
}

TEST(cache_repeated_call_creates_nothing) {
    opreg_dtype dts[2] = { OPREG_DTYPE_F32, OPREG_DTYPE_BF16 };
    for (int i = 0; i < 2; i++) {
        uint64_t before = opreg__onednn_primitives_created(), first, second;
        int ok = 0;
        CHECK_EQ_INT(linear_once(dts[i], 13, 37, 211 + i, &ok), OPREG_OK);
        CHECK(ok);
        first = opreg__onednn_primitives_created();
        CHECK(first > before); /* a shape never seen: made once */
        CHECK_EQ_INT(linear_once(dts[i], 13, 37, 211 + i, &ok), OPREG_OK);
        CHECK(ok);
        second = opreg__onednn_primitives_created();
        CHECK_EQ_INT(second, first);
    }
}

/* Scale values and per-tensor / per-row / per-column choices are applied
 * outside oneDNN, so all four configurations share one int8 primitive. */
TEST(cache_scaled_mm_one_primitive_per_shape) {
    tt a, b, as1, asm_, bs1, bsn, out;
    uint64_t after_first;
    tt_2d(&a, OPREG_DTYPE_I8, 6, 45);
    tt_2d(&b, OPREG_DTYPE_I8, 45, 10);
    b.strides[0] = 1;
    b.strides[1] = 45;
    b.t.strides = b.strides;
    tt_1d(&as1, OPREG_DTYPE_F32, 1);
    tt_1d(&asm_, OPREG_DTYPE_F32, 6);
    tt_1d(&bs1, OPREG_DTYPE_F32, 1);
    tt_1d(&bsn, OPREG_DTYPE_F32, 10);
    tt_2d(&out, OPREG_DTYPE_BF16, 6, 10);
    tt_fill(&as1, 1.0f);
    tt_fill(&asm_, 1.0f);
    tt_fill(&bs1, 1.0f);
    tt_fill(&bsn, 1.0f);
    CHECK_EQ_INT(opreg__onednn_scaled_mm(&out.t, &a.t, &b.t, &as1.t, &bs1.t, NULL), OPREG_OK);
    after_first = opreg__onednn_primitives_created();
    CHECK_EQ_INT(opreg__onednn_scaled_mm(&out.t, &a.t, &b.t, &asm_.t, &bs1.t, NULL), OPREG_OK);
    CHECK_EQ_INT(opreg__onednn_scaled_mm(&out.t, &a.t, &b.t, &as1.t, &bsn.t, NULL), OPREG_OK);
    CHECK_EQ_INT(opreg__onednn_scaled_mm(&out.t, &a.t, &b.t, &asm_.t, &bsn.t, NULL), OPREG_OK);
    CHECK_EQ_INT(opreg__onednn_primitives_created(), after_first);
    tt_free(&a);
    tt_free(&b);
    tt_free(&as1);
    tt_free(&asm_);
    tt_free(&bs1);
    tt_free(&bsn);
    tt_free(&out);
}

/* More distinct shapes than the cache holds: the oldest is evicted and made
 * again on its next use, and every result stays right. */
TEST(cache_eviction) {
    uint64_t before;
    int ok = 0;
    CHECK_EQ_INT(linear_once(OPREG_DTYPE_F32, 2, 3, 1000, &ok), OPREG_OK);
    for (int64_t k = 1; k <= 80; k++) {
        CHECK_EQ_INT(linear_once(OPREG_DTYPE_F32, 2, 3, k, &ok), OPREG_OK);
        CHECK(ok);
    }
    before = opreg__onednn_primitives_created();
    CHECK_EQ_INT(linear_once(OPREG_DTYPE_F32, 2, 3, 1000, &ok), OPREG_OK);
    CHECK(ok);
    CHECK_EQ_INT(opreg__onednn_primitives_created(), before + 1);
}

/* Threads share the cache and each gets its own stream and scratch. */
static void *thread_main(void *arg) {
    int *ok = arg;
    *ok = 1;
    for (int i = 0; i < 40 && *ok; i++) {
        int one = 0;
        opreg_dtype dt = i % 2 ? OPREG_DTYPE_BF16 : OPREG_DTYPE_F32;
        int64_t m = 1 + i % 5, n = 16 + i % 3, k = 64 + i % 7;
        opreg_status st = linear_once(dt, m, n, k, &one);
        if (st != OPREG_OK || !one) {
            fprintf(stderr, "thread: %s %lldx%lldx%lld: %s\n", opreg_dtype_name(dt), (long long)m,
                    (long long)n, (long long)k,
                    st != OPREG_OK ? opreg_last_error() : "wrong result");
            *ok = 0;
        }
    }
    return NULL;
}

TEST(threads) {
    pthread_t th[4];
    int ok[4] = { 0, 0, 0, 0 };
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(pthread_create(&th[i], NULL, thread_main, &ok[i]), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(ok[i], 1);
}

/* One cached primitive run by several threads at the same time, each on its
 * own data. In oneDNN's default scratchpad mode a primitive owns a single
 * scratchpad, so concurrent runs of it would share their temporaries (the
 * AMX and brgemm kernels keep copies of the inputs there); opreg gives each
 * calling thread its own. Every element is checked, not one. */
static int linear_all_ok(opreg_dtype dt, int64_t m, int64_t n, int64_t k) {
    tt x, w, out;
    int ok = 1;
    tt_2d(&x, dt, m, k);
    tt_2d(&w, dt, n, k);
    tt_2d(&out, dt, m, n);
    tt_fill(&x, 1.0f);
    tt_fill(&w, 1.0f);
    if (opreg__onednn_linear(&out.t, &x.t, &w.t, NULL) != OPREG_OK) ok = 0;
    for (int64_t i = 0; ok && i < m; i++)
        for (int64_t j = 0; ok && j < n; j++) {
            double ref = 0, mag = 0, got = tt_get(&out, (size_t)(i * n + j));
            for (int64_t p = 0; p < k; p++) {
                double prod = tt_get(&x, (size_t)(i * k + p)) * tt_get(&w, (size_t)(j * k + p));
                ref += prod;
                mag += fabs(prod);
            }
            if (!(fabs(got - ref) <=
                  1e-5 * mag + 1e-30 + (dt == OPREG_DTYPE_BF16 ? fabs(ref) / 256 : 0))) {
                fprintf(stderr, "%s %lldx%lldx%lld [%lld,%lld]: got %.9g, want %.9g\n",
                        opreg_dtype_name(dt), (long long)m, (long long)n, (long long)k,
                        (long long)i, (long long)j, got, ref);
                ok = 0;
            }
        }
    tt_free(&x);
    tt_free(&w);
    tt_free(&out);
    return ok;
}

struct same_arg {
    opreg_dtype dt;
    int ok;
};

static void *same_main(void *arg) {
    struct same_arg *a = arg;
    a->ok = 1;
    for (int i = 0; i < 30 && a->ok; i++)
        a->ok = linear_all_ok(a->dt, 9, 96, 333);
    return NULL;
}

TEST(one_primitive_many_threads) {
    opreg_dtype dts[2] = { OPREG_DTYPE_F32, OPREG_DTYPE_BF16 };
    for (int d = 0; d < 2; d++) {
        pthread_t th[4];
        struct same_arg a[4];
        char impl[128];
        CHECK_EQ_INT(opreg__onednn_linear_impl(dts[d], 9, 96, 333, false, impl, sizeof impl),
                     OPREG_OK);
        for (int i = 0; i < 4; i++) {
            a[i] = (struct same_arg){ dts[d], 0 };
            CHECK_EQ_INT(pthread_create(&th[i], NULL, same_main, &a[i]), 0);
        }
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        for (int i = 0; i < 4; i++)
            if (!a[i].ok) {
                TEST_FAIL_AT("%s via %s, thread %d of 4", opreg_dtype_name(dts[d]), impl, i);
                return;
            }
    }
}

/* AMX as Linux reports it: both amx_bf16 and amx_tile in /proc/cpuinfo. */
static int cpuinfo_has_amx(void) {
    char line[8192];
    int amx = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            amx = strstr(line, " amx_bf16") && strstr(line, " amx_tile");
            break;
        }
    fclose(f);
    return amx;
}

TEST(isa_and_amx) {
    char isa[64], impl[128];
    int amx = cpuinfo_has_amx();
    CHECK(opreg__onednn_isa(isa, sizeof isa) > 0);
    CHECK(strcmp(isa, "unknown") != 0);
    CHECK_EQ_INT(opreg__onednn_linear_impl(OPREG_DTYPE_BF16, 64, 64, 64, true, impl, sizeof impl),
                 OPREG_OK);
    printf("oneDNN ISA: %s; bf16 linear runs %s; CPU AMX (cpuinfo): %d, (cpuid+xcr0): %d\n", isa,
           impl, amx, (int)opreg__onednn_has_amx());
    if (amx == 1) {
        CHECK(opreg__onednn_has_amx());
        CHECK_CONTAINS(isa, "amx");
        CHECK_CONTAINS(impl, "amx");
    } else {
        printf("note: this CPU has no AMX, so \"bf16 runs on AMX\" is not checkable here\n");
        CHECK(!opreg__onednn_has_amx());
    }
    CHECK_EQ_INT(opreg__onednn_linear_impl(OPREG_DTYPE_I8, 1, 1, 1, false, impl, sizeof impl),
                 OPREG_ERR_SHAPE);
}

int main(void) {
    RUN(cache_repeated_call_creates_nothing);
    RUN(cache_scaled_mm_one_primitive_per_shape);
    RUN(cache_eviction);
    RUN(threads);
    RUN(one_primitive_many_threads);
    RUN(isa_and_amx);
    return test_summary();
}
