/* Shared helpers of the registry tests: probe kernels that record which
 * kernel ran, tensors on any device, and a log capture. */
#ifndef OPREG_TESTS_REG_HELPERS_H
#define OPREG_TESTS_REG_HELPERS_H

#include "opreg/opreg.h"
#include "test.h"

/* A probe's context: a name and a call count. */
struct probe {
    const char *name;
    int calls;
};

static const char *last_ran;

static inline opreg_status probe_kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                                        opreg_value *rets) {
    (void)op;
    (void)args;
    (void)rets;
    struct probe *p = ctx;
    p->calls++;
    last_ran = p->name;
    return OPREG_OK;
}

static inline opreg_kernel probe_k(struct probe *p) {
    opreg_kernel k = { probe_kernel, p, NULL, 0 };
    return k;
}

/* A tensor header on any device, with static shape storage; no data. */
struct fake_tensor {
    DLTensor t;
    int64_t shape[2];
};

static inline DLTensor *fake(struct fake_tensor *f, int32_t device_type, int32_t id) {
    memset(f, 0, sizeof *f);
    f->shape[0] = 2;
    f->shape[1] = 3;
    f->t.ndim = 2;
    f->t.shape = f->shape;
    f->t.device.device_type = (DLDeviceType)device_type;
    f->t.device.device_id = id;
    f->t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_F32);
    return &f->t;
}

/* Log capture: the last warning, and how many came. */
static char log_last[2048];
static int log_count;

static inline void capture_log(void *user, opreg_log_level level, const char *message) {
    (void)user;
    (void)level;
    log_count++;
    snprintf(log_last, sizeof log_last, "%s", message);
}

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        opreg_status check_st_ = (expr);                                                           \
        if (check_st_ != OPREG_OK) {                                                               \
            TEST_FAIL_AT("%s: %s: %s", #expr, opreg_status_name(check_st_), opreg_last_error());   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_STATUS(expr, want)                                                                   \
    do {                                                                                           \
        opreg_status check_st_ = (expr);                                                           \
        if (check_st_ != (want)) {                                                                 \
            TEST_FAIL_AT("%s: got %s, want %s (%s)", #expr, opreg_status_name(check_st_),          \
                         opreg_status_name(want), opreg_last_error());                             \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#endif
