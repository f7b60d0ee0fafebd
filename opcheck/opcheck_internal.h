/* Inside the inputs and opcheck: the layout of opreg_inputs, which the
 * checks read tensor by tensor, and the guarded copies they run on. */
#ifndef OPREG_OPCHECK_INTERNAL_H
#define OPREG_OPCHECK_INTERNAL_H

#include "opreg/inputs.h"
#include "opreg/opreg.h"

#define OPREG__IN_MAX_ARGS    24
#define OPREG__IN_MAX_TENSORS 48
#define OPREG__IN_MAX_LIST    8
#define OPREG__IN_MAX_RETS    4

/* The byte every guard zone is filled with, and its size on each side. */
#define OPREG__GUARD_BYTE  0xA5
#define OPREG__GUARD_BYTES 64

struct opreg_inputs {
    const opreg_op *op;
    opreg_dtype dtype;
    size_t nargs;
    opreg_value args[OPREG__IN_MAX_ARGS];
    size_t ntensors;
    /* Tensor i: alloc[i] the buffer with guard zones around the data (NULL
     * when unguarded), base[i] the data (owns it when unguarded), view[i]
     * what the arguments point to (base[i], or a strided view of it). */
    DLTensor *alloc[OPREG__IN_MAX_TENSORS];
    DLTensor *base[OPREG__IN_MAX_TENSORS];
    DLTensor *view[OPREG__IN_MAX_TENSORS];
    size_t guard; /* bytes of each guard zone, 0 when unguarded */
    /* Views that opcheck's invalid variants replaced (freed with the rest). */
    DLTensor *replaced[OPREG__IN_MAX_ARGS];
    size_t nreplaced;
    DLTensor *lists[OPREG__IN_MAX_ARGS][OPREG__IN_MAX_LIST];
    char strs[OPREG__IN_MAX_ARGS][16];
    int64_t ints[OPREG__IN_MAX_ARGS][OPREG__IN_MAX_LIST];
    opreg_value rets[OPREG__IN_MAX_RETS];
};

/* opreg_inputs_to_device() whose tensors sit between guard zones of
 * @p guard bytes filled with OPREG__GUARD_BYTE (none on Meta). */
opreg_status opreg__inputs_to_device_guarded(opreg_inputs **out, const opreg_inputs *src,
                                             DLDevice device, uint32_t host_args, size_t guard);

/* Copy @p bytes between host memory and a device's (either side, or both
 * host), through the device backend's copy functions. */
opreg_status opreg__inputs_copy(void *dst, size_t doff, DLDevice dd, const void *src, size_t so,
                                DLDevice sd, size_t bytes);

/* Whether the host reads @p d's memory directly (the CPU key's devices). */
bool opreg__inputs_on_host(DLDevice d);

#endif
