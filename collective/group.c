/* The process groups: a process-wide table of named engines, the one call
 * path into them (lookup, device check, optional cross-rank argument check,
 * the engine's run, its message), and the watchdog of their timeouts.
 *
 * Lifetime. A call holds its group (refs) from lookup to return, so that
 * opreg_group_destroy() from another thread never frees an engine under a
 * running collective: destroy marks the group, and whoever drops the last
 * hold calls the engine's destroy, outside the lock. A destroyed group
 * stays in the table as a tombstone (a name and no engine), so that a late
 * call says "was destroyed" rather than "unknown"; registering the name
 * again makes a new group beside it.
 *
 * Timeouts. A call on a group with a timeout links a record (on its own
 * stack) into the group while it runs. One watchdog thread, running only
 * while some live group has a timeout, looks at the records ten times a
 * second; a late one is logged and the group aborted through its engine
 * (MPI_Abort, ncclCommAbort), which is what ends a collective that some
 * rank never joined. Blocking engine calls stay blocking: nonblocking MPI
 * collectives with polling cost 0.7 us more at 8 bytes and up to 1.4x the
 * time at 1 MiB (Open MPI 4.1, 2 ranks, 2026-12-04), and the watchdog's
 * whole cost on the call path is two coarse clock reads. */
#define _GNU_SOURCE /* CLOCK_MONOTONIC_COARSE */
#include "collective/collective_internal.h"

#include "common/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NAME_CAP   128
#define ENGINE_CAP 32
#define WHY_CAP    1024
/* Watchdog period. */
#define TICK_MS 100

typedef struct call_record {
    struct call_record *next;
    const char *op;
    int64_t start_ms;
    bool reported;
} call_record;

typedef struct group {
    struct group *next;
    char name[NAME_CAP];
    char engine[ENGINE_CAP];
    opreg_group_desc desc; /* engine points at the copy above */
    unsigned refs;         /* the table's own hold (while live) + calls in flight */
    bool destroyed;
    bool aborted; /* timed out: the engine was aborted */
    call_record *active;
} group;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t watchdog_wake = PTHREAD_COND_INITIALIZER;
static group *groups;
static unsigned timed_groups; /* live groups with a timeout */
static bool watchdog_running;

static const char *const reduce_names[] = { "sum", "avg", "max", "min", "product" };
static const char *const kind_names[] = { "all_reduce", "all_gather", "reduce_scatter",
                                          "all_to_all", "broadcast",  "barrier" };

const char *opreg_reduce_op_name(opreg_reduce_op op) {
    return (unsigned)op < sizeof reduce_names / sizeof reduce_names[0] ? reduce_names[op] : NULL;
}

opreg_status opreg_reduce_op_from_name(opreg_reduce_op *out, const char *name) {
    if (!out || !name) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "reduce_op: NULL argument");
    for (size_t i = 0; i < sizeof reduce_names / sizeof reduce_names[0]; i++) {
        if (strcmp(name, reduce_names[i]) == 0) {
            *out = (opreg_reduce_op)i;
            return OPREG_OK;
        }
    }
    return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                       "unknown reduce_op '%s' (one of sum, avg, max, min, product)", name);
}

const char *opreg_collective_kind_name(opreg_collective_kind kind) {
    return (unsigned)kind < sizeof kind_names / sizeof kind_names[0] ? kind_names[kind] : NULL;
}

static int64_t now_ms(void) {
    struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool name_ok(const char *name, size_t len) {
    if (len == 0 || len >= NAME_CAP) return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.' || c == ':';
        if (!ok) return false;
    }
    return true;
}

/* Under the lock: the live group of that name, else its newest tombstone. */
static group *find_locked(const char *name, size_t len) {
    group *tomb = NULL;
    for (group *g = groups; g; g = g->next) {
        if (strlen(g->name) != len || memcmp(g->name, name, len) != 0) continue;
        if (!g->destroyed) return g;
        if (!tomb) tomb = g;
    }
    return tomb;
}

/* Under the lock: the live groups' names, for messages. */
static void live_names_locked(char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (group *g = groups; g && n + 1 < cap; g = g->next) {
        if (g->destroyed) continue;
        int w = snprintf(buf + n, cap - n, "%s'%s' (%s)", n ? ", " : "", g->name, g->engine);
        if (w < 0) break;
        n += (size_t)w < cap - n ? (size_t)w : cap - n - 1;
    }
    if (!n) snprintf(buf, cap, "none");
}

/* Under the lock: the failure for a name that names no live group. */
static opreg_status not_found_locked(const group *g, const char *op, const char *name, size_t len) {
    char live[512];
    live_names_locked(live, sizeof live);
    if (g)
        return opreg__fail(OPREG_ERR_NOT_FOUND,
                           "%s: process group '%.*s' was destroyed (live groups: %s)", op, (int)len,
                           name, live);
    return opreg__fail(OPREG_ERR_NOT_FOUND,
                       "%s: no process group named '%.*s' (live groups: %s); register one "
                       "first (opreg_mpi_group_create, opreg_nccl_group_create or "
                       "opreg_group_register)",
                       op, (int)len, name, live);
}

/* Drop a hold. Under the lock; returns the context to destroy outside it. */
static bool unref_locked(group *g, void (**destroy)(void *), void **context) {
    if (--g->refs) return false;
    *destroy = g->desc.destroy;
    *context = g->desc.context;
    g->desc.context = NULL;
    return *destroy != NULL;
}

static void *watchdog(void *arg);

/* Under the lock: make sure the watchdog runs. */
static void watchdog_start_locked(void) {
    if (watchdog_running) return;
    pthread_t t;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, watchdog, NULL) == 0)
        watchdog_running = true;
    else
        opreg__log(OPREG_LOG_ERROR, "process groups: the timeout watchdog could not start");
    pthread_attr_destroy(&attr);
}

static void *watchdog(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    while (timed_groups > 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec += 1;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&watchdog_wake, &lock, &until);
        int64_t now = now_ms();
    rescan:
        for (group *g = groups; g; g = g->next) {
            if (g->destroyed || !g->desc.timeout_ms) continue;
            for (call_record *r = g->active; r; r = r->next) {
                if (r->reported || now - r->start_ms <= (int64_t)g->desc.timeout_ms) continue;
                r->reported = true;
                g->aborted = true;
                g->refs++;
                char msg[512];
                snprintf(msg, sizeof msg,
                         "%s on process group '%s' (%s, rank %d of %d) has not finished after "
                         "%u ms; aborting the group",
                         r->op, g->name, g->engine, g->desc.rank, g->desc.size, g->desc.timeout_ms);
                void (*abort_fn)(void *, const char *) = g->desc.abort;
                void *ctx = g->desc.context;
                pthread_mutex_unlock(&lock);
                opreg__log(OPREG_LOG_ERROR, "%s", msg);
                if (abort_fn) abort_fn(ctx, msg);
                pthread_mutex_lock(&lock);
                void (*destroy)(void *) = NULL;
                void *dctx = NULL;
                if (unref_locked(g, &destroy, &dctx)) {
                    pthread_mutex_unlock(&lock);
                    destroy(dctx);
                    pthread_mutex_lock(&lock);
                }
                goto rescan; /* the lists may have changed while unlocked */
            }
        }
    }
    watchdog_running = false;
    pthread_mutex_unlock(&lock);
    return NULL;
}

static uint32_t env_u32(const char *var, uint32_t fallback) {
    const char *v = getenv(var);
    if (!v || !*v) return fallback;
    char *end;
    unsigned long n = strtoul(v, &end, 10);
    if (*end || n > UINT32_MAX) {
        opreg__log(OPREG_LOG_WARN, "%s='%s' is not a number; ignored", var, v);
        return fallback;
    }
    return (uint32_t)n;
}

opreg_status opreg_group_register(const char *name, const opreg_group_desc *desc) {
    if (!name || !desc)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_group_register: NULL %s",
                           name ? "desc" : "name");
    size_t len = strlen(name);
    if (!name_ok(name, len))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_group_register: bad group name '%s' (1 to %d letters, digits "
                           "or _ - . :)",
                           name, NAME_CAP - 1);
    if (desc->struct_size < sizeof(opreg_group_desc))
        return opreg__fail(OPREG_ERR_ABI_MISMATCH,
                           "opreg_group_register('%s'): struct_size %zu, at least %zu needed", name,
                           desc->struct_size, sizeof(opreg_group_desc));
    if (!desc->run)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_group_register('%s'): no run", name);
    if (desc->size < 1 || desc->rank < 0 || desc->rank >= desc->size)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_group_register('%s'): rank %d of a group of %d", name, desc->rank,
                           desc->size);
    group *g = calloc(1, sizeof *g);
    if (!g) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "opreg_group_register: out of memory");
    memcpy(g->name, name, len + 1);
    snprintf(g->engine, sizeof g->engine, "%s", desc->engine ? desc->engine : "engine");
    g->desc = *desc;
    g->desc.struct_size = sizeof g->desc;
    g->desc.engine = g->engine;
    if (env_u32("OPREG_COLLECTIVE_CHECK", 0)) g->desc.flags |= OPREG_GROUP_CHECK_ARGS;
    g->desc.timeout_ms = env_u32("OPREG_COLLECTIVE_TIMEOUT_MS", g->desc.timeout_ms);
    g->refs = 1;

    pthread_mutex_lock(&lock);
    group *old = find_locked(name, len);
    if (old && !old->destroyed) {
        pthread_mutex_unlock(&lock);
        free(g);
        return opreg__fail(OPREG_ERR_ALREADY_DEFINED,
                           "opreg_group_register: a process group named '%s' exists (%s, rank "
                           "%d of %d); destroy it first",
                           name, old->engine, old->desc.rank, old->desc.size);
    }
    g->next = groups;
    groups = g;
    if (g->desc.timeout_ms) {
        timed_groups++;
        watchdog_start_locked();
    }
    pthread_mutex_unlock(&lock);
    return OPREG_OK;
}

opreg_status opreg_group_destroy(const char *name) {
    if (!name) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_group_destroy: NULL name");
    size_t len = strlen(name);
    pthread_mutex_lock(&lock);
    group *g = find_locked(name, len);
    if (!g || g->destroyed) {
        opreg_status st = not_found_locked(g, "opreg_group_destroy", name, len);
        pthread_mutex_unlock(&lock);
        return st;
    }
    g->destroyed = true;
    if (g->desc.timeout_ms && --timed_groups == 0) pthread_cond_signal(&watchdog_wake);
    void (*destroy)(void *) = NULL;
    void *ctx = NULL;
    bool last = unref_locked(g, &destroy, &ctx);
    pthread_mutex_unlock(&lock);
    if (last) destroy(ctx);
    return OPREG_OK;
}

opreg_status opreg_group_info(const char *name, int *rank, int *size, DLDeviceType *device_type,
                              const char **engine) {
    if (!name) return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_group_info: NULL name");
    size_t len = strlen(name);
    pthread_mutex_lock(&lock);
    group *g = find_locked(name, len);
    if (!g || g->destroyed) {
        opreg_status st = not_found_locked(g, "opreg_group_info", name, len);
        pthread_mutex_unlock(&lock);
        return st;
    }
    if (rank) *rank = g->desc.rank;
    if (size) *size = g->desc.size;
    if (device_type) *device_type = g->desc.device_type;
    if (engine) *engine = g->engine;
    pthread_mutex_unlock(&lock);
    return OPREG_OK;
}

opreg_status opreg__group_size(const char *name, size_t len, const char *op, int *size) {
    pthread_mutex_lock(&lock);
    group *g = find_locked(name, len);
    opreg_status st = OPREG_OK;
    if (!g || g->destroyed)
        st = not_found_locked(g, op, name, len);
    else
        *size = g->desc.size;
    pthread_mutex_unlock(&lock);
    return st;
}

/* ---- the cross-rank argument check (OPREG_GROUP_CHECK_ARGS) -------------- */

enum { FP_KIND, FP_DTYPE, FP_COUNT, FP_ROOT, FP_REDUCE, FP_NDIM, FP_DIM0, FP_LEN = FP_DIM0 + 8 };

static const char *const fp_names[FP_LEN] = {
    "the op",   "the dtype",     "the element count",
    "the root", "the reduction", "the tensor's rank",
    "dim 0",    "dim 1",         "dim 2",
    "dim 3",    "dim 4",         "dim 5",
    "dim 6",    "dim 7",
};

static void fp_value_text(char *buf, size_t cap, int field, int64_t v) {
    const char *s = NULL;
    if (field == FP_KIND)
        s = opreg_collective_kind_name((opreg_collective_kind)v);
    else if (field == FP_DTYPE)
        s = opreg_dtype_name((opreg_dtype)v);
    else if (field == FP_REDUCE)
        s = opreg_reduce_op_name((opreg_reduce_op)v);
    if (s)
        snprintf(buf, cap, "%s", s);
    else
        snprintf(buf, cap, "%lld", (long long)v);
}

/* One engine collective on small host buffers, for the check. */
static opreg_status check_run(const group *g, opreg_collective *c, char *why) {
    c->struct_size = sizeof *c;
    c->device = (DLDevice){ kDLCPU, 0 };
    return g->desc.run(g->desc.context, c, why, WHY_CAP);
}

static opreg_status check_args(const group *g, const opreg_collective *c, const DLTensor *t,
                               char *why) {
    int64_t fp[FP_LEN] = { 0 };
    fp[FP_KIND] = c->kind;
    if (c->kind != OPREG_COLLECTIVE_BARRIER) {
        fp[FP_DTYPE] = c->dtype;
        fp[FP_COUNT] = c->kind == OPREG_COLLECTIVE_ALL_TO_ALL ? 0 : (int64_t)c->count;
        fp[FP_ROOT] = c->kind == OPREG_COLLECTIVE_BROADCAST ? c->root : 0;
        bool reduces =
            c->kind == OPREG_COLLECTIVE_ALL_REDUCE || c->kind == OPREG_COLLECTIVE_REDUCE_SCATTER;
        fp[FP_REDUCE] = reduces ? c->reduce_op : 0;
        /* all_to_all's dim 0 legitimately differs; its splits are checked below. */
        if (t) {
            fp[FP_NDIM] = t->ndim;
            for (int d = c->kind == OPREG_COLLECTIVE_ALL_TO_ALL ? 1 : 0; d < t->ndim && d < 8; d++)
                fp[FP_DIM0 + d] = t->shape[d];
        }
    }
    int64_t both[2 * FP_LEN];
    for (int i = 0; i < FP_LEN; i++) {
        both[i] = fp[i];
        both[FP_LEN + i] = -fp[i];
    }
    opreg_collective m = { .kind = OPREG_COLLECTIVE_ALL_REDUCE,
                           .send = both,
                           .recv = both,
                           .count = 2 * FP_LEN,
                           .dtype = OPREG_DTYPE_I64,
                           .reduce_op = OPREG_REDUCE_MAX };
    opreg_status st = check_run(g, &m, why);
    if (st != OPREG_OK) return st;
    for (int i = 0; i < FP_LEN; i++) {
        int64_t hi = both[i], lo = -both[FP_LEN + i];
        if (hi == lo) continue;
        char mine[32], a[32], b[32];
        fp_value_text(mine, sizeof mine, i, fp[i]);
        fp_value_text(a, sizeof a, i, lo);
        fp_value_text(b, sizeof b, i, hi);
        snprintf(why, WHY_CAP,
                 "the ranks disagree on %s: this rank has %s, the group has %s to %s "
                 "(checked because of OPREG_GROUP_CHECK_ARGS)",
                 fp_names[i], mine, a, b);
        return OPREG_ERR_SHAPE;
    }
    if (c->kind != OPREG_COLLECTIVE_ALL_TO_ALL) return OPREG_OK;

    /* Every rank sends what it will send to each peer; each compares what
     * arrives with what it expects, and all learn whether any disagreed. */
    int n = g->desc.size;
    int64_t *buf = malloc(2 * (size_t)n * sizeof *buf);
    size_t *counts = malloc(2 * (size_t)n * sizeof *counts);
    if (!buf || !counts) {
        free(buf);
        free(counts);
        snprintf(why, WHY_CAP, "out of memory for the argument check");
        return OPREG_ERR_OUT_OF_MEMORY;
    }
    for (int j = 0; j < n; j++) {
        buf[j] = (int64_t)c->send_counts[j];
        counts[j] = 1;             /* counts */
        counts[n + j] = (size_t)j; /* displacements */
    }
    opreg_collective a2a = { .kind = OPREG_COLLECTIVE_ALL_TO_ALL,
                             .send = buf,
                             .recv = buf + n,
                             .send_counts = counts,
                             .send_displs = counts + n,
                             .recv_counts = counts,
                             .recv_displs = counts + n,
                             .dtype = OPREG_DTYPE_I64 };
    st = check_run(g, &a2a, why);
    int64_t bad = -1;
    for (int j = 0; st == OPREG_OK && j < n && bad < 0; j++)
        if (buf[n + j] != (int64_t)c->recv_counts[j]) bad = j;
    if (st == OPREG_OK) {
        int64_t any = bad;
        opreg_collective m2 = { .kind = OPREG_COLLECTIVE_ALL_REDUCE,
                                .send = &any,
                                .recv = &any,
                                .count = 1,
                                .dtype = OPREG_DTYPE_I64,
                                .reduce_op = OPREG_REDUCE_MAX };
        st = check_run(g, &m2, why);
        if (st == OPREG_OK && bad >= 0) {
            snprintf(why, WHY_CAP,
                     "rank %lld sends %lld elements to this rank, which expects %zu "
                     "(output_split_sizes and the peers' input_split_sizes disagree)",
                     (long long)bad, (long long)buf[n + bad], c->recv_counts[bad]);
            st = OPREG_ERR_SHAPE;
        } else if (st == OPREG_OK && any >= 0) {
            snprintf(why, WHY_CAP,
                     "another rank's output_split_sizes disagree with what its peers send");
            st = OPREG_ERR_SHAPE;
        }
    }
    free(buf);
    free(counts);
    return st;
}

/* ---- the call path ----------------------------------------------------------- */

opreg_status opreg__group_call(const char *name, size_t len, const char *op,
                               const opreg_collective *c, const DLTensor *tensor) {
    pthread_mutex_lock(&lock);
    group *g = find_locked(name, len);
    if (!g || g->destroyed) {
        opreg_status st = not_found_locked(g, op, name, len);
        pthread_mutex_unlock(&lock);
        return st;
    }
    if (g->aborted) {
        pthread_mutex_unlock(&lock);
        return opreg__fail(OPREG_ERR_TIMEOUT,
                           "%s: process group '%.*s' was aborted after a collective timed out; "
                           "destroy it and make a new communicator",
                           op, (int)len, name);
    }
    if (c->kind != OPREG_COLLECTIVE_BARRIER && c->device.device_type != g->desc.device_type) {
        char want[32], have[32];
        opreg_device_format((DLDevice){ g->desc.device_type, 0 }, want, sizeof want);
        opreg_device_format(c->device, have, sizeof have);
        want[strcspn(want, ":")] = '\0'; /* the device type alone */
        pthread_mutex_unlock(&lock);
        return opreg__fail(OPREG_ERR_DEVICE_MISMATCH,
                           "%s: process group '%.*s' runs on %s (%s tensors); the tensors are "
                           "on %s",
                           op, (int)len, name, g->engine, want, have);
    }
    g->refs++;
    call_record rec = { .op = op };
    if (g->desc.timeout_ms) {
        rec.start_ms = now_ms();
        rec.next = g->active;
        g->active = &rec;
    }
    pthread_mutex_unlock(&lock);

    char why[WHY_CAP];
    why[0] = '\0';
    opreg_status st = OPREG_OK;
    if (g->desc.flags & OPREG_GROUP_CHECK_ARGS) st = check_args(g, c, tensor, why);
    if (st == OPREG_OK) st = g->desc.run(g->desc.context, c, why, sizeof why);

    pthread_mutex_lock(&lock);
    if (g->desc.timeout_ms) {
        call_record **p = &g->active;
        while (*p != &rec)
            p = &(*p)->next;
        *p = rec.next;
    }
    if (st != OPREG_OK && rec.reported) st = OPREG_ERR_TIMEOUT;
    if (st != OPREG_OK)
        opreg__fail(st, "%s on process group '%s' (%s, rank %d of %d): %s", op, g->name, g->engine,
                    g->desc.rank, g->desc.size,
                    rec.reported ? "timed out, and the group was aborted"
                    : why[0]     ? why
                                 : "failed");
    void (*destroy)(void *) = NULL;
    void *ctx = NULL;
    bool last = unref_locked(g, &destroy, &ctx);
    pthread_mutex_unlock(&lock);
    if (last) destroy(ctx);
    return st;
}

opreg_status opreg_group_run(const char *name, const opreg_collective *c) {
    if (!name || !c)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_group_run: NULL %s",
                           name ? "collective" : "name");
    if (c->struct_size < sizeof *c)
        return opreg__fail(OPREG_ERR_ABI_MISMATCH,
                           "opreg_group_run: struct_size %zu, at least %zu needed", c->struct_size,
                           sizeof *c);
    if (!opreg_collective_kind_name(c->kind))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_group_run: unknown kind %d",
                           (int)c->kind);
    return opreg__group_call(name, strlen(name), "opreg_group_run", c, NULL);
}
