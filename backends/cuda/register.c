/* The CUDA key. Each kernel runs the op's shared checks (the same functions
 * as Meta, Reference and CPU, so every backend refuses the same inputs with
 * the same status and message), refuses tensors that are not in CUDA
 * memory, makes the tensors' device current, and enqueues the op's
 * launcher (one .cu file per op) on the thread's current stream of that
 * device. Nothing waits for the device.
 *
 * Index tensors (slots, positions, block tables, expert ids) live on the
 * device, so their values cannot be checked on the host before the launch
 * without a synchronisation; the kernels skip out-of-range indices instead
 * of reading or writing outside a tensor (docs/cuda.md). swap_blocks takes
 * its mapping on the host and checks it like the CPU does; moe_align_block_size
 * with far more experts than ids reads its ids back and checks them
 * (moe_align_sparse below). */
#include "backends/cuda/cuda_internal.h"
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "catalogue_args.h"
#include "ops/ref/ref.h"
#include "ops/register/catalogue.h"

#include <stdlib.h>
#include <string.h>

#define TS OPREG__ARG_T
#define OT OPREG__ARG_OPT_T
#define IV OPREG__ARG_I
#define FV OPREG__ARG_F
#define BV OPREG__ARG_B
#define SV OPREG__ARG_S

static bool is_cuda(const opreg_tensor *t) {
    return t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged;
}

static opreg_status chk_cuda(const char *op, const char *arg, const opreg_tensor *t) {
    if (!is_cuda(t)) {
        char a[64];
        opreg_device_format(t->device, a, sizeof a);
        return opreg__fail(OPREG_ERR_UNSUPPORTED,
                           "%s: argument '%s' is on %s; the CUDA kernel needs CUDA tensors", op,
                           arg, a);
    }
    return OPREG_OK;
}

#define CHECK_FN(op, arglist)                                                                      \
    __attribute__((unused)) static opreg_status check_##op(const opreg_value *args) {              \
        return opreg__check_##op arglist;                                                          \
    }
OPREG__CATALOGUE_OPS(CHECK_FN)
#undef CHECK_FN

/* The backend is available (a driver and a device): tensors that claim to
 * be in CUDA memory on a machine without a GPU are refused with the reason. */
static opreg_status chk_available(const char *op) {
    char why[256];
    if (opreg_key_is_available(OPREG_KEY_CUDA, NULL, 0)) return OPREG_OK;
    (void)opreg_key_is_available(OPREG_KEY_CUDA, why, sizeof why);
    return opreg__fail(OPREG_ERR_BACKEND_UNAVAILABLE, "%s: the CUDA backend is unavailable: %s", op,
                       why);
}

/* Run @p body(args, stream) on device @p dev with its current stream. */
static opreg_status on_device(const char *op, const opreg_tensor *dev, const opreg_value *args,
                              opreg_status (*body)(const opreg_value *args, void *stream)) {
    int prev, id = dev->device.device_id;
    OPREG__TRY(chk_available(op));
    OPREG__TRY(opreg__cuda_enter(id, &prev, op));
    opreg_status st = body(args, opreg__cuda_current_stream(id));
    opreg__cuda_leave(id, prev);
    return st;
}

/* What the CUDA kernel of one op needs besides the launch: the op's name
 * for messages, its shared check, and the argument whose device the launch
 * runs on (refused unless it is a CUDA tensor). */
struct cuda_op {
    const char *name;     /* "rms_norm": the name it is registered under */
    const char *qualname; /* "_C::rms_norm": the name messages give */
    opreg_status (*check)(const opreg_value *args);
    int dev_arg;          /* position of the tensor that picks the device */
    const char *dev_name; /* its name in the schema */
    opreg_status (*launch)(const opreg_value *args, void *stream);
};

/* The kernel of every op in the table below: the shared checks, then the
 * device of its tensor argument, then the launch on that device's current
 * stream. @p context is the op's struct cuda_op. */
static opreg_status cuda_kernel(void *context, const opreg_op *o, const opreg_value *args,
                                opreg_value *rets) {
    const struct cuda_op *c = context;
    (void)o, (void)rets;
    OPREG__TRY(c->check(args));
    OPREG__TRY(chk_cuda(c->qualname, c->dev_name, TS(c->dev_arg)));
    return on_device(c->qualname, TS(c->dev_arg), args, c->launch);
}

/* Each launch_<op> takes checked arguments and runs on the current device. */

/* ---- norms ---- */

static opreg_status launch_rms_norm(const opreg_value *args, void *stream) {
    const opreg_tensor *out = TS(0), *in = TS(1), *w = TS(2);
    opreg__row_layout r = opreg__rows_of(in);
    return opreg__cuda_rms_norm(opreg__ptr(out), opreg__ptr(in), r.stride, opreg__ptr(w), r.n,
                                r.width, (float)FV(3), opreg__dtype_of(in), stream);
}

static opreg_status launch_fused_add_rms_norm(const opreg_value *args, void *stream) {
    const opreg_tensor *in = TS(0), *res = TS(1), *w = TS(2);
    opreg__row_layout r = opreg__rows_of(in);
    return opreg__cuda_fused_add_rms_norm(opreg__ptr(in), r.stride, opreg__ptr(res), opreg__ptr(w),
                                          r.n, r.width, (float)FV(3), opreg__dtype_of(in), stream);
}

/* ---- activations ---- */

static opreg_status launch_silu_and_mul(const opreg_value *args, void *stream) {
    opreg__row_layout ro = opreg__rows_of(TS(0));
    return opreg__cuda_silu_and_mul(opreg__ptr(TS(0)), opreg__ptr(TS(1)), ro.n, ro.width,
                                    opreg__dtype_of(TS(1)), stream);
}

static opreg_status launch_gelu_and_mul(const opreg_value *args, void *stream) {
    opreg__row_layout ro = opreg__rows_of(TS(0));
    return opreg__cuda_gelu_and_mul(opreg__ptr(TS(0)), opreg__ptr(TS(1)), ro.n, ro.width,
                                    opreg__dtype_of(TS(1)), stream);
}

static opreg_status launch_gelu_tanh_and_mul(const opreg_value *args, void *stream) {
    opreg__row_layout ro = opreg__rows_of(TS(0));
    return opreg__cuda_gelu_tanh_and_mul(opreg__ptr(TS(0)), opreg__ptr(TS(1)), ro.n, ro.width,
                                         opreg__dtype_of(TS(1)), stream);
}

static opreg_status launch_gelu_new(const opreg_value *args, void *stream) {
    return opreg__cuda_gelu_new(opreg__ptr(TS(0)), opreg__ptr(TS(1)), opreg__numel(TS(1)),
                                opreg__dtype_of(TS(1)), stream);
}

static opreg_status launch_gelu_fast(const opreg_value *args, void *stream) {
    return opreg__cuda_gelu_fast(opreg__ptr(TS(0)), opreg__ptr(TS(1)), opreg__numel(TS(1)),
                                 opreg__dtype_of(TS(1)), stream);
}

static opreg_status launch_gelu_quick(const opreg_value *args, void *stream) {
    return opreg__cuda_gelu_quick(opreg__ptr(TS(0)), opreg__ptr(TS(1)), opreg__numel(TS(1)),
                                  opreg__dtype_of(TS(1)), stream);
}

/* ---- rotary ---- */

static opreg__cuda_rotary_args rotary_args(const opreg_value *args, const opreg_tensor *offsets) {
    const opreg_tensor *pos = TS(0), *q = TS(1), *k = TS(2), *cache = TS(4);
    opreg__cuda_rotary_args a;
    memset(&a, 0, sizeof a);
    a.positions = opreg__ptr(pos);
    a.offsets = offsets ? opreg__ptr(offsets) : NULL;
    a.tokens = opreg__numel(pos);
    a.q_row = a.tokens ? opreg__numel(q) / a.tokens : 0;
    a.k_row = a.tokens ? opreg__numel(k) / a.tokens : 0;
    a.q_stride = opreg__rotary_token_stride(q, pos);
    a.k_stride = opreg__rotary_token_stride(k, pos);
    a.head_size = IV(3);
    a.rot_dim = cache->shape[1];
    a.cache_rows = cache->shape[0];
    a.query = opreg__ptr(q);
    a.key = opreg__ptr(k);
    a.cache = opreg__ptr(cache);
    a.is_neox = BV(5);
    a.dt = opreg__dtype_of(q);
    return a;
}

static opreg_status launch_rotary_embedding(const opreg_value *args, void *stream) {
    opreg__cuda_rotary_args a = rotary_args(args, NULL);
    return opreg__cuda_rotary_embedding(&a, stream);
}

static opreg_status launch_batched_rotary_embedding(const opreg_value *args, void *stream) {
    opreg__cuda_rotary_args a = rotary_args(args, TS(7));
    return opreg__cuda_batched_rotary_embedding(&a, stream);
}

/* ---- KV cache ---- */

static opreg__cuda_cache_args cache_args(const opreg_value *args) {
    const opreg_tensor *key = TS(0), *value = TS(1), *kc = TS(2), *slots = TS(4);
    opreg__cuda_cache_args a;
    memset(&a, 0, sizeof a);
    a.key = opreg__ptr(key);
    a.value = opreg__ptr(value);
    a.key_stride = opreg__stride(key, 0);
    a.value_stride = opreg__stride(value, 0);
    a.key_cache = opreg__ptr(kc);
    a.value_cache = opreg__ptr(TS(3));
    a.key_block_stride = opreg__block_stride(kc);
    a.value_block_stride = opreg__block_stride(TS(3));
    a.slots = opreg__ptr(slots);
    a.tokens = slots->shape[0];
    a.heads = key->shape[1];
    a.head_size = key->shape[2];
    a.dt = opreg__dtype_of(key);
    a.kind = opreg__kv_cache_kind(SV(5));
    a.kv_scale = 1.0f;
    return a;
}

static opreg_status launch_reshape_and_cache(const opreg_value *args, void *stream) {
    opreg__cuda_cache_args a = cache_args(args);
    const opreg_tensor *kc = TS(2);
    a.x = kc->shape[4];
    a.block_size = kc->shape[3];
    a.num_slots = kc->shape[0] * kc->shape[3];
    a.kv_scale = (float)FV(6);
    return opreg__cuda_reshape_and_cache(&a, stream);
}

static opreg_status launch_reshape_and_cache_flash(const opreg_value *args, void *stream) {
    opreg__cuda_cache_args a = cache_args(args);
    const opreg_tensor *kc = TS(2);
    a.block_size = kc->shape[1];
    a.num_slots = kc->shape[0] * kc->shape[1];
    return opreg__cuda_reshape_and_cache_flash(&a, stream);
}

/* The bytes of one block of a cache, and the distance between two. */
static int64_t block_bytes(const opreg_tensor *t) {
    return opreg__block_numel(t) * (int64_t)opreg__dtype_bytes(opreg__dtype_of(t));
}

static int64_t block_step(const opreg_tensor *t) {
    return opreg__block_stride(t) * (int64_t)opreg__dtype_bytes(opreg__dtype_of(t));
}

#define MAX_LAYERS 1024

static opreg_status launch_copy_blocks(const opreg_value *args, void *stream) {
    const opreg_tensor *const *kc = OPREG__ARG_TL(0), *const *vc = OPREG__ARG_TL(1);
    size_t layers = OPREG__ARG_TL_LEN(0);
    void *kp[MAX_LAYERS], *vp[MAX_LAYERS];
    if (layers == 0) return OPREG_OK;
    if (layers > MAX_LAYERS)
        return opreg__fail(OPREG_ERR_UNSUPPORTED,
                           "_C::copy_blocks: argument 'key_caches': %zu layers; the CUDA kernel "
                           "takes at most %d",
                           layers, MAX_LAYERS);
    for (size_t l = 0; l < layers; l++) {
        kp[l] = opreg__ptr(kc[l]);
        vp[l] = opreg__ptr(vc[l]);
    }
    int64_t blocks = kc[0]->shape[0] < vc[0]->shape[0] ? kc[0]->shape[0] : vc[0]->shape[0];
    return opreg__cuda_copy_blocks(kp, vp, (int64_t)layers, opreg__ptr(TS(2)), TS(2)->shape[0],
                                   block_bytes(kc[0]), block_step(kc[0]), block_bytes(vc[0]),
                                   block_step(vc[0]), blocks, stream);
}

/* swap_blocks copies between host and device: its kernel is registered
 * with OPREG_KERNEL_MIXED_DEVICES, and runs on the device of whichever of
 * src and dst is in CUDA memory. The mapping is on the host: its pairs are
 * checked like the CPU kernel checks them, before anything is copied. */
static opreg_status launch_swap_blocks(const opreg_value *args, void *stream) {
    const opreg_tensor *src = TS(0), *dst = TS(1), *m = TS(2);
    return opreg__cuda_swap_blocks(opreg__ptr(dst), block_step(dst), opreg__ptr(src),
                                   block_step(src), opreg__ptr(m), m->shape[0], block_bytes(src),
                                   stream);
}

static bool host_or_cuda(const opreg_tensor *t) {
    return is_cuda(t) || t->device.device_type == kDLCPU || t->device.device_type == kDLCUDAHost;
}

static opreg_status cuda_swap_blocks(void *context, const opreg_op *o, const opreg_value *args,
                                     opreg_value *rets) {
    const char *op = "_C::swap_blocks";
    const opreg_tensor *src = TS(0), *dst = TS(1);
    (void)context, (void)o, (void)rets;
    OPREG__TRY(check_swap_blocks(args));
    const opreg_tensor *dev = is_cuda(src) ? src : dst;
    OPREG__TRY(chk_cuda(op, "src", dev));
    if (!host_or_cuda(src) || !host_or_cuda(dst)) {
        char a[64];
        opreg_device_format((host_or_cuda(src) ? dst : src)->device, a, sizeof a);
        return opreg__fail(OPREG_ERR_DEVICE_MISMATCH,
                           "%s: argument '%s' is on %s; the CUDA kernel copies between host and "
                           "CUDA memory",
                           op, host_or_cuda(src) ? "dst" : "src", a);
    }
    if (is_cuda(src) && is_cuda(dst) && src->device.device_id != dst->device.device_id)
        return opreg__fail(OPREG_ERR_DEVICE_MISMATCH,
                           "%s: argument 'dst' is on cuda:%d but 'src' is on cuda:%d; the CUDA "
                           "kernel copies within one device or between it and the host",
                           op, (int)dst->device.device_id, (int)src->device.device_id);
    OPREG__TRY(opreg__check_swap_blocks_data(src, dst, TS(2)));
    return on_device(op, dev, args, launch_swap_blocks);
}

/* ---- quantisation ---- */

static opreg_status launch_static_scaled_fp8_quant(const opreg_value *args, void *stream) {
    return opreg__cuda_static_scaled_fp8_quant(opreg__ptr(TS(0)), opreg__ptr(TS(1)),
                                               opreg__numel(TS(1)), opreg__ptr(TS(2)),
                                               opreg__dtype_of(TS(1)), stream);
}

static opreg_status launch_dynamic_scaled_fp8_quant(const opreg_value *args, void *stream) {
    return opreg__cuda_dynamic_scaled_fp8_quant(opreg__ptr(TS(0)), opreg__ptr(TS(1)),
                                                opreg__numel(TS(1)), opreg__ptr(TS(2)),
                                                opreg__dtype_of(TS(1)), stream);
}

static opreg_status launch_static_scaled_int8_quant(const opreg_value *args, void *stream) {
    return opreg__cuda_static_scaled_int8_quant(opreg__ptr(TS(0)), opreg__ptr(TS(1)),
                                                opreg__numel(TS(1)), opreg__ptr(TS(2)),
                                                opreg__dtype_of(TS(1)), stream);
}

static opreg_status launch_dynamic_scaled_int8_quant(const opreg_value *args, void *stream) {
    opreg__row_layout r = opreg__rows_of(TS(1));
    return opreg__cuda_dynamic_scaled_int8_quant(opreg__ptr(TS(0)), opreg__ptr(TS(1)), r.n, r.width,
                                                 opreg__ptr(TS(2)), opreg__dtype_of(TS(1)), stream);
}

/* ---- MoE ---- */

/* Far more experts than ids (opreg__moe_align_dense says where): the
 * kernel's table has an entry an expert, so it would follow num_experts
 * rather than the ids (2^31 - 1 experts with block_size 1 is legal and asks
 * for 24 GiB and 2^31 steps of one thread). As the reference does, the ids
 * are renamed to their ranks among the experts present: read back to the
 * host (the one place this op waits for the stream), checked (the host has
 * them, so out-of-range ids are refused here, not skipped), ranked, and the
 * kernel runs over the ranks; opreg__cuda_moe_align_ranked names the blocks'
 * experts back. Memory and time follow the ids. */
static opreg_status moe_align_sparse(const opreg_tensor *ids, int64_t num_experts,
                                     int64_t block_size, int32_t *sorted, int32_t *experts,
                                     int32_t *post_pad, void *stream) {
    const char *op = "_C::moe_align_block_size";
    int dt = opreg__dtype_of(ids);
    int64_t n = opreg__numel(ids), rows;
    size_t bytes = (size_t)n * opreg_dtype_size((opreg_dtype)dt);
    void *host = malloc(bytes + 1); /* + 1: n may be 0 */
    int64_t *present = malloc(((size_t)n + 1) * sizeof *present);
    int64_t *ranks = malloc(((size_t)n + 1) * sizeof *ranks);
    int32_t *packed = malloc(((size_t)n * 2 + 1) * sizeof *packed);
    opreg_status st = OPREG_OK;
    if (!host || !present || !ranks || !packed)
        st = opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    if (st == OPREG_OK) st = opreg__cuda_copy_waited(host, opreg__ptr(ids), bytes, stream, op);
    if (st == OPREG_OK) {
        opreg_tensor view = *ids;
        view.data = host;
        view.byte_offset = 0;
        st = opreg__check_moe_align_block_size_data(&view, num_experts);
    }
    if (st == OPREG_OK) {
        rows = opreg__moe_rank_ids(host, dt, n, present, ranks);
        if (rows == 0) present[rows++] = 0; /* no ids: one expert that none names */
        for (int64_t i = 0; i < n; i++)
            packed[i] = (int32_t)ranks[i];
        for (int64_t r = 0; r < rows; r++)
            packed[n + r] = (int32_t)present[r];
        st = opreg__cuda_moe_align_ranked(packed, n, rows, block_size, sorted, experts, post_pad,
                                          stream);
    }
    free(host);
    free(present);
    free(ranks);
    free(packed);
    return st;
}

static opreg_status launch_moe_align_block_size(const opreg_value *args, void *stream) {
    const opreg_tensor *ids = TS(0);
    if (!opreg__moe_align_dense(opreg__numel(ids), IV(1)))
        return moe_align_sparse(ids, IV(1), IV(2), opreg__ptr(TS(3)), opreg__ptr(TS(4)),
                                opreg__ptr(TS(5)), stream);
    return opreg__cuda_moe_align_block_size(opreg__ptr(ids), opreg__dtype_of(ids),
                                            opreg__numel(ids), IV(1), IV(2), opreg__ptr(TS(3)),
                                            opreg__ptr(TS(4)), opreg__ptr(TS(5)), stream);
}

static opreg_status launch_topk_softmax(const opreg_value *args, void *stream) {
    const opreg_tensor *g = TS(3);
    return opreg__cuda_topk_softmax(opreg__ptr(TS(0)), opreg__ptr(TS(1)), opreg__ptr(TS(2)),
                                    opreg__ptr(g), g->shape[0], g->shape[1], TS(0)->shape[1],
                                    opreg__dtype_of(g), stream);
}

/* ---- attention ---- */

static opreg_status launch_paged_attention_v1(const opreg_value *args, void *stream) {
    const opreg_tensor *q = TS(1), *kc = TS(2), *bt = TS(6), *alibi = OT(10);
    opreg__cuda_attention_args a;
    memset(&a, 0, sizeof a);
    a.out = opreg__ptr(TS(0));
    a.query = opreg__ptr(q);
    a.key_cache = opreg__ptr(kc);
    a.value_cache = opreg__ptr(TS(3));
    a.block_tables = opreg__ptr(bt);
    a.seq_lens = opreg__ptr(TS(7));
    a.alibi = alibi ? opreg__ptr(alibi) : NULL;
    a.seqs = q->shape[0];
    a.heads = q->shape[1];
    a.kv_heads = IV(4);
    a.head_size = q->shape[2];
    a.x = kc->shape[4];
    a.block_size = IV(8);
    a.max_seq_len = IV(9);
    a.max_blocks = bt->shape[1];
    a.num_blocks = kc->shape[0];
    a.q_stride = opreg__stride(q, 0);
    a.key_block_stride = opreg__block_stride(kc);
    a.value_block_stride = opreg__block_stride(TS(3));
    a.scale = (float)FV(5);
    a.kv_scale = (float)FV(12);
    a.dt = opreg__dtype_of(q);
    a.kind = opreg__kv_cache_kind(SV(11));
    return opreg__cuda_paged_attention_v1(&a, stream);
}

/* ---- GEMM ---- */

static opreg_status launch_cutlass_scaled_mm(const opreg_value *args, void *stream) {
    const opreg_tensor *out = TS(0), *a = TS(1), *b = TS(2), *bias = OT(5);
    opreg__cuda_scaled_mm_args g;
    memset(&g, 0, sizeof g);
    g.out = opreg__ptr(out);
    g.a = opreg__ptr(a);
    g.b = opreg__ptr(b);
    g.bias = bias ? opreg__ptr(bias) : NULL;
    g.a_scales = opreg__ptr(TS(3));
    g.b_scales = opreg__ptr(TS(4));
    g.m = a->shape[0];
    g.k = a->shape[1];
    g.n = b->shape[1];
    g.a_stride = opreg__stride(a, 0);
    g.b_stride = opreg__stride(b, 1);
    g.per_row_a = opreg__numel(TS(3)) != 1;
    g.per_col_b = opreg__numel(TS(4)) != 1;
    g.in_dt = opreg__dtype_of(a);
    g.out_dt = opreg__dtype_of(out);
    return opreg__cuda_cutlass_scaled_mm(&g, stream);
}

static opreg_status linear_kernel(const opreg_tensor *out, const opreg_tensor *input,
                                  const opreg_tensor *weight, const opreg_tensor *bias) {
    int64_t k = input->shape[input->ndim - 1], n = weight->shape[0];
    return opreg__cuda_linear(opreg__ptr(out), opreg__ptr(input), opreg__ptr(weight),
                              bias ? opreg__ptr(bias) : NULL, k ? opreg__numel(input) / k : 0, n, k,
                              opreg__dtype_of(input),
                              opreg__cuda_current_stream(input->device.device_id));
}

static opreg_status cuda_linear(void *context, const opreg_op *o, const opreg_value *args,
                                opreg_value *rets) {
    const char *op = "_C::linear";
    int prev, id;
    (void)context, (void)o;
    OPREG__TRY(opreg__check_linear(TS(0), TS(1), OT(2), NULL, NULL, NULL));
    OPREG__TRY(chk_cuda(op, "input", TS(0)));
    OPREG__TRY(chk_available(op));
    id = TS(0)->device.device_id;
    OPREG__TRY(opreg__cuda_enter(id, &prev, op));
    opreg_status st = opreg__linear_checked_into_new(rets, args, TS(0)->device, linear_kernel);
    opreg__cuda_leave(id, prev);
    return st;
}

/* The ops whose CUDA kernel is cuda_kernel(), in registration order. */
static struct cuda_op cuda_ops[] = {
    { "rms_norm", "_C::rms_norm", check_rms_norm, 1, "input", launch_rms_norm },
    { "fused_add_rms_norm", "_C::fused_add_rms_norm", check_fused_add_rms_norm, 0, "input",
      launch_fused_add_rms_norm },
    { "silu_and_mul", "_C::silu_and_mul", check_silu_and_mul, 1, "input", launch_silu_and_mul },
    { "gelu_and_mul", "_C::gelu_and_mul", check_gelu_and_mul, 1, "input", launch_gelu_and_mul },
    { "gelu_tanh_and_mul", "_C::gelu_tanh_and_mul", check_gelu_tanh_and_mul, 1, "input",
      launch_gelu_tanh_and_mul },
    { "gelu_new", "_C::gelu_new", check_gelu_new, 1, "input", launch_gelu_new },
    { "gelu_fast", "_C::gelu_fast", check_gelu_fast, 1, "input", launch_gelu_fast },
    { "gelu_quick", "_C::gelu_quick", check_gelu_quick, 1, "input", launch_gelu_quick },
    { "rotary_embedding", "_C::rotary_embedding", check_rotary_embedding, 1, "query",
      launch_rotary_embedding },
    { "batched_rotary_embedding", "_C::batched_rotary_embedding", check_batched_rotary_embedding, 1,
      "query", launch_batched_rotary_embedding },
    { "reshape_and_cache", "_C::reshape_and_cache", check_reshape_and_cache, 0, "key",
      launch_reshape_and_cache },
    { "reshape_and_cache_flash", "_C::reshape_and_cache_flash", check_reshape_and_cache_flash, 0,
      "key", launch_reshape_and_cache_flash },
    { "copy_blocks", "_C::copy_blocks", check_copy_blocks, 2, "block_mapping", launch_copy_blocks },
    { "static_scaled_fp8_quant", "_C::static_scaled_fp8_quant", check_static_scaled_fp8_quant, 1,
      "input", launch_static_scaled_fp8_quant },
    { "dynamic_scaled_fp8_quant", "_C::dynamic_scaled_fp8_quant", check_dynamic_scaled_fp8_quant, 1,
      "input", launch_dynamic_scaled_fp8_quant },
    { "static_scaled_int8_quant", "_C::static_scaled_int8_quant", check_static_scaled_int8_quant, 1,
      "input", launch_static_scaled_int8_quant },
    { "dynamic_scaled_int8_quant", "_C::dynamic_scaled_int8_quant", check_dynamic_scaled_int8_quant,
      1, "input", launch_dynamic_scaled_int8_quant },
    { "moe_align_block_size", "_C::moe_align_block_size", check_moe_align_block_size, 0, "topk_ids",
      launch_moe_align_block_size },
    { "topk_softmax", "_C::topk_softmax", check_topk_softmax, 3, "gating_output",
      launch_topk_softmax },
    { "paged_attention_v1", "_C::paged_attention_v1", check_paged_attention_v1, 1, "query",
      launch_paged_attention_v1 },
    { "cutlass_scaled_mm", "_C::cutlass_scaled_mm", check_cutlass_scaled_mm, 1, "a",
      launch_cutlass_scaled_mm },
};

OPREG_LIBRARY_IMPL(_C, CUDA, m) {
    for (size_t i = 0; i < sizeof cuda_ops / sizeof cuda_ops[0]; i++)
        OPREG_IMPL(m, cuda_ops[i].name, cuda_kernel, &cuda_ops[i]);
    {
        opreg_kernel k = { cuda_swap_blocks, NULL, NULL, OPREG_KERNEL_MIXED_DEVICES };
        (void)opreg_library_impl(m, "swap_blocks", OPREG_KEY_NONE, &k);
    }
    OPREG_IMPL(m, "linear", cuda_linear, NULL);
}
