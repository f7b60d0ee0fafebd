/* The OpenCL backend plugin, shared by its files: devices and their
 * contexts, queues and programs (opencl_device.c) and the op kernels
 * (opencl_ops.c). The plugin calls opreg only through the host table. */
#ifndef OPREG_OPENCL_INTERNAL_H
#define OPREG_OPENCL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "opreg/plugin.h"

#include <pthread.h>

#define OCL_MAX_DEVICES 8

/* Storage dtypes of the kernels: the suffix of each kernel's name. */
enum ocl_dtype { OCL_F32, OCL_F16, OCL_BF16, OCL_NDTYPES };

/* The kernels of kernels.cl that come in one variant per dtype. */
#define OCL_KERNELS(X)                                                                             \
    X(rms_norm)                                                                                    \
    X(fused_add_rms_norm)                                                                          \
    X(silu_and_mul)                                                                                \
    X(gelu_and_mul)                                                                                \
    X(gelu_tanh_and_mul)                                                                           \
    X(rotary_embedding)                                                                            \
    X(reshape_and_cache)                                                                           \
    X(fp8_quant)                                                                                   \
    X(fp8_quant_dyn)                                                                               \
    X(amax)                                                                                        \
    X(static_int8_quant)                                                                           \
    X(dynamic_int8_quant)

enum ocl_kernel {
#define OCL_KERNEL_ENUM(name) OCL_K_##name,
    OCL_KERNELS(OCL_KERNEL_ENUM)
#undef OCL_KERNEL_ENUM
        OCL_NKERNELS
};

struct ocl_device {
    cl_device_id id;
    cl_context ctx;
    cl_command_queue queue; /* in order: the device's one stream */
    cl_program program;     /* built on first use */
    cl_kernel kernels[OCL_NKERNELS][OCL_NDTYPES];
    cl_kernel finish_scale; /* fp8_finish_scale */
    cl_mem scratch;         /* 4 bytes: the amax of dynamic fp8 quantisation */
    char name[128];
};

struct ocl_state {
    const opreg_host *host;
    /* Serialises discovery, program builds, and setting a kernel's
     * arguments with its enqueue (a cl_kernel is not thread-safe). */
    pthread_mutex_t lock;
    bool discovered;
    int ndev;
    struct ocl_device dev[OCL_MAX_DEVICES];
    char why[256]; /* why no device is usable */
};

extern struct ocl_state ocl;
extern const opreg_backend ocl_backend;
/* The text of kernels.cl (generated at build time). */
extern const char ocl_kernels_source[];

/* Find the platforms and devices once; false when there is none. */
bool ocl_discover(void);
/* Release every OpenCL object (the plugin's fini). */
void ocl_release(void);
/* Set the last error through the host and return @p st. */
opreg_status ocl_fail(opreg_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Under ocl.lock: device @p device_id with its program built. */
opreg_status ocl_device_ready(struct ocl_device **out, int device_id);
/* Under ocl.lock: kernel @p k for @p dtype of a ready device. */
cl_kernel ocl_kernel_of(struct ocl_device *d, enum ocl_kernel k, int dtype);
/* Under ocl.lock: enqueue @p kernel over @p global work-items. */
opreg_status ocl_enqueue(struct ocl_device *d, cl_kernel kernel, size_t global, const char *what);

/* Register the op kernels under @p key (opencl_ops.c). */
opreg_status ocl_register(const opreg_host *host, opreg_plugin *plugin, opreg_dispatch_key key);

#endif
