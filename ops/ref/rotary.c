/* Reference rotary embeddings (§3.3), in place on query and key:
 * x' = x cos - y sin, y' = y cos + x sin, rounded once to T. */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/ref/ref.h"

/* Rotate every head of one token; @p cs is the cache row. */
static void rotate(void *e, int dt, int64_t heads, int64_t head_size, const void *cs,
                   int64_t rot_dim, bool is_neox) {
    int64_t half = rot_dim / 2;
    for (int64_t h = 0; h < heads; h++) {
        int64_t base = h * head_size;
        for (int64_t i = 0; i < half; i++) {
            int64_t xi = is_neox ? i : 2 * i, yi = is_neox ? i + half : 2 * i + 1;
            double c = opreg__ld(cs, dt, i), s = opreg__ld(cs, dt, half + i);
            double x = opreg__ld(e, dt, base + xi), y = opreg__ld(e, dt, base + yi);
            opreg__st(e, dt, base + xi, x * c - y * s);
            opreg__st(e, dt, base + yi, y * c + x * s);
        }
    }
}

static void run(const opreg_tensor *positions, const opreg_tensor *query, const opreg_tensor *key,
                int64_t head_size, const opreg_tensor *cache, bool is_neox,
                const opreg_tensor *offsets) {
    int dt = opreg__dtype_of(query);
    size_t es = opreg__dtype_bytes(dt);
    int64_t tokens = opreg__numel(positions), rot_dim = cache->shape[1];
    int64_t q_row = 1, k_row = 1;
    int64_t qs = opreg__rotary_token_stride(query, positions);
    int64_t ks = opreg__rotary_token_stride(key, positions);
    const int64_t *pos = opreg__ptr(positions);
    const int64_t *off = offsets ? opreg__ptr(offsets) : NULL;
    for (int d = positions->ndim; d < query->ndim; d++)
        q_row *= query->shape[d];
    for (int d = positions->ndim; d < key->ndim; d++)
        k_row *= key->shape[d];
    for (int64_t t = 0; t < tokens; t++) {
        int64_t row = pos[t] + (off ? off[t] : 0);
        const char *cs = (const char *)opreg__ptr(cache) + (size_t)(row * rot_dim) * es;
        rotate((char *)opreg__ptr(query) + (size_t)(t * qs) * es, dt, q_row / head_size, head_size,
               cs, rot_dim, is_neox);
        rotate((char *)opreg__ptr(key) + (size_t)(t * ks) * es, dt, k_row / head_size, head_size,
               cs, rot_dim, is_neox);
    }
}

opreg_status opreg__ref_rotary_embedding(const opreg_tensor *positions, const opreg_tensor *query,
                                         const opreg_tensor *key, int64_t head_size,
                                         const opreg_tensor *cos_sin_cache, bool is_neox) {
    run(positions, query, key, head_size, cos_sin_cache, is_neox, NULL);
    return OPREG_OK;
}

opreg_status opreg__ref_batched_rotary_embedding(const opreg_tensor *positions,
                                                 const opreg_tensor *query, const opreg_tensor *key,
                                                 int64_t head_size,
                                                 const opreg_tensor *cos_sin_cache, bool is_neox,
                                                 int64_t rot_dim,
                                                 const opreg_tensor *cos_sin_cache_offsets) {
    (void)rot_dim; /* the check has matched it to the cache's width, which run() reads */
    run(positions, query, key, head_size, cos_sin_cache, is_neox, cos_sin_cache_offsets);
    return OPREG_OK;
}
