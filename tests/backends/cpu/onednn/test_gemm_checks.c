/* The bad-input matrix of the GEMMs whose CPU kernels run on oneDNN: each
 * case breaks one thing about otherwise valid arguments, and both the op's
 * check and the CPU key's registered kernel (which checks once, then hands
 * checked arguments to oneDNN) must refuse it with the expected status, a
 * message naming the argument, and every buffer byte for byte unchanged. */
#include "opreg/opreg.h"
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "gemm_util.h"
#include "test.h"

#include <stdio.h>

enum { INV = OPREG_ERR_INVALID_ARGUMENT, SHP = OPREG_ERR_SHAPE, DEV = OPREG_ERR_DEVICE_MISMATCH };

struct expect {
    int status;
    const char *arg; /* quoted in the message: "'arg'" */
};

/* Buffers and their snapshots, to prove nothing was written. */
struct snap {
    const tt *t[6];
    void *copy[6];
    int n;
};

static void snap_take(struct snap *s) {
    for (int i = 0; i < s->n; i++) {
        s->copy[i] = malloc(s->t[i]->bytes ? s->t[i]->bytes : 1);
        memcpy(s->copy[i], s->t[i]->buf, s->t[i]->bytes);
    }
}

static int snap_same(struct snap *s) {
    int same = 1;
    for (int i = 0; i < s->n; i++) {
        same &= memcmp(s->copy[i], s->t[i]->buf, s->t[i]->bytes) == 0;
        free(s->copy[i]);
    }
    return same;
}

/* Make @p x's buffer big enough to hold the whole output, so that an output
 * pointed into it overlaps it and nothing else. */
static void *room(tt *x) {
    x->buf = realloc(x->buf, 4096);
    x->t.data = x->buf;
    return x->buf;
}

/* The CPU key's kernel of _C::<name>; a returned tensor is freed. */
static opreg_status call_cpu(const char *name, const opreg_value *args, size_t nargs,
                             size_t nrets) {
    const opreg_op *op = NULL;
    opreg_value ret = opreg_none();
    opreg_status st = opreg_op_find(&op, opreg_registry_default(), name);
    if (st != OPREG_OK) return st;
    st = opreg_call_boxed_key(op, OPREG_KEY_CPU, args, nargs, NULL, 0, &ret, nrets);
    if (st == OPREG_OK && ret.kind == OPREG_VALUE_TENSOR) opreg_tensor_free(ret.u.tensor);
    return st;
}

static int verify(int id, opreg_status check, opreg_status kernel, const struct expect *e,
                  int unchanged) {
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", e->arg);
    if (check != (opreg_status)e->status || kernel != check || !unchanged ||
        !strstr(opreg_last_error(), quoted)) {
        fprintf(stderr, "case %d: check %s, kernel %s, want %s naming %s; unchanged %d; \"%s\"\n",
                id, opreg_status_name(check), opreg_status_name(kernel),
                opreg_status_name((opreg_status)e->status), quoted, unchanged, opreg_last_error());
        return 0;
    }
    return 1;
}

/* ---- linear: x [3,8], w [5,8], b [5], out [3,5], f32; the op calls its
 * returned tensor 'result' ---- */

static const struct expect linear_cases[] = {
    { INV, "input" },  { INV, "weight" }, { INV, "result" }, { SHP, "input" },  { SHP, "weight" },
    { SHP, "bias" },   { SHP, "result" }, { SHP, "input" },  { SHP, "weight" }, { SHP, "weight" },
    { SHP, "bias" },   { SHP, "bias" },   { SHP, "result" }, { SHP, "result" }, { SHP, "input" },
    { SHP, "weight" }, { SHP, "result" }, { SHP, "bias" },   { SHP, "input" },  { INV, "input" },
    { INV, "weight" }, { INV, "bias" },   { INV, "result" }, { INV, "input" },  { INV, "weight" },
    { INV, "bias" },   { DEV, "result" }, { DEV, "weight" }, { SHP, "input" },  { SHP, "input" },
};

static bool of_result(int id) {
    static const int ids[] = { 2, 6, 12, 13, 16, 22, 23, 24, 25, 26 };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i] == id) return true;
    return false;
}

static void linear_case(int id) {
    tt x, w, b, out;
    opreg_tensor *px = &x.t, *pw = &w.t, *pb = &b.t, *po = &out.t;
    static int64_t col_major[2] = { 1, 3 }, stride2[1] = { 2 };
    struct snap s = { { &x, &w, &b, &out }, { NULL }, 4 };
    opreg_status check, kernel;
    tt_2d(&x, OPREG_DTYPE_F32, 3, 8);
    tt_2d(&w, OPREG_DTYPE_F32, 5, 8);
    tt_1d(&b, OPREG_DTYPE_F32, 5);
    tt_2d(&out, OPREG_DTYPE_F32, 3, 5);
    tt_fill(&x, 1.0f);
    tt_fill(&w, 1.0f);
    tt_fill(&b, 1.0f);
    tt_fill(&out, 1.0f);
    switch (id) {
    case 0:
        px = NULL;
        break;
    case 1:
        pw = NULL;
        break;
    case 2:
        po = NULL;
        break;
    case 3:
        x.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_I32);
        break;
    case 4:
        w.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_BF16);
        break;
    case 5:
        b.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_BF16);
        break;
    case 6:
        out.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_BF16);
        break;
    case 7:
        x.t.ndim = 0;
        break;
    case 8:
        w.t.ndim = 1;
        break;
    case 9:
        w.shape[1] = 7;
        break;
    case 10:
        b.shape[0] = 4;
        break;
    case 11:
        b.t.ndim = 2;
        b.shape[0] = 1;
        b.shape[1] = 5;
        break;
    case 12:
        out.shape[1] = 4;
        break;
    case 13:
        out.t.ndim = 3;
        out.shape[2] = 1;
        break;
    case 14:
        x.t.strides = col_major;
        break;
    case 15:
        w.t.strides = col_major;
        break;
    case 16:
        out.t.strides = col_major;
        break;
    case 17:
        b.t.strides = stride2;
        break;
    case 18:
        x.shape[0] = -1;
        break;
    case 19:
        x.t.data = NULL;
        break;
    case 20:
        w.t.data = NULL;
        break;
    case 21:
        b.t.data = NULL;
        break;
    case 22:
        out.t.data = NULL;
        break;
    case 23:
        out.t.data = room(&x);
        break;
    case 24:
        out.t.data = room(&w);
        break;
    case 25:
        out.t.data = room(&b);
        break;
    case 26:
        out.t.device.device_type = kDLCUDA;
        break;
    case 27:
        w.t.device.device_type = kDLCUDA;
        break;
    case 28:
        x.t.dtype.lanes = 2;
        break;
    default:
        x.t.ndim = OPREG__MAX_DIMS + 1;
        break;
    }
    snap_take(&s);
    /* The registered linear makes its result, so the cases that break a
     * caller's result (its dtype, shape, strides, data, device, or overlap
     * with an input) apply to the op's check of one, opreg__check_linear_out. */
    check = opreg__check_linear_out(po, px, pw, pb);
    if (of_result(id)) {
        kernel = check;
    } else {
        opreg_value args[3] = { opreg_tensor_value(px), opreg_tensor_value(pw),
                                opreg_optional_tensor_value(pb) };
        kernel = call_cpu("_C::linear", args, 3, 1);
    }
    if (!verify(id, check, kernel, &linear_cases[id], snap_same(&s)))
        TEST_FAIL_AT("linear bad-input case %d", id);
    tt_free(&x);
    tt_free(&w);
    tt_free(&b);
    tt_free(&out);
}

TEST(linear_bad_inputs) {
    for (int id = 0; id < (int)(sizeof linear_cases / sizeof linear_cases[0]); id++) {
        linear_case(id);
        if (test_current_failed) return;
    }
}

/* ---- scaled_mm: a [3,8] i8, b [8,5] i8 column-major, scales [3] and [5],
 * bias [5] and out [3,5] f32 ---- */

static const struct expect mm_cases[] = {
    { INV, "a" },        { INV, "b" },        { INV, "a_scales" }, { INV, "b_scales" },
    { INV, "out" },      { SHP, "a" },        { SHP, "b" },        { SHP, "a_scales" },
    { SHP, "b_scales" }, { SHP, "bias" },     { SHP, "out" },      { SHP, "a" },
    { SHP, "b" },        { SHP, "b" },        { SHP, "a" },        { SHP, "a_scales" },
    { SHP, "b_scales" }, { SHP, "a_scales" }, { SHP, "bias" },     { SHP, "out" },
    { SHP, "out" },      { INV, "a" },        { INV, "b" },        { INV, "a_scales" },
    { INV, "b_scales" }, { INV, "bias" },     { INV, "out" },      { INV, "a" },
    { INV, "b" },        { INV, "a_scales" }, { INV, "b_scales" }, { INV, "bias" },
    { DEV, "out" },      { SHP, "bias" },     { DEV, "a_scales" },
};

static void mm_case(int id) {
    tt a, b, as, bs, bias, out;
    opreg_tensor *pa = &a.t, *pb = &b.t, *pas = &as.t, *pbs = &bs.t, *po = &out.t;
    static int64_t col_major[2] = { 1, 3 }, stride2[1] = { 2 };
    struct snap s = { { &a, &b, &as, &bs, &bias, &out }, { NULL }, 6 };
    opreg_status check, kernel;
    tt_2d(&a, OPREG_DTYPE_I8, 3, 8);
    tt_2d(&b, OPREG_DTYPE_I8, 8, 5);
    b.strides[0] = 1;
    b.strides[1] = 8;
    b.t.strides = b.strides;
    tt_1d(&as, OPREG_DTYPE_F32, 3);
    tt_1d(&bs, OPREG_DTYPE_F32, 5);
    tt_1d(&bias, OPREG_DTYPE_F32, 5);
    tt_2d(&out, OPREG_DTYPE_F32, 3, 5);
    for (size_t i = 0; i < a.bytes; i++)
        ((int8_t *)a.buf)[i] = (int8_t)rnd_u32();
    tt_fill(&as, 1.0f);
    tt_fill(&bs, 1.0f);
    tt_fill(&bias, 1.0f);
    tt_fill(&out, 1.0f);
    switch (id) {
    case 0:
        pa = NULL;
        break;
    case 1:
        pb = NULL;
        break;
    case 2:
        pas = NULL;
        break;
    case 3:
        pbs = NULL;
        break;
    case 4:
        po = NULL;
        break;
    case 5:
        a.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_U8);
        break;
    case 6:
        b.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_F32);
        break;
    case 7:
        as.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_F64);
        break;
    case 8:
        bs.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_BF16);
        break;
    case 9:
        bias.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_BF16);
        break;
    case 10:
        out.t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_I32);
        break;
    case 11:
        a.t.ndim = 3;
        a.shape[2] = 1;
        break;
    case 12:
        b.shape[0] = 7;
        break;
    case 13:
        b.t.strides = NULL;
        break;
    case 14:
        a.t.strides = col_major;
        break;
    case 15:
        as.shape[0] = 2;
        break;
    case 16:
        bs.shape[0] = 4;
        break;
    case 17:
        as.t.strides = stride2;
        break;
    case 18:
        bias.shape[0] = 4;
        break;
    case 19:
        out.shape[1] = 4;
        break;
    case 20:
        out.t.strides = col_major;
        break;
    case 21:
        a.t.data = NULL;
        break;
    case 22:
        b.t.data = NULL;
        break;
    case 23:
        as.t.data = NULL;
        break;
    case 24:
        bs.t.data = NULL;
        break;
    case 25:
        bias.t.data = NULL;
        break;
    case 26:
        out.t.data = NULL;
        break;
    case 27:
        out.t.data = room(&a);
        break;
    case 28:
        out.t.data = room(&b);
        break;
    case 29:
        out.t.data = room(&as);
        break;
    case 30:
        out.t.data = room(&bs);
        break;
    case 31:
        out.t.data = room(&bias);
        break;
    case 32:
        out.t.device.device_type = kDLCUDA;
        break;
    case 33:
        bias.t.ndim = 2;
        bias.shape[0] = 1;
        bias.shape[1] = 5;
        break;
    default:
        as.t.device.device_type = kDLCUDA;
        break;
    }
    snap_take(&s);
    check = opreg__check_cutlass_scaled_mm(po, pa, pb, pas, pbs, &bias.t);
    {
        opreg_value args[6] = { opreg_tensor_value(po),  opreg_tensor_value(pa),
                                opreg_tensor_value(pb),  opreg_tensor_value(pas),
                                opreg_tensor_value(pbs), opreg_tensor_value(&bias.t) };
        kernel = call_cpu("_C::cutlass_scaled_mm", args, 6, 0);
    }
    if (!verify(id, check, kernel, &mm_cases[id], snap_same(&s)))
        TEST_FAIL_AT("scaled_mm bad-input case %d", id);
    tt_free(&a);
    tt_free(&b);
    tt_free(&as);
    tt_free(&bs);
    tt_free(&bias);
    tt_free(&out);
}

TEST(scaled_mm_bad_inputs) {
    for (int id = 0; id < (int)(sizeof mm_cases / sizeof mm_cases[0]); id++) {
        mm_case(id);
        if (test_current_failed) return;
    }
}

/* The valid fixtures pass, so each refusal above is the one thing broken. */
TEST(valid_fixtures_pass) {
    tt x, w, out;
    tt_2d(&x, OPREG_DTYPE_F32, 3, 8);
    tt_2d(&w, OPREG_DTYPE_F32, 5, 8);
    tt_2d(&out, OPREG_DTYPE_F32, 3, 5);
    opreg_value args[3] = { opreg_tensor_value(&x.t), opreg_tensor_value(&w.t), opreg_none() };
    CHECK_EQ_INT(opreg__check_linear_out(&out.t, &x.t, &w.t, NULL), OPREG_OK);
    CHECK_EQ_INT(call_cpu("_C::linear", args, 3, 1), OPREG_OK);
    tt_free(&x);
    tt_free(&w);
    tt_free(&out);
}

int main(void) {
    RUN(linear_bad_inputs);
    RUN(scaled_mm_bad_inputs);
    RUN(valid_fixtures_pass);
    return test_summary();
}
