/* The MPI engine of process groups (libopreg_mpi): one opreg_collective at a
 * time onto the matching blocking MPI collective of a duplicated
 * communicator.
 *
 * Types. The fixed-width integers and the IEEE floats are MPI's own types.
 * bfloat16 and float16 have none in MPI 3.1, so each gets a two-byte type
 * of its own and four reductions (sum, product, max, min) created once:
 * each element is widened to float, combined, and rounded back to nearest
 * even, as a reduction in that dtype does on a GPU. bool and the fp8 types
 * travel as bytes and are not reduced.
 *
 * avg is a sum followed by a division by the group's size on each rank
 * (MPI has no average); the division truncates on integer dtypes.
 *
 * Errors. The duplicate communicator returns errors (MPI_ERRORS_RETURN)
 * and each is turned into OPREG_ERR_COMMUNICATION with MPI's own text. */
#include "opreg/mpi.h"

#include "common/dtype_convert.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mpi_engine {
    MPI_Comm comm;
    int rank, size;
    bool serialise; /* MPI gives less than MPI_THREAD_MULTIPLE */
    pthread_mutex_t lock;
} mpi_engine;

/* ---- the 16-bit float types and their reductions ------------------------- */

static pthread_once_t halves_once = PTHREAD_ONCE_INIT;
static int halves_error = MPI_SUCCESS;
static MPI_Datatype bf16_type = MPI_DATATYPE_NULL, f16_type = MPI_DATATYPE_NULL;
static MPI_Op half_sum = MPI_OP_NULL, half_prod = MPI_OP_NULL, half_max = MPI_OP_NULL,
              half_min = MPI_OP_NULL;

static float half_load(const uint16_t *p, bool bf16) {
    return bf16 ? opreg__bf16_to_f32(*p) : opreg__f16_to_f32(*p);
}

static uint16_t half_round(float f, bool bf16) {
    return bf16 ? opreg__f32_to_bf16(f) : opreg__f32_to_f16(f);
}

static void half_sum_fn(void *in, void *inout, int *len, MPI_Datatype *type) {
    bool bf16 = *type == bf16_type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = half_round(half_load(&a[i], bf16) + half_load(&b[i], bf16), bf16);
}

static void half_prod_fn(void *in, void *inout, int *len, MPI_Datatype *type) {
    bool bf16 = *type == bf16_type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = half_round(half_load(&a[i], bf16) * half_load(&b[i], bf16), bf16);
}

static void half_max_fn(void *in, void *inout, int *len, MPI_Datatype *type) {
    bool bf16 = *type == bf16_type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        if (half_load(&a[i], bf16) > half_load(&b[i], bf16)) b[i] = a[i];
}

static void half_min_fn(void *in, void *inout, int *len, MPI_Datatype *type) {
    bool bf16 = *type == bf16_type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        if (half_load(&a[i], bf16) < half_load(&b[i], bf16)) b[i] = a[i];
}

static void make_halves(void) {
    int e = MPI_Type_contiguous(2, MPI_BYTE, &bf16_type);
    if (e == MPI_SUCCESS) e = MPI_Type_commit(&bf16_type);
    if (e == MPI_SUCCESS) e = MPI_Type_contiguous(2, MPI_BYTE, &f16_type);
    if (e == MPI_SUCCESS) e = MPI_Type_commit(&f16_type);
    if (e == MPI_SUCCESS) e = MPI_Op_create(half_sum_fn, 1, &half_sum);
    if (e == MPI_SUCCESS) e = MPI_Op_create(half_prod_fn, 1, &half_prod);
    if (e == MPI_SUCCESS) e = MPI_Op_create(half_max_fn, 1, &half_max);
    if (e == MPI_SUCCESS) e = MPI_Op_create(half_min_fn, 1, &half_min);
    halves_error = e;
}

/* ---- mapping ------------------------------------------------------------ */

static MPI_Datatype type_of(opreg_dtype dtype, bool *reducible) {
    *reducible = true;
    switch (dtype) {
    case OPREG_DTYPE_U8:
        return MPI_UINT8_T;
    case OPREG_DTYPE_I8:
        return MPI_INT8_T;
    case OPREG_DTYPE_I16:
        return MPI_INT16_T;
    case OPREG_DTYPE_I32:
        return MPI_INT32_T;
    case OPREG_DTYPE_I64:
        return MPI_INT64_T;
    case OPREG_DTYPE_F32:
        return MPI_FLOAT;
    case OPREG_DTYPE_F64:
        return MPI_DOUBLE;
    case OPREG_DTYPE_BF16:
        return bf16_type;
    case OPREG_DTYPE_F16:
        return f16_type;
    case OPREG_DTYPE_BOOL:
    case OPREG_DTYPE_F8_E4M3FN:
    case OPREG_DTYPE_F8_E5M2:
        *reducible = false;
        return MPI_BYTE;
    }
    *reducible = false;
    return MPI_DATATYPE_NULL;
}

static MPI_Op op_of(opreg_reduce_op op, opreg_dtype dtype) {
    bool half = dtype == OPREG_DTYPE_BF16 || dtype == OPREG_DTYPE_F16;
    switch (op) {
    case OPREG_REDUCE_SUM:
    case OPREG_REDUCE_AVG:
        return half ? half_sum : MPI_SUM;
    case OPREG_REDUCE_PRODUCT:
        return half ? half_prod : MPI_PROD;
    case OPREG_REDUCE_MAX:
        return half ? half_max : MPI_MAX;
    case OPREG_REDUCE_MIN:
        return half ? half_min : MPI_MIN;
    }
    return MPI_OP_NULL;
}

/* avg: divide the sum in place by the group's size. */
static void divide(void *buf, size_t count, opreg_dtype dtype, int n) {
    switch (dtype) {
    case OPREG_DTYPE_U8:
        for (size_t i = 0; i < count; i++)
            ((uint8_t *)buf)[i] /= (uint8_t)n;
        break;
    case OPREG_DTYPE_I8:
        for (size_t i = 0; i < count; i++)
            ((int8_t *)buf)[i] /= n;
        break;
    case OPREG_DTYPE_I16:
        for (size_t i = 0; i < count; i++)
            ((int16_t *)buf)[i] /= n;
        break;
    case OPREG_DTYPE_I32:
        for (size_t i = 0; i < count; i++)
            ((int32_t *)buf)[i] /= n;
        break;
    case OPREG_DTYPE_I64:
        for (size_t i = 0; i < count; i++)
            ((int64_t *)buf)[i] /= n;
        break;
    case OPREG_DTYPE_F32:
        for (size_t i = 0; i < count; i++)
            ((float *)buf)[i] /= (float)n;
        break;
    case OPREG_DTYPE_F64:
        for (size_t i = 0; i < count; i++)
            ((double *)buf)[i] /= n;
        break;
    case OPREG_DTYPE_BF16:
    case OPREG_DTYPE_F16: {
        bool bf16 = dtype == OPREG_DTYPE_BF16;
        uint16_t *h = buf;
        for (size_t i = 0; i < count; i++)
            h[i] = half_round(half_load(&h[i], bf16) / (float)n, bf16);
        break;
    }
    default:
        break;
    }
}

static opreg_status mpi_failed(int code, const char *call, char *why, size_t cap) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        len = snprintf(text, sizeof text, "error %d", code);
    snprintf(why, cap, "%s failed: %.*s", call, len, text);
    return OPREG_ERR_COMMUNICATION;
}

#define MPI_TRY(call, name)                                                                        \
    do {                                                                                           \
        int mpi_e = (call);                                                                        \
        if (mpi_e != MPI_SUCCESS) return mpi_failed(mpi_e, name, why, cap);                        \
    } while (0)

/* ---- the collectives ------------------------------------------------------ */

static opreg_status run_locked(mpi_engine *e, const opreg_collective *c, char *why, size_t cap) {
    if (c->kind == OPREG_COLLECTIVE_BARRIER) {
        MPI_TRY(MPI_Barrier(e->comm), "MPI_Barrier");
        return OPREG_OK;
    }
    bool reducible;
    MPI_Datatype type = type_of(c->dtype, &reducible);
    size_t elem = opreg_dtype_size(c->dtype);
    if (type == MPI_DATATYPE_NULL) {
        snprintf(why, cap, "MPI has no type for dtype %d", (int)c->dtype);
        return OPREG_ERR_UNSUPPORTED;
    }
    bool reduces =
        c->kind == OPREG_COLLECTIVE_ALL_REDUCE || c->kind == OPREG_COLLECTIVE_REDUCE_SCATTER;
    if (reduces && !reducible) {
        snprintf(why, cap, "MPI cannot reduce %s (reductions take integers and floats)",
                 opreg_dtype_name(c->dtype));
        return OPREG_ERR_UNSUPPORTED;
    }
    MPI_Op op = reduces ? op_of(c->reduce_op, c->dtype) : MPI_OP_NULL;
    if (reduces && op == MPI_OP_NULL) {
        snprintf(why, cap, "unknown reduction %d", (int)c->reduce_op);
        return OPREG_ERR_INVALID_ARGUMENT;
    }

    switch (c->kind) {
    case OPREG_COLLECTIVE_ALL_REDUCE: {
        bool in_place = c->send == c->recv;
        size_t done = 0;
        do { /* once for zero elements too: every rank joins */
            size_t n = c->count - done > INT_MAX ? INT_MAX : c->count - done;
            const void *s = in_place ? MPI_IN_PLACE : (const char *)c->send + done * elem;
            MPI_TRY(MPI_Allreduce(s, (char *)c->recv + done * elem, (int)n, type, op, e->comm),
                    "MPI_Allreduce");
            done += n;
        } while (done < c->count);
        if (c->reduce_op == OPREG_REDUCE_AVG) divide(c->recv, c->count, c->dtype, e->size);
        return OPREG_OK;
    }
    case OPREG_COLLECTIVE_BROADCAST: {
        if (e->rank == c->root && c->send != c->recv && c->count)
            memcpy(c->recv, c->send, c->count * elem);
        size_t done = 0;
        do {
            size_t n = c->count - done > INT_MAX ? INT_MAX : c->count - done;
            MPI_TRY(MPI_Bcast((char *)c->recv + done * elem, (int)n, type, c->root, e->comm),
                    "MPI_Bcast");
            done += n;
        } while (done < c->count);
        return OPREG_OK;
    }
    case OPREG_COLLECTIVE_ALL_GATHER:
    case OPREG_COLLECTIVE_REDUCE_SCATTER:
        if (c->count > (size_t)INT_MAX / (size_t)e->size) {
            snprintf(why, cap, "%zu elements per rank: more than MPI's int counts hold", c->count);
            return OPREG_ERR_UNSUPPORTED;
        }
        if (c->kind == OPREG_COLLECTIVE_ALL_GATHER) {
            MPI_TRY(
                MPI_Allgather(c->send, (int)c->count, type, c->recv, (int)c->count, type, e->comm),
                "MPI_Allgather");
            return OPREG_OK;
        }
        MPI_TRY(MPI_Reduce_scatter_block(c->send, c->recv, (int)c->count, type, op, e->comm),
                "MPI_Reduce_scatter_block");
        if (c->reduce_op == OPREG_REDUCE_AVG) divide(c->recv, c->count, c->dtype, e->size);
        return OPREG_OK;
    case OPREG_COLLECTIVE_ALL_TO_ALL: {
        int n = e->size;
        int small[4 * 16], *v = small;
        if (n > 16 && !(v = malloc(4 * (size_t)n * sizeof *v))) {
            snprintf(why, cap, "out of memory");
            return OPREG_ERR_OUT_OF_MEMORY;
        }
        bool fits = true;
        for (int j = 0; j < n && fits; j++) {
            fits = c->send_counts[j] + c->send_displs[j] <= INT_MAX &&
                   c->recv_counts[j] + c->recv_displs[j] <= INT_MAX;
            v[j] = (int)c->send_counts[j];
            v[n + j] = (int)c->send_displs[j];
            v[2 * n + j] = (int)c->recv_counts[j];
            v[3 * n + j] = (int)c->recv_displs[j];
        }
        int rc = MPI_SUCCESS;
        if (fits)
            rc = MPI_Alltoallv(c->send, v, v + n, type, c->recv, v + 2 * n, v + 3 * n, type,
                               e->comm);
        if (v != small) free(v);
        if (!fits) {
            snprintf(why, cap, "a block ends past MPI's int counts");
            return OPREG_ERR_UNSUPPORTED;
        }
        if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Alltoallv", why, cap);
        return OPREG_OK;
    }
    case OPREG_COLLECTIVE_BARRIER:
        break;
    }
    snprintf(why, cap, "unknown collective %d", (int)c->kind);
    return OPREG_ERR_INVALID_ARGUMENT;
}

static opreg_status mpi_run(void *context, const opreg_collective *c, char *why, size_t cap) {
    mpi_engine *e = context;
    if (!e->serialise) return run_locked(e, c, why, cap);
    pthread_mutex_lock(&e->lock);
    opreg_status st = run_locked(e, c, why, cap);
    pthread_mutex_unlock(&e->lock);
    return st;
}

static void mpi_abort(void *context, const char *message) {
    mpi_engine *e = context;
    fprintf(stderr, "opreg: %s\n", message);
    fflush(stderr);
    MPI_Abort(e->comm, 1);
}

static void mpi_destroy(void *context) {
    mpi_engine *e = context;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&e->comm);
    if (e->serialise) pthread_mutex_destroy(&e->lock);
    free(e);
}

opreg_status opreg_mpi_group_create(const char *name, MPI_Comm comm, uint32_t flags,
                                    uint32_t timeout_ms) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return opreg_set_error(OPREG_ERR_INVALID_ARGUMENT,
                               initialized ? "opreg_mpi_group_create: MPI is already finalized"
                                           : "opreg_mpi_group_create: MPI is not initialized "
                                             "(call MPI_Init or MPI_Init_thread first)");
    if (comm == MPI_COMM_NULL)
        return opreg_set_error(OPREG_ERR_INVALID_ARGUMENT, "opreg_mpi_group_create: MPI_COMM_NULL");
    pthread_once(&halves_once, make_halves);
    char why[512];
    if (halves_error != MPI_SUCCESS) {
        mpi_failed(halves_error, "making the bfloat16 and float16 types", why, sizeof why);
        return opreg_set_error(OPREG_ERR_COMMUNICATION, why);
    }
    mpi_engine *e = calloc(1, sizeof *e);
    if (!e)
        return opreg_set_error(OPREG_ERR_OUT_OF_MEMORY, "opreg_mpi_group_create: out of memory");
    int rc = MPI_Comm_dup(comm, &e->comm);
    if (rc != MPI_SUCCESS) {
        free(e);
        mpi_failed(rc, "MPI_Comm_dup", why, sizeof why);
        return opreg_set_error(OPREG_ERR_COMMUNICATION, why);
    }
    MPI_Comm_set_errhandler(e->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(e->comm, &e->rank);
    MPI_Comm_size(e->comm, &e->size);
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    e->serialise = provided < MPI_THREAD_MULTIPLE;
    if (e->serialise) pthread_mutex_init(&e->lock, NULL);
    opreg_group_desc desc = {
        .struct_size = sizeof desc,
        .engine = "mpi",
        .device_type = kDLCPU,
        .rank = e->rank,
        .size = e->size,
        .flags = flags,
        .timeout_ms = timeout_ms,
        .context = e,
        .run = mpi_run,
        .abort = mpi_abort,
        .destroy = mpi_destroy,
    };
    opreg_status st = opreg_group_register(name, &desc);
    if (st != OPREG_OK) mpi_destroy(e); /* the message is the registry's */
    return st;
}
