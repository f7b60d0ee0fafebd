/* rotary_embedding (and the batched form through offsets): entry point and
 * portable path. x' = x cos - y sin, y' = y cos + x sin in f32, rounded
 * once to T (ops-reference.md §3.3). NeoX pairs e[i] with e[i + rot/2],
 * GPT-J pairs e[2i] with e[2i+1]; elements past rot_dim are untouched. */
#include "backends/cpu/kernels/kern_internal.h"

/* The SIMD GPT-J path expands a cache row into two stack arrays of this
 * many floats (rotary_simd.h); longer rows, unseen in practice, stay here. */
#define SIMD_MAX_ROT 1024

static void rotate_heads(int dt, void *row, int64_t heads, int64_t head_size, const void *cs,
                         int64_t rot_dim, int neox) {
    int64_t half = rot_dim / 2;
    for (int64_t h = 0; h < heads; h++) {
        void *e = opreg__cpu_at_mut(dt, row, h * head_size);
        for (int64_t i = 0; i < half; i++) {
            int64_t xi = neox ? i : 2 * i, yi = neox ? i + half : 2 * i + 1;
            float c = opreg__cpu_ld(dt, cs, i), s = opreg__cpu_ld(dt, cs, half + i);
            float x = opreg__cpu_ld(dt, e, xi), y = opreg__cpu_ld(dt, e, yi);
            opreg__cpu_st(dt, e, xi, x * c - y * s);
            opreg__cpu_st(dt, e, yi, y * c + x * s);
        }
    }
}

static void rotary_portable(const void *args, int64_t t0, int64_t t1) {
    const struct opreg__rope_args *a = args;
    int dt = a->dt;
    for (int64_t t = t0; t < t1; t++) {
        int64_t row = a->pos[t] + (a->offsets ? a->offsets[t] : 0);
        const void *cs = opreg__cpu_at(dt, a->cache, row * a->rot_dim);
        if (a->nq) /* no heads: q may be NULL */
            rotate_heads(dt, opreg__cpu_at_mut(dt, a->q, t * a->q_stride), a->nq, a->head_size, cs,
                         a->rot_dim, a->neox);
        if (a->k && a->nk)
            rotate_heads(dt, opreg__cpu_at_mut(dt, a->k, t * a->k_stride), a->nk, a->head_size, cs,
                         a->rot_dim, a->neox);
    }
}

void opreg__cpu_rotary(int isa, int dt, const int64_t *pos, const int64_t *offsets, int64_t tokens,
                       void *q, int64_t q_stride, int64_t nq, void *k, int64_t k_stride, int64_t nk,
                       int64_t head_size, const void *cache, int64_t rot_dim, bool neox) {
    const struct opreg__cpu_simd *s = opreg__cpu_simd_for(isa);
    struct opreg__rope_args a = { .pos = pos,
                                  .offsets = offsets,
                                  .q = q,
                                  .k = k,
                                  .cache = cache,
                                  .q_stride = q_stride,
                                  .k_stride = k_stride,
                                  .nq = nq,
                                  .nk = k ? nk : 0,
                                  .head_size = head_size,
                                  .rot_dim = rot_dim,
                                  .neox = neox,
                                  .dt = dt };
    opreg__cpu_range_fn fn = s ? s->rotary : rotary_portable;
    /* Only the rotated part of each head is read and written. */
    int64_t bytes = 2 * tokens * (nq + a.nk) * rot_dim * (int64_t)opreg__cpu_es(dt);
    if (rot_dim <= 0) return;
    if (!neox && rot_dim > SIMD_MAX_ROT) fn = rotary_portable;
    opreg__cpu_parallel(fn, &a, tokens, bytes);
}
