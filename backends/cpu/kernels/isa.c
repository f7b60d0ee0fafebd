/* Choosing the instruction-set path once, and spreading rows over threads.
 * The SIMD files are compiled for their ISA through target pragmas, so the
 * build needs no -m flags and the binary still runs on any x86-64 (or any
 * other architecture, where only the portable path exists). */
#include "backends/cpu/kernels/kern_internal.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "common/pool.h"

/* A task moves about this many bytes: a few microseconds of streaming.
 * Small tasks, many per thread, so that a worker the OS preempts in the
 * middle of one holds back little, and the running threads take the rest;
 * a claim costs tens of nanoseconds. */
#define TASK_BYTES ((int64_t)64 << 10)

/* At most this many tasks a call: past it (64 GiB moved) tasks grow
 * instead. The pool claims in fewer slots than this anyway, and
 * opreg__split_point wants few parts. */
#define MAX_TASKS ((int64_t)1 << 20)

/* -1: not yet detected. Atomics so that first calls from several threads
 * (and TSan) are fine; the value is the same whoever writes it. */
static atomic_int detected = -1;
static atomic_int limit = OPREG__ISA_AVX512_BF16;

/* opreg__cpu_stream's threshold: 0 until first asked, then the default or
 * what a test set. */
static _Atomic int64_t stream_bytes = 0;

#if defined(__x86_64__) && defined(__GNUC__)
/* XCR0: the register states the OS saves (AVX needs SSE+AVX, AVX-512 also
 * the opmask and upper-ZMM states). */
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

/* From cpuid and XCR0 directly: compilers differ in which feature names
 * __builtin_cpu_supports knows (clang 14 has no "f16c"). */
static int detect(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return OPREG__ISA_PORTABLE;
    bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28);
    bool f16c = c & (1u << 29);
    if (!osxsave || !avx || !fma || !f16c) return OPREG__ISA_PORTABLE;
    uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return OPREG__ISA_PORTABLE;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 5))) return OPREG__ISA_PORTABLE;
    bool avx512 = (b & (1u << 16)) && (b & (1u << 17)) && (b & (1u << 30)) && (b & (1u << 31)) &&
                  (xcr0 & 0xe6) == 0xe6;
    if (!avx512) return OPREG__ISA_AVX2;
    /* The avx512_bf16 path also uses AVX512-VNNI (leaf 7 ecx bit 11), which
     * every CPU with AVX512-BF16 has (Cooper Lake, Sapphire Rapids, Zen 4). */
    bool vnni = c & (1u << 11);
    if (!vnni || !__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5)))
        return OPREG__ISA_AVX512;
    return OPREG__ISA_AVX512_BF16;
#else
    return OPREG__ISA_PORTABLE;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
/* A fact about the CPU, asked of cpuid once: *cached is -1 until then.
 * Relaxed atomics, as `detected`: whoever asks first stores the same. */
static bool cpu_fact(atomic_int *cached, bool (*ask)(void)) {
    int v = atomic_load_explicit(cached, memory_order_relaxed);
    if (v < 0) {
        v = ask();
        atomic_store_explicit(cached, v, memory_order_relaxed);
    }
    return v;
}

/* AVX512-VBMI: leaf 7 ecx bit 1, of use only where AVX-512 is. */
static bool ask_vbmi(void) {
    unsigned a, b, c = 0, d;
    return opreg__cpu_isa_detected() >= OPREG__ISA_AVX512 &&
           __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & (1u << 1));
}

/* Leaf 0's vendor string, "GenuineIntel" in ebx, edx, ecx. */
static bool ask_intel(void) {
    unsigned a, b = 0, c = 0, d = 0;
    return __get_cpuid(0, &a, &b, &c, &d) && b == 0x756E6547u && d == 0x49656E69u &&
           c == 0x6C65746Eu;
}

bool opreg__cpu_has_vbmi(void) {
    static atomic_int vbmi = -1;
    return cpu_fact(&vbmi, ask_vbmi);
}

bool opreg__cpu_is_intel(void) {
    static atomic_int intel = -1;
    return cpu_fact(&intel, ask_intel);
}
#else
bool opreg__cpu_has_vbmi(void) {
    return false;
}

bool opreg__cpu_is_intel(void) {
    return false;
}
#endif

/* OPREG_CPU_ISA caps the path, as oneDNN's ONEDNN_MAX_CPU_ISA does: for
 * comparing paths on one machine, or for ruling one out. -1 when unset or
 * not a path's name. */
static int isa_from_env(void) {
    const char *e = getenv("OPREG_CPU_ISA");
    if (!e) return -1;
    for (int isa = OPREG__ISA_PORTABLE; isa <= OPREG__ISA_AVX512_BF16; isa++)
        if (strcmp(e, opreg__cpu_isa_name(isa)) == 0) return isa;
    return -1;
}

int opreg__cpu_isa_detected(void) {
    int d = atomic_load_explicit(&detected, memory_order_relaxed);
    if (d < 0) {
        int cap = isa_from_env();
        if (cap >= 0) atomic_store_explicit(&limit, cap, memory_order_relaxed);
        d = detect();
        atomic_store_explicit(&detected, d, memory_order_relaxed);
    }
    return d;
}

int opreg__cpu_isa(void) {
    int d = opreg__cpu_isa_detected();
    int l = atomic_load_explicit(&limit, memory_order_relaxed);
    return d < l ? d : l;
}

int opreg__cpu_set_isa_limit(int isa) {
    return atomic_exchange_explicit(&limit, isa, memory_order_relaxed);
}

/* The size of one instance of the last-level cache, from Linux's sysfs:
 * glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) can report the whole package's
 * (ten instances on some EPYC guests), which would never stream. 0 when
 * unknown. */
static int64_t llc_bytes(void) {
    int64_t best = 0;
    for (int idx = 0; idx < 8; idx++) {
        char path[96], text[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        FILE *f = fopen(path, "r");
        if (!f) break;
        size_t len = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[len] = 0;
        char *end;
        long long v = strtoll(text, &end, 10);
        if (v <= 0) continue;
        if (*end == 'K')
            v <<= 10;
        else if (*end == 'M')
            v <<= 20;
        if (v > best) best = v;
    }
    return best;
}

/* Half the last-level cache (at least 4 MiB; 16 MiB when unknown): an
 * output larger than that has mostly been evicted by the time the call
 * that wrote it returns. */
static int64_t default_stream_bytes(void) {
    int64_t llc = llc_bytes();
    int64_t b = llc > 0 ? llc / 2 : (int64_t)16 << 20;
    return b < ((int64_t)4 << 20) ? (int64_t)4 << 20 : b;
}

int opreg__cpu_stream(int64_t out_bytes) {
    int64_t t = atomic_load_explicit(&stream_bytes, memory_order_relaxed);
    if (t == 0) {
        t = default_stream_bytes();
        atomic_store_explicit(&stream_bytes, t, memory_order_relaxed);
    }
    return out_bytes >= t;
}

int64_t opreg__cpu_set_stream_bytes(int64_t bytes) {
    int64_t old = atomic_exchange_explicit(&stream_bytes, bytes, memory_order_relaxed);
    return old ? old : default_stream_bytes();
}

const char *opreg__cpu_isa_name(int isa) {
    switch (isa) {
    case OPREG__ISA_PORTABLE:
        return "portable";
    case OPREG__ISA_AVX2:
        return "avx2";
    case OPREG__ISA_AVX512:
        return "avx512";
    case OPREG__ISA_AVX512_BF16:
        return "avx512_bf16";
    default:
        return "unknown";
    }
}

const struct opreg__cpu_simd *opreg__cpu_simd_for(int isa) {
#if defined(__x86_64__) && defined(__GNUC__)
    int best = opreg__cpu_isa_detected();
    switch (isa < best ? isa : best) {
    case OPREG__ISA_AVX2:
        return &opreg__cpu_simd_avx2;
    case OPREG__ISA_AVX512:
        return &opreg__cpu_simd_avx512;
    case OPREG__ISA_AVX512_BF16:
        return &opreg__cpu_simd_avx512bf16;
    default:
        return NULL;
    }
#else
    (void)isa;
    return NULL;
#endif
}

struct range_loop {
    opreg__cpu_range_fn fn;
    const void *a;
    int64_t rows, tasks;
};

/* Tasks [t0, t1) of a range loop: the rows of those of `tasks` contiguous
 * runs, in one call, so that each thread streams its own part of memory,
 * as prefetchers want. */
static void range_tasks(void *ctx, int64_t t0, int64_t t1) {
    const struct range_loop *l = ctx;
    int64_t r0 = opreg__split_point(l->rows, t0, l->tasks);
    int64_t r1 = opreg__split_point(l->rows, t1, l->tasks);
    if (r1 > r0) l->fn(l->a, r0, r1);
}

void opreg__cpu_parallel(opreg__cpu_range_fn fn, const void *a, int64_t rows, int64_t bytes) {
    /* Small calls never look at the pool. */
    int64_t tasks =
        bytes >= opreg__pool_min_bytes() && opreg__pool_threads() > 1 ? bytes / TASK_BYTES : 1;
    if (tasks > MAX_TASKS) tasks = MAX_TASKS;
    if (tasks > rows) tasks = rows;
    if (tasks <= 1) {
        if (rows > 0) fn(a, 0, rows);
        return;
    }
    struct range_loop l = { fn, a, rows, tasks };
    opreg__parallel_ranges(tasks, range_tasks, &l);
}
