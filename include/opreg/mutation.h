/// @file mutation.h
/// @brief The mutation sanitizer: catching kernels that write arguments
/// their schema says they only read.
///
/// With the sanitizer on, every call of an op (boxed, unboxed and typed)
/// hashes the bytes of each tensor argument that the schema does not mark
/// written (`Tensor!`, `Tensor(a!)`) before the kernel runs and after, and
/// reports a kernel that changed one through opreg's log sink
/// (opreg_set_log_callback(), level ::OPREG_LOG_ERROR), naming the op, the
/// dispatch key, the argument and where the kernel was registered. Host
/// memory is read directly; other devices' memory through their backend's
/// `copy_to_host`, and a device whose backend has none is not checked. See
/// docs/mutation.md.
///
/// Off (the default), calls run exactly as without the sanitizer: the
/// switch rebuilds the registry's dispatch tables, and the call path holds
/// no test of it.
#ifndef OPREG_MUTATION_H
#define OPREG_MUTATION_H

#include "opreg/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/// What the sanitizer does.
typedef enum opreg_mutation_mode {
    OPREG_MUTATION_OFF = 0,    ///< no checking: calls run the kernels directly
    OPREG_MUTATION_REPORT = 1, ///< log each violation; the call returns the kernel's status
    /// log each violation, and a call whose kernel succeeded returns
    /// ::OPREG_ERR_MUTATION, with the report as its message
    OPREG_MUTATION_FAIL = 2,
} opreg_mutation_mode;

/// Switch the sanitizer of @p reg to @p mode and rebuild every op's
/// dispatch table (also those of ops defined later follow the mode). A
/// registry starts in the mode that the environment variable
/// `OPREG_CHECK_MUTATION` gives when it is created: unset, `0` or `off`:
/// ::OPREG_MUTATION_OFF; `1` or `report`: ::OPREG_MUTATION_REPORT; `fail`:
/// ::OPREG_MUTATION_FAIL; anything else is logged as a warning and means
/// off. Takes the registration lock; calls running on other threads finish
/// with the tables they loaded, and later calls see the new mode. The old
/// tables are freed by opreg_registry_reclaim(), as after any registration.
/// @return ::OPREG_OK; ::OPREG_ERR_INVALID_ARGUMENT (a NULL registry or an
/// unknown mode); ::OPREG_ERR_OUT_OF_MEMORY, leaving the mode as it was.
OPREG_API opreg_status opreg_registry_set_mutation_check(opreg_registry *reg,
                                                         opreg_mutation_mode mode);

/// The sanitizer's mode for @p reg (::OPREG_MUTATION_OFF for NULL). No lock.
OPREG_API opreg_mutation_mode opreg_registry_mutation_check(const opreg_registry *reg);

#ifdef __cplusplus
}
#endif

#endif
