/* Reference KV-cache ops (§3.4, §2.3). "auto" copies elements bit for bit;
 * the fp8 kinds store fp8(v / kv_scale) with the division in float and a
 * saturating cast (CUDA's __NV_SATFINITE), as vLLM's scaled_convert. */
#include "ops/cache_layout.h"
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"

/* Store element @p i of @p src (dtype sdt) at element @p j of @p dst. */
static void put(void *dst, int64_t j, const void *src, int sdt, int64_t i, int kind, size_t es,
                float kv_scale) {
    if (kind == 0) {
        memcpy((char *)dst + (size_t)j * es, (const char *)src + (size_t)i * es, es);
        return;
    }
    {
        float v = (float)opreg__ld(src, sdt, i) / kv_scale;
        ((uint8_t *)dst)[j] = kind == 1 ? opreg__f32_to_e4m3fn_sat(v) : opreg__f32_to_e5m2_sat(v);
    }
}

opreg_status opreg__ref_reshape_and_cache(const opreg_tensor *key, const opreg_tensor *value,
                                          const opreg_tensor *key_cache,
                                          const opreg_tensor *value_cache,
                                          const opreg_tensor *slot_mapping,
                                          const char *kv_cache_dtype, double kv_scale) {
    int kind, dt;
    int64_t h, d, x, bs, ks, vs, kbs, vbs;
    size_t es;
    const int64_t *slots;
    kind = opreg__kv_cache_kind(kv_cache_dtype);
    dt = opreg__dtype_of(key);
    es = opreg__dtype_bytes(dt);
    h = key->shape[1];
    d = key->shape[2];
    x = key_cache->shape[4];
    bs = key_cache->shape[3];
    ks = opreg__stride(key, 0);
    vs = opreg__stride(value, 0);
    kbs = opreg__block_stride(key_cache);
    vbs = opreg__block_stride(value_cache);
    slots = opreg__ptr(slot_mapping);
    for (int64_t t = 0; t < slot_mapping->shape[0]; t++) {
        int64_t slot = slots[t], blk, off;
        if (slot < 0) continue; /* padding token */
        blk = slot / bs;
        off = slot % bs;
        for (int64_t hh = 0; hh < h; hh++)
            for (int64_t i = 0; i < d; i++) {
                int64_t src = hh * d + i;
                int64_t kdst = opreg__kcache_index(blk, kbs, hh, i, d, x, off, bs);
                int64_t vdst = opreg__vcache_index(blk, vbs, hh, i, d, off, bs);
                put(opreg__ptr(key_cache), kdst, opreg__ptr(key), dt, t * ks + src, kind, es,
                    (float)kv_scale);
                put(opreg__ptr(value_cache), vdst, opreg__ptr(value), dt, t * vs + src, kind, es,
                    (float)kv_scale);
            }
    }
    return OPREG_OK;
}

opreg_status opreg__ref_reshape_and_cache_flash(const opreg_tensor *key, const opreg_tensor *value,
                                                const opreg_tensor *key_cache,
                                                const opreg_tensor *value_cache,
                                                const opreg_tensor *slot_mapping,
                                                const char *kv_cache_dtype) {
    int kind, dt;
    int64_t hd, ks, vs, bs, kbs, vbs;
    size_t es;
    const int64_t *slots;
    kind = opreg__kv_cache_kind(kv_cache_dtype);
    dt = opreg__dtype_of(key);
    es = opreg__dtype_bytes(dt);
    hd = key->shape[1] * key->shape[2];
    ks = opreg__stride(key, 0);
    vs = opreg__stride(value, 0);
    bs = key_cache->shape[1];
    kbs = opreg__block_stride(key_cache);
    vbs = opreg__block_stride(value_cache);
    slots = opreg__ptr(slot_mapping);
    /* [nblk, bs, H, D]: slot s is row s % bs of block s / bs */
    for (int64_t t = 0; t < slot_mapping->shape[0]; t++) {
        if (slots[t] < 0) continue;
        for (int64_t i = 0; i < hd; i++) {
            put(opreg__ptr(key_cache), opreg__flash_cache_index(slots[t], kbs, bs, hd, i),
                opreg__ptr(key), dt, t * ks + i, kind, es, 1.0f);
            put(opreg__ptr(value_cache), opreg__flash_cache_index(slots[t], vbs, bs, hd, i),
                opreg__ptr(value), dt, t * vs + i, kind, es, 1.0f);
        }
    }
    return OPREG_OK;
}

/* The bytes of one block, and the distance between two, of a cache. */
static size_t block_bytes(const opreg_tensor *t) {
    return (size_t)opreg__block_numel(t) * opreg__dtype_bytes(opreg__dtype_of(t));
}

static size_t block_step(const opreg_tensor *t) {
    return (size_t)opreg__block_stride(t) * opreg__dtype_bytes(opreg__dtype_of(t));
}

opreg_status opreg__ref_copy_blocks(const opreg_tensor *const *key_caches, size_t num_key_caches,
                                    const opreg_tensor *const *value_caches,
                                    size_t num_value_caches, const opreg_tensor *block_mapping) {
    const int64_t *p;
    (void)num_value_caches; /* the check has matched it to num_key_caches */
    p = opreg__ptr(block_mapping);
    /* Pairs run in order; a chain (a->b, b->c) therefore sees a's data at c. */
    for (size_t l = 0; l < num_key_caches; l++) {
        const opreg_tensor *c[2] = { key_caches[l], value_caches[l] };
        for (int kv = 0; kv < 2; kv++) {
            size_t bb = block_bytes(c[kv]), step = block_step(c[kv]);
            char *base = opreg__ptr(c[kv]);
            if (bb == 0) continue; /* empty blocks: data may be NULL */
            for (int64_t i = 0; i < block_mapping->shape[0]; i++)
                if (p[2 * i] != p[2 * i + 1])
                    memcpy(base + (size_t)p[2 * i + 1] * step, base + (size_t)p[2 * i] * step, bb);
        }
    }
    return OPREG_OK;
}

opreg_status opreg__ref_swap_blocks(const opreg_tensor *src, const opreg_tensor *dst,
                                    const opreg_tensor *block_mapping) {
    const int64_t *p;
    size_t bb;
    p = opreg__ptr(block_mapping);
    bb = block_bytes(src);
    if (bb == 0) return OPREG_OK; /* empty blocks: data may be NULL */
    for (int64_t i = 0; i < block_mapping->shape[0]; i++)
        memcpy((char *)opreg__ptr(dst) + (size_t)p[2 * i + 1] * block_step(dst),
               (const char *)opreg__ptr(src) + (size_t)p[2 * i] * block_step(src), bb);
    return OPREG_OK;
}
