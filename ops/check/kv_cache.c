/* Checks of the KV-cache ops (§2.3, §3.4). */
#include "ops/check/check.h"
#include "ops/ops_internal.h"

#include <inttypes.h>
#include <stdio.h>

int opreg__kv_cache_kind(const char *s) {
    if (!s) return -1;
    if (strcmp(s, "auto") == 0) return 0;
    if (strcmp(s, "fp8") == 0 || strcmp(s, "fp8_e4m3") == 0) return 1;
    if (strcmp(s, "fp8_e5m2") == 0) return 2;
    return -1;
}

/* [T, H, D] with H and D dense; the token stride is free (>= 0). */
static opreg_status check_tokens(const char *op, const char *arg, const opreg_tensor *t) {
    OPREG__TRY(opreg__chk_tensor(op, arg, t, OPREG__DTS_FLOAT, 3));
    if (t->strides && ((t->shape[2] > 1 && t->strides[2] != 1) ||
                       (t->shape[1] > 1 && t->strides[1] != t->shape[2]) ||
                       (t->shape[0] > 1 && t->strides[0] < 0)))
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument '%s': heads and head dims must be contiguous", op, arg);
    return OPREG_OK;
}

/* The cache dtype that kv_cache_dtype asks for. */
static opreg_status check_cache_dtype(const char *op, const char *arg, const opreg_tensor *cache,
                                      int kind, const opreg_tensor *key) {
    if (kind == 0) return opreg__chk_same_dtype(op, arg, cache, "key", key);
    if (kind == 1)
        return opreg__chk_tensor(op, arg, cache, OPREG__DTS(U8) | OPREG__DTS(F8_E4M3FN),
                                 cache->ndim);
    return opreg__chk_tensor(op, arg, cache, OPREG__DTS(U8) | OPREG__DTS(F8_E5M2), cache->ndim);
}

static opreg_status check_kind(const char *op, const char *kv_cache_dtype, int *kind) {
    *kind = opreg__kv_cache_kind(kv_cache_dtype);
    if (*kind < 0)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'kv_cache_dtype': unsupported \"%s\" (expected \"auto\", "
                           "\"fp8\", \"fp8_e4m3\" or \"fp8_e5m2\")",
                           op, kv_cache_dtype ? kv_cache_dtype : "(null)");
    return OPREG_OK;
}

/* key, value, slot_mapping, devices and overlaps, common to both layouts;
 * returns the number of tokens written (slot_mapping.size(0)). */
static opreg_status check_inputs(const char *op, const opreg_tensor *key, const opreg_tensor *value,
                                 const opreg_tensor *key_cache, const opreg_tensor *value_cache,
                                 const opreg_tensor *slot_mapping, int exact_tokens) {
    OPREG__TRY(check_tokens(op, "key", key));
    OPREG__TRY(check_tokens(op, "value", value));
    OPREG__TRY(opreg__chk_same_dtype(op, "value", value, "key", key));
    OPREG__TRY(opreg__chk_same_shape(op, "value", value, "key", key));
    OPREG__TRY(opreg__chk_tensor(op, "slot_mapping", slot_mapping, OPREG__DTS(I64), 1));
    OPREG__TRY(opreg__chk_contig(op, "slot_mapping", slot_mapping));
    if (exact_tokens) {
        OPREG__TRY(opreg__chk_size(op, "slot_mapping", slot_mapping, 0, key->shape[0]));
    } else if (slot_mapping->shape[0] > key->shape[0]) {
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'slot_mapping': %" PRId64 " slots for %" PRId64 " tokens",
                           op, slot_mapping->shape[0], key->shape[0]);
    }
    OPREG__TRY(opreg__chk_same_device(op, "value", value, "key", key));
    OPREG__TRY(opreg__chk_same_device(op, "key_cache", key_cache, "key", key));
    OPREG__TRY(opreg__chk_same_device(op, "value_cache", value_cache, "key", key));
    OPREG__TRY(opreg__chk_same_device(op, "slot_mapping", slot_mapping, "key", key));
    {
        const char *on[2] = { "key_cache", "value_cache" };
        const opreg_tensor *o[2] = { key_cache, value_cache };
        for (int i = 0; i < 2; i++) {
            OPREG__TRY(opreg__chk_no_overlap(op, on[i], o[i], "key", key));
            OPREG__TRY(opreg__chk_no_overlap(op, on[i], o[i], "value", value));
            OPREG__TRY(opreg__chk_no_overlap(op, on[i], o[i], "slot_mapping", slot_mapping));
        }
    }
    return opreg__chk_no_overlap(op, "key_cache", key_cache, "value_cache", value_cache);
}

opreg_status opreg__check_reshape_and_cache(const opreg_tensor *key, const opreg_tensor *value,
                                            const opreg_tensor *key_cache,
                                            const opreg_tensor *value_cache,
                                            const opreg_tensor *slot_mapping,
                                            const char *kv_cache_dtype, double kv_scale) {
    const char *op = "_C::reshape_and_cache";
    int kind;
    int64_t h, d, x;
    OPREG__TRY(check_kind(op, kv_cache_dtype, &kind));
    OPREG__TRY(check_tokens(op, "key", key));
    OPREG__TRY(opreg__chk_tensor(op, "key_cache", key_cache, OPREG__DTS_ANY, 5));
    OPREG__TRY(opreg__chk_tensor(op, "value_cache", value_cache, OPREG__DTS_ANY, 4));
    OPREG__TRY(check_cache_dtype(op, "key_cache", key_cache, kind, key));
    OPREG__TRY(opreg__chk_same_dtype(op, "value_cache", value_cache, "key_cache", key_cache));
    h = key->shape[1];
    d = key->shape[2];
    x = key_cache->shape[4];
    if (x <= 0 || d % x != 0)
        return opreg__fail(OPREG_ERR_SHAPE,
                           "%s: argument 'key_cache': x = size(4) = %" PRId64
                           " must divide head_size %" PRId64,
                           op, x, d);
    OPREG__TRY(opreg__chk_size(op, "key_cache", key_cache, 1, h));
    OPREG__TRY(opreg__chk_size(op, "key_cache", key_cache, 2, d / x));
    if (key_cache->shape[3] <= 0)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument 'key_cache': block_size (dim 3) is 0",
                           op);
    OPREG__TRY(opreg__chk_blocks(op, "key_cache", key_cache));
    OPREG__TRY(opreg__chk_size(op, "value_cache", value_cache, 0, key_cache->shape[0]));
    OPREG__TRY(opreg__chk_size(op, "value_cache", value_cache, 1, h));
    OPREG__TRY(opreg__chk_size(op, "value_cache", value_cache, 2, d));
    OPREG__TRY(opreg__chk_size(op, "value_cache", value_cache, 3, key_cache->shape[3]));
    OPREG__TRY(opreg__chk_blocks(op, "value_cache", value_cache));
    if (kind != 0 && !(kv_scale > 0.0 && isfinite(kv_scale)))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'kv_scale': must be finite and > 0, got %g", op, kv_scale);
    return check_inputs(op, key, value, key_cache, value_cache, slot_mapping, 1);
}

opreg_status
opreg__check_reshape_and_cache_flash(const opreg_tensor *key, const opreg_tensor *value,
                                     const opreg_tensor *key_cache, const opreg_tensor *value_cache,
                                     const opreg_tensor *slot_mapping, const char *kv_cache_dtype) {
    const char *op = "_C::reshape_and_cache_flash";
    int kind;
    OPREG__TRY(check_kind(op, kv_cache_dtype, &kind));
    OPREG__TRY(check_tokens(op, "key", key));
    OPREG__TRY(opreg__chk_tensor(op, "key_cache", key_cache, OPREG__DTS_ANY, 4));
    OPREG__TRY(opreg__chk_tensor(op, "value_cache", value_cache, OPREG__DTS_ANY, 4));
    OPREG__TRY(check_cache_dtype(op, "key_cache", key_cache, kind, key));
    OPREG__TRY(opreg__chk_same_dtype(op, "value_cache", value_cache, "key_cache", key_cache));
    OPREG__TRY(opreg__chk_size(op, "key_cache", key_cache, 2, key->shape[1]));
    OPREG__TRY(opreg__chk_size(op, "key_cache", key_cache, 3, key->shape[2]));
    if (key_cache->shape[1] <= 0)
        return opreg__fail(OPREG_ERR_SHAPE, "%s: argument 'key_cache': block_size (dim 1) is 0",
                           op);
    OPREG__TRY(opreg__chk_blocks(op, "key_cache", key_cache));
    OPREG__TRY(opreg__chk_same_shape(op, "value_cache", value_cache, "key_cache", key_cache));
    OPREG__TRY(opreg__chk_blocks(op, "value_cache", value_cache));
    return check_inputs(op, key, value, key_cache, value_cache, slot_mapping, 0);
}

static opreg_status check_slots(const char *op, const opreg_tensor *slot_mapping, int64_t slots) {
    const int64_t *s = opreg__ptr(slot_mapping);
    for (int64_t t = 0; t < slot_mapping->shape[0]; t++)
        if (s[t] >= slots)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: argument 'slot_mapping': slot %" PRId64 " of token %" PRId64
                               " is outside the cache's %" PRId64 " slots",
                               op, s[t], t, slots);
    return OPREG_OK;
}

opreg_status opreg__check_reshape_and_cache_data(const opreg_tensor *key_cache,
                                                 const opreg_tensor *slot_mapping) {
    return check_slots("_C::reshape_and_cache", slot_mapping,
                       key_cache->shape[0] * key_cache->shape[3]);
}

opreg_status opreg__check_reshape_and_cache_flash_data(const opreg_tensor *key_cache,
                                                       const opreg_tensor *slot_mapping) {
    return check_slots("_C::reshape_and_cache_flash", slot_mapping,
                       key_cache->shape[0] * key_cache->shape[1]);
}

static opreg_status check_mapping(const char *op, const opreg_tensor *m) {
    OPREG__TRY(opreg__chk_tensor(op, "block_mapping", m, OPREG__DTS(I64), 2));
    OPREG__TRY(opreg__chk_size(op, "block_mapping", m, 1, 2));
    return opreg__chk_contig(op, "block_mapping", m);
}

/* Every cache of a list: same dtype, shape and block stride as the first,
 * dense blocks, on @p dev's device, not overlapping the mapping. */
static opreg_status check_cache_list(const char *op, const char *arg,
                                     const opreg_tensor *const *list, size_t n,
                                     const opreg_tensor *dev, const opreg_tensor *mapping) {
    char name[64];
    for (size_t l = 0; l < n; l++) {
        snprintf(name, sizeof name, "%s[%zu]", arg, l);
        OPREG__TRY(opreg__chk_tensor(op, name, list[l], OPREG__DTS_ANY, -2));
        if (l > 0) {
            OPREG__TRY(opreg__chk_same_dtype(op, name, list[l], arg, list[0]));
            OPREG__TRY(opreg__chk_same_shape(op, name, list[l], arg, list[0]));
        }
        OPREG__TRY(opreg__chk_blocks(op, name, list[l]));
        if (l > 0 && opreg__block_stride(list[l]) != opreg__block_stride(list[0]))
            return opreg__fail(
                OPREG_ERR_SHAPE,
                "%s: argument '%s': block stride %" PRId64 " differs from %s[0]'s %" PRId64, op,
                name, opreg__block_stride(list[l]), arg, opreg__block_stride(list[0]));
        OPREG__TRY(opreg__chk_same_device(op, name, list[l], "block_mapping", dev));
        OPREG__TRY(opreg__chk_no_overlap(op, name, list[l], "block_mapping", mapping));
    }
    return OPREG_OK;
}

opreg_status opreg__check_copy_blocks(const opreg_tensor *const *key_caches, size_t num_key_caches,
                                      const opreg_tensor *const *value_caches,
                                      size_t num_value_caches, const opreg_tensor *block_mapping) {
    const char *op = "_C::copy_blocks";
    if (num_key_caches != num_value_caches)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "%s: argument 'value_caches': %zu layers, but key_caches has %zu", op,
                           num_value_caches, num_key_caches);
    if (num_key_caches > 0 && (!key_caches || !value_caches))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "%s: argument '%s': list is NULL", op,
                           key_caches ? "value_caches" : "key_caches");
    OPREG__TRY(check_mapping(op, block_mapping));
    OPREG__TRY(check_cache_list(op, "key_caches", key_caches, num_key_caches, block_mapping,
                                block_mapping));
    return check_cache_list(op, "value_caches", value_caches, num_value_caches, block_mapping,
                            block_mapping);
}

/* Each (src, dst) pair of the mapping indexes blocks below the limits. */
static opreg_status check_pairs(const char *op, const opreg_tensor *m, int64_t src_blocks,
                                int64_t dst_blocks) {
    const int64_t *p = opreg__ptr(m);
    for (int64_t i = 0; i < m->shape[0]; i++) {
        if (p[2 * i] < 0 || p[2 * i] >= src_blocks)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: argument 'block_mapping': source block %" PRId64
                               " of pair %" PRId64 " is outside 0..%" PRId64,
                               op, p[2 * i], i, src_blocks - 1);
        if (p[2 * i + 1] < 0 || p[2 * i + 1] >= dst_blocks)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "%s: argument 'block_mapping': destination block %" PRId64
                               " of pair %" PRId64 " is outside 0..%" PRId64,
                               op, p[2 * i + 1], i, dst_blocks - 1);
    }
    return OPREG_OK;
}

opreg_status opreg__check_copy_blocks_data(const opreg_tensor *const *key_caches,
                                           const opreg_tensor *const *value_caches,
                                           size_t num_layers, const opreg_tensor *block_mapping) {
    int64_t blocks;
    if (num_layers == 0) return OPREG_OK;
    blocks = key_caches[0]->shape[0] < value_caches[0]->shape[0] ? key_caches[0]->shape[0]
                                                                 : value_caches[0]->shape[0];
    return check_pairs("_C::copy_blocks", block_mapping, blocks, blocks);
}

opreg_status opreg__check_swap_blocks(const opreg_tensor *src, const opreg_tensor *dst,
                                      const opreg_tensor *block_mapping) {
    const char *op = "_C::swap_blocks";
    OPREG__TRY(opreg__chk_tensor(op, "src", src, OPREG__DTS_ANY, -2));
    OPREG__TRY(opreg__chk_blocks(op, "src", src));
    OPREG__TRY(opreg__chk_tensor(op, "dst", dst, OPREG__DTS_ANY, src->ndim));
    OPREG__TRY(opreg__chk_same_dtype(op, "dst", dst, "src", src));
    for (int d = 1; d < src->ndim; d++)
        OPREG__TRY(opreg__chk_size(op, "dst", dst, d, src->shape[d]));
    OPREG__TRY(opreg__chk_blocks(op, "dst", dst));
    OPREG__TRY(check_mapping(op, block_mapping));
    /* The mapping is read on the host. A Meta mapping stands for a host one
     * (shape checks, and the fake kernels that tracing frameworks derive
     * from them); any other device is refused. */
    if (block_mapping->device.device_type != kDLCPU &&
        block_mapping->device.device_type != OPREG_DEVICE_META)
        return opreg__fail(OPREG_ERR_DEVICE_MISMATCH,
                           "%s: argument 'block_mapping' must be on the CPU", op);
    OPREG__TRY(opreg__chk_no_overlap(op, "dst", dst, "src", src));
    return opreg__chk_no_overlap(op, "dst", dst, "block_mapping", block_mapping);
}

opreg_status opreg__check_swap_blocks_data(const opreg_tensor *src, const opreg_tensor *dst,
                                           const opreg_tensor *block_mapping) {
    return check_pairs("_C::swap_blocks", block_mapping, src->shape[0], dst->shape[0]);
}
