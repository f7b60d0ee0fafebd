/* reshape_and_cache and reshape_and_cache_flash: scatter each token's key
 * and value into its slot of the paged cache (ops-reference.md §3.4),
 * skipping padding slots (< 0). "auto" copies element bytes; the fp8 kinds
 * store fp8(v / kv_scale) with the division in float and a saturating cast,
 * as vLLM's scaled_convert and ops/ref.
 *
 * Threads split the heads, not the tokens: each thread walks every token in
 * order, so two tokens mapped to one slot end as in a serial loop (the last
 * wins) whatever the thread count. */
#include "backends/cpu/kernels/kern_internal.h"

#include <string.h>

struct cache_args {
    const void *key, *value;
    void *kc, *vc;
    const int64_t *slots;
    int64_t key_stride, value_stride, kblk, vblk, tokens, heads, d, bs, x;
    int dt, kind, flash;
    float kv_scale;
};

static float load(int dt, const void *p, int64_t i) {
    if (dt == OPREG_DTYPE_F32 || dt == OPREG_DTYPE_F16 || dt == OPREG_DTYPE_BF16)
        return opreg__cpu_ld(dt, p, i);
    return 0.0f; /* fp8 caches need a float source; the checks ensure one */
}

/* n elements of one head from src (dtype dt) to dst, each dst_step apart. */
static void put(const struct cache_args *a, void *dst, int64_t dst_step, const void *src,
                int64_t n) {
    size_t es = opreg_dtype_size((opreg_dtype)a->dt);
    if (a->kind == 0 && dst_step == 1) {
        memcpy(dst, src, (size_t)n * es);
    } else if (a->kind == 0) {
        /* Constant-size copies, which compile to one load and one store: a
         * memcpy call per element was most of the op's time. */
        char *o = dst;
        const char *in = src;
        size_t step = (size_t)dst_step * es;
        if (es == 2)
            for (int64_t i = 0; i < n; i++)
                memcpy(o + (size_t)i * step, in + (size_t)i * 2, 2);
        else if (es == 4)
            for (int64_t i = 0; i < n; i++)
                memcpy(o + (size_t)i * step, in + (size_t)i * 4, 4);
        else
            for (int64_t i = 0; i < n; i++)
                memcpy(o + (size_t)i * step, in + (size_t)i * es, es);
    } else {
        uint8_t *o = dst;
        for (int64_t i = 0; i < n; i++) {
            float v = load(a->dt, src, i) / a->kv_scale;
            o[i * dst_step] =
                a->kind == 1 ? opreg__f32_to_e4m3fn_sat(v) : opreg__f32_to_e5m2_sat(v);
        }
    }
}

static void heads_range(const void *args, int64_t h0, int64_t h1) {
    const struct cache_args *a = args;
    size_t src_es = opreg_dtype_size((opreg_dtype)a->dt), dst_es = a->kind ? 1 : src_es;
    for (int64_t t = 0; t < a->tokens; t++) {
        int64_t slot = a->slots[t], blk, off;
        if (slot < 0) continue;
        blk = slot / a->bs;
        off = slot % a->bs;
        for (int64_t h = h0; h < h1; h++) {
            const char *k = (const char *)a->key + (size_t)(t * a->key_stride + h * a->d) * src_es;
            const char *v =
                (const char *)a->value + (size_t)(t * a->value_stride + h * a->d) * src_es;
            if (a->flash) {
                /* [blk][off][h][d] */
                int64_t at = (off * a->heads + h) * a->d;
                put(a, (char *)a->kc + (size_t)(blk * a->kblk + at) * dst_es, 1, k, a->d);
                put(a, (char *)a->vc + (size_t)(blk * a->vblk + at) * dst_es, 1, v, a->d);
                continue;
            }
            /* key: [blk][h][d/x][off][d%x], runs of x contiguous elements */
            for (int64_t j = 0; j < a->d; j += a->x) {
                int64_t at = blk * a->kblk + ((h * (a->d / a->x) + j / a->x) * a->bs + off) * a->x;
                put(a, (char *)a->kc + (size_t)at * dst_es, 1, k + (size_t)j * src_es,
                    a->d - j < a->x ? a->d - j : a->x);
            }
            /* value: [blk][h][d][off], one element every block_size */
            put(a, (char *)a->vc + (size_t)(blk * a->vblk + h * a->d * a->bs + off) * dst_es, a->bs,
                v, a->d);
        }
    }
}

static void run(struct cache_args *a) {
    size_t es = opreg_dtype_size((opreg_dtype)a->dt);
    int64_t bytes = 2 * a->tokens * a->heads * a->d * (int64_t)(es + (a->kind ? 1 : es));
    if (a->tokens <= 0 || a->heads <= 0 || a->d <= 0) return;
    opreg__cpu_parallel(heads_range, a, a->heads, bytes);
}

void opreg__cpu_reshape_and_cache_generic(const void *key, int64_t key_stride, const void *value,
                                          int64_t value_stride, void *key_cache,
                                          int64_t key_block_stride, void *value_cache,
                                          int64_t value_block_stride, const int64_t *slot_mapping,
                                          int64_t tokens, int64_t heads, int64_t head_size,
                                          int64_t block_size, int64_t x, int dtype, int kv_kind,
                                          float kv_scale) {
    struct cache_args a = { .key = key,
                            .value = value,
                            .kc = key_cache,
                            .vc = value_cache,
                            .slots = slot_mapping,
                            .key_stride = key_stride,
                            .value_stride = value_stride,
                            .kblk = key_block_stride,
                            .vblk = value_block_stride,
                            .tokens = tokens,
                            .heads = heads,
                            .d = head_size,
                            .bs = block_size,
                            .x = x,
                            .dt = dtype,
                            .kind = kv_kind,
                            .flash = 0,
                            .kv_scale = kv_scale };
    run(&a);
}

void opreg__cpu_reshape_and_cache_flash_generic(
    const void *key, int64_t key_stride, const void *value, int64_t value_stride, void *key_cache,
    int64_t key_block_stride, void *value_cache, int64_t value_block_stride,
    const int64_t *slot_mapping, int64_t tokens, int64_t heads, int64_t head_size,
    int64_t block_size, int dtype, int kv_kind, float kv_scale) {
    struct cache_args a = { .key = key,
                            .value = value,
                            .kc = key_cache,
                            .vc = value_cache,
                            .slots = slot_mapping,
                            .key_stride = key_stride,
                            .value_stride = value_stride,
                            .kblk = key_block_stride,
                            .vblk = value_block_stride,
                            .tokens = tokens,
                            .heads = heads,
                            .d = head_size,
                            .bs = block_size,
                            .x = 1,
                            .dt = dtype,
                            .kind = kv_kind,
                            .flash = 1,
                            .kv_scale = kv_scale };
    run(&a);
}
