/* Every message of the ops' argument checks (the files of ops/check), read
 * back whole.
 *
 * Each row of the table at the end is one message: an op, the way it is
 * called, what is done to that op's valid inputs to break one check, and
 * the exact status and text that must come back. The inputs use distinct,
 * recognisable numbers (sizes 37, 41, 5, a position 100000, token 3), so a
 * number printed in the wrong place, a wrong dim index or a value missing
 * its separator (as "cache row 1000000" was for position 100000 and no
 * offset) cannot match by chance.
 *
 * Calls go through the default registry: Meta tensors on the Meta key for
 * the checks on metadata, host tensors with values on the Reference key
 * for the checks that read index tensors, and the CPU entry for the device
 * messages (see route). */
#include "opreg/opreg.h"
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "test.h"

#include <math.h>
#include <stdbool.h>

enum { MAX_TENSORS = 12, MAX_ARGS = 18, MAX_RANK = 6 };

/* Host tensors get this much zeroed memory whatever their shape, so a row
 * may reshape or restride one without reallocating. */
#define HOST_BYTES ((size_t)1 << 20)

/* The shape as a count and an array: DIMS(37, 41) is 2, {37, 41}. */
#define DIMS(...)                                                                                  \
    (int)(sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)), (int64_t[]) {                     \
        __VA_ARGS__                                                                                \
    }

typedef struct tensor_arg {
    DLTensor t; /* first, so that a tensor of the call is its tensor_arg */
    const char *name;
    int64_t shape[MAX_RANK], strides[MAX_RANK];
    void *host; /* what the call owns; t.data may be pointed elsewhere */
} tensor_arg;

/* One call's arguments, in schema order, and the tensors they point to. */
typedef struct call {
    bool host; /* tensors in host memory, zeroed; else on the Meta device */
    int ntensors;
    tensor_arg t[MAX_TENSORS];
    DLTensor *lists[2][3]; /* copy_blocks' key_caches and value_caches */
    const char *names[MAX_ARGS];
    opreg_value args[MAX_ARGS];
    size_t nargs;
} call;

static DLTensor *tensor(call *c, const char *name, opreg_dtype dt, int ndim, const int64_t *shape) {
    tensor_arg *x = &c->t[c->ntensors++];
    x->name = name;
    memcpy(x->shape, shape, (size_t)ndim * sizeof *shape);
    x->t.ndim = ndim;
    x->t.shape = x->shape;
    x->t.dtype = opreg_dtype_to_dlpack(dt);
    if (c->host) {
        x->host = calloc(1, HOST_BYTES);
        x->t.data = x->host;
        x->t.device = (DLDevice){ kDLCPU, 0 };
    } else {
        x->t.device = (DLDevice){ OPREG_DEVICE_META, 0 };
    }
    return &x->t;
}

static void arg(call *c, const char *name, opreg_value v) {
    c->names[c->nargs] = name;
    c->args[c->nargs++] = v;
}

static void targ(call *c, const char *name, opreg_dtype dt, int ndim, const int64_t *shape) {
    arg(c, name, opreg_tensor_value(tensor(c, name, dt, ndim, shape)));
}

static DLTensor *t_of(call *c, const char *name) {
    for (int i = 0; i < c->ntensors; i++)
        if (strcmp(c->t[i].name, name) == 0) return &c->t[i].t;
    fprintf(stderr, "no tensor '%s' in this call\n", name);
    abort();
}

static opreg_value *a_of(call *c, const char *name) {
    for (size_t i = 0; i < c->nargs; i++)
        if (strcmp(c->names[i], name) == 0) return &c->args[i];
    fprintf(stderr, "no argument '%s' in this call\n", name);
    abort();
}

static int64_t *i64_of(call *c, const char *name) {
    return t_of(c, name)->data;
}

static int32_t *i32_of(call *c, const char *name) {
    return t_of(c, name)->data;
}

static void reshape(call *c, const char *name, int ndim, const int64_t *shape) {
    DLTensor *t = t_of(c, name);
    memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->ndim = ndim;
}

static void restride(call *c, const char *name, int ndim, const int64_t *strides) {
    tensor_arg *x = (tensor_arg *)t_of(c, name);
    memcpy(x->strides, strides, (size_t)ndim * sizeof *strides);
    x->t.strides = x->strides;
}

static void retype(call *c, const char *name, opreg_dtype dt) {
    t_of(c, name)->dtype = opreg_dtype_to_dlpack(dt);
}

/* @p name's data becomes @p over's, @p byte_offset bytes in. */
static void alias(call *c, const char *name, const char *over, uint64_t byte_offset) {
    t_of(c, name)->data = t_of(c, over)->data;
    t_of(c, name)->byte_offset = byte_offset;
}

static const DLDevice cpu1 = { kDLCPU, 1 };

/* ---- each op's valid inputs ---------------------------------------------------------------- */

static void rms_norm(call *c) {
    targ(c, "out", OPREG_DTYPE_F32, DIMS(5, 37, 41));
    targ(c, "input", OPREG_DTYPE_F32, DIMS(5, 37, 41));
    targ(c, "weight", OPREG_DTYPE_F32, DIMS(41));
    arg(c, "epsilon", opreg_float_value(1e-6));
}

static void fused_add_rms_norm(call *c) {
    targ(c, "input", OPREG_DTYPE_F32, DIMS(37, 41));
    targ(c, "residual", OPREG_DTYPE_F32, DIMS(37, 41));
    targ(c, "weight", OPREG_DTYPE_F32, DIMS(41));
    arg(c, "epsilon", opreg_float_value(1e-6));
}

static void gated(call *c) {
    targ(c, "out", OPREG_DTYPE_F32, DIMS(5, 37, 41));
    targ(c, "input", OPREG_DTYPE_F32, DIMS(5, 37, 82));
}

static void elementwise(call *c) {
    targ(c, "out", OPREG_DTYPE_F32, DIMS(37, 41));
    targ(c, "input", OPREG_DTYPE_F32, DIMS(37, 41));
}

/* 37 tokens, 5 query and 3 key heads of 8, rot_dim 6, 1000 cache rows. */
static void rotary_embedding(call *c) {
    targ(c, "positions", OPREG_DTYPE_I64, DIMS(37));
    targ(c, "query", OPREG_DTYPE_F32, DIMS(37, 40));
    targ(c, "key", OPREG_DTYPE_F32, DIMS(37, 24));
    arg(c, "head_size", opreg_int_value(8));
    targ(c, "cos_sin_cache", OPREG_DTYPE_F32, DIMS(1000, 6));
    arg(c, "is_neox", opreg_bool_value(true));
}

static void batched_rotary_embedding(call *c) {
    rotary_embedding(c);
    arg(c, "rot_dim", opreg_int_value(6));
    targ(c, "cos_sin_cache_offsets", OPREG_DTYPE_I64, DIMS(37));
}

/* 37 tokens, 3 heads of 8; 11 blocks of 5 slots, x = 4. */
static void reshape_and_cache(call *c) {
    targ(c, "key", OPREG_DTYPE_F32, DIMS(37, 3, 8));
    targ(c, "value", OPREG_DTYPE_F32, DIMS(37, 3, 8));
    targ(c, "key_cache", OPREG_DTYPE_F32, DIMS(11, 3, 2, 5, 4));
    targ(c, "value_cache", OPREG_DTYPE_F32, DIMS(11, 3, 8, 5));
    targ(c, "slot_mapping", OPREG_DTYPE_I64, DIMS(37));
    arg(c, "kv_cache_dtype", opreg_str_value("auto"));
    arg(c, "kv_scale", opreg_float_value(1.0));
}

static void reshape_and_cache_flash(call *c) {
    targ(c, "key", OPREG_DTYPE_F32, DIMS(37, 3, 8));
    targ(c, "value", OPREG_DTYPE_F32, DIMS(37, 3, 8));
    targ(c, "key_cache", OPREG_DTYPE_F32, DIMS(11, 5, 3, 8));
    targ(c, "value_cache", OPREG_DTYPE_F32, DIMS(11, 5, 3, 8));
    targ(c, "slot_mapping", OPREG_DTYPE_I64, DIMS(37));
    arg(c, "kv_cache_dtype", opreg_str_value("auto"));
}

/* Two layers; key caches of 11 blocks, value caches of 13: pairs must stay
 * below the smaller. The valid pairs are (i, i + 5). */
static void copy_blocks(call *c) {
    c->lists[0][0] = tensor(c, "key_caches[0]", OPREG_DTYPE_F32, DIMS(11, 3, 40));
    c->lists[0][1] = tensor(c, "key_caches[1]", OPREG_DTYPE_F32, DIMS(11, 3, 40));
    c->lists[1][0] = tensor(c, "value_caches[0]", OPREG_DTYPE_F32, DIMS(13, 3, 40));
    c->lists[1][1] = tensor(c, "value_caches[1]", OPREG_DTYPE_F32, DIMS(13, 3, 40));
    arg(c, "key_caches", opreg_tensor_list_value(c->lists[0], 2));
    arg(c, "value_caches", opreg_tensor_list_value(c->lists[1], 2));
    targ(c, "block_mapping", OPREG_DTYPE_I64, DIMS(6, 2));
    if (c->host)
        for (int i = 0; i < 6; i++) {
            i64_of(c, "block_mapping")[2 * i] = i;
            i64_of(c, "block_mapping")[2 * i + 1] = i + 5;
        }
}

static void swap_blocks(call *c) {
    targ(c, "src", OPREG_DTYPE_F32, DIMS(11, 3, 40));
    targ(c, "dst", OPREG_DTYPE_F32, DIMS(13, 3, 40));
    targ(c, "block_mapping", OPREG_DTYPE_I64, DIMS(6, 2));
}

static void quant(call *c, opreg_dtype out, bool per_token) {
    if (per_token) {
        targ(c, "out", out, DIMS(5, 37, 41));
        targ(c, "input", OPREG_DTYPE_F32, DIMS(5, 37, 41));
        targ(c, "scale", OPREG_DTYPE_F32, DIMS(185));
    } else {
        targ(c, "out", out, DIMS(37, 41));
        targ(c, "input", OPREG_DTYPE_F32, DIMS(37, 41));
        targ(c, "scale", OPREG_DTYPE_F32, DIMS(1));
    }
}

static void static_scaled_fp8_quant(call *c) {
    quant(c, OPREG_DTYPE_F8_E4M3FN, false);
}

static void dynamic_scaled_fp8_quant(call *c) {
    quant(c, OPREG_DTYPE_F8_E4M3FN, false);
}

static void static_scaled_int8_quant(call *c) {
    quant(c, OPREG_DTYPE_I8, false);
}

static void dynamic_scaled_int8_quant(call *c) {
    quant(c, OPREG_DTYPE_I8, true);
}

/* 74 ids, 8 experts, blocks of 16: capacity 74 + 8 * 15 = 194, 13 blocks. */
static void moe_align_block_size(call *c) {
    targ(c, "topk_ids", OPREG_DTYPE_I32, DIMS(37, 2));
    arg(c, "num_experts", opreg_int_value(8));
    arg(c, "block_size", opreg_int_value(16));
    targ(c, "sorted_token_ids", OPREG_DTYPE_I32, DIMS(194));
    targ(c, "experts_ids", OPREG_DTYPE_I32, DIMS(13));
    targ(c, "num_tokens_post_pad", OPREG_DTYPE_I32, DIMS(1));
}

static void topk_softmax(call *c) {
    targ(c, "topk_weights", OPREG_DTYPE_F32, DIMS(37, 2));
    targ(c, "topk_indices", OPREG_DTYPE_I32, DIMS(37, 2));
    targ(c, "token_expert_indices", OPREG_DTYPE_I32, DIMS(37, 2));
    targ(c, "gating_output", OPREG_DTYPE_F32, DIMS(37, 8));
}

/* 7 sequences, 6 query heads and 3 KV heads of 8; 11 blocks of 5, x = 4;
 * 9 table entries a sequence, max_seq_len 45. */
static void paged_attention_v1(call *c) {
    targ(c, "out", OPREG_DTYPE_F32, DIMS(7, 6, 8));
    targ(c, "query", OPREG_DTYPE_F32, DIMS(7, 6, 8));
    targ(c, "key_cache", OPREG_DTYPE_F32, DIMS(11, 3, 2, 5, 4));
    targ(c, "value_cache", OPREG_DTYPE_F32, DIMS(11, 3, 8, 5));
    arg(c, "num_kv_heads", opreg_int_value(3));
    arg(c, "scale", opreg_float_value(0.35));
    targ(c, "block_tables", OPREG_DTYPE_I32, DIMS(7, 9));
    targ(c, "seq_lens", OPREG_DTYPE_I32, DIMS(7));
    arg(c, "block_size", opreg_int_value(5));
    arg(c, "max_seq_len", opreg_int_value(45));
    arg(c, "alibi_slopes", opreg_none());
    arg(c, "kv_cache_dtype", opreg_str_value("auto"));
    arg(c, "kv_scale", opreg_float_value(1.0));
    arg(c, "tp_rank", opreg_int_value(0));
    arg(c, "blocksparse_local_blocks", opreg_int_value(0));
    arg(c, "blocksparse_vert_stride", opreg_int_value(1));
    arg(c, "blocksparse_block_size", opreg_int_value(64));
    arg(c, "blocksparse_head_sliding_step", opreg_int_value(0));
}

/* M 37, K 48, N 41; b column-major. */
static void cutlass_scaled_mm(call *c) {
    targ(c, "out", OPREG_DTYPE_F32, DIMS(37, 41));
    targ(c, "a", OPREG_DTYPE_I8, DIMS(37, 48));
    targ(c, "b", OPREG_DTYPE_I8, DIMS(48, 41));
    restride(c, "b", DIMS(1, 48));
    targ(c, "a_scales", OPREG_DTYPE_F32, DIMS(1));
    targ(c, "b_scales", OPREG_DTYPE_F32, DIMS(41));
    arg(c, "bias", opreg_none());
}

static void linear(call *c) {
    targ(c, "input", OPREG_DTYPE_F32, DIMS(5, 37, 48));
    targ(c, "weight", OPREG_DTYPE_F32, DIMS(41, 48));
    arg(c, "bias", opreg_none());
}

typedef struct op_base {
    const char *op;
    void (*build)(call *c);
    bool meta_ok; /* the Meta key accepts the row's base with Meta tensors */
} op_base;

static const op_base bases[] = {
    { "rms_norm", rms_norm, true },
    { "fused_add_rms_norm", fused_add_rms_norm, true },
    { "silu_and_mul", gated, true },
    { "gelu_and_mul", gated, true },
    { "gelu_tanh_and_mul", gated, true },
    { "gelu_new", elementwise, true },
    { "gelu_fast", elementwise, true },
    { "gelu_quick", elementwise, true },
    { "rotary_embedding", rotary_embedding, true },
    { "batched_rotary_embedding", batched_rotary_embedding, true },
    { "reshape_and_cache", reshape_and_cache, true },
    { "reshape_and_cache_flash", reshape_and_cache_flash, true },
    { "copy_blocks", copy_blocks, true },
    { "swap_blocks", swap_blocks, true },
    { "static_scaled_fp8_quant", static_scaled_fp8_quant, true },
    { "dynamic_scaled_fp8_quant", dynamic_scaled_fp8_quant, true },
    { "static_scaled_int8_quant", static_scaled_int8_quant, true },
    { "dynamic_scaled_int8_quant", dynamic_scaled_int8_quant, true },
    { "moe_align_block_size", moe_align_block_size, true },
    { "topk_softmax", topk_softmax, true },
    { "paged_attention_v1", paged_attention_v1, true },
    { "cutlass_scaled_mm", cutlass_scaled_mm, true },
    { "linear", linear, true },
};
#define NBASES (sizeof bases / sizeof bases[0])

/* ---- how a call is made ---------------------------------------------------------------------- */

typedef enum route {
    META, /* the Meta key, Meta tensors: the checks on metadata */
    REF,  /* the Reference key, host tensors: the checks that read values too */
    /* The CPU entry of the op's dispatch table, host tensors. A boxed call
     * refuses tensors on two devices before any kernel runs, so a check's
     * own device message is seen only by a caller that enters a device's
     * kernel itself, as opreg_call_on_device() does. */
    CPU_ENTRY,
} route;

static const char *route_name(route r) {
    return r == META ? "Meta" : r == REF ? "Reference" : "the CPU entry";
}

static const opreg_op *find_op(const char *name) {
    char full[64];
    const opreg_op *op = NULL;
    snprintf(full, sizeof full, "_C::%s", name);
    opreg_op_find(&op, opreg_registry_default(), full);
    return op;
}

static const op_base *base_of(const char *op) {
    for (size_t i = 0; i < NBASES; i++)
        if (strcmp(bases[i].op, op) == 0) return &bases[i];
    return NULL;
}

static void start(call *c, const op_base *b, route r) {
    memset(c, 0, sizeof *c);
    c->host = r != META;
    b->build(c);
}

static void finish(call *c) {
    for (int i = 0; i < c->ntensors; i++)
        free(c->t[i].host);
}

/* Run the call; its message is copied into @p msg. */
static opreg_status run_call(const opreg_op *op, call *c, route r, char *msg, size_t cap) {
    static const opreg_dispatch_key keys[] = { OPREG_KEY_META, OPREG_KEY_REFERENCE };
    opreg_value ret = opreg_none();
    opreg_status st;
    opreg_clear_error();
    if (r == CPU_ENTRY)
        st = opreg_call_on_device(op, (DLDevice){ kDLCPU, 0 }, c->args, &ret);
    else
        st = opreg_call_boxed_key(op, keys[r], c->args, c->nargs, NULL, 0, &ret, 1);
    snprintf(msg, cap, "%s", opreg_last_error());
    if (st == OPREG_OK && ret.kind == OPREG_VALUE_TENSOR) opreg_tensor_free(ret.u.tensor);
    return st;
}

/* ---- what each row does to the valid inputs ---------------------------------------------- */

/* common.c */
static void input_rank_17(call *c) {
    t_of(c, "input")->ndim = 17;
}
static void input_rank_0(call *c) {
    t_of(c, "input")->ndim = 0;
}
static void key_cache_rank_4(call *c) {
    reshape(c, "key_cache", DIMS(11, 3, 2, 20));
}
static void input_negative_dim_1(call *c) {
    reshape(c, "input", DIMS(5, -37, 41));
}
static void input_i32(call *c) {
    retype(c, "input", OPREG_DTYPE_I32);
}
static void input_complex(call *c) {
    t_of(c, "input")->dtype = (DLDataType){ kDLComplex, 64, 1 };
}
static void src_complex(call *c) {
    t_of(c, "src")->dtype = (DLDataType){ kDLComplex, 64, 1 };
}
static void positions_f32(call *c) {
    retype(c, "positions", OPREG_DTYPE_F32);
}
static void topk_ids_f32(call *c) {
    retype(c, "topk_ids", OPREG_DTYPE_F32);
}
static void weight_data_null(call *c) {
    t_of(c, "weight")->data = NULL;
}
static void weight_43(call *c) {
    reshape(c, "weight", DIMS(43));
}
static void out_row_stride_48(call *c) {
    restride(c, "out", DIMS(37 * 48, 48, 1));
}
static void out_stride_2000_dim_0(call *c) {
    restride(c, "out", DIMS(2000, 41, 1));
}
static void input_last_stride_7(call *c) {
    restride(c, "input", DIMS(37 * 41 * 7, 41 * 7, 7));
}
static void input_stride_2000_dim_0(call *c) {
    restride(c, "input", DIMS(2000, 48, 1));
}
static void input_row_stride_29(call *c) {
    restride(c, "input", DIMS(37 * 29, 29, 1));
}
static void out_f16(call *c) {
    retype(c, "out", OPREG_DTYPE_F16);
}
static void out_5_37_42(call *c) {
    reshape(c, "out", DIMS(5, 37, 42));
}
static void weight_on_cpu1(call *c) {
    t_of(c, "weight")->device = cpu1;
}
static void weight_over_out(call *c) {
    alias(c, "weight", "out", 0);
}
static void out_over_input_plus_4(call *c) {
    alias(c, "out", "input", 4);
}
static void all_on_meta(call *c) {
    for (int i = 0; i < c->ntensors; i++) {
        c->t[i].t.device = (DLDevice){ OPREG_DEVICE_META, 0 };
        c->t[i].t.data = NULL;
    }
}

/* norms.c, activations.c */
static void epsilon_negative(call *c) {
    a_of(c, "epsilon")->u.f = -0.5;
}
static void residual_over_input(call *c) {
    alias(c, "residual", "input", 0);
}
static void residual_37_42(call *c) {
    reshape(c, "residual", DIMS(37, 42));
}
static void input_last_83(call *c) {
    reshape(c, "input", DIMS(5, 37, 83));
}
static void out_5_37_43(call *c) {
    reshape(c, "out", DIMS(5, 37, 43));
}
static void out_5_38_41(call *c) {
    reshape(c, "out", DIMS(5, 38, 41));
}
static void out_rank_2(call *c) {
    reshape(c, "out", DIMS(37, 41));
}
static void out_over_input(call *c) {
    alias(c, "out", "input", 0);
}
static void out_37_42(call *c) {
    reshape(c, "out", DIMS(37, 42));
}
static void out_bf16(call *c) {
    retype(c, "out", OPREG_DTYPE_BF16);
}

/* rotary.c */
static void query_rank_4(call *c) {
    reshape(c, "query", DIMS(37, 5, 8, 1));
}
static void query_last_41(call *c) {
    reshape(c, "query", DIMS(37, 41));
}
static void query_heads_of_9(call *c) {
    reshape(c, "query", DIMS(37, 5, 9));
}
static void key_38_tokens(call *c) {
    reshape(c, "key", DIMS(38, 24));
}
static void positions_rank_3(call *c) {
    reshape(c, "positions", DIMS(2, 37, 5));
}
static void head_size_negative(call *c) {
    a_of(c, "head_size")->u.i = -13;
}
static void rot_dim_7(call *c) {
    reshape(c, "cos_sin_cache", DIMS(1000, 7));
}
static void rot_dim_10(call *c) {
    reshape(c, "cos_sin_cache", DIMS(1000, 10));
}
static void key_f16(call *c) {
    retype(c, "key", OPREG_DTYPE_F16);
}
static void query_row_stride_36(call *c) {
    restride(c, "query", DIMS(36, 1));
}
static void query_head_stride_9(call *c) {
    reshape(c, "query", DIMS(37, 5, 8));
    restride(c, "query", DIMS(48, 9, 1));
}
static void query_token_stride_39(call *c) {
    reshape(c, "query", DIMS(37, 5, 8));
    restride(c, "query", DIMS(39, 8, 1));
}
static void position_100000_token_3(call *c) {
    i64_of(c, "positions")[3] = 100000;
}
static void position_negative_token_3(call *c) {
    i64_of(c, "positions")[3] = -6;
}
static void position_100000_token_17_of_5x7(call *c) {
    reshape(c, "positions", DIMS(5, 7));
    reshape(c, "query", DIMS(5, 7, 40));
    reshape(c, "key", DIMS(5, 7, 24));
    i64_of(c, "positions")[17] = 100000;
}
static void key_over_query(call *c) {
    alias(c, "key", "query", 0);
}
static void rot_dim_arg_10(call *c) {
    a_of(c, "rot_dim")->u.i = 10;
}
static void offsets_36(call *c) {
    reshape(c, "cos_sin_cache_offsets", DIMS(36));
}
static void offsets_i32(call *c) {
    retype(c, "cos_sin_cache_offsets", OPREG_DTYPE_I32);
}
static void row_998_offset_5_token_3(call *c) {
    i64_of(c, "positions")[3] = 998;
    i64_of(c, "cos_sin_cache_offsets")[3] = 5;
}
static void row_7_offset_negative_token_3(call *c) {
    i64_of(c, "positions")[3] = 7;
    i64_of(c, "cos_sin_cache_offsets")[3] = -2;
}

/* kv_cache.c */
static void kv_cache_dtype_fp16(call *c) {
    *a_of(c, "kv_cache_dtype") = opreg_str_value("fp16");
}
static void kv_cache_dtype_int8(call *c) {
    *a_of(c, "kv_cache_dtype") = opreg_str_value("int8");
}
static void key_head_dim_stride_2(call *c) {
    restride(c, "key", DIMS(48, 16, 2));
}
static void key_cache_x_3(call *c) {
    reshape(c, "key_cache", DIMS(11, 3, 2, 5, 3));
}
static void key_cache_6_heads(call *c) {
    reshape(c, "key_cache", DIMS(11, 6, 2, 5, 4));
}
static void key_cache_7_in_dim_2(call *c) {
    reshape(c, "key_cache", DIMS(11, 3, 7, 5, 4));
}
static void key_cache_block_size_0(call *c) {
    reshape(c, "key_cache", DIMS(11, 3, 2, 0, 4));
}
static void key_cache_stride_8_dim_3(call *c) {
    restride(c, "key_cache", DIMS(240, 80, 40, 8, 1));
}
static void value_cache_block_stride_100(call *c) {
    restride(c, "value_cache", DIMS(100, 40, 5, 1));
}
static void value_cache_12_blocks(call *c) {
    reshape(c, "value_cache", DIMS(12, 3, 8, 5));
}
static void value_cache_head_9(call *c) {
    reshape(c, "value_cache", DIMS(11, 3, 9, 5));
}
static void value_cache_block_6(call *c) {
    reshape(c, "value_cache", DIMS(11, 3, 8, 6));
}
static void fp8_u8_caches(call *c) {
    *a_of(c, "kv_cache_dtype") = opreg_str_value("fp8");
    retype(c, "key_cache", OPREG_DTYPE_U8);
    retype(c, "value_cache", OPREG_DTYPE_U8);
}
static void fp8_kv_scale_negative(call *c) {
    fp8_u8_caches(c);
    a_of(c, "kv_scale")->u.f = -2.5;
}
static void fp8_f32_caches(call *c) {
    *a_of(c, "kv_cache_dtype") = opreg_str_value("fp8");
}
static void fp8_e5m2_f32_caches(call *c) {
    *a_of(c, "kv_cache_dtype") = opreg_str_value("fp8_e5m2");
}
static void key_cache_f16(call *c) {
    retype(c, "key_cache", OPREG_DTYPE_F16);
}
static void slot_mapping_36(call *c) {
    reshape(c, "slot_mapping", DIMS(36));
}
static void slot_mapping_41(call *c) {
    reshape(c, "slot_mapping", DIMS(41));
}
static void slot_100000_token_3(call *c) {
    i64_of(c, "slot_mapping")[3] = 100000;
}
static void value_cache_over_key_cache(call *c) {
    alias(c, "value_cache", "key_cache", 0);
}
static void slot_mapping_on_cpu1(call *c) {
    t_of(c, "slot_mapping")->device = cpu1;
}
static void flash_block_size_0(call *c) {
    reshape(c, "key_cache", DIMS(11, 0, 3, 8));
}
static void flash_key_cache_6_heads(call *c) {
    reshape(c, "key_cache", DIMS(11, 5, 6, 8));
}
static void flash_key_cache_head_9(call *c) {
    reshape(c, "key_cache", DIMS(11, 5, 3, 9));
}
static void flash_value_cache_head_7(call *c) {
    reshape(c, "value_cache", DIMS(11, 5, 3, 7));
}
static void three_value_layers(call *c) {
    c->lists[1][2] = tensor(c, "value_caches[2]", OPREG_DTYPE_F32, DIMS(13, 3, 40));
    a_of(c, "value_caches")->u.tensors.len = 3;
}
static void block_mapping_6_3(call *c) {
    reshape(c, "block_mapping", DIMS(6, 3));
}
static void key_caches_1_shape(call *c) {
    reshape(c, "key_caches[1]", DIMS(11, 3, 41));
}
static void value_caches_1_f16(call *c) {
    retype(c, "value_caches[1]", OPREG_DTYPE_F16);
}
static void key_caches_0_stride_2(call *c) {
    restride(c, "key_caches[0]", DIMS(240, 80, 2));
}
static void key_caches_1_block_stride_150(call *c) {
    restride(c, "key_caches[1]", DIMS(150, 40, 1));
}
static void source_100000_pair_3(call *c) {
    i64_of(c, "block_mapping")[6] = 100000;
}
static void destination_11_pair_3(call *c) {
    i64_of(c, "block_mapping")[7] = 11;
}
static void destination_13_pair_3(call *c) {
    i64_of(c, "block_mapping")[7] = 13;
}
static void source_11_pair_3(call *c) {
    i64_of(c, "block_mapping")[6] = 11;
}
static void key_caches_1_on_cpu1(call *c) {
    t_of(c, "key_caches[1]")->device = cpu1;
}
static void key_caches_1_over_mapping(call *c) {
    alias(c, "key_caches[1]", "block_mapping", 0);
}
static void dst_3_41(call *c) {
    reshape(c, "dst", DIMS(13, 3, 41));
}
static void dst_rank_2(call *c) {
    reshape(c, "dst", DIMS(13, 120));
}
static void src_block_stride_100(call *c) {
    restride(c, "src", DIMS(100, 40, 1));
}
static void dst_over_src(call *c) {
    alias(c, "dst", "src", 0);
}

/* quant.c */
static void scale_3(call *c) {
    reshape(c, "scale", DIMS(3));
}
static void scale_37(call *c) {
    reshape(c, "scale", DIMS(37));
}
static void out_i8(call *c) {
    retype(c, "out", OPREG_DTYPE_I8);
}
static void out_f8(call *c) {
    retype(c, "out", OPREG_DTYPE_F8_E4M3FN);
}
static void scale_over_input(call *c) {
    alias(c, "scale", "input", 0);
}

/* moe.c */
static void num_experts_negative(call *c) {
    a_of(c, "num_experts")->u.i = -3;
}
static void num_experts_2_pow_31(call *c) {
    a_of(c, "num_experts")->u.i = INT64_C(2147483648);
}
static void block_size_negative(call *c) {
    a_of(c, "block_size")->u.i = -16;
}
static void sorted_193(call *c) {
    reshape(c, "sorted_token_ids", DIMS(193));
}
static void experts_ids_12(call *c) {
    reshape(c, "experts_ids", DIMS(12));
}
static void post_pad_0(call *c) {
    reshape(c, "num_tokens_post_pad", DIMS(0));
}
/* Meta tensors have no data: 2^31 + 2^16 ids, and outputs sized to fit. */
static void over_2_pow_31_ids(call *c) {
    int64_t n = INT64_C(65536) * 32769, cap = n + 8 * 15;
    reshape(c, "topk_ids", DIMS(65536, 32769));
    reshape(c, "sorted_token_ids", DIMS(cap));
    reshape(c, "experts_ids", DIMS((cap + 15) / 16));
}
static void expert_100000_at_5(call *c) {
    i32_of(c, "topk_ids")[5] = 100000;
}
static void i64_expert_negative_at_73(call *c) {
    retype(c, "topk_ids", OPREG_DTYPE_I64);
    i64_of(c, "topk_ids")[73] = -2;
}
static void k_9(call *c) {
    reshape(c, "topk_weights", DIMS(37, 9));
    reshape(c, "topk_indices", DIMS(37, 9));
    reshape(c, "token_expert_indices", DIMS(37, 9));
}
static void topk_indices_37_3(call *c) {
    reshape(c, "topk_indices", DIMS(37, 3));
}
static void token_expert_indices_36(call *c) {
    reshape(c, "token_expert_indices", DIMS(36, 2));
}
static void token_expert_over_indices(call *c) {
    alias(c, "token_expert_indices", "topk_indices", 0);
}
static void topk_indices_i64(call *c) {
    retype(c, "topk_indices", OPREG_DTYPE_I64);
}

/* attention.c */
static void vert_stride_4(call *c) {
    a_of(c, "blocksparse_vert_stride")->u.i = 4;
}
static void num_kv_heads_4(call *c) {
    a_of(c, "num_kv_heads")->u.i = 4;
}
static void attention_block_size_negative(call *c) {
    a_of(c, "block_size")->u.i = -5;
}
static void key_cache_x_6(call *c) {
    reshape(c, "key_cache", DIMS(11, 3, 2, 5, 6));
}
static void key_cache_block_6(call *c) {
    reshape(c, "key_cache", DIMS(11, 3, 2, 6, 4));
}
static void key_cache_4_heads(call *c) {
    reshape(c, "key_cache", DIMS(11, 4, 2, 5, 4));
}
static void block_tables_6(call *c) {
    reshape(c, "block_tables", DIMS(6, 9));
}
static void max_seq_len_negative(call *c) {
    a_of(c, "max_seq_len")->u.i = -45;
}
static void scale_inf(call *c) {
    a_of(c, "scale")->u.f = INFINITY;
}
static void fp8_kv_scale_0(call *c) {
    fp8_u8_caches(c);
    a_of(c, "kv_scale")->u.f = 0.0;
}
static void alibi_5(call *c) {
    *a_of(c, "alibi_slopes") = opreg_tensor_value(tensor(c, "alibi", OPREG_DTYPE_F32, DIMS(5)));
}
static void seq_len_46_of_4(call *c) {
    i32_of(c, "seq_lens")[4] = 46;
}
static void seq_len_47_of_4_in_100(call *c) {
    a_of(c, "max_seq_len")->u.i = 100;
    i32_of(c, "seq_lens")[4] = 47;
}
static void block_100000_of_4_entry_2(call *c) {
    i32_of(c, "seq_lens")[4] = 23;
    i32_of(c, "block_tables")[4 * 9 + 2] = 100000;
}
static void query_over_out(call *c) {
    alias(c, "query", "out", 0);
}
static void seq_lens_on_cpu1(call *c) {
    t_of(c, "seq_lens")->device = cpu1;
}

/* gemm.c, linear.c */
static void a_column_major(call *c) {
    restride(c, "a", DIMS(1, 37));
}
static void b_row_major(call *c) {
    t_of(c, "b")->strides = NULL;
}
static void b_47_rows(call *c) {
    reshape(c, "b", DIMS(47, 41));
    restride(c, "b", DIMS(1, 47));
}
static void out_37_42_mm(call *c) {
    reshape(c, "out", DIMS(37, 42));
}
static void a_scales_5(call *c) {
    reshape(c, "a_scales", DIMS(5));
}
static void b_scales_40(call *c) {
    reshape(c, "b_scales", DIMS(40));
}
static void bias_43(call *c) {
    *a_of(c, "bias") = opreg_tensor_value(tensor(c, "bias", OPREG_DTYPE_F32, DIMS(43)));
}
static void bias_f16(call *c) {
    *a_of(c, "bias") = opreg_tensor_value(tensor(c, "bias", OPREG_DTYPE_F16, DIMS(41)));
}
static void a_f32(call *c) {
    retype(c, "a", OPREG_DTYPE_F32);
}
static void out_i32(call *c) {
    retype(c, "out", OPREG_DTYPE_I32);
}
static void weight_41_47(call *c) {
    reshape(c, "weight", DIMS(41, 47));
}
static void input_i8(call *c) {
    retype(c, "input", OPREG_DTYPE_I8);
}
static void weight_stride_49(call *c) {
    restride(c, "weight", DIMS(49, 1));
}

/* ---- the messages ------------------------------------------------------------------------------
 */

typedef struct message_row {
    const char *check; /* the check that writes the message */
    const char *op;    /* without its "_C::" */
    route route;
    void (*breaks)(call *c); /* NULL: the valid inputs already fail */
    opreg_status status;
    const char *text;
} message_row;

#define SHAPE   OPREG_ERR_SHAPE
#define INVALID OPREG_ERR_INVALID_ARGUMENT
#define DEVICE  OPREG_ERR_DEVICE_MISMATCH
#define UNSUPP  OPREG_ERR_UNSUPPORTED

static const message_row rows[] = {
    /* common.c */
    { "chk_tensor rank", "rms_norm", META, input_rank_17, SHAPE,
      "_C::rms_norm: argument 'input': invalid rank 17 or no shape" },
    { "chk_tensor rank", "reshape_and_cache", META, key_cache_rank_4, SHAPE,
      "_C::reshape_and_cache: argument 'key_cache': expected rank 5, got 4" },
    { "chk_tensor rank", "rms_norm", META, input_rank_0, SHAPE,
      "_C::rms_norm: argument 'input': expected rank >= 1, got 0" },
    { "chk_tensor size", "rms_norm", META, input_negative_dim_1, SHAPE,
      "_C::rms_norm: argument 'input': negative size -37 in dim 1" },
    { "chk_tensor dtype", "rms_norm", META, input_i32, SHAPE,
      "_C::rms_norm: argument 'input': expected dtype f16, f32 or bf16, got i32" },
    { "chk_tensor dtype", "rms_norm", META, input_complex, SHAPE,
      "_C::rms_norm: argument 'input': expected dtype f16, f32 or bf16, got unknown" },
    { "chk_tensor dtype", "rotary_embedding", META, positions_f32, SHAPE,
      "_C::rotary_embedding: argument 'positions': expected dtype i64, got f32" },
    { "chk_tensor dtype", "moe_align_block_size", META, topk_ids_f32, SHAPE,
      "_C::moe_align_block_size: argument 'topk_ids': expected dtype i32 or i64, got f32" },
    /* The "any" set names only real dtypes (it once listed "unknown" for
     * each unused bit, cut short by the message buffer). */
    { "chk_tensor dtype", "swap_blocks", META, src_complex, SHAPE,
      "_C::swap_blocks: argument 'src': expected dtype u8, i8, i16, i32, i64, f16, f32, f64, "
      "bool, bf16, f8_e5m2 or f8_e4m3fn, got unknown" },
    { "chk_tensor data", "rms_norm", REF, weight_data_null, INVALID,
      "_C::rms_norm: argument 'weight': data is NULL" },
    { "chk_size", "rms_norm", META, weight_43, SHAPE,
      "_C::rms_norm: argument 'weight': expected size 41 in dim 0, got 43" },
    { "chk_contig", "rms_norm", META, out_row_stride_48, SHAPE,
      "_C::rms_norm: argument 'out': must be contiguous (stride 48 in dim 1, expected 41)" },
    { "chk_contig", "rms_norm", META, out_stride_2000_dim_0, SHAPE,
      "_C::rms_norm: argument 'out': must be contiguous (stride 2000 in dim 0, expected 1517)" },
    { "chk_rows last dim", "rms_norm", META, input_last_stride_7, SHAPE,
      "_C::rms_norm: argument 'input': last dim must have stride 1, got 7" },
    { "chk_rows leading dims", "rms_norm", META, input_stride_2000_dim_0, SHAPE,
      "_C::rms_norm: argument 'input': leading dims must collapse into rows (stride 2000 in "
      "dim 0)" },
    { "chk_rows overlap", "rms_norm", META, input_row_stride_29, SHAPE,
      "_C::rms_norm: argument 'input': rows overlap (row stride 29 < 41)" },
    { "chk_same_dtype", "rms_norm", META, out_f16, SHAPE,
      "_C::rms_norm: argument 'out': dtype f16 differs from 'input' (f32)" },
    { "chk_same_shape", "rms_norm", META, out_5_37_42, SHAPE,
      "_C::rms_norm: argument 'out': shape differs from 'input'" },
    { "chk_same_device", "rms_norm", CPU_ENTRY, weight_on_cpu1, DEVICE,
      "_C::rms_norm: argument 'weight' is on cpu:1 but 'input' is on cpu" },
    { "chk_no_overlap", "rms_norm", REF, weight_over_out, INVALID,
      "_C::rms_norm: argument 'out' overlaps 'weight' in memory" },
    { "chk_no_partial_overlap", "rms_norm", REF, out_over_input_plus_4, INVALID,
      "_C::rms_norm: argument 'out' partially overlaps 'input' (only an exact alias may run in "
      "place)" },
    { "chk_cpu", "rms_norm", REF, all_on_meta, UNSUPP,
      "_C::rms_norm: argument 'input' is on meta; this kernel runs on the CPU" },
    { "chk_cpu", "linear", REF, all_on_meta, UNSUPP,
      "_C::linear: argument 'input' is on meta; this kernel runs on the CPU" },

    /* norms.c */
    { "epsilon", "rms_norm", META, epsilon_negative, INVALID,
      "_C::rms_norm: argument 'epsilon': must be >= 0" },
    { "epsilon", "fused_add_rms_norm", META, epsilon_negative, INVALID,
      "_C::fused_add_rms_norm: argument 'epsilon': must be >= 0" },
    { "chk_no_overlap", "fused_add_rms_norm", REF, residual_over_input, INVALID,
      "_C::fused_add_rms_norm: argument 'input' overlaps 'residual' in memory" },
    { "chk_same_shape", "fused_add_rms_norm", META, residual_37_42, SHAPE,
      "_C::fused_add_rms_norm: argument 'residual': shape differs from 'input'" },

    /* activations.c */
    { "gated last dim", "silu_and_mul", META, input_last_83, SHAPE,
      "_C::silu_and_mul: argument 'input': last dim must be even, got 83" },
    { "gated last dim", "gelu_and_mul", META, input_last_83, SHAPE,
      "_C::gelu_and_mul: argument 'input': last dim must be even, got 83" },
    { "gated last dim", "gelu_tanh_and_mul", META, input_last_83, SHAPE,
      "_C::gelu_tanh_and_mul: argument 'input': last dim must be even, got 83" },
    { "gated out", "silu_and_mul", META, out_5_37_43, SHAPE,
      "_C::silu_and_mul: argument 'out': expected size 41 in dim 2, got 43" },
    { "gated out", "silu_and_mul", META, out_5_38_41, SHAPE,
      "_C::silu_and_mul: argument 'out': expected size 37 in dim 1, got 38" },
    { "gated out", "silu_and_mul", META, out_rank_2, SHAPE,
      "_C::silu_and_mul: argument 'out': expected rank 3, got 2" },
    { "gated overlap", "silu_and_mul", REF, out_over_input, INVALID,
      "_C::silu_and_mul: argument 'out' overlaps 'input' in memory" },
    { "elementwise overlap", "gelu_new", REF, out_over_input_plus_4, INVALID,
      "_C::gelu_new: argument 'out' partially overlaps 'input' (only an exact alias may run in "
      "place)" },
    { "elementwise shape", "gelu_fast", META, out_37_42, SHAPE,
      "_C::gelu_fast: argument 'out': shape differs from 'input'" },
    { "elementwise dtype", "gelu_quick", META, out_bf16, SHAPE,
      "_C::gelu_quick: argument 'out': dtype bf16 differs from 'input' (f32)" },

    /* rotary.c */
    { "check_qk rank", "rotary_embedding", META, query_rank_4, SHAPE,
      "_C::rotary_embedding: argument 'query': expected rank 2 (or 3 with 1-d positions), got "
      "4" },
    { "check_qk head_size", "rotary_embedding", META, query_last_41, SHAPE,
      "_C::rotary_embedding: argument 'query': last dim 41 is not a multiple of head_size 8" },
    { "check_qk head_size", "rotary_embedding", META, query_heads_of_9, SHAPE,
      "_C::rotary_embedding: argument 'query': expected size 8 in dim 2, got 9" },
    { "check_qk tokens", "rotary_embedding", META, key_38_tokens, SHAPE,
      "_C::rotary_embedding: argument 'key': expected size 37 in dim 0, got 38" },
    /* New with token strides, which are free now: may still change. */
    { "check_qk rows", "rotary_embedding", META, query_row_stride_36, SHAPE,
      "_C::rotary_embedding: argument 'query': rows overlap (row stride 36 < 40)" },
    { "check_qk heads", "rotary_embedding", META, query_head_stride_9, SHAPE,
      "_C::rotary_embedding: argument 'query': each token's heads must be contiguous (strides 9, "
      "1 in dims 1, 2)" },
    { "check_qk tokens", "rotary_embedding", META, query_token_stride_39, SHAPE,
      "_C::rotary_embedding: argument 'query': tokens overlap (token stride 39 < 40)" },
    { "positions rank", "rotary_embedding", META, positions_rank_3, SHAPE,
      "_C::rotary_embedding: argument 'positions': expected rank 1 or 2, got 3" },
    { "head_size", "rotary_embedding", META, head_size_negative, INVALID,
      "_C::rotary_embedding: argument 'head_size': must be > 0, got -13" },
    { "rot_dim", "rotary_embedding", META, rot_dim_7, SHAPE,
      "_C::rotary_embedding: argument 'cos_sin_cache': rot_dim (dim 1) must be even and in "
      "2..head_size=8, got 7" },
    { "rot_dim", "rotary_embedding", META, rot_dim_10, SHAPE,
      "_C::rotary_embedding: argument 'cos_sin_cache': rot_dim (dim 1) must be even and in "
      "2..head_size=8, got 10" },
    { "chk_same_dtype", "rotary_embedding", META, key_f16, SHAPE,
      "_C::rotary_embedding: argument 'key': dtype f16 differs from 'query' (f32)" },
    { "chk_no_overlap", "rotary_embedding", REF, key_over_query, INVALID,
      "_C::rotary_embedding: argument 'query' overlaps 'key' in memory" },
    { "check_rows", "rotary_embedding", REF, position_100000_token_3, INVALID,
      "_C::rotary_embedding: argument 'positions': token 3 uses cache row 100000, outside "
      "cos_sin_cache's 1000 rows" },
    { "check_rows", "rotary_embedding", REF, position_negative_token_3, INVALID,
      "_C::rotary_embedding: argument 'positions': token 3 uses cache row -6, outside "
      "cos_sin_cache's 1000 rows" },
    { "check_rows", "rotary_embedding", REF, position_100000_token_17_of_5x7, INVALID,
      "_C::rotary_embedding: argument 'positions': token 17 uses cache row 100000, outside "
      "cos_sin_cache's 1000 rows" },
    { "rot_dim argument", "batched_rotary_embedding", META, rot_dim_arg_10, INVALID,
      "_C::batched_rotary_embedding: argument 'rot_dim': 10 differs from cos_sin_cache.size(1) "
      "= 6" },
    { "offsets count", "batched_rotary_embedding", META, offsets_36, SHAPE,
      "_C::batched_rotary_embedding: argument 'cos_sin_cache_offsets': 36 elements, expected one "
      "per token (37)" },
    { "offsets dtype", "batched_rotary_embedding", META, offsets_i32, SHAPE,
      "_C::batched_rotary_embedding: argument 'cos_sin_cache_offsets': expected dtype i64, got "
      "i32" },
    { "check_rows offset", "batched_rotary_embedding", REF, row_998_offset_5_token_3, INVALID,
      "_C::batched_rotary_embedding: argument 'positions': token 3 uses cache row 998 + offset "
      "5, outside cos_sin_cache's 1000 rows" },
    { "check_rows offset", "batched_rotary_embedding", REF, row_7_offset_negative_token_3, INVALID,
      "_C::batched_rotary_embedding: argument 'positions': token 3 uses cache row 7 + offset -2, "
      "outside cos_sin_cache's 1000 rows" },
    { "check_rows offset", "batched_rotary_embedding", REF, position_100000_token_3, INVALID,
      "_C::batched_rotary_embedding: argument 'positions': token 3 uses cache row 100000 + "
      "offset 0, outside cos_sin_cache's 1000 rows" },

    /* kv_cache.c: reshape_and_cache */
    { "check_kind", "reshape_and_cache", META, kv_cache_dtype_fp16, INVALID,
      "_C::reshape_and_cache: argument 'kv_cache_dtype': unsupported \"fp16\" (expected "
      "\"auto\", \"fp8\", \"fp8_e4m3\" or \"fp8_e5m2\")" },
    /* May change: the token layout of key and value is being reworked. */
    { "check_tokens", "reshape_and_cache", META, key_head_dim_stride_2, SHAPE,
      "_C::reshape_and_cache: argument 'key': heads and head dims must be contiguous" },
    { "x", "reshape_and_cache", META, key_cache_x_3, SHAPE,
      "_C::reshape_and_cache: argument 'key_cache': x = size(4) = 3 must divide head_size 8" },
    { "key_cache heads", "reshape_and_cache", META, key_cache_6_heads, SHAPE,
      "_C::reshape_and_cache: argument 'key_cache': expected size 3 in dim 1, got 6" },
    { "key_cache head_size / x", "reshape_and_cache", META, key_cache_7_in_dim_2, SHAPE,
      "_C::reshape_and_cache: argument 'key_cache': expected size 2 in dim 2, got 7" },
    { "block_size", "reshape_and_cache", META, key_cache_block_size_0, SHAPE,
      "_C::reshape_and_cache: argument 'key_cache': block_size (dim 3) is 0" },
    /* New with free block strides: may still change. */
    { "chk_blocks", "reshape_and_cache", META, key_cache_stride_8_dim_3, SHAPE,
      "_C::reshape_and_cache: argument 'key_cache': each block must be contiguous (stride 8 in "
      "dim 3, expected 4)" },
    { "chk_blocks", "reshape_and_cache", META, value_cache_block_stride_100, SHAPE,
      "_C::reshape_and_cache: argument 'value_cache': blocks overlap (stride 100 in dim 0, less "
      "than a block's 120 elements)" },
    { "value_cache blocks", "reshape_and_cache", META, value_cache_12_blocks, SHAPE,
      "_C::reshape_and_cache: argument 'value_cache': expected size 11 in dim 0, got 12" },
    { "value_cache head_size", "reshape_and_cache", META, value_cache_head_9, SHAPE,
      "_C::reshape_and_cache: argument 'value_cache': expected size 8 in dim 2, got 9" },
    { "value_cache block_size", "reshape_and_cache", META, value_cache_block_6, SHAPE,
      "_C::reshape_and_cache: argument 'value_cache': expected size 5 in dim 3, got 6" },
    { "kv_scale", "reshape_and_cache", META, fp8_kv_scale_negative, INVALID,
      "_C::reshape_and_cache: argument 'kv_scale': must be finite and > 0, got -2.5" },
    { "check_cache_dtype", "reshape_and_cache", META, fp8_f32_caches, SHAPE,
      "_C::reshape_and_cache: argument 'key_cache': expected dtype u8 or f8_e4m3fn, got f32" },
    { "check_cache_dtype", "reshape_and_cache", META, fp8_e5m2_f32_caches, SHAPE,
      "_C::reshape_and_cache: argument 'key_cache': expected dtype u8 or f8_e5m2, got f32" },
    { "check_cache_dtype", "reshape_and_cache", META, key_cache_f16, SHAPE,
      "_C::reshape_and_cache: argument 'key_cache': dtype f16 differs from 'key' (f32)" },
    { "slot_mapping", "reshape_and_cache", META, slot_mapping_36, SHAPE,
      "_C::reshape_and_cache: argument 'slot_mapping': expected size 37 in dim 0, got 36" },
    { "check_slots", "reshape_and_cache", REF, slot_100000_token_3, INVALID,
      "_C::reshape_and_cache: argument 'slot_mapping': slot 100000 of token 3 is outside the "
      "cache's 55 slots" },
    { "chk_no_overlap", "reshape_and_cache", REF, value_cache_over_key_cache, INVALID,
      "_C::reshape_and_cache: argument 'key_cache' overlaps 'value_cache' in memory" },
    { "chk_same_device", "reshape_and_cache", CPU_ENTRY, slot_mapping_on_cpu1, DEVICE,
      "_C::reshape_and_cache: argument 'slot_mapping' is on cpu:1 but 'key' is on cpu" },

    /* kv_cache.c: reshape_and_cache_flash */
    { "check_kind", "reshape_and_cache_flash", META, kv_cache_dtype_int8, INVALID,
      "_C::reshape_and_cache_flash: argument 'kv_cache_dtype': unsupported \"int8\" (expected "
      "\"auto\", \"fp8\", \"fp8_e4m3\" or \"fp8_e5m2\")" },
    { "slot_mapping", "reshape_and_cache_flash", META, slot_mapping_41, SHAPE,
      "_C::reshape_and_cache_flash: argument 'slot_mapping': 41 slots for 37 tokens" },
    { "block_size", "reshape_and_cache_flash", META, flash_block_size_0, SHAPE,
      "_C::reshape_and_cache_flash: argument 'key_cache': block_size (dim 1) is 0" },
    { "key_cache heads", "reshape_and_cache_flash", META, flash_key_cache_6_heads, SHAPE,
      "_C::reshape_and_cache_flash: argument 'key_cache': expected size 3 in dim 2, got 6" },
    { "key_cache head_size", "reshape_and_cache_flash", META, flash_key_cache_head_9, SHAPE,
      "_C::reshape_and_cache_flash: argument 'key_cache': expected size 8 in dim 3, got 9" },
    { "value_cache", "reshape_and_cache_flash", META, flash_value_cache_head_7, SHAPE,
      "_C::reshape_and_cache_flash: argument 'value_cache': shape differs from 'key_cache'" },
    { "check_slots", "reshape_and_cache_flash", REF, slot_100000_token_3, INVALID,
      "_C::reshape_and_cache_flash: argument 'slot_mapping': slot 100000 of token 3 is outside "
      "the cache's 55 slots" },

    /* kv_cache.c: copy_blocks */
    { "layers", "copy_blocks", META, three_value_layers, INVALID,
      "_C::copy_blocks: argument 'value_caches': 3 layers, but key_caches has 2" },
    { "check_mapping", "copy_blocks", META, block_mapping_6_3, SHAPE,
      "_C::copy_blocks: argument 'block_mapping': expected size 2 in dim 1, got 3" },
    { "check_cache_list", "copy_blocks", META, key_caches_1_shape, SHAPE,
      "_C::copy_blocks: argument 'key_caches[1]': shape differs from 'key_caches'" },
    { "check_cache_list", "copy_blocks", META, value_caches_1_f16, SHAPE,
      "_C::copy_blocks: argument 'value_caches[1]': dtype f16 differs from 'value_caches' (f32)" },
    /* New with free block strides: may still change. */
    { "chk_blocks", "copy_blocks", META, key_caches_0_stride_2, SHAPE,
      "_C::copy_blocks: argument 'key_caches[0]': each block must be contiguous (stride 2 in dim "
      "2, expected 1)" },
    { "check_cache_list", "copy_blocks", META, key_caches_1_block_stride_150, SHAPE,
      "_C::copy_blocks: argument 'key_caches[1]': block stride 150 differs from key_caches[0]'s "
      "120" },
    { "check_cache_list", "copy_blocks", CPU_ENTRY, key_caches_1_on_cpu1, DEVICE,
      "_C::copy_blocks: argument 'key_caches[1]' is on cpu:1 but 'block_mapping' is on cpu" },
    { "check_cache_list", "copy_blocks", REF, key_caches_1_over_mapping, INVALID,
      "_C::copy_blocks: argument 'key_caches[1]' overlaps 'block_mapping' in memory" },
    { "check_pairs", "copy_blocks", REF, source_100000_pair_3, INVALID,
      "_C::copy_blocks: argument 'block_mapping': source block 100000 of pair 3 is outside "
      "0..10" },
    { "check_pairs", "copy_blocks", REF, destination_11_pair_3, INVALID,
      "_C::copy_blocks: argument 'block_mapping': destination block 11 of pair 3 is outside "
      "0..10" },

    /* kv_cache.c: swap_blocks */
    /* New with free block strides: may still change. */
    { "chk_blocks", "swap_blocks", REF, src_block_stride_100, SHAPE,
      "_C::swap_blocks: argument 'src': blocks overlap (stride 100 in dim 0, less than a block's "
      "120 elements)" },
    { "dst", "swap_blocks", REF, dst_3_41, SHAPE,
      "_C::swap_blocks: argument 'dst': expected size 40 in dim 2, got 41" },
    { "dst", "swap_blocks", REF, dst_rank_2, SHAPE,
      "_C::swap_blocks: argument 'dst': expected rank 3, got 2" },
    { "chk_no_overlap", "swap_blocks", REF, dst_over_src, INVALID,
      "_C::swap_blocks: argument 'dst' overlaps 'src' in memory" },
    { "check_pairs", "swap_blocks", REF, source_11_pair_3, INVALID,
      "_C::swap_blocks: argument 'block_mapping': source block 11 of pair 3 is outside 0..10" },
    { "check_pairs", "swap_blocks", REF, destination_13_pair_3, INVALID,
      "_C::swap_blocks: argument 'block_mapping': destination block 13 of pair 3 is outside "
      "0..12" },

    /* quant.c */
    { "per-tensor scale", "static_scaled_fp8_quant", META, scale_3, SHAPE,
      "_C::static_scaled_fp8_quant: argument 'scale': expected one element (per tensor), got 3" },
    { "per-token scale", "dynamic_scaled_int8_quant", META, scale_37, SHAPE,
      "_C::dynamic_scaled_int8_quant: argument 'scale': expected one scale per token (185), got "
      "37 elements" },
    { "out dtype", "static_scaled_fp8_quant", META, out_i8, SHAPE,
      "_C::static_scaled_fp8_quant: argument 'out': expected dtype f8_e4m3fn, got i8" },
    { "out dtype", "static_scaled_int8_quant", META, out_f8, SHAPE,
      "_C::static_scaled_int8_quant: argument 'out': expected dtype i8, got f8_e4m3fn" },
    { "chk_no_overlap", "dynamic_scaled_fp8_quant", REF, scale_over_input, INVALID,
      "_C::dynamic_scaled_fp8_quant: argument 'scale' overlaps 'input' in memory" },

    /* moe.c */
    { "num_experts", "moe_align_block_size", META, num_experts_negative, INVALID,
      "_C::moe_align_block_size: argument 'num_experts': must be in 1..2^31-1, got -3" },
    { "num_experts", "moe_align_block_size", META, num_experts_2_pow_31, INVALID,
      "_C::moe_align_block_size: argument 'num_experts': must be in 1..2^31-1, got 2147483648" },
    { "block_size", "moe_align_block_size", META, block_size_negative, INVALID,
      "_C::moe_align_block_size: argument 'block_size': must be in 1..2^31-1, got -16" },
    { "capacity", "moe_align_block_size", META, sorted_193, SHAPE,
      "_C::moe_align_block_size: argument 'sorted_token_ids': needs at least 194 elements, has "
      "193" },
    { "capacity", "moe_align_block_size", META, experts_ids_12, SHAPE,
      "_C::moe_align_block_size: argument 'experts_ids': needs at least 13 elements, has 12" },
    { "capacity", "moe_align_block_size", META, post_pad_0, SHAPE,
      "_C::moe_align_block_size: argument 'num_tokens_post_pad': needs at least 1 elements, has "
      "0" },
    { "int32 ids", "moe_align_block_size", META, over_2_pow_31_ids, SHAPE,
      "_C::moe_align_block_size: argument 'topk_ids': too many elements for int32 ids" },
    { "expert ids", "moe_align_block_size", REF, expert_100000_at_5, INVALID,
      "_C::moe_align_block_size: argument 'topk_ids': expert 100000 at flat index 5 is outside "
      "0..7" },
    { "expert ids", "moe_align_block_size", REF, i64_expert_negative_at_73, INVALID,
      "_C::moe_align_block_size: argument 'topk_ids': expert -2 at flat index 73 is outside "
      "0..7" },
    { "k", "topk_softmax", META, k_9, SHAPE,
      "_C::topk_softmax: argument 'topk_weights': k = 9 exceeds the 8 experts of gating_output" },
    { "outputs", "topk_softmax", META, topk_indices_37_3, SHAPE,
      "_C::topk_softmax: argument 'topk_indices': expected size 2 in dim 1, got 3" },
    { "outputs", "topk_softmax", META, token_expert_indices_36, SHAPE,
      "_C::topk_softmax: argument 'token_expert_indices': expected size 37 in dim 0, got 36" },
    { "outputs", "topk_softmax", META, topk_indices_i64, SHAPE,
      "_C::topk_softmax: argument 'topk_indices': expected dtype i32, got i64" },
    { "outputs", "topk_softmax", REF, token_expert_over_indices, INVALID,
      "_C::topk_softmax: argument 'token_expert_indices' overlaps 'topk_indices' in memory" },

    /* attention.c */
    { "block-sparse", "paged_attention_v1", META, vert_stride_4, UNSUPP,
      "_C::paged_attention_v1: argument 'blocksparse_vert_stride': block-sparse attention (4) is "
      "not supported; pass 0 or 1" },
    { "kv_cache_dtype", "paged_attention_v1", META, kv_cache_dtype_fp16, INVALID,
      "_C::paged_attention_v1: argument 'kv_cache_dtype': unsupported \"fp16\"" },
    { "num_kv_heads", "paged_attention_v1", META, num_kv_heads_4, INVALID,
      "_C::paged_attention_v1: argument 'num_kv_heads': 4 must be > 0 and divide the 6 query "
      "heads" },
    { "block_size", "paged_attention_v1", META, attention_block_size_negative, INVALID,
      "_C::paged_attention_v1: argument 'block_size': must be > 0, got -5" },
    { "x", "paged_attention_v1", META, key_cache_x_6, SHAPE,
      "_C::paged_attention_v1: argument 'key_cache': x = size(4) = 6 must divide head_size 8" },
    { "key_cache", "paged_attention_v1", META, key_cache_4_heads, SHAPE,
      "_C::paged_attention_v1: argument 'key_cache': expected size 3 in dim 1, got 4" },
    { "key_cache", "paged_attention_v1", META, key_cache_block_6, SHAPE,
      "_C::paged_attention_v1: argument 'key_cache': expected size 5 in dim 3, got 6" },
    { "key_cache", "paged_attention_v1", META, key_cache_f16, SHAPE,
      "_C::paged_attention_v1: argument 'key_cache': expected dtype f32, got f16" },
    { "value_cache", "paged_attention_v1", META, value_cache_head_9, SHAPE,
      "_C::paged_attention_v1: argument 'value_cache': expected size 8 in dim 2, got 9" },
    { "block_tables", "paged_attention_v1", META, block_tables_6, SHAPE,
      "_C::paged_attention_v1: argument 'block_tables': expected size 7 in dim 0, got 6" },
    { "max_seq_len", "paged_attention_v1", META, max_seq_len_negative, INVALID,
      "_C::paged_attention_v1: argument 'max_seq_len': must be >= 0, got -45" },
    { "scale", "paged_attention_v1", META, scale_inf, INVALID,
      "_C::paged_attention_v1: argument 'scale': must be finite" },
    { "kv_scale", "paged_attention_v1", META, fp8_kv_scale_0, INVALID,
      "_C::paged_attention_v1: argument 'kv_scale': must be finite and > 0, got 0" },
    { "alibi_slopes", "paged_attention_v1", META, alibi_5, SHAPE,
      "_C::paged_attention_v1: argument 'alibi_slopes': expected size 6 in dim 0, got 5" },
    { "chk_same_device", "paged_attention_v1", CPU_ENTRY, seq_lens_on_cpu1, DEVICE,
      "_C::paged_attention_v1: argument 'seq_lens' is on cpu:1 but 'query' is on cpu" },
    { "chk_no_overlap", "paged_attention_v1", REF, query_over_out, INVALID,
      "_C::paged_attention_v1: argument 'out' overlaps 'query' in memory" },
    { "seq_lens", "paged_attention_v1", REF, seq_len_46_of_4, INVALID,
      "_C::paged_attention_v1: argument 'seq_lens': length 46 of sequence 4 is outside "
      "0..max_seq_len=45" },
    { "block_tables width", "paged_attention_v1", REF, seq_len_47_of_4_in_100, INVALID,
      "_C::paged_attention_v1: argument 'block_tables': sequence 4 needs 10 blocks, the table "
      "has 9" },
    { "block_tables entries", "paged_attention_v1", REF, block_100000_of_4_entry_2, INVALID,
      "_C::paged_attention_v1: argument 'block_tables': block 100000 (sequence 4, entry 2) is "
      "outside the cache's 11 blocks" },

    /* gemm.c */
    { "a layout", "cutlass_scaled_mm", META, a_column_major, SHAPE,
      "_C::cutlass_scaled_mm: argument 'a': must be row-major (stride(1) == 1)" },
    { "b layout", "cutlass_scaled_mm", META, b_row_major, SHAPE,
      "_C::cutlass_scaled_mm: argument 'b': must be column-major (stride(0) == 1)" },
    { "b", "cutlass_scaled_mm", META, b_47_rows, SHAPE,
      "_C::cutlass_scaled_mm: argument 'b': expected size 48 in dim 0, got 47" },
    { "a dtype", "cutlass_scaled_mm", META, a_f32, SHAPE,
      "_C::cutlass_scaled_mm: argument 'a': expected dtype i8 or f8_e4m3fn, got f32" },
    { "out dtype", "cutlass_scaled_mm", META, out_i32, SHAPE,
      "_C::cutlass_scaled_mm: argument 'out': expected dtype f16, f32 or bf16, got i32" },
    { "out", "cutlass_scaled_mm", META, out_37_42_mm, SHAPE,
      "_C::cutlass_scaled_mm: argument 'out': expected size 41 in dim 1, got 42" },
    { "check_scales", "cutlass_scaled_mm", META, a_scales_5, SHAPE,
      "_C::cutlass_scaled_mm: argument 'a_scales': expected 1 (per tensor) or 37 elements, got "
      "5" },
    { "check_scales", "cutlass_scaled_mm", META, b_scales_40, SHAPE,
      "_C::cutlass_scaled_mm: argument 'b_scales': expected 1 (per tensor) or 41 elements, got "
      "40" },
    { "bias", "cutlass_scaled_mm", META, bias_43, SHAPE,
      "_C::cutlass_scaled_mm: argument 'bias': expected size 41 in dim 0, got 43" },
    { "bias", "cutlass_scaled_mm", META, bias_f16, SHAPE,
      "_C::cutlass_scaled_mm: argument 'bias': dtype f16 differs from 'out' (f32)" },

    /* linear.c */
    { "weight", "linear", META, weight_41_47, SHAPE,
      "_C::linear: argument 'weight': expected size 48 in dim 1, got 47" },
    { "weight", "linear", META, weight_stride_49, SHAPE,
      "_C::linear: argument 'weight': must be contiguous (stride 49 in dim 0, expected 48)" },
    { "bias", "linear", META, bias_43, SHAPE,
      "_C::linear: argument 'bias': expected size 41 in dim 0, got 43" },
    { "input dtype", "linear", META, input_i8, SHAPE,
      "_C::linear: argument 'input': expected dtype f16, f32 or bf16, got i8" },
};
#define NROWS (sizeof rows / sizeof rows[0])

/* The rows start from these inputs: each must be accepted as it is, so
 * that a row fails only for what it changes. */
TEST(every_op_accepts_the_inputs_the_rows_start_from) {
    CHECK(opreg_registry_default() != NULL);
    for (size_t i = 0; i < NBASES; i++) {
        const opreg_op *op = find_op(bases[i].op);
        CHECK(op != NULL);
        const opreg_schema *s = opreg_op_schema(op);
        for (route r = META; r <= REF; r++) {
            if (r == META && !bases[i].meta_ok) continue;
            call c;
            char msg[512];
            start(&c, &bases[i], r);
            opreg_status st = run_call(op, &c, r, msg, sizeof msg);
            bool names_ok = c.nargs == opreg_schema_num_arguments(s);
            for (size_t a = 0; names_ok && a < c.nargs; a++)
                names_ok =
                    strcmp(c.names[a], opreg_argument_name(opreg_schema_argument(s, a))) == 0;
            finish(&c);
            if (st != OPREG_OK || !names_ok)
                fprintf(stderr, "%s on %s:\n", bases[i].op, route_name(r));
            CHECK(names_ok);
            CHECK_EQ_STR(msg, "");
            CHECK_EQ_STR(opreg_status_name(st), "OPREG_OK");
        }
    }
}

static void check_row(size_t i) {
    const message_row *r = &rows[i];
    const op_base *b = base_of(r->op);
    const opreg_op *op = find_op(r->op);
    call c;
    char msg[512];
    CHECK(b != NULL && op != NULL);
    start(&c, b, r->route);
    if (r->breaks) r->breaks(&c);
    opreg_status st = run_call(op, &c, r->route, msg, sizeof msg);
    finish(&c);
    if (st != r->status || strcmp(msg, r->text) != 0)
        fprintf(stderr, "row %zu (%s of %s, on %s):\n", i, r->check, r->op, route_name(r->route));
    CHECK_EQ_STR(opreg_status_name(st), opreg_status_name(r->status));
    CHECK_EQ_STR(msg, r->text);
}

TEST(every_message_reads_back_its_numbers) {
    for (size_t i = 0; i < NROWS; i++)
        check_row(i);
    printf("%zu messages read back\n", NROWS);
}

/* Three messages that no call through the registry reaches: the dispatcher
 * refuses a NULL tensor, a list with items but no array, and tensors on two
 * devices (swap_blocks' mapping on a device other than the host), before
 * any kernel runs. The checks are called directly. */
TEST(messages_behind_the_dispatcher) {
    int64_t shape[2] = { 6, 2 };
    DLTensor mapping = { NULL, { OPREG_DEVICE_META, 0 }, 2, { kDLInt, 64, 1 }, shape, NULL, 0 };
    opreg_clear_error();
    CHECK_EQ_INT(opreg__chk_tensor("_C::rms_norm", "weight", NULL, OPREG__DTS_FLOAT, 1),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(opreg_last_error(), "_C::rms_norm: argument 'weight': tensor is NULL");
    CHECK_EQ_INT(opreg__check_copy_blocks(NULL, 2, NULL, 2, &mapping), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_EQ_STR(opreg_last_error(), "_C::copy_blocks: argument 'key_caches': list is NULL");

    int64_t blocks[2] = { 3, 4 };
    DLTensor src = { NULL, { OPREG_DEVICE_META, 0 }, 2, { kDLFloat, 32, 1 }, blocks, NULL, 0 };
    DLTensor dst = src;
    int64_t pairs[12] = { 0 };
    DLTensor on_cuda = mapping; /* data of its own: only a Meta tensor may have none */
    on_cuda.data = pairs;
    on_cuda.device = (DLDevice){ kDLCUDA, 0 };
    CHECK_EQ_INT(opreg__check_swap_blocks(&src, &dst, &mapping), OPREG_OK); /* Meta: the host */
    CHECK_EQ_INT(opreg__check_swap_blocks(&src, &dst, &on_cuda), OPREG_ERR_DEVICE_MISMATCH);
    CHECK_EQ_STR(opreg_last_error(),
                 "_C::swap_blocks: argument 'block_mapping' must be on the CPU");
}

int main(void) {
    RUN(every_op_accepts_the_inputs_the_rows_start_from);
    RUN(every_message_reads_back_its_numbers);
    RUN(messages_behind_the_dispatcher);
    return test_summary();
}
