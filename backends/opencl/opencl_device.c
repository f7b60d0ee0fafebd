/* Devices, the backend table (discovery, buffers, the queue as the stream,
 * copies) and the program built from kernels.cl on each device's first use.
 *
 * Tensors on the device: `device_type` kDLOpenCL, `device_id` the index of
 * the device in discovery order (platforms, then their devices), `data` the
 * cl_mem handle of a buffer and `byte_offset` the first element's place in
 * it (OPREG_BACKEND_DATA_IS_HANDLE). */
#include "backends/opencl/opencl_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ocl_state ocl = { .lock = PTHREAD_MUTEX_INITIALIZER };

opreg_status ocl_fail(opreg_status st, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ocl.host ? ocl.host->set_error(st, msg) : st;
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
            d->ctx = clCreateContext(NULL, 1, &ids[i], NULL, NULL, &err);
            if (err != CL_SUCCESS) continue;
            d->queue = clCreateCommandQueue(d->ctx, ids[i], 0, &err);
            if (err != CL_SUCCESS) {
                clReleaseContext(d->ctx);
                continue;
            }
            clGetDeviceInfo(ids[i], CL_DEVICE_NAME, sizeof d->name - 1, d->name, NULL);
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
        clFinish(d->queue);
        clReleaseCommandQueue(d->queue);
        clReleaseContext(d->ctx);
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

static opreg_status build(struct ocl_device *d) {
    cl_int err;
    const char *src = ocl_kernels_source;
    cl_program prog = clCreateProgramWithSource(d->ctx, 1, &src, NULL, &err);
    if (err != CL_SUCCESS)
        return ocl_fail(OPREG_ERR_DEVICE, "opencl: clCreateProgramWithSource: error %d", (int)err);
    /* Division and sqrt correctly rounded, as in C: the quantisation ops are
     * compared bit for bit with the reference. */
    err = clBuildProgram(prog, 1, &d->id, "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt",
                         NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[3000] = "";
        clGetProgramBuildInfo(prog, d->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        clReleaseProgram(prog);
        return ocl_fail(OPREG_ERR_DEVICE,
                        "opencl: building the kernels for device '%s' failed (error %d); build "
                        "log:\n%s",
                        d->name, (int)err, log);
    }
    for (int k = 0; k < OCL_NKERNELS; k++)
        for (int t = 0; t < OCL_NDTYPES; t++) {
            char name[64];
            snprintf(name, sizeof name, "%s_%s", kernel_names[k], dtype_suffix[t]);
            d->kernels[k][t] = clCreateKernel(prog, name, &err);
            if (err != CL_SUCCESS) {
                clReleaseProgram(prog);
                return ocl_fail(OPREG_ERR_DEVICE, "opencl: clCreateKernel(%s): error %d", name,
                                (int)err);
            }
        }
    d->finish_scale = clCreateKernel(prog, "fp8_finish_scale", &err);
    if (err == CL_SUCCESS)
        d->scratch = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, sizeof(cl_uint), NULL, &err);
    if (err != CL_SUCCESS) {
        clReleaseProgram(prog);
        return ocl_fail(OPREG_ERR_DEVICE, "opencl: preparing fp8_finish_scale: error %d", (int)err);
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
    if (!d->program) {
        opreg_status st = build(d);
        if (st != OPREG_OK) return st;
    }
    *out = d;
    return OPREG_OK;
}

cl_kernel ocl_kernel_of(struct ocl_device *d, enum ocl_kernel k, int dtype) {
    return d->kernels[k][dtype];
}

opreg_status ocl_enqueue(struct ocl_device *d, cl_kernel kernel, size_t global, const char *what) {
    if (global == 0) return OPREG_OK;
    cl_int err = clEnqueueNDRangeKernel(d->queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_fail(OPREG_ERR_DEVICE, "opencl: enqueueing %s: error %d", what, (int)err);
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

static struct ocl_device *device_or_null(int device_id) {
    if (!ocl_discover() || device_id < 0 || device_id >= ocl.ndev) return NULL;
    return &ocl.dev[device_id];
}

static opreg_status be_alloc(void *context, void **out, size_t bytes, int device_id) {
    (void)context;
    *out = NULL;
    struct ocl_device *d = device_or_null(device_id);
    if (!d) return ocl_fail(OPREG_ERR_INVALID_ARGUMENT, "opencl: no device %d", device_id);
    cl_int err;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &err);
    if (err != CL_SUCCESS)
        return ocl_fail(OPREG_ERR_OUT_OF_MEMORY, "opencl: clCreateBuffer(%zu bytes): error %d",
                        bytes, (int)err);
    *out = m;
    return OPREG_OK;
}

static void be_free(void *context, void *ptr, size_t bytes, int device_id) {
    (void)context, (void)bytes, (void)device_id;
    if (ptr) clReleaseMemObject((cl_mem)ptr);
}

static void *be_stream(void *context, int device_id) {
    (void)context;
    struct ocl_device *d = device_or_null(device_id);
    return d ? (void *)d->queue : NULL;
}

static opreg_status be_synchronize(void *context, int device_id) {
    (void)context;
    struct ocl_device *d = device_or_null(device_id);
    if (!d) return ocl_fail(OPREG_ERR_INVALID_ARGUMENT, "opencl: no device %d", device_id);
    cl_int err = clFinish(d->queue);
    return err == CL_SUCCESS ? OPREG_OK
                             : ocl_fail(OPREG_ERR_DEVICE, "opencl: clFinish: error %d", (int)err);
}

static opreg_status be_to_device(void *context, void *dst, size_t dst_offset, const void *src,
                                 size_t bytes, int device_id) {
    (void)context;
    struct ocl_device *d = device_or_null(device_id);
    if (!d) return ocl_fail(OPREG_ERR_INVALID_ARGUMENT, "opencl: no device %d", device_id);
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
    struct ocl_device *d = device_or_null(device_id);
    if (!d) return ocl_fail(OPREG_ERR_INVALID_ARGUMENT, "opencl: no device %d", device_id);
    if (!bytes) return OPREG_OK;
    cl_int err = clEnqueueReadBuffer(d->queue, (cl_mem)(uintptr_t)src, CL_TRUE, src_offset, bytes,
                                     dst, 0, NULL, NULL);
    return err == CL_SUCCESS
               ? OPREG_OK
               : ocl_fail(OPREG_ERR_DEVICE, "opencl: clEnqueueReadBuffer: error %d", (int)err);
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
};
