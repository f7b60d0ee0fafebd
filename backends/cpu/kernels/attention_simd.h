/* paged_attention_v1 on the vector layer (vf, VW). Included once by each
 * SIMD path's file, after simd_<isa>.h and simd_math.h. The algorithm is
 * attention.c's (one item per sequence and KV head, online softmax over the
 * cache blocks); only the inner products are vectorised:
 *
 * - A key block [head_size/x][block_size][x] is used in its own layout.
 *   Chunk c of it is block_size * x contiguous elements; a vector of VW of
 *   them holds VW/x tokens' slices (x < VW) or part of one token's (x >=
 *   VW). It is multiplied by the query laid out the same way, qpat: chunk c
 *   of the query repeated to fill W = max(VW, x) lanes, so lane k of
 *   qpat[c*W + m .. ] is q[c*x + (m + k) % x]. The products of a chunk add
 *   up lane by lane over c; each token's logit is then the sum of its x
 *   lanes.
 * - A value block [head_size][block_size] gives, per head dim i, a dot of
 *   the block's probabilities with row i. The dot's lanes are not summed
 *   per block: each head dim keeps a vector accumulator (rescaled with the
 *   running maximum like the sum), reduced across its lanes once at the
 *   end. That took 40% off a decode call (128-token sequences, head_size
 *   128, bf16), where a horizontal sum per head dim and block dominated.
 *   The accumulators take 32 KiB of stack per query head of a pass (AVX-512;
 *   128 KiB for the pass), well inside any thread's default stack.
 *
 * Blocks in bf16, f16 or fp8 are widened to f32 once per block and shared
 * by the query heads of the pass; an f32 block is read in place unless it is
 * the sequence's last, partial block, whose slots past the end are zeroed
 * (a stale NaN there would otherwise poison 0 * NaN). */
#ifndef OPREG_CPU_ATTENTION_SIMD_H
#define OPREG_CPU_ATTENTION_SIMD_H

#define PA_BLOCK_FLOATS (OPREG__CPU_PA_MAX_HEAD * OPREG__CPU_PA_MAX_BLOCK)
/* qpat holds head_size * max(1, VW / x) floats; x >= 4. */
#define PA_QPAT_FLOATS (OPREG__CPU_PA_MAX_HEAD * (VW >= 4 ? VW / 4 : 1))

/* @p count elements of dtype @p dt at @p src, widened to f32 into @p buf. */
AI void pa_widen(int dt, float *buf, const void *src, int64_t count) {
    int64_t i = 0;
    for (; i + VW <= count; i += VW)
        vstore(OPREG_DTYPE_F32, buf + i, vload(dt, opreg__cpu_at(dt, src, i)));
    if (i < count)
        vstore_n(OPREG_DTYPE_F32, buf + i, vload_n(dt, opreg__cpu_at(dt, src, i), count - i),
                 count - i);
}

/* Block @p blk of a cache (head_size x block_size elements per KV head) as
 * f32: in place when possible, else widened into @p buf. For the @p value
 * cache ([head_size][block_size]) the token columns >= @p n are zeroed; the
 * key layout needs no zeroing, since the logits of those tokens are dropped. */
static const float *pa_block(const struct opreg__pa_args *a, const void *cache, int64_t blk,
                             int64_t kvh, int64_t n, bool value, float *buf) {
    int64_t count = a->d * a->bs, base = blk * (value ? a->vblk : a->kblk) + kvh * count;
    bool partial = value && n < a->bs;
    if (a->kind == 0 && a->dt == OPREG_DTYPE_F32 && !partial) return (const float *)cache + base;
    if (a->kind != 0) {
        const uint8_t *c = (const uint8_t *)cache + base;
        for (int64_t i = 0; i < count; i++)
            buf[i] = a->lut[c[i]];
    } else if (a->dt == OPREG_DTYPE_F32) {
        pa_widen(OPREG_DTYPE_F32, buf, opreg__cpu_at(OPREG_DTYPE_F32, cache, base), count);
    } else if (a->dt == OPREG_DTYPE_BF16) {
        pa_widen(OPREG_DTYPE_BF16, buf, opreg__cpu_at(OPREG_DTYPE_BF16, cache, base), count);
    } else {
        pa_widen(OPREG_DTYPE_F16, buf, opreg__cpu_at(OPREG_DTYPE_F16, cache, base), count);
    }
    if (partial)
        for (int64_t i = 0; i < a->d; i++)
            for (int64_t off = n; off < a->bs; off++)
                buf[i * a->bs + off] = 0.0f;
    return buf;
}

/* Query heads h0..h0+nh-1 of sequence @p s, on KV head @p kvh. */
static void pa_attend(const struct opreg__pa_args *a, int64_t s, int64_t kvh, int64_t h0,
                      int64_t nh, float *buf) {
    int64_t d = a->d, bs = a->bs, x = a->x, l = a->len[s];
    int64_t w = VW > x ? VW : x, chunk = bs * x, nvec = chunk / VW;
    float qpat[OPREG__CPU_PA_HEADS][PA_QPAT_FLOATS];
    /* Per head dim, the products summed lane by lane (a lane: the tokens at
     * one offset modulo VW); reduced across lanes once, at the end. */
    vf acc[OPREG__CPU_PA_HEADS][OPREG__CPU_PA_MAX_HEAD];
    float p[OPREG__CPU_PA_HEADS][OPREG__CPU_PA_MAX_BLOCK];
    float lanes[OPREG__CPU_PA_MAX_BLOCK * 16];
    float m[OPREG__CPU_PA_HEADS], sum[OPREG__CPU_PA_HEADS], slope[OPREG__CPU_PA_HEADS];
    for (int64_t g = 0; g < nh; g++) {
        int64_t h = h0 + g;
        /* w is a multiple of x (both powers of two): the chunk's x values
         * repeated w / x times, without a division per element */
        for (int64_t c = 0; c < d / x; c++)
            for (int64_t e = 0; e < x; e++) {
                float v = opreg__cpu_ld(a->dt, a->q, s * a->q_stride + h * d + c * x + e);
                for (int64_t k = e; k < w; k += x)
                    qpat[g][c * w + k] = v;
            }
        for (int64_t i = 0; i < d; i++)
            acc[g][i] = vzero();
        m[g] = -INFINITY;
        sum[g] = 0.0f;
        slope[g] = a->alibi ? a->alibi[h] : 0.0f;
    }
    for (int64_t b = 0; b * bs < l; b++) {
        int64_t blk = a->bt[s * a->max_blocks + b];
        int64_t n = l - b * bs < bs ? l - b * bs : bs;
        const float *kb = pa_block(a, a->kc, blk, kvh, n, false, buf);
        const float *vb;
        for (int64_t g = 0; g < nh; g++) {
            for (int64_t j = 0; j < nvec; j++) {
                const float *qp = qpat[g] + (j * VW) % w;
                vf t = vzero();
                for (int64_t c = 0; c < d / x; c++)
                    t = vfma(vload(OPREG_DTYPE_F32, kb + c * chunk + j * VW),
                             vload(OPREG_DTYPE_F32, qp + c * w), t);
                vstore(OPREG_DTYPE_F32, lanes + j * VW, t);
            }
            for (int64_t off = 0; off < n; off++) {
                float dot = 0.0f;
                for (int64_t e = 0; e < x; e++)
                    dot += lanes[off * x + e];
                p[g][off] = dot;
            }
            float before = m[g];
            opreg__pa_softmax_block(p[g], n, bs, a->scale, slope[g], b * bs - l + 1, &m[g], &sum[g],
                                    NULL, 0);
            /* the factor the block's new maximum puts on what came before
             * (opreg__pa_softmax_block's own, computed the same way) */
            if (m[g] != before) {
                vf r = vset1(expf(before - m[g]));
                for (int64_t i = 0; i < d; i++)
                    acc[g][i] = vmul(acc[g][i], r);
            }
        }
        vb = pa_block(a, a->vc, blk, kvh, n, true, buf);
        for (int64_t i = 0; i < d; i++) {
            const float *row = vb + i * bs;
            for (int64_t g = 0; g < nh; g++) {
                vf t = acc[g][i];
                int64_t off = 0;
                for (; off + VW <= bs; off += VW)
                    t = vfma(vload(OPREG_DTYPE_F32, p[g] + off), vload(OPREG_DTYPE_F32, row + off),
                             t);
                if (off < bs)
                    t = vfma(vload_n(OPREG_DTYPE_F32, p[g] + off, bs - off),
                             vload_n(OPREG_DTYPE_F32, row + off, bs - off), t);
                acc[g][i] = t;
            }
        }
    }
    for (int64_t g = 0; g < nh; g++)
        for (int64_t i = 0; i < d; i++)
            opreg__cpu_st(a->dt, a->out, (s * a->hq + h0 + g) * d + i,
                          l > 0 ? vhsum(acc[g][i]) / sum[g] : 0.0f);
}

static void attention_range(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__pa_args *a = args;
    int64_t group = a->hq / a->hkv;
    float buf[PA_BLOCK_FLOATS];
    /* A key chunk must fill whole vectors; otherwise the portable kernel. */
    if ((a->bs * a->x) % VW != 0) {
        opreg__cpu_pa_portable_range(args, r0, r1);
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        int64_t s = r / a->hkv, kvh = r % a->hkv;
        for (int64_t g = 0; g < group; g += OPREG__CPU_PA_HEADS)
            pa_attend(a, s, kvh, kvh * group + g,
                      group - g < OPREG__CPU_PA_HEADS ? group - g : OPREG__CPU_PA_HEADS, buf);
    }
}

#endif
