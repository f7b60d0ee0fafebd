/// @file threads.h
/// @brief The threads of opreg's CPU kernels: how many, and whose.
///
/// A CPU kernel that moves enough bytes splits its rows into tasks and runs
/// them on opreg's own pool. The calling thread takes part: it claims tasks
/// as the pool's workers do, and the call waits only for the tasks some
/// thread has claimed, so a worker the operating system has not scheduled
/// delays nothing. Idle workers spin for a bounded time (50 µs; the
/// environment variable `OPREG_POOL_SPIN_US` sets it, 0 to sleep at once),
/// then sleep, so they never hold a core that the host's threads want. A
/// call made while the pool is busy (from another thread, or from inside a
/// task) runs on its caller alone.
///
/// The pool's width, counting the caller, is `OPREG_NUM_THREADS` when that
/// is set when the pool first starts, otherwise the number of CPUs the
/// process may run on; opreg_set_num_threads() changes it. A program that
/// has its own pool lends it with opreg_set_parallel_for(), and opreg then
/// starts no threads at all. See docs/performance.md, "Threads".
#ifndef OPREG_THREADS_H
#define OPREG_THREADS_H

#include "opreg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The most threads opreg's pool runs, the caller included.
#define OPREG_MAX_THREADS 256

/// Sets the number of threads opreg's CPU kernels use, counting the
/// calling thread: 1 runs every kernel on its caller, 0 restores the
/// default (`OPREG_NUM_THREADS`, else the CPUs the process may run on).
/// The pool's workers are stopped and started again, when no kernel runs,
/// at the next call that uses them. Thread-safe.
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT when @p n is negative
///         or above ::OPREG_MAX_THREADS.
OPREG_API opreg_status opreg_set_num_threads(int n);

/// The number of threads opreg's CPU kernels use, counting the caller: the
/// width given to opreg_set_parallel_for() while a host pool is lent,
/// otherwise opreg's own pool's. Always at least 1.
OPREG_API int opreg_get_num_threads(void);

/// Sets the size below which a CPU kernel runs on its caller alone: calls
/// that move fewer than @p bytes (read plus written) never use the pool.
/// 0 restores the default: `OPREG_PARALLEL_MIN_BYTES` when that is set when
/// the pool first starts, otherwise 1 MiB, measured with `opreg bench
/// threads` (docs/performance.md). Thread-safe.
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT when @p bytes is
///         negative.
OPREG_API opreg_status opreg_set_parallel_min_bytes(int64_t bytes);

/// The size below which a CPU kernel runs on its caller alone, in bytes.
OPREG_API int64_t opreg_get_parallel_min_bytes(void);

/// One task of a parallel loop: runs task number @p task (0 to n-1) of the
/// loop whose context is @p task_ctx. Tasks of one loop are independent and
/// may run in any order, on any thread, concurrently.
typedef void (*opreg_task_fn)(void *task_ctx, int64_t task);

/// Runs `task(task_ctx, i)` once for every @p i in [0, @p n) on the pool
/// the CPU kernels use (opreg's, or the host's when one is lent), the
/// calling thread taking part, and returns when all have returned. For a
/// plugin's or a program's own CPU kernels, so that they share opreg's
/// threads instead of starting more. Tasks must not wait for each other.
/// Called from inside a task, or while another thread's loop runs, it runs
/// the tasks on the calling thread. Thread-safe; @p n <= 0 does nothing.
OPREG_API void opreg_parallel_for(int64_t n, opreg_task_fn task, void *task_ctx);

/// A host's parallel-for: runs `task(task_ctx, i)` once for every @p i in
/// [0, @p n), on the host's threads and the calling one, and returns when
/// all have returned. @p host is the pointer given to
/// opreg_set_parallel_for(). It may run the tasks on the caller alone (for
/// example when called from inside one of its own tasks).
typedef void (*opreg_parallel_for_fn)(void *host, int64_t n, opreg_task_fn task, void *task_ctx);

/// Lends the host's pool to opreg: from now on every CPU kernel that splits
/// its work calls @p fn, sized for @p threads threads (1 to
/// ::OPREG_MAX_THREADS): at most 16 tasks a thread, each a contiguous part
/// of the rows, so a host whose threads take tasks as they get to them
/// balances the work. The workers of opreg's own pool stop (this call
/// waits until no kernel runs on them). NULL @p fn gives opreg its own pool back (@p host and
/// @p threads are then ignored). @p host is borrowed: it must stay valid until the hook is
/// replaced. Set it before kernels run, or while none runs: a call running in another thread at the
/// moment of the change may use either the old hook or the new one.
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT when @p fn is set and
///         @p threads is out of range.
OPREG_API opreg_status opreg_set_parallel_for(opreg_parallel_for_fn fn, void *host, int threads);

#ifdef __cplusplus
}
#endif

#endif
