/* The oneDNN runtime of the GEMM kernels: one CPU engine for the process, a
 * stream and a scratch buffer per thread, and a cache of matmul primitives.
 *
 * Creating a primitive costs far more than a small GEMM (oneDNN walks its
 * implementation list and JIT-compiles a kernel), so primitives are kept by
 * key. The cache is a small LRU array under one mutex; lookups are short and
 * creation happens outside the lock. An entry evicted while another thread
 * still runs it is detached and destroyed by its last user, which is why
 * entries are reference counted.
 *
 * Every primitive is made with a user-managed scratchpad, and each call
 * hands oneDNN a buffer of the calling thread. oneDNN's default ("library")
 * scratchpad is bound to the thread that created the primitive and shared
 * by all primitives that thread made, so a cached primitive run from
 * another thread, or two primitives of one creator run at once, would share
 * or overrun one buffer. Kernels that need a scratchpad (the AMX brgemm
 * matmuls do, for their tile configuration and copies) gave wrong results
 * that way when called from several threads. */
#include "backends/cpu/onednn/onednn_internal.h"
#include "common/pool.h"
#include "common/thread_keys.h"

#include <oneapi/dnnl/dnnl_debug.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Enough for the distinct shapes of a model's layers and batch sizes; a
 * serving loop with many M values cycles through the LRU instead. */
#define CACHE_CAP 64

struct opreg__mm_prim {
    opreg__mm_key key;
    dnnl_primitive_t prim; /* NULL: oneDNN has no implementation for the key */
    dnnl_memory_desc_t src_md, wei_md, bias_md, dst_md, scratch_md;
    size_t scratch_bytes; /* what oneDNN asks of the caller per execution */
    char impl[64];
    int refs;       /* guarded by cache_lock, as are the two below */
    bool detached;  /* evicted while in use: the last release destroys it */
    uint64_t stamp; /* last use, for LRU */
};

struct thread_state {
    dnnl_stream_t stream;
    struct opreg__buffer scratch; /* opreg's conversions (opreg__onednn_scratch) */
    struct opreg__buffer dnnl;    /* oneDNN's scratchpad during an execution */
};

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;
static dnnl_status_t engine_status;
static int tls_key_status;
static pthread_key_t tls_key;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static opreg__mm_prim *cache[CACHE_CAP];
static uint64_t cache_tick;
static _Atomic uint64_t primitives_created;

opreg_status opreg__dnnl_fail(dnnl_status_t st, const char *what) {
    opreg_status code = st == dnnl_out_of_memory   ? OPREG_ERR_OUT_OF_MEMORY
                        : st == dnnl_unimplemented ? OPREG_ERR_UNSUPPORTED
                                                   : OPREG_ERR_INTERNAL;
    return opreg__fail(code, "oneDNN: %s failed: %s", what, dnnl_status2str(st));
}

static void thread_state_free(void *p) {
    struct thread_state *ts = p;
    if (ts->stream) dnnl_stream_destroy(ts->stream);
    free(ts->scratch.p);
    free(ts->dnnl.p);
    free(ts);
}

/* The engine lives as long as the process: primitives and streams of any
 * thread refer to it, and there is no safe moment to destroy it. */
static void engine_init(void) {
    engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    tls_key_status = opreg__thread_key_create(&tls_key, thread_state_free);
}

static opreg_status get_engine(void) {
    pthread_once(&engine_once, engine_init);
    if (engine_status != dnnl_success) return opreg__dnnl_fail(engine_status, "engine creation");
    if (tls_key_status != 0)
        return opreg__fail(OPREG_ERR_INTERNAL, "oneDNN: no thread-local key for streams");
    return OPREG_OK;
}

/* A stream per thread: a oneDNN stream must not be used by two threads at
 * once, and creating one per call would add an allocation to every call. */
static opreg_status thread_state(struct thread_state **out) {
    struct thread_state *ts;
    dnnl_status_t st;
    OPREG__TRY(get_engine());
    ts = pthread_getspecific(tls_key);
    if (ts) {
        *out = ts;
        return OPREG_OK;
    }
    ts = calloc(1, sizeof *ts);
    if (!ts) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "oneDNN: no memory for a stream");
    st = dnnl_stream_create(&ts->stream, engine, dnnl_stream_default_flags);
    if (st != dnnl_success || pthread_setspecific(tls_key, ts) != 0) {
        thread_state_free(ts);
        return st != dnnl_success ? opreg__dnnl_fail(st, "stream creation")
                                  : opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "oneDNN: no TLS slot");
    }
    *out = ts;
    return OPREG_OK;
}

static opreg_status buffer_reserve(struct opreg__buffer *b, size_t bytes, const char *what) {
    if (opreg__buffer_reserve(b, bytes)) return OPREG_OK;
    return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "oneDNN: no memory for %zu bytes of %s", bytes,
                       what);
}

opreg_status opreg__onednn_scratch(size_t bytes, void **out) {
    struct thread_state *ts;
    OPREG__TRY(thread_state(&ts));
    OPREG__TRY(buffer_reserve(&ts->scratch, bytes, "scratch"));
    *out = ts->scratch.p;
    return OPREG_OK;
}

static bool key_eq(const opreg__mm_key *a, const opreg__mm_key *b) {
    return a->src == b->src && a->wei == b->wei && a->bias == b->bias && a->dst == b->dst &&
           a->m == b->m && a->n == b->n && a->k == b->k && a->threads == b->threads;
}

/* oneDNN runs on the calling thread's OpenMP team. It is made as wide as
 * opreg's pool (include/opreg/threads.h), so that a program that sets one
 * width, or lends its own pool of that width, gets it from both. Primitives
 * balance their work for the width they were made for, so the width is
 * part of the cache key. */
static int team_width(void) {
#ifdef _OPENMP
    int w = opreg__pool_threads();
    if (omp_get_max_threads() != w) omp_set_num_threads(w);
    return w;
#else
    return 1;
#endif
}

static void prim_destroy(opreg__mm_prim *p) {
    if (!p) return;
    if (p->prim) dnnl_primitive_destroy(p->prim);
    free(p);
}

/* Build the descriptors and, when oneDNN has an implementation, the
 * primitive. "No implementation" is a valid result, cached like any other. */
static opreg_status prim_create(const opreg__mm_key *key, opreg__mm_prim **out) {
    dnnl_dims_t sd = { key->m, key->k }, wd = { key->k, key->n }, dd = { key->m, key->n };
    dnnl_dims_t bd = { 1, key->n };
    bool has_bias = key->bias != dnnl_data_type_undef;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    const char *impl = NULL;
    dnnl_status_t st;
    opreg__mm_prim *p = calloc(1, sizeof *p);
    if (!p) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "oneDNN: no memory for a primitive");
    p->key = *key;
    st = dnnl_memory_desc_init_by_tag(&p->src_md, 2, sd, key->src, dnnl_ab);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&p->wei_md, 2, wd, key->wei, dnnl_ba);
    if (st == dnnl_success) st = dnnl_memory_desc_init_by_tag(&p->dst_md, 2, dd, key->dst, dnnl_ab);
    if (st == dnnl_success && has_bias)
        st = dnnl_memory_desc_init_by_tag(&p->bias_md, 2, bd, key->bias, dnnl_ab);
    if (st == dnnl_success)
        st = dnnl_matmul_desc_init(&desc, &p->src_md, &p->wei_md, has_bias ? &p->bias_md : NULL,
                                   &p->dst_md);
    if (st == dnnl_success) st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (st == dnnl_success) st = dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL);
    if (attr) dnnl_primitive_attr_destroy(attr); /* the descriptor keeps its own copy */
    if (st == dnnl_unimplemented) {
        snprintf(p->impl, sizeof p->impl, "none");
        *out = p;
        return OPREG_OK;
    }
    if (st == dnnl_success) st = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    if (st == dnnl_success) {
        const dnnl_memory_desc_t *smd =
            dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        snprintf(p->impl, sizeof p->impl, "%s", impl ? impl : "?");
        if (smd) {
            p->scratch_md = *smd;
            p->scratch_bytes = dnnl_memory_desc_get_size(smd);
        }
        st = dnnl_primitive_create(&p->prim, pd);
    }
    if (pd) dnnl_primitive_desc_destroy(pd); /* the primitive keeps its own copy */
    if (st != dnnl_success) {
        prim_destroy(p);
        return opreg__dnnl_fail(st, "matmul primitive creation");
    }
    atomic_fetch_add(&primitives_created, 1);
    *out = p;
    return OPREG_OK;
}

static opreg__mm_prim *cache_find(const opreg__mm_key *key) {
    for (int i = 0; i < CACHE_CAP; i++)
        if (cache[i] && key_eq(&cache[i]->key, key)) return cache[i];
    return NULL;
}

/* Put @p p in a free slot or the least recently used one; returns the entry
 * that must be destroyed by the caller (outside the lock), if any. */
static opreg__mm_prim *cache_insert(opreg__mm_prim *p) {
    int victim = 0;
    opreg__mm_prim *old;
    for (int i = 0; i < CACHE_CAP; i++) {
        if (!cache[i]) {
            victim = i;
            break;
        }
        if (cache[i]->stamp < cache[victim]->stamp) victim = i;
    }
    old = cache[victim];
    cache[victim] = p;
    if (old && old->refs > 0) {
        old->detached = true;
        old = NULL;
    }
    return old;
}

static opreg_status unsupported(const opreg__mm_key *key) {
    return opreg__fail(OPREG_ERR_UNSUPPORTED,
                       "oneDNN: no matmul for %s x %s -> %s on this CPU (%" PRId64 "x%" PRId64
                       "x%" PRId64 ")",
                       dnnl_dt2str(key->src), dnnl_dt2str(key->wei), dnnl_dt2str(key->dst), key->m,
                       key->n, key->k);
}

opreg_status opreg__mm_acquire(const opreg__mm_key *asked, opreg__mm_prim **out) {
    opreg__mm_prim *p, *fresh = NULL, *drop = NULL;
    opreg__mm_key sized = *asked;
    const opreg__mm_key *key = &sized;
    sized.threads = team_width();
    OPREG__TRY(get_engine());
    pthread_mutex_lock(&cache_lock);
    p = cache_find(key);
    if (!p) {
        pthread_mutex_unlock(&cache_lock);
        OPREG__TRY(prim_create(key, &fresh));
        pthread_mutex_lock(&cache_lock);
        p = cache_find(key); /* another thread may have made it meanwhile */
        if (p) {
            drop = fresh;
        } else {
            p = fresh;
            drop = cache_insert(p);
        }
    }
    p->refs++;
    p->stamp = ++cache_tick;
    pthread_mutex_unlock(&cache_lock);
    prim_destroy(drop);
    if (!p->prim) {
        opreg__mm_release(p);
        return unsupported(key);
    }
    *out = p;
    return OPREG_OK;
}

void opreg__mm_release(opreg__mm_prim *p) {
    bool destroy;
    if (!p) return;
    pthread_mutex_lock(&cache_lock);
    destroy = --p->refs == 0 && p->detached;
    pthread_mutex_unlock(&cache_lock);
    if (destroy) prim_destroy(p);
}

const char *opreg__mm_impl(const opreg__mm_prim *p) {
    return p->impl;
}

opreg_status opreg__mm_execute(const opreg__mm_prim *p, const void *src, const void *wei,
                               const void *bias, void *dst) {
    struct thread_state *ts;
    dnnl_memory_t mem[5] = { NULL, NULL, NULL, NULL, NULL };
    dnnl_exec_arg_t args[5];
    dnnl_status_t st;
    int n = 3;
    OPREG__TRY(thread_state(&ts));
    if (p->scratch_bytes)
        OPREG__TRY(buffer_reserve(&ts->dnnl, p->scratch_bytes, "oneDNN scratchpad"));
    /* Memory objects only wrap the caller's pointers (no allocation of
     * data); oneDNN's API takes void * but reads src, weights and bias. */
    st = dnnl_memory_create(&mem[0], &p->src_md, engine, (void *)src);
    if (st == dnnl_success) st = dnnl_memory_create(&mem[1], &p->wei_md, engine, (void *)wei);
    if (st == dnnl_success) st = dnnl_memory_create(&mem[2], &p->dst_md, engine, dst);
    if (st == dnnl_success && bias)
        st = dnnl_memory_create(&mem[3], &p->bias_md, engine, (void *)bias);
    if (st == dnnl_success && p->scratch_bytes)
        st = dnnl_memory_create(&mem[4], &p->scratch_md, engine, ts->dnnl.p);
    if (st == dnnl_success) {
        args[0] = (dnnl_exec_arg_t){ DNNL_ARG_SRC, mem[0] };
        args[1] = (dnnl_exec_arg_t){ DNNL_ARG_WEIGHTS, mem[1] };
        args[2] = (dnnl_exec_arg_t){ DNNL_ARG_DST, mem[2] };
        if (bias) args[n++] = (dnnl_exec_arg_t){ DNNL_ARG_BIAS, mem[3] };
        if (p->scratch_bytes) args[n++] = (dnnl_exec_arg_t){ DNNL_ARG_SCRATCHPAD, mem[4] };
        st = dnnl_primitive_execute(p->prim, ts->stream, n, args);
    }
    if (st == dnnl_success) st = dnnl_stream_wait(ts->stream);
    for (int i = 0; i < 5; i++)
        if (mem[i]) dnnl_memory_destroy(mem[i]);
    return st == dnnl_success ? OPREG_OK : opreg__dnnl_fail(st, "matmul execution");
}

size_t opreg__mm_scratchpad_bytes(const opreg__mm_prim *p) {
    return p->scratch_bytes;
}

uint64_t opreg__onednn_primitives_created(void) {
    return atomic_load(&primitives_created);
}
