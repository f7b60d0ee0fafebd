/// @file mpi.h
/// @brief Process groups on MPI: CPU collectives of the `dist` ops through
/// the program's own MPI library (libopreg_mpi).
///
/// libopreg_mpi is a separate library, so that libopreg itself loads
/// without MPI. A program that already runs under `mpiexec` (or any MPI
/// launcher) and has called `MPI_Init` or `MPI_Init_thread` registers a
/// communicator under a name, and from then on the `dist` ops on CPU
/// tensors run on it:
///
///     MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
///     opreg_mpi_group_create("world", MPI_COMM_WORLD, 0, OPREG_MPI_DEFAULT_TIMEOUT_MS);
///     // dist::all_reduce_(t, "sum", "world") ...
///     opreg_group_destroy("world");
///     MPI_Finalize();
///
/// Link with `-lopreg_mpi -lopreg` and the MPI library (`mpicc` or
/// `pkg-config ompi-c`). Supported dtypes: every reduction on int8, uint8,
/// int16, int32, int64, float32, float64, bfloat16 and float16 (the 16-bit
/// floats reduce in float and round to nearest even after each step);
/// gather, scatter, all-to-all and broadcast also move bool and the fp8
/// types. Counts above `INT_MAX` elements per call are split for
/// all_reduce and broadcast and refused by the others.
#ifndef OPREG_MPI_H
#define OPREG_MPI_H

#include "opreg/collective.h"

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/// c10d's default timeout for a collective, ten minutes, in milliseconds.
#define OPREG_MPI_DEFAULT_TIMEOUT_MS 600000u

/// Register a process group @p name on a duplicate of @p comm (the caller
/// keeps @p comm; opreg's messages never mix with the program's). The
/// duplicate returns errors instead of aborting (`MPI_ERRORS_RETURN`), so a
/// failing MPI call becomes ::OPREG_ERR_COMMUNICATION with MPI's text.
/// @p flags are ::opreg_group_flags. A collective that runs longer than
/// @p timeout_ms (0: no limit) is logged and the job is ended with
/// `MPI_Abort`, after printing the reason on stderr, since MPI cannot
/// cancel a collective that a rank never joined. With less than
/// `MPI_THREAD_MULTIPLE`, the group's calls are serialised.
///
/// This is a collective call over @p comm (it duplicates it). Destroy the
/// group with opreg_group_destroy() before `MPI_Finalize`.
/// @return ::OPREG_OK; ::OPREG_ERR_INVALID_ARGUMENT (MPI not initialised,
/// or already finalised; `MPI_COMM_NULL`; a bad name);
/// ::OPREG_ERR_ALREADY_DEFINED; ::OPREG_ERR_COMMUNICATION (MPI refused to
/// duplicate the communicator); ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_mpi_group_create(const char *name, MPI_Comm comm, uint32_t flags,
                                              uint32_t timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
