/* The NCCL engine of process groups: one opreg_collective at a time onto
 * the matching NCCL call of a communicator that the program made, enqueued
 * on the calling thread's current opreg stream of the communicator's device
 * (include/opreg/cuda.h), without waiting, as the CUDA kernels are.
 *
 * Loading. libnccl.so.2 is opened at run time, once (pthread_once), so that
 * libopreg loads where NCCL is not installed; nccl.h gives the types and
 * the enum values only (where it is missing at build time, the few values
 * of NCCL's ABI used here are declared below), and every call goes through
 * a pointer looked up by name. A program that already loaded NCCL (linked,
 * or through PyTorch) has it found by its soname: the communicator and the
 * calls share one copy.
 *
 * Types. The dtypes NCCL knows reduce with NCCL's own reductions (sum, avg,
 * max, min, prod; avg on integers truncates). bool and int16, which NCCL
 * lacks, travel as bytes and are not reduced. The fp8 types travel as
 * bytes too, so that any NCCL 2 moves them; only their reductions use
 * ncclFloat8e4m3/e5m2, which need NCCL 2.24 (and a GPU that NCCL reduces
 * fp8 on).
 *
 * Host buffers. opreg's cross-rank argument check (OPREG_GROUP_CHECK_ARGS)
 * runs small collectives on host arrays even on a device group: they are
 * copied to a scratch buffer of the engine's device, reduced there, and
 * copied back. The barrier is an all_reduce of one int on that scratch.
 *
 * Waiting. Where the engine itself waits (the barrier, host buffers), it
 * polls cudaStreamQuery and ncclCommGetAsyncError with a short sleep
 * instead of blocking in the CUDA runtime, so that a failed peer ends the
 * wait with NCCL's error and a timeout ends it through abort.
 *
 * Threads. A communicator takes one call at a time, so the engine's calls
 * are serialised. abort (from opreg's watchdog, while a call runs) marks
 * the engine first, under a lock of its own that every query of the
 * communicator takes, and then calls ncclCommAbort, which frees the
 * communicator: nothing here touches it afterwards, and neither may the
 * program. Otherwise the communicator stays the program's: destroy frees
 * only the scratch buffer, and the program calls ncclCommDestroy after
 * opreg_group_destroy(). */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "backends/cuda/cuda_internal.h"
#include "common/dynload.h"
#include "common/internal.h"
#include "opreg/collective.h"
#include "opreg/cuda.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef OPREG_HAVE_NCCL_H
#include <nccl.h>
#define OPREG_NCCL_FP8 (NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0))
#else
/* No nccl.h where this was built: the part of NCCL 2's ABI used here. */
typedef struct ncclComm *ncclComm_t;
typedef enum { ncclSuccess = 0, ncclInProgress = 7 } ncclResult_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;
typedef enum {
    ncclInt8 = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclInt64 = 4,
    ncclFloat16 = 6,
    ncclFloat32 = 7,
    ncclFloat64 = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10, /* NCCL 2.24 */
    ncclFloat8e5m2 = 11,
} ncclDataType_t;
#define OPREG_NCCL_FP8 1
#endif

#define NCCL_LIBRARY "libnccl.so.2"
/* Staging offsets are rounded to this many bytes (NCCL's fast paths). */
#define SCRATCH_ALIGN 256

/* ---- the library, loaded once -------------------------------------------- */

typedef ncclResult_t (*nccl_all_reduce_fn)(const void *, void *, size_t, ncclDataType_t,
                                           ncclRedOp_t, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*nccl_all_gather_fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,
                                           cudaStream_t);
typedef ncclResult_t (*nccl_reduce_scatter_fn)(const void *, void *, size_t, ncclDataType_t,
                                               ncclRedOp_t, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*nccl_broadcast_fn)(const void *, void *, size_t, ncclDataType_t, int,
                                          ncclComm_t, cudaStream_t);
typedef ncclResult_t (*nccl_send_fn)(const void *, size_t, ncclDataType_t, int, ncclComm_t,
                                     cudaStream_t);
typedef ncclResult_t (*nccl_recv_fn)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*nccl_group_fn)(void);
typedef ncclResult_t (*nccl_comm_int_fn)(const ncclComm_t, int *);
typedef ncclResult_t (*nccl_async_error_fn)(ncclComm_t, ncclResult_t *);
typedef ncclResult_t (*nccl_comm_abort_fn)(ncclComm_t);
typedef const char *(*nccl_error_string_fn)(ncclResult_t);
typedef const char *(*nccl_last_error_fn)(ncclComm_t);

typedef struct nccl_api {
    nccl_all_reduce_fn all_reduce;
    nccl_all_gather_fn all_gather;
    nccl_reduce_scatter_fn reduce_scatter;
    nccl_broadcast_fn broadcast;
    nccl_send_fn send;
    nccl_recv_fn recv;
    nccl_group_fn group_start, group_end;
    nccl_comm_int_fn comm_count, comm_user_rank, comm_cu_device;
    nccl_async_error_fn comm_get_async_error;
    nccl_comm_abort_fn comm_abort;
    nccl_error_string_fn get_error_string;
    nccl_last_error_fn get_last_error; /* NULL before NCCL 2.13 */
} nccl_api;

static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;
static nccl_api nccl;
static bool nccl_loaded;
static char nccl_why[512]; /* why not, when !nccl_loaded */

/* A function of the library; the first missing name is kept in *missing. */
static opreg__dl_fn nccl_need(void *lib, const char *name, const char **missing) {
    opreg__dl_fn fn = opreg__dl_func(lib, name);
    if (!fn && !*missing) *missing = name;
    return fn;
}

static void nccl_load(void) {
    const char *why = NULL, *missing = NULL;
    void *lib = opreg__dl_open(NCCL_LIBRARY, &why);
    if (!lib) {
        snprintf(nccl_why, sizeof nccl_why,
                 "%s cannot be loaded (%s); install NCCL 2 or add its folder to LD_LIBRARY_PATH",
                 NCCL_LIBRARY, why ? why : "unknown error");
        return;
    }
    nccl.all_reduce = (nccl_all_reduce_fn)nccl_need(lib, "ncclAllReduce", &missing);
    nccl.all_gather = (nccl_all_gather_fn)nccl_need(lib, "ncclAllGather", &missing);
    nccl.reduce_scatter = (nccl_reduce_scatter_fn)nccl_need(lib, "ncclReduceScatter", &missing);
    nccl.broadcast = (nccl_broadcast_fn)nccl_need(lib, "ncclBroadcast", &missing);
    nccl.send = (nccl_send_fn)nccl_need(lib, "ncclSend", &missing);
    nccl.recv = (nccl_recv_fn)nccl_need(lib, "ncclRecv", &missing);
    nccl.group_start = (nccl_group_fn)nccl_need(lib, "ncclGroupStart", &missing);
    nccl.group_end = (nccl_group_fn)nccl_need(lib, "ncclGroupEnd", &missing);
    nccl.comm_count = (nccl_comm_int_fn)nccl_need(lib, "ncclCommCount", &missing);
    nccl.comm_user_rank = (nccl_comm_int_fn)nccl_need(lib, "ncclCommUserRank", &missing);
    nccl.comm_cu_device = (nccl_comm_int_fn)nccl_need(lib, "ncclCommCuDevice", &missing);
    nccl.comm_get_async_error =
        (nccl_async_error_fn)nccl_need(lib, "ncclCommGetAsyncError", &missing);
    nccl.comm_abort = (nccl_comm_abort_fn)nccl_need(lib, "ncclCommAbort", &missing);
    nccl.get_error_string = (nccl_error_string_fn)nccl_need(lib, "ncclGetErrorString", &missing);
    nccl.get_last_error = (nccl_last_error_fn)opreg__dl_func(lib, "ncclGetLastError");
    if (missing) {
        snprintf(nccl_why, sizeof nccl_why, "%s has no function %s (NCCL 2.10 or newer is needed)",
                 NCCL_LIBRARY, missing);
        memset(&nccl, 0, sizeof nccl);
        opreg__dl_close(lib);
        return;
    }
    nccl_loaded = true; /* the library stays loaded for the process */
}

/* ---- the engine ------------------------------------------------------------ */

typedef struct nccl_engine {
    ncclComm_t comm; /* the program's; freed by ncclCommAbort once aborted */
    int rank, size, device;
    pthread_mutex_t lock;      /* one call at a time */
    pthread_mutex_t comm_lock; /* each query of comm, against abort */
    bool aborted;              /* under comm_lock */
    void *scratch;             /* device memory of `device`, or NULL */
    size_t scratch_bytes;
} nccl_engine;

static opreg_status cuda_failed(cudaError_t err, const char *call, char *why, size_t cap) {
    snprintf(why, cap, "%s failed: %s (%s)", call, cudaGetErrorString(err), cudaGetErrorName(err));
    (void)cudaGetLastError(); /* leave no error behind for the next CUDA call */
    return err == cudaErrorMemoryAllocation ? OPREG_ERR_OUT_OF_MEMORY : OPREG_ERR_DEVICE;
}

/* An NCCL failure: "<what>: <NCCL's text> (<its last message>)". */
static opreg_status nccl_failed(nccl_engine *e, ncclResult_t r, const char *what, char *why,
                                size_t cap) {
    const char *last = NULL;
    pthread_mutex_lock(&e->comm_lock);
    if (nccl.get_last_error && !e->aborted) last = nccl.get_last_error(e->comm);
    bool more = last && *last;
    snprintf(why, cap, "%s: %s%s%s%s", what, nccl.get_error_string(r), more ? " (" : "",
             more ? last : "", more ? ")" : "");
    pthread_mutex_unlock(&e->comm_lock);
    return OPREG_ERR_COMMUNICATION;
}

/* The failure of the NCCL call @p call. */
static opreg_status call_failed(nccl_engine *e, ncclResult_t r, const char *call, char *why,
                                size_t cap) {
    char what[96];
    snprintf(what, sizeof what, "%s failed", call);
    return nccl_failed(e, r, what, why, cap);
}

/* The communicator's state, looked at @p when ("after ncclAllReduce"):
 * OPREG_OK while it is healthy (*busy: a nonblocking communicator is still
 * working on a call). */
static opreg_status comm_health(nccl_engine *e, const char *when, bool *busy, char *why,
                                size_t cap) {
    ncclResult_t async = ncclSuccess, r;
    *busy = false;
    pthread_mutex_lock(&e->comm_lock);
    if (e->aborted) {
        pthread_mutex_unlock(&e->comm_lock);
        snprintf(why, cap, "the communicator was aborted (ncclCommAbort; seen %s)", when);
        return OPREG_ERR_COMMUNICATION;
    }
    r = nccl.comm_get_async_error(e->comm, &async);
    pthread_mutex_unlock(&e->comm_lock);
    if (r != ncclSuccess) return call_failed(e, r, "ncclCommGetAsyncError", why, cap);
    if (async == ncclInProgress) {
        *busy = true;
        return OPREG_OK;
    }
    if (async != ncclSuccess) {
        char what[128];
        snprintf(what, sizeof what, "the communicator failed (seen %s)", when);
        return nccl_failed(e, async, what, why, cap);
    }
    return OPREG_OK;
}

/* Sleep a little longer each round: 10 us doubling up to 1 ms. */
static void poll_pause(unsigned round) {
    long us = round < 7 ? 10L << round : 1000L;
    struct timespec ts = { 0, us * 1000L };
    nanosleep(&ts, NULL);
}

/* After an NCCL call returned @p r: its failure, or the communicator's. */
static opreg_status nccl_done(nccl_engine *e, ncclResult_t r, const char *call, char *why,
                              size_t cap) {
    if (r != ncclSuccess && r != ncclInProgress) return call_failed(e, r, call, why, cap);
    char when[96];
    snprintf(when, sizeof when, "after %s", call);
    bool busy;
    for (unsigned round = 0;; round++) {
        OPREG__TRY(comm_health(e, when, &busy, why, cap));
        if (!busy) return OPREG_OK;
        poll_pause(round); /* a nonblocking communicator finishing the call */
    }
}

/* Wait for @p stream without blocking in CUDA: the communicator's failure
 * or an abort ends the wait too. @p what names the work waited for. */
static opreg_status wait_stream(nccl_engine *e, cudaStream_t stream, const char *what, char *why,
                                size_t cap) {
    char when[96];
    snprintf(when, sizeof when, "while waiting for %s", what);
    bool busy;
    for (unsigned round = 0;; round++) {
        cudaError_t q = cudaStreamQuery(stream);
        if (q == cudaSuccess) return OPREG_OK;
        if (q != cudaErrorNotReady) return cuda_failed(q, "cudaStreamQuery", why, cap);
        OPREG__TRY(comm_health(e, when, &busy, why, cap));
        poll_pause(round);
    }
}

/* At least @p bytes of scratch on the engine's device, which is current. */
static opreg_status ensure_scratch(nccl_engine *e, size_t bytes, char *why, size_t cap) {
    if (e->scratch && e->scratch_bytes >= bytes) return OPREG_OK;
    size_t want = e->scratch_bytes ? e->scratch_bytes : 4096;
    while (want < bytes)
        want = want > SIZE_MAX / 2 ? bytes : want * 2;
    if (e->scratch) {
        cudaError_t f = cudaFree(e->scratch); /* idle: every user of it waited */
        e->scratch = NULL;
        e->scratch_bytes = 0;
        if (f != cudaSuccess) return cuda_failed(f, "cudaFree (scratch)", why, cap);
    }
    cudaError_t err = cudaMalloc(&e->scratch, want);
    if (err != cudaSuccess) {
        e->scratch = NULL;
        return cuda_failed(err, "cudaMalloc (scratch)", why, cap);
    }
    e->scratch_bytes = want;
    err = cudaMemset(e->scratch, 0, want);
    if (err != cudaSuccess) return cuda_failed(err, "cudaMemset (scratch)", why, cap);
    return OPREG_OK;
}

/* ---- mapping ------------------------------------------------------------ */

/* How @p dtype travels: as *type, *scale of them an element. *reducible:
 * whether NCCL reduces it. false: no NCCL type holds it. */
static bool nccl_type_of(opreg_dtype dtype, ncclDataType_t *type, size_t *scale, bool *reducible) {
    *scale = 1;
    *reducible = true;
    switch (dtype) {
    case OPREG_DTYPE_U8:
        *type = ncclUint8;
        return true;
    case OPREG_DTYPE_I8:
        *type = ncclInt8;
        return true;
    case OPREG_DTYPE_I32:
        *type = ncclInt32;
        return true;
    case OPREG_DTYPE_I64:
        *type = ncclInt64;
        return true;
    case OPREG_DTYPE_F16:
        *type = ncclFloat16;
        return true;
    case OPREG_DTYPE_F32:
        *type = ncclFloat32;
        return true;
    case OPREG_DTYPE_F64:
        *type = ncclFloat64;
        return true;
    case OPREG_DTYPE_BF16:
        *type = ncclBfloat16;
        return true;
    case OPREG_DTYPE_F8_E4M3FN:
    case OPREG_DTYPE_F8_E5M2:
#if OPREG_NCCL_FP8
        *type = dtype == OPREG_DTYPE_F8_E4M3FN ? ncclFloat8e4m3 : ncclFloat8e5m2;
#else
        *type = ncclUint8;
        *reducible = false;
#endif
        return true;
    case OPREG_DTYPE_BOOL:
        *type = ncclUint8;
        *reducible = false;
        return true;
    case OPREG_DTYPE_I16:
        *type = ncclUint8;
        *scale = 2;
        *reducible = false;
        return true;
    }
    return false;
}

static bool nccl_op_of(opreg_reduce_op op, ncclRedOp_t *out) {
    switch (op) {
    case OPREG_REDUCE_SUM:
        *out = ncclSum;
        return true;
    case OPREG_REDUCE_AVG:
        *out = ncclAvg;
        return true;
    case OPREG_REDUCE_MAX:
        *out = ncclMax;
        return true;
    case OPREG_REDUCE_MIN:
        *out = ncclMin;
        return true;
    case OPREG_REDUCE_PRODUCT:
        *out = ncclProd;
        return true;
    }
    return false;
}

/* What one collective needs, checked once for both paths. */
typedef struct nccl_plan {
    ncclDataType_t type;
    size_t scale; /* NCCL elements per opreg element */
    size_t elem;  /* bytes per opreg element */
    ncclRedOp_t op;
} nccl_plan;

static bool reduces(const opreg_collective *c) {
    return c->kind == OPREG_COLLECTIVE_ALL_REDUCE || c->kind == OPREG_COLLECTIVE_REDUCE_SCATTER;
}

static opreg_status plan_of(const nccl_engine *e, const opreg_collective *c, nccl_plan *p,
                            char *why, size_t cap) {
    bool reducible;
    if (!nccl_type_of(c->dtype, &p->type, &p->scale, &reducible)) {
        snprintf(why, cap, "NCCL has no type for dtype %d", (int)c->dtype);
        return OPREG_ERR_UNSUPPORTED;
    }
    p->elem = opreg_dtype_size(c->dtype);
    /* The movements of a reducible type go as its bytes when they are
     * fp8: any NCCL moves those, only 2.24 and newer reduce them. */
    if (!reduces(c) && (c->dtype == OPREG_DTYPE_F8_E4M3FN || c->dtype == OPREG_DTYPE_F8_E5M2))
        p->type = ncclUint8;
    if (reduces(c) && !reducible) {
        snprintf(why, cap, "NCCL cannot reduce %s (reductions take integers and floats)",
                 opreg_dtype_name(c->dtype));
        return OPREG_ERR_UNSUPPORTED;
    }
    if (reduces(c) && !nccl_op_of(c->reduce_op, &p->op)) {
        snprintf(why, cap, "unknown reduction %d", (int)c->reduce_op);
        return OPREG_ERR_INVALID_ARGUMENT;
    }
    if (c->kind == OPREG_COLLECTIVE_BROADCAST && (c->root < 0 || c->root >= e->size)) {
        snprintf(why, cap, "root %d is not a rank of the group (%d ranks)", c->root, e->size);
        return OPREG_ERR_INVALID_ARGUMENT;
    }
    return OPREG_OK;
}

/* ---- the collectives ------------------------------------------------------ */

/* all_to_all: one send and one receive a peer, in one NCCL group. */
static opreg_status run_all_to_all(nccl_engine *e, const opreg_collective *c, const nccl_plan *p,
                                   cudaStream_t stream, char *why, size_t cap) {
    const char *send = c->send;
    char *recv = c->recv;
    ncclResult_t r = nccl.group_start();
    if (r != ncclSuccess) return call_failed(e, r, "ncclGroupStart", why, cap);
    ncclResult_t first = ncclSuccess;
    const char *failed = NULL;
    for (int j = 0; j < e->size && first == ncclSuccess; j++) {
        r = nccl.send(send + c->send_displs[j] * p->elem, c->send_counts[j] * p->scale, p->type, j,
                      e->comm, stream);
        if (r != ncclSuccess) {
            first = r, failed = "ncclSend";
            break;
        }
        r = nccl.recv(recv + c->recv_displs[j] * p->elem, c->recv_counts[j] * p->scale, p->type, j,
                      e->comm, stream);
        if (r != ncclSuccess) first = r, failed = "ncclRecv";
    }
    r = nccl.group_end(); /* closes the group even after a failure */
    if (first != ncclSuccess) return call_failed(e, first, failed, why, cap);
    return nccl_done(e, r, "ncclGroupEnd", why, cap);
}

/* @p c on device buffers of the engine's device, enqueued on @p stream. */
static opreg_status run_device(nccl_engine *e, const opreg_collective *c, const nccl_plan *p,
                               cudaStream_t stream, char *why, size_t cap) {
    ncclResult_t r;
    switch (c->kind) {
    case OPREG_COLLECTIVE_ALL_REDUCE:
        r = nccl.all_reduce(c->send, c->recv, c->count, p->type, p->op, e->comm, stream);
        return nccl_done(e, r, "ncclAllReduce", why, cap);
    case OPREG_COLLECTIVE_ALL_GATHER:
        r = nccl.all_gather(c->send, c->recv, c->count * p->scale, p->type, e->comm, stream);
        return nccl_done(e, r, "ncclAllGather", why, cap);
    case OPREG_COLLECTIVE_REDUCE_SCATTER:
        r = nccl.reduce_scatter(c->send, c->recv, c->count, p->type, p->op, e->comm, stream);
        return nccl_done(e, r, "ncclReduceScatter", why, cap);
    case OPREG_COLLECTIVE_BROADCAST: /* in place when send == recv */
        r = nccl.broadcast(c->send, c->recv, c->count * p->scale, p->type, c->root, e->comm,
                           stream);
        return nccl_done(e, r, "ncclBroadcast", why, cap);
    case OPREG_COLLECTIVE_ALL_TO_ALL:
        return run_all_to_all(e, c, p, stream, why, cap);
    case OPREG_COLLECTIVE_BARRIER:
        break;
    }
    snprintf(why, cap, "unknown collective %d", (int)c->kind);
    return OPREG_ERR_INVALID_ARGUMENT;
}

/* The elements @p c reads from send (*send_n) and writes to recv (*recv_n). */
static void extents_of(const nccl_engine *e, const opreg_collective *c, size_t *send_n,
                       size_t *recv_n) {
    size_t n = (size_t)e->size;
    *send_n = *recv_n = c->count;
    if (c->kind == OPREG_COLLECTIVE_ALL_GATHER) *recv_n = c->count * n;
    if (c->kind == OPREG_COLLECTIVE_REDUCE_SCATTER) *send_n = c->count * n;
    if (c->kind != OPREG_COLLECTIVE_ALL_TO_ALL) return;
    *send_n = *recv_n = 0;
    for (size_t j = 0; j < n; j++) {
        size_t s = c->send_displs[j] + c->send_counts[j], r = c->recv_displs[j] + c->recv_counts[j];
        if (c->send_counts[j] && s > *send_n) *send_n = s;
        if (c->recv_counts[j] && r > *recv_n) *recv_n = r;
    }
}

/* @p c on host buffers: through the scratch and back, waited for. */
static opreg_status run_host(nccl_engine *e, const opreg_collective *c, const nccl_plan *p,
                             cudaStream_t stream, char *why, size_t cap) {
    size_t send_n, recv_n;
    extents_of(e, c, &send_n, &recv_n);
    bool in_place = c->send == c->recv;
    size_t send_bytes = send_n * p->elem, recv_bytes = recv_n * p->elem;
    size_t recv_at =
        in_place ? 0 : (send_bytes + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
    OPREG__TRY(ensure_scratch(e, recv_at + recv_bytes, why, cap));
    opreg_collective d = *c;
    d.send = e->scratch;
    d.recv = (char *)e->scratch + recv_at;
    d.device = (DLDevice){ kDLCUDA, e->device };
    cudaError_t err;
    if (send_bytes) {
        err = cudaMemcpyAsync(e->scratch, c->send, send_bytes, cudaMemcpyHostToDevice, stream);
        if (err != cudaSuccess)
            return cuda_failed(err, "cudaMemcpyAsync (to the device)", why, cap);
    }
    OPREG__TRY(run_device(e, &d, p, stream, why, cap));
    OPREG__TRY(wait_stream(e, stream, "a collective on host buffers", why, cap));
    if (recv_bytes) {
        err = cudaMemcpyAsync(c->recv, d.recv, recv_bytes, cudaMemcpyDeviceToHost, stream);
        if (err != cudaSuccess) return cuda_failed(err, "cudaMemcpyAsync (to the host)", why, cap);
    }
    return wait_stream(e, stream, "the copy back to the host", why, cap);
}

/* barrier: an all_reduce of one int, waited for. */
static opreg_status run_barrier(nccl_engine *e, cudaStream_t stream, char *why, size_t cap) {
    OPREG__TRY(ensure_scratch(e, sizeof(int32_t), why, cap));
    ncclResult_t r =
        nccl.all_reduce(e->scratch, e->scratch, 1, ncclInt32, ncclSum, e->comm, stream);
    OPREG__TRY(nccl_done(e, r, "ncclAllReduce (barrier)", why, cap));
    return wait_stream(e, stream, "the barrier", why, cap);
}

static opreg_status run_locked(nccl_engine *e, const opreg_collective *c, char *why, size_t cap) {
    cudaStream_t stream = (cudaStream_t)opreg_cuda_stream(e->device);
    bool busy;
    OPREG__TRY(comm_health(e, "before this collective", &busy, why, cap));
    if (c->kind == OPREG_COLLECTIVE_BARRIER) return run_barrier(e, stream, why, cap);
    nccl_plan p;
    OPREG__TRY(plan_of(e, c, &p, why, cap));
    if (c->device.device_type == kDLCPU) return run_host(e, c, &p, stream, why, cap);
    if (c->device.device_type != kDLCUDA) {
        snprintf(why, cap, "NCCL takes CUDA device memory (device type %d)",
                 (int)c->device.device_type);
        return OPREG_ERR_DEVICE_MISMATCH;
    }
    if (c->device.device_id != e->device) {
        snprintf(why, cap, "the communicator is on cuda:%d but the tensors are on cuda:%d",
                 e->device, (int)c->device.device_id);
        return OPREG_ERR_DEVICE_MISMATCH;
    }
    return run_device(e, c, &p, stream, why, cap);
}

static opreg_status nccl_run(void *context, const opreg_collective *c, char *why, size_t cap) {
    nccl_engine *e = context;
    int prev = e->device;
    pthread_mutex_lock(&e->lock);
    cudaError_t err = cudaGetDevice(&prev);
    if (err == cudaSuccess && prev != e->device) err = cudaSetDevice(e->device);
    opreg_status st = err == cudaSuccess ? run_locked(e, c, why, cap)
                                         : cuda_failed(err, "cudaSetDevice", why, cap);
    opreg__cuda_leave(e->device, prev);
    pthread_mutex_unlock(&e->lock);
    return st;
}

static void nccl_abort(void *context, const char *message) {
    nccl_engine *e = context;
    (void)message; /* the watchdog has logged it */
    pthread_mutex_lock(&e->comm_lock);
    bool first = !e->aborted;
    e->aborted = true;
    pthread_mutex_unlock(&e->comm_lock);
    if (!first) return;
    if (cudaSetDevice(e->device) != cudaSuccess) (void)cudaGetLastError();
    ncclResult_t r = nccl.comm_abort(e->comm);
    if (r != ncclSuccess)
        opreg__log(OPREG_LOG_ERROR, "nccl engine: ncclCommAbort failed: %s",
                   nccl.get_error_string(r));
    opreg__log(OPREG_LOG_WARN,
               "nccl engine: ncclCommAbort freed the communicator of rank %d of %d; the program "
               "must not use or destroy it any more",
               e->rank, e->size);
}

static void nccl_destroy(void *context) {
    nccl_engine *e = context;
    if (e->scratch) {
        int prev = e->device;
        if (cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(e->device) == cudaSuccess) {
            cudaError_t err = cudaFree(e->scratch);
            if (err != cudaSuccess)
                opreg__log(OPREG_LOG_WARN, "nccl engine: cudaFree (scratch): %s",
                           cudaGetErrorString(err));
            opreg__cuda_leave(e->device, prev);
        }
        (void)cudaGetLastError();
    }
    pthread_mutex_destroy(&e->lock);
    pthread_mutex_destroy(&e->comm_lock);
    free(e);
}

/* A query of the communicator at creation, as a status naming @p call. */
static opreg_status create_query(ncclResult_t r, const char *call) {
    if (r == ncclSuccess) return OPREG_OK;
    return opreg__fail(OPREG_ERR_COMMUNICATION, "opreg_nccl_group_create: %s failed: %s", call,
                       nccl.get_error_string(r));
}

opreg_status opreg_nccl_group_create(const char *name, void *nccl_comm, uint32_t flags,
                                     uint32_t timeout_ms) {
    const char *fn = "opreg_nccl_group_create";
    if (!name || !nccl_comm)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn,
                           name ? "communicator" : "name");
    char why[256];
    if (!opreg_key_is_available(OPREG_KEY_CUDA, why, sizeof why))
        return opreg__fail(OPREG_ERR_BACKEND_UNAVAILABLE, "%s: the CUDA backend is unavailable: %s",
                           fn, why);
    pthread_once(&nccl_once, nccl_load);
    if (!nccl_loaded) return opreg__fail(OPREG_ERR_BACKEND_UNAVAILABLE, "%s: %s", fn, nccl_why);

    ncclComm_t comm = nccl_comm;
    ncclResult_t async = ncclSuccess;
    OPREG__TRY(create_query(nccl.comm_get_async_error(comm, &async), "ncclCommGetAsyncError"));
    if (async == ncclInProgress)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: the communicator is still being made (nonblocking); register "
                           "it once ncclCommGetAsyncError gives ncclSuccess",
                           fn);
    if (async != ncclSuccess)
        return opreg__fail(OPREG_ERR_COMMUNICATION, "%s: the communicator has failed: %s", fn,
                           nccl.get_error_string(async));
    int rank = -1, size = 0, device = -1;
    OPREG__TRY(create_query(nccl.comm_count(comm, &size), "ncclCommCount"));
    OPREG__TRY(create_query(nccl.comm_user_rank(comm, &rank), "ncclCommUserRank"));
    OPREG__TRY(create_query(nccl.comm_cu_device(comm, &device), "ncclCommCuDevice"));

    nccl_engine *e = calloc(1, sizeof *e);
    if (!e) return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    e->comm = comm;
    e->rank = rank;
    e->size = size;
    e->device = device;
    pthread_mutex_init(&e->lock, NULL);
    pthread_mutex_init(&e->comm_lock, NULL);
    opreg_group_desc desc = {
        .struct_size = sizeof desc,
        .engine = "nccl",
        .device_type = kDLCUDA,
        .rank = rank,
        .size = size,
        .flags = flags,
        .timeout_ms = timeout_ms,
        .context = e,
        .run = nccl_run,
        .abort = nccl_abort,
        .destroy = nccl_destroy,
    };
    opreg_status st = opreg_group_register(name, &desc);
    if (st != OPREG_OK) nccl_destroy(e); /* the message is the registry's */
    return st;
}
