/// @file collective.h
/// @brief Process groups: communicators of an existing engine (MPI, NCCL)
/// registered under a name, and the `dist` ops that run collectives on them.
///
/// opreg writes no transport. A group wraps a communicator that the program
/// already made with an engine it trusts (include/opreg/mpi.h for MPI on the
/// CPU, opreg_nccl_group_create() in include/opreg/cuda.h for NCCL on CUDA),
/// and registers it under a name, as c10d names its groups. The ops of the
/// `dist` namespace (`dist::all_reduce`, `dist::all_gather_into_tensor`, ...;
/// docs/distributed.md lists their schemas) take that name as a `str`, so a
/// caller, a compiled graph or a Python program needs no object to run them.
///
/// The table of groups is process-wide and thread-safe. A group has one
/// engine and one device type: a program that needs the same ranks on CUDA
/// and on the CPU registers two groups ("tp" on NCCL, "tp_cpu" on MPI), as
/// vLLM keeps a device group and a CPU group.
///
/// An engine is a table of functions (::opreg_group_desc) that runs one
/// ::opreg_collective at a time; engines outside libopreg implement it
/// without any other part of opreg's internals.
#ifndef OPREG_COLLECTIVE_H
#define OPREG_COLLECTIVE_H

#include "opreg/common.h"
#include "opreg/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The reductions of `all_reduce` and `reduce_scatter_tensor`, with c10d's
/// names ("sum", "avg", "max", "min", "product") in the ops' `reduce_op`
/// argument. `avg` is the sum divided by the group's size; on integer dtypes
/// the division truncates toward zero.
typedef enum opreg_reduce_op {
    OPREG_REDUCE_SUM = 0,     ///< "sum"
    OPREG_REDUCE_AVG = 1,     ///< "avg"
    OPREG_REDUCE_MAX = 2,     ///< "max"
    OPREG_REDUCE_MIN = 3,     ///< "min"
    OPREG_REDUCE_PRODUCT = 4, ///< "product"
} opreg_reduce_op;

/// The name of a reduction ("sum", ...), or NULL when unknown. Static.
OPREG_API const char *opreg_reduce_op_name(opreg_reduce_op op);

/// The reduction named @p name (c10d's lower-case names).
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT (the message lists
/// the names); `*out` is unchanged then.
OPREG_API opreg_status opreg_reduce_op_from_name(opreg_reduce_op *out, const char *name);

/// The collectives an engine runs.
typedef enum opreg_collective_kind {
    OPREG_COLLECTIVE_ALL_REDUCE = 0,     ///< every rank gets the reduction of all sends
    OPREG_COLLECTIVE_ALL_GATHER = 1,     ///< every rank gets every send, in rank order
    OPREG_COLLECTIVE_REDUCE_SCATTER = 2, ///< rank r gets block r of the reduction
    OPREG_COLLECTIVE_ALL_TO_ALL = 3,     ///< rank r sends block j to rank j (sizes per rank)
    OPREG_COLLECTIVE_BROADCAST = 4,      ///< every rank gets the root's buffer
    OPREG_COLLECTIVE_BARRIER = 5,        ///< no rank leaves before every rank entered
} opreg_collective_kind;

/// The name of a collective ("all_reduce", ...), or NULL when unknown. Static.
OPREG_API const char *opreg_collective_kind_name(opreg_collective_kind kind);

/// One collective, as the `dist` ops hand it to an engine. Counts are in
/// elements of @ref dtype; buffers are contiguous and on the group's device
/// (none for a barrier). Nothing here is owned by the engine, and nothing
/// outlives the call of ::opreg_group_desc.run.
typedef struct opreg_collective {
    /// `sizeof(opreg_collective)` of the caller: fields past it are absent.
    size_t struct_size;
    opreg_collective_kind kind; ///< which collective
    /// The buffer this rank contributes. Equal to @ref recv for an
    /// in-place all_reduce or broadcast (`all_reduce_`, `broadcast_`).
    const void *send;
    /// The buffer this rank receives into. Never overlaps @ref send unless
    /// the two are equal.
    void *recv;
    /// all_reduce and broadcast: the elements of each buffer; all_gather:
    /// the elements each rank sends (recv holds `count * size`);
    /// reduce_scatter: the elements each rank receives (send holds
    /// `count * size`); unused by all_to_all and barrier.
    size_t count;
    /// all_to_all: `size` entries each, in elements: what this rank sends
    /// to rank j starts at `send_displs[j]` and holds `send_counts[j]`;
    /// what it receives from rank j, likewise in recv. NULL otherwise.
    const size_t *send_counts;
    const size_t *send_displs; ///< see @ref send_counts
    const size_t *recv_counts; ///< see @ref send_counts
    const size_t *recv_displs; ///< see @ref send_counts
    opreg_dtype dtype;         ///< the element type (not used by barrier)
    opreg_reduce_op reduce_op; ///< all_reduce and reduce_scatter
    int root;                  ///< broadcast: the rank whose buffer is sent
    DLDevice device;           ///< the buffers' device (kDLCPU for a barrier)
} opreg_collective;

/// Group flags (::opreg_group_desc.flags).
enum opreg_group_flags {
    /// Before each collective, the ranks compare what they are about to run
    /// (op, dtype, element count, shape, root, reduction; for
    /// `all_to_all_single`, every pair's split sizes) with one small
    /// all_reduce through the same engine, and refuse a mismatch with
    /// ::OPREG_ERR_SHAPE on every rank instead of corrupting memory or
    /// waiting forever. It costs one extra collective per call. The
    /// environment variable `OPREG_COLLECTIVE_CHECK=1` turns it on for every
    /// group registered afterwards.
    OPREG_GROUP_CHECK_ARGS = 1u << 0,
};

/// A group's engine: what opreg_group_register() copies. Strings are
/// copied; @ref context belongs to the group once registration succeeds.
typedef struct opreg_group_desc {
    /// `sizeof(opreg_group_desc)` of the engine: fields past it are absent.
    size_t struct_size;
    const char *engine;       ///< the engine's name, for messages ("mpi", "nccl")
    DLDeviceType device_type; ///< where its buffers live (kDLCPU, kDLCUDA)
    int rank;                 ///< this process's rank, 0 <= rank < size
    int size;                 ///< the ranks in the group, >= 1
    uint32_t flags;           ///< ::opreg_group_flags
    /// A collective that has not finished after this many milliseconds is
    /// reported (::OPREG_LOG_ERROR, naming the op, group and rank) and the
    /// group's @ref abort is called; 0 waits without end. The environment
    /// variable `OPREG_COLLECTIVE_TIMEOUT_MS` overrides it for every group
    /// registered afterwards.
    uint32_t timeout_ms;
    void *context; ///< passed to every function below
    /// Run @p c; required. On failure return a status and write a message
    /// into @p why (@p cap bytes, NUL-terminated); opreg prefixes it with
    /// the op, the group and the rank. Called with no lock held, possibly
    /// from several threads at once if the program calls so (an engine
    /// whose communicator is not thread-safe serialises inside).
    opreg_status (*run)(void *context, const opreg_collective *c, char *why, size_t cap);
    /// Stop every rank's collectives after a timeout (MPI_Abort,
    /// ncclCommAbort); @p message says which call timed out. Called from
    /// opreg's watchdog thread while the late call is still running. NULL:
    /// a timeout is only reported.
    void (*abort)(void *context, const char *message);
    /// Free @p context: called once, when the group was destroyed and no
    /// call is using it any more. May be NULL.
    void (*destroy)(void *context);
} opreg_group_desc;

/// Register a group under @p name (1 to 127 letters, digits, underscores,
/// dashes, dots and colons; copied). A name that was destroyed may be registered again.
/// On success the group owns `desc->context` (its `destroy` runs when the
/// group is destroyed); on failure the caller keeps it.
/// @return ::OPREG_OK; ::OPREG_ERR_ALREADY_DEFINED (a live group of that
/// name, named with its engine); ::OPREG_ERR_INVALID_ARGUMENT (NULL, a bad
/// name, no `run`, a rank outside `[0, size)`); ::OPREG_ERR_ABI_MISMATCH (a
/// `struct_size` too small); ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_group_register(const char *name, const opreg_group_desc *desc);

/// Destroy the group @p name: later calls that name it fail with
/// ::OPREG_ERR_NOT_FOUND and "was destroyed"; calls already running finish
/// first, and the engine's `destroy` runs after the last of them.
/// @return ::OPREG_OK, or ::OPREG_ERR_NOT_FOUND (no live group of that name).
OPREG_API opreg_status opreg_group_destroy(const char *name);

/// What a group is. Every out-parameter may be NULL. `*engine` is the
/// group's copy of the engine's name, valid until the group is destroyed.
/// @return ::OPREG_OK, or ::OPREG_ERR_NOT_FOUND (unknown or destroyed; the
/// message says which and lists the live groups).
OPREG_API opreg_status opreg_group_info(const char *name, int *rank, int *size,
                                        DLDeviceType *device_type, const char **engine);

/// Run @p c on the group @p name directly, as the `dist` ops do after
/// checking their tensors: the same lookup, argument comparison (with
/// ::OPREG_GROUP_CHECK_ARGS), watchdog and error messages, without a
/// registry. @p c is not kept.
/// @return ::OPREG_OK; ::OPREG_ERR_NOT_FOUND (no such group);
/// ::OPREG_ERR_DEVICE_MISMATCH (the group's device type is not
/// `c->device`'s); ::OPREG_ERR_SHAPE (the ranks disagree, with the check
/// on); ::OPREG_ERR_INVALID_ARGUMENT; or the engine's status
/// (::OPREG_ERR_COMMUNICATION, ::OPREG_ERR_UNSUPPORTED for a dtype or
/// reduction it lacks, ::OPREG_ERR_TIMEOUT, ...).
OPREG_API opreg_status opreg_group_run(const char *name, const opreg_collective *c);

#ifdef __cplusplus
}
#endif

#endif
