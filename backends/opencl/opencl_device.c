/* Devices, the backend table (discovery, buffers, the queue as the stream,
 * copies) and the program built from kernels.cl on each device's first use.
 *
 * Tensors on the device: `device_type` kDLOpenCL, `device_id` the index of
 * the device in discovery order (platforms, then their devices), `data` the
 * cl_mem handle of a buffer and `byte_offset` the first element's place in
 * it (OPREG_BACKEND_DATA_IS_HANDLE).
 *
 * Every OpenCL object this file makes (contexts, queues, buffers, programs,
 * kernels) and every kernel it enqueues goes through one of the ocl_make_*
 * functions below, so that a test build can make any one of them fail. A
 * failure leaves nothing half made: a device whose context or queue could
 * not be made is opened again on its next use, and a failed program build
 * releases all it made and is tried again on the next call. */
#include "backends/opencl/opencl_fault.h"
#include "backends/opencl/opencl_internal.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ocl_state ocl = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- OpenCL calls that can fail, and the test hook ------------------------------ */

#ifdef OPREG_FAULT_INJECTION
/* Test builds (OPREG_FAULT_INJECTION): the n-th call from now of the armed
 * classes (OCL_FI_*) fails with the error OpenCL itself returns when memory
 * or resources run out. The test reaches these by dlsym() on the module. */
static atomic_ulong fi_countdown, fi_calls;
static atomic_uint fi_classes;
static atomic_bool fi_hit;

OPREG_PLUGIN_EXPORT void ocl_fi_arm(unsigned long n, unsigned classes);
OPREG_PLUGIN_EXPORT void ocl_fi_arm(unsigned long n, unsigned classes) {
    atomic_store(&fi_classes, classes);
    atomic_store(&fi_calls, 0);
    atomic_store(&fi_hit, false);
    atomic_store(&fi_countdown, n);
}

/* Calls of the armed classes made since ocl_fi_arm(). */
OPREG_PLUGIN_EXPORT unsigned long ocl_fi_calls(void);
OPREG_PLUGIN_EXPORT unsigned long ocl_fi_calls(void) {
    return atomic_load(&fi_calls);
}

/* Whether the armed call has failed. */
OPREG_PLUGIN_EXPORT bool ocl_fi_failed(void);
OPREG_PLUGIN_EXPORT bool ocl_fi_failed(void) {
    return atomic_load(&fi_hit);
}

static bool fi_fail(unsigned cls) {
    if (!(atomic_load(&fi_classes) & cls)) return false;
    atomic_fetch_add(&fi_calls, 1);
    unsigned long left = atomic_load(&fi_countdown);
    while (left > 0)
        if (atomic_compare_exchange_weak(&fi_countdown, &left, left - 1)) {
            if (left != 1) return false;
            atomic_store(&fi_hit, true);
            return true;
        }
    return false;
}
#else
#define fi_fail(cls) false
#endif

/* The name of an error code, for messages. */
static const char *err_name(cl_int err) {
    switch (err) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES:
        return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY:
        return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE:
        return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE:
        return "CL_INVALID_VALUE";
    default:
        return "an OpenCL error";
    }
}

/* Running out of memory or resources is OPREG_ERR_OUT_OF_MEMORY; anything
 * else is @p otherwise. */
static opreg_status status_of(cl_int err, opreg_status otherwise) {
    return err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES ||
                   err == CL_OUT_OF_HOST_MEMORY
               ? OPREG_ERR_OUT_OF_MEMORY
               : otherwise;
}

static cl_context make_context(cl_device_id id, cl_int *err) {
    if (fi_fail(OCL_FI_CREATE)) return *err = CL_OUT_OF_HOST_MEMORY, NULL;
    return clCreateContext(NULL, 1, &id, NULL, NULL, err);
}

static cl_command_queue make_queue(cl_context ctx, cl_device_id id, cl_int *err) {
    if (fi_fail(OCL_FI_CREATE)) return *err = CL_OUT_OF_HOST_MEMORY, NULL;
    return clCreateCommandQueue(ctx, id, 0, err);
}

static cl_mem make_buffer(cl_context ctx, size_t bytes, cl_int *err) {
    if (fi_fail(OCL_FI_CREATE)) return *err = CL_MEM_OBJECT_ALLOCATION_FAILURE, NULL;
    return clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, err);
}

static cl_program make_program(cl_context ctx, const char *src, cl_int *err) {
    if (fi_fail(OCL_FI_BUILD)) return *err = CL_OUT_OF_HOST_MEMORY, NULL;
    return clCreateProgramWithSource(ctx, 1, &src, NULL, err);
}

static cl_int build_program(cl_program prog, cl_device_id id, const char *options) {
    if (fi_fail(OCL_FI_BUILD)) return CL_OUT_OF_HOST_MEMORY;
    return clBuildProgram(prog, 1, &id, options, NULL, NULL);
}

static cl_kernel make_kernel(cl_program prog, const char *name, cl_int *err) {
    if (fi_fail(OCL_FI_BUILD)) return *err = CL_OUT_OF_HOST_MEMORY, NULL;
    return clCreateKernel(prog, name, err);
}

static cl_int enqueue(cl_command_queue q, cl_kernel kernel, size_t global) {
    if (fi_fail(OCL_FI_ENQUEUE)) return CL_OUT_OF_RESOURCES;
    return clEnqueueNDRangeKernel(q, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
}

opreg_status ocl_fail(opreg_status st, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ocl.host ? ocl.host->set_error(st, msg) : st;
}

/* Under ocl.lock: the device's context and queue, made if they are not
 * yet (a failure leaves neither, and the next call tries again). */
static opreg_status open_locked(struct ocl_device *d) {
    if (d->queue) return OPREG_OK;
    cl_int err = CL_SUCCESS;
    cl_context ctx = make_context(d->id, &err);
    if (err != CL_SUCCESS)
        return ocl_fail(status_of(err, OPREG_ERR_DEVICE),
                        "opencl: device '%s': clCreateContext: error %d (%s)", d->name, (int)err,
                        err_name(err));
    cl_command_queue q = make_queue(ctx, d->id, &err);
    if (err != CL_SUCCESS) {
        clReleaseContext(ctx);
        return ocl_fail(status_of(err, OPREG_ERR_DEVICE),
                        "opencl: device '%s': clCreateCommandQueue: error %d (%s)", d->name,
                        (int)err, err_name(err));
    }
    d->ctx = ctx;
    d->queue = q;
    return OPREG_OK;
}

static bool discover_locked(void) {
    if (ocl.discovered) return ocl.ndev > 0;
    ocl.discovered = true;
    cl_platform_id plats[8];
    cl_uint nplat = 0;
    cl_int err = clGetPlatformIDs(8, plats, &nplat);
    if (err != CL_SUCCESS || nplat == 0) {
        snprintf(ocl.why, sizeof ocl.why, "no OpenCL platform (clGetPlatformIDs: %d)", (int)err);
        return false;
    }
    for (cl_uint p = 0; p < nplat && ocl.ndev < OCL_MAX_DEVICES; p++) {
        cl_device_id ids[OCL_MAX_DEVICES];
        cl_uint n = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, OCL_MAX_DEVICES, ids, &n) != CL_SUCCESS)
            continue;
        for (cl_uint i = 0; i < n && ocl.ndev < OCL_MAX_DEVICES; i++) {
            struct ocl_device *d = &ocl.dev[ocl.ndev];
            memset(d, 0, sizeof *d);
            d->id = ids[i];
            clGetDeviceInfo(ids[i], CL_DEVICE_NAME, sizeof d->name - 1, d->name, NULL);
            /* A device that cannot be opened now (out of memory, say) keeps
             * its place and number, and is opened again on its next use. */
            open_locked(d);
            ocl.ndev++;
        }
    }
    if (ocl.ndev == 0)
        snprintf(ocl.why, sizeof ocl.why, "no usable OpenCL device on %u platform(s)",
                 (unsigned)nplat);
    return ocl.ndev > 0;
}

bool ocl_discover(void) {
    pthread_mutex_lock(&ocl.lock);
    bool ok = discover_locked();
    pthread_mutex_unlock(&ocl.lock);
    return ok;
}

void ocl_release(void) {
    pthread_mutex_lock(&ocl.lock);
    for (int i = 0; i < ocl.ndev; i++) {
        struct ocl_device *d = &ocl.dev[i];
        for (int k = 0; k < OCL_NKERNELS; k++)
            for (int t = 0; t < OCL_NDTYPES; t++)
                if (d->kernels[k][t]) clReleaseKernel(d->kernels[k][t]);
        if (d->finish_scale) clReleaseKernel(d->finish_scale);
        if (d->scratch) clReleaseMemObject(d->scratch);
        if (d->program) clReleaseProgram(d->program);
        if (d->queue) {
            clFinish(d->queue);
            clReleaseCommandQueue(d->queue);
        }
        if (d->ctx) clReleaseContext(d->ctx);
        memset(d, 0, sizeof *d);
    }
    ocl.ndev = 0;
    ocl.discovered = false;
    pthread_mutex_unlock(&ocl.lock);
}

/* ---- programs ------------------------------------------------------------------ */

static const char *const kernel_names[OCL_NKERNELS] = {
#define OCL_KERNEL_NAME(name) #name,
    OCL_KERNELS(OCL_KERNEL_NAME)
#undef OCL_KERNEL_NAME
};
static const char *const dtype_suffix[OCL_NDTYPES] = { "f32", "f16", "bf16" };

/* Release what a build made, after it failed partway: the next call builds
 * again from nothing. */
static void unbuild(struct ocl_device *d, cl_program prog) {
    for (int k = 0; k < OCL_NKERNELS; k++)
        for (int t = 0; t < OCL_NDTYPES; t++)
            if (d->kernels[k][t]) {
                clReleaseKernel(d->kernels[k][t]);
                d->kernels[k][t] = NULL;
            }
    if (d->finish_scale) clReleaseKernel(d->finish_scale);
    if (d->scratch) clReleaseMemObject(d->scratch);
    d->finish_scale = NULL;
    d->scratch = NULL;
    if (prog) clReleaseProgram(prog);
}

static opreg_status build(struct ocl_device *d) {
    cl_int err = CL_SUCCESS;
    cl_program prog = make_program(d->ctx, ocl_kernels_source, &err);
    if (err != CL_SUCCESS)
        return ocl_fail(status_of(err, OPREG_ERR_DEVICE),
                        "opencl: clCreateProgramWithSource: error %d (%s)", (int)err,
                        err_name(err));
    /* Division and sqrt correctly rounded, as in C: the quantisation ops are
     * compared bit for bit with the reference. */
    err = build_program(prog, d->id, "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt");
    if (err != CL_SUCCESS) {
        char log[3000] = "";
        clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        clReleaseProgram(prog);
        return ocl_fail(status_of(err, OPREG_ERR_DEVICE),
                        "opencl: building the kernels for device '%s' failed (error %d, %s); "
                        "build log:\n%s",
                        d->name, (int)err, err_name(err), log);
    }
    for (int k = 0; k < OCL_NKERNELS; k++)
        for (int t = 0; t < OCL_NDTYPES; t++) {
            char name[64];
            snprintf(name, sizeof name, "%s_%s", kernel_names[k], dtype_suffix[t]);
            d->kernels[k][t] = make_kernel(prog, name, &err);
            if (err != CL_SUCCESS) {
                d->kernels[k][t] = NULL;
                unbuild(d, prog);
                return ocl_fail(status_of(err, OPREG_ERR_DEVICE),
                                "opencl: clCreateKernel(%s): error %d (%s)", name, (int)err,
                                err_name(err));
            }
        }
    d->finish_scale = make_kernel(prog, "fp8_finish_scale", &err);
    if (err == CL_SUCCESS) d->scratch = make_buffer(d->ctx, 2 * sizeof(cl_uint), &err);
    if (err != CL_SUCCESS) {
        unbuild(d, prog);
        return ocl_fail(status_of(err, OPREG_ERR_DEVICE),
                        "opencl: preparing fp8_finish_scale: error %d (%s)", (int)err,
                        err_name(err));
    }
    d->program = prog;
    return OPREG_OK;
}

opreg_status ocl_device_ready(struct ocl_device **out, int device_id) {
    if (!discover_locked()) return ocl_fail(OPREG_ERR_BACKEND_UNAVAILABLE, "opencl: %s", ocl.why);
    if (device_id < 0 || device_id >= ocl.ndev)
        return ocl_fail(OPREG_ERR_INVALID_ARGUMENT, "opencl: no device %d (there are %d)",
                        device_id, ocl.ndev);
    struct ocl_device *d = &ocl.dev[device_id];
    opreg_status st = open_locked(d);
    if (st == OPREG_OK && !d->program) st = build(d);
    if (st != OPREG_OK) return st;
    *out = d;
    return OPREG_OK;
}

cl_kernel ocl_kernel_of(struct ocl_device *d, enum ocl_kernel k, int dtype) {
    return d->kernels[k][dtype];
}

opreg_status ocl_enqueue(struct ocl_device *d, cl_kernel kernel, size_t global, const char *what) {
    if (global == 0) return OPREG_OK;
    cl_int err = enqueue(d->queue, kernel, global);
    if (err != CL_SUCCESS)
        return ocl_fail(status_of(err, OPREG_ERR_DEVICE), "opencl: enqueueing %s: error %d (%s)",
                        what, (int)err, err_name(err));
    return OPREG_OK;
}

/* ---- the backend table ------------------------------------------------------------ */

static bool be_available(void *context, char *why, size_t cap) {
    (void)context;
    if (ocl_discover()) return true;
    if (why && cap) snprintf(why, cap, "%s", ocl.why);
    return false;
}

static int be_device_count(void *context) {
    (void)context;
    ocl_discover();
    return ocl.ndev;
}

/* Device @p device_id, opened (its context and queue, once made, stay until
 * fini, so they may be used after the lock is let go). */
static opreg_status device_of(struct ocl_device **out, int device_id) {
    *out = NULL;
    pthread_mutex_lock(&ocl.lock);
    opreg_status st = OPREG_OK;
    if (!discover_locked())
        st = ocl_fail(OPREG_ERR_BACKEND_UNAVAILABLE, "opencl: %s", ocl.why);
    else if (device_id < 0 || device_id >= ocl.ndev)
        st = ocl_fail(OPREG_ERR_INVALID_ARGUMENT, "opencl: no device %d (there are %d)", device_id,
                      ocl.ndev);
    else if ((st = open_locked(&ocl.dev[device_id])) == OPREG_OK)
        *out = &ocl.dev[device_id];
    pthread_mutex_unlock(&ocl.lock);
    return st;
}

static opreg_status be_alloc(void *context, void **out, size_t bytes, int device_id) {
    (void)context;
    *out = NULL;
    struct ocl_device *d;
    opreg_status st = device_of(&d, device_id);
    if (st != OPREG_OK) return st;
    cl_int err = CL_SUCCESS;
    cl_mem m = make_buffer(d->ctx, bytes ? bytes : 1, &err);
    if (err != CL_SUCCESS)
        return ocl_fail(status_of(err, OPREG_ERR_DEVICE),
                        "opencl: clCreateBuffer(%zu bytes): error %d (%s)", bytes, (int)err,
                        err_name(err));
    *out = m;
    return OPREG_OK;
}

static void be_free(void *context, void *ptr, size_t bytes, int device_id) {
    (void)context, (void)bytes, (void)device_id;
    if (ptr) clReleaseMemObject((cl_mem)ptr);
}

static void *be_stream(void *context, int device_id) {
    (void)context;
    struct ocl_device *d;
    return device_of(&d, device_id) == OPREG_OK ? (void *)d->queue : NULL;
}

static opreg_status be_synchronize(void *context, int device_id) {
    (void)context;
    struct ocl_device *d;
    opreg_status st = device_of(&d, device_id);
    if (st != OPREG_OK) return st;
    cl_int err = clFinish(d->queue);
    return err == CL_SUCCESS ? OPREG_OK
                             : ocl_fail(OPREG_ERR_DEVICE, "opencl: clFinish: error %d", (int)err);
}

static opreg_status be_to_device(void *context, void *dst, size_t dst_offset, const void *src,
                                 size_t bytes, int device_id) {
    (void)context;
    struct ocl_device *d;
    opreg_status st = device_of(&d, device_id);
    if (st != OPREG_OK) return st;
    if (!bytes) return OPREG_OK;
    cl_int err =
        clEnqueueWriteBuffer(d->queue, (cl_mem)dst, CL_TRUE, dst_offset, bytes, src, 0, NULL, NULL);
    return err == CL_SUCCESS
               ? OPREG_OK
               : ocl_fail(OPREG_ERR_DEVICE, "opencl: clEnqueueWriteBuffer: error %d", (int)err);
}

static opreg_status be_to_host(void *context, void *dst, const void *src, size_t src_offset,
                               size_t bytes, int device_id) {
    (void)context;
    struct ocl_device *d;
    opreg_status st = device_of(&d, device_id);
    if (st != OPREG_OK) return st;
    if (!bytes) return OPREG_OK;
    cl_int err = clEnqueueReadBuffer(d->queue, (cl_mem)(uintptr_t)src, CL_TRUE, src_offset, bytes,
                                     dst, 0, NULL, NULL);
    return err == CL_SUCCESS
               ? OPREG_OK
               : ocl_fail(OPREG_ERR_DEVICE, "opencl: clEnqueueReadBuffer: error %d", (int)err);
}

/* Buffer to buffer on the device's in-order queue, not waited for. */
static opreg_status be_on_device(void *context, void *dst, size_t dst_offset, const void *src,
                                 size_t src_offset, size_t bytes, int device_id) {
    (void)context;
    struct ocl_device *d;
    opreg_status st = device_of(&d, device_id);
    if (st != OPREG_OK) return st;
    if (!bytes) return OPREG_OK;
    cl_int err = clEnqueueCopyBuffer(d->queue, (cl_mem)(uintptr_t)src, (cl_mem)dst, src_offset,
                                     dst_offset, bytes, 0, NULL, NULL);
    return err == CL_SUCCESS
               ? OPREG_OK
               : ocl_fail(OPREG_ERR_DEVICE, "opencl: clEnqueueCopyBuffer: error %d", (int)err);
}

const opreg_backend ocl_backend = {
    .struct_size = sizeof(opreg_backend),
    .abi_version = OPREG_BACKEND_ABI_VERSION,
    .name = "opencl",
    .device_type = kDLOpenCL,
    .is_available = be_available,
    .device_count = be_device_count,
    .alloc = be_alloc,
    .free = be_free,
    .current_stream = be_stream,
    .synchronize = be_synchronize,
    .flags = OPREG_BACKEND_DATA_IS_HANDLE,
    .copy_to_device = be_to_device,
    .copy_to_host = be_to_host,
    .copy_on_device = be_on_device,
};
