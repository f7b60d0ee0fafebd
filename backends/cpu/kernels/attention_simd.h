/* paged_attention_v1 on the vector layer (vf, VW). Included once by each
 * SIMD path's file, after simd_<isa>.h and simd_math.h. The algorithm is
 * attention.c's (one item per sequence and KV head, online softmax over the
 * cache blocks), taken a chunk of PA_CHUNK tokens at a time and vectorised:
 *
 * - A key block [head_size/x][block_size][x] is used in its own layout.
 *   Chunk c of it is block_size * x contiguous elements; a vector of VW of
 *   them holds VW/x tokens' slices (x < VW) or part of one token's (x >=
 *   VW). It is multiplied by the query laid out the same way, qpat: chunk c
 *   of the query repeated to fill W = max(VW, x) lanes, so lane k of
 *   qpat[c*W + m .. ] is q[c*x + (m + k) % x]. The products of a chunk add
 *   up lane by lane over c, four vectors of tokens side by side; each
 *   token's logit is then the sum of its x lanes, VW tokens at a time by
 *   shuffles (vsum_runs).
 * - The softmax step is taken once a chunk, its exponentials VW at a time
 *   (pa_softmax_chunk).
 * - The chunk's values ([head_size][block_size] a block) are read where
 *   they lie, widened in registers: four heads' probabilities for four
 *   vectors of tokens are held while the head dims are walked, each
 *   dim's row of values multiplied with them a vector at a time
 *   (pa_pv_block). Where a vector would span two blocks (blocks narrower
 *   than a vector), the blocks are widened side by side into one
 *   [head_size][PA_CHUNK] buffer first, and pa_pv_block reads that. The
 *   products' lanes are not summed per chunk: each head dim keeps a
 *   vector accumulator (rescaled with the running maximum like the sum),
 *   reduced across its lanes once at the end, and read and written once a
 *   chunk rather than once a block (at 4 query heads of 128 they are 32
 *   KiB, an L1's worth on Zen 4).
 * - The next block's lines are fetched into L1 while a block is worked
 *   on: the block table scatters a sequence's blocks, so the hardware's
 *   prefetcher cannot follow them.
 *
 * - bf16 keys (where attention.c chose pairs: everywhere but where
 *   VDPBF16PS is slow) are multiplied where they lie, as bf16 pairs
 *   (vdot_bf16x2: one VDPBF16PS on the avx512_bf16 path, two FMAs of
 *   exactly widened halves elsewhere) by a query pattern of pairs, four
 *   heads at a time so that each key vector is loaded once for them
 *   (pa_qk_pairs); a token's logit is then the sum of its x/2 lanes. With
 *   a bf16 query, fp8 keys take the same walk, each block widened to bf16
 *   first (exactly: every e4m3fn and e5m2 value is a bf16).
 *
 * Other key blocks in bf16, f16 or fp8 are widened to f32 once per block
 * and shared by the query heads of the pass; an f32 key block is read in
 * place. fp8 codes are widened to their values, and kv_scale goes on the
 * logits (with the softmax's scale) and on the output. Value columns past the sequence's end are
 * loaded as zeros, from the cache or the buffer (a stale NaN there would otherwise poison 0 * NaN).
 * The output is written a vector of head dims at a time, each dim's lanes summed as vhsum sums
 * them.
 *
 * The accumulators, the query patterns and the widened keys (and values,
 * where they are widened) live in the thread's scratch
 * (opreg__cpu_scratch), not on its stack: at head_size 256 and a pass of
 * 8 heads they come to up to 260 KiB (AVX-512), more than a small-stacked
 * thread has. Without scratch, the portable kernel
 * runs instead (about 50 KiB of stack). */
#ifndef OPREG_CPU_ATTENTION_SIMD_H
#define OPREG_CPU_ATTENTION_SIMD_H

/* Tokens of a chunk, at most: whole blocks of up to OPREG__CPU_PA_MAX_BLOCK
 * tokens, and a multiple of VW, so that a chunk's vectors stay within it. */
#define PA_CHUNK 64

/* A pass's buffers, carved from the thread's scratch by pa_scratch. */
struct pa_bufs {
    vf *acc;     /* [heads][head_size]: a head dim's products, lane by lane */
    float *qpat; /* [heads][qlen]: each head's query in the keys' layout */
    float *keys; /* [head_size * block_size]: a key block widened to f32,
                  * or (fp8 keys by pairs) to bf16 in half the room;
                  * none where bf16 keys are multiplied in place */
    float *vals; /* [head_size][PA_CHUNK]: a chunk's value blocks widened */
    int64_t qlen;
};

/* The dtype of the caches' elements: the query's, or the fp8 codes'. */
static int pa_cache_dt(const struct opreg__pa_args *a) {
    return a->kind == 1 ? OPREG_DTYPE_F8_E4M3FN : a->kind == 2 ? OPREG_DTYPE_F8_E5M2 : a->dt;
}

/* Bytes of a cache element of dtype @p dt (f32, bf16, f16 or fp8). */
AI int64_t pa_es(int dt) {
    return dt == OPREG_DTYPE_F8_E4M3FN || dt == OPREG_DTYPE_F8_E5M2 ? 1
                                                                    : (int64_t)opreg__cpu_es(dt);
}

/* VW cache elements of dtype @p dt at @p p as f32, exactly (fp8 codes as
 * their values, without kv_scale); _n: the first n < VW, zeros after. */
AI vf pa_load(int dt, const void *p) {
    if (dt == OPREG_DTYPE_F8_E4M3FN) return vload_e4m3(p);
    if (dt == OPREG_DTYPE_F8_E5M2) return vload_e5m2(p);
    return vload(dt, p);
}
AI vf pa_load_n(int dt, const void *p, int64_t n) {
    if (dt == OPREG_DTYPE_F8_E4M3FN) return vload_e4m3_n(p, n);
    if (dt == OPREG_DTYPE_F8_E5M2) return vload_e5m2_n(p, n);
    return vload_n(dt, p, n);
}

/* @p count cache elements of dtype @p dt at @p src, widened to f32 into
 * @p buf. */
AI void pa_widen(int dt, float *buf, const void *src, int64_t count) {
    const char *c = src;
    int64_t i = 0, es = pa_es(dt);
    for (; i + VW <= count; i += VW)
        vstore(OPREG_DTYPE_F32, buf + i, pa_load(dt, c + i * es));
    if (i < count)
        vstore_n(OPREG_DTYPE_F32, buf + i, pa_load_n(dt, c + i * es, count - i), count - i);
}

/* The lines of KV head kvh's part of a block of both caches, fetched into
 * L1 a part at a time: the blocks of a sequence lie wherever the block
 * table puts them, so the hardware's prefetcher, which follows addresses,
 * cannot run ahead of the walk. A block's fetches are spread over the
 * work on the one before (a part per query head or per slice): issued all
 * at once, they wait for free miss buffers and hold the core (measured:
 * about 4% of the call). */
struct pa_fetch {
    const char *k, *v; /* the block's part of each cache; NULL: none */
    int64_t bytes;     /* of each */
    int64_t per;       /* bytes a part, whole lines */
};

/* The fetches of block @p blk (none when blk < 0) of KV head @p kvh in
 * @p parts parts. */
static struct pa_fetch pa_fetch_plan(const struct opreg__pa_args *a, int64_t blk, int64_t kvh,
                                     int64_t parts) {
    struct pa_fetch f = { NULL, NULL, 0, 0 };
    int64_t es = pa_es(pa_cache_dt(a)), count = a->d * a->bs;
    if (blk < 0) return f;
    f.k = (const char *)a->kc + (blk * a->kblk + kvh * count) * es;
    f.v = (const char *)a->vc + (blk * a->vblk + kvh * count) * es;
    f.bytes = count * es;
    f.per = ((f.bytes + 63) / 64 + parts - 1) / parts * 64;
    return f;
}

/* Part @p part of the fetches @p f plans (none when f is NULL). */
AI void pa_fetch_part(const struct pa_fetch *f, int64_t part) {
    if (!f || !f->k) return;
    int64_t end = (part + 1) * f->per < f->bytes ? (part + 1) * f->per : f->bytes;
    for (int64_t off = part * f->per; off < end; off += 64) {
        _mm_prefetch(f->k + off, _MM_HINT_T0);
        _mm_prefetch(f->v + off, _MM_HINT_T0);
    }
}

/* The first @p n elements of @p d rows of @p bs cache elements of dtype
 * @p dt at @p src, widened to f32 into rows of @p dst (@p ld floats
 * apart). Inlined with dt constant, so each dtype has its own loop. */
AI void pa_widen_rows(int dt, float *dst, int64_t ld, const char *src, int64_t d, int64_t bs,
                      int64_t n) {
    for (int64_t i = 0; i < d; i++)
        pa_widen(dt, dst + i * ld, src + i * bs * pa_es(dt), n);
}

/* pa_widen_rows for any cache dtype @p dt, each inlined with it constant. */
static void pa_widen_any(int dt, float *dst, int64_t ld, const char *src, int64_t d, int64_t bs,
                         int64_t n) {
    if (dt == OPREG_DTYPE_F32)
        pa_widen_rows(OPREG_DTYPE_F32, dst, ld, src, d, bs, n);
    else if (dt == OPREG_DTYPE_BF16)
        pa_widen_rows(OPREG_DTYPE_BF16, dst, ld, src, d, bs, n);
    else if (dt == OPREG_DTYPE_F16)
        pa_widen_rows(OPREG_DTYPE_F16, dst, ld, src, d, bs, n);
    else if (dt == OPREG_DTYPE_F8_E4M3FN)
        pa_widen_rows(OPREG_DTYPE_F8_E4M3FN, dst, ld, src, d, bs, n);
    else
        pa_widen_rows(OPREG_DTYPE_F8_E5M2, dst, ld, src, d, bs, n);
}

/* Key block @p blk of KV head @p kvh ([head_size/x][block_size][x]) as
 * f32: in place for f32, else widened into @p buf (fp8 codes without
 * kv_scale: pa_attend puts it on the logits), as one row. Slots past the
 * sequence's end need no zeroing: their logits are never used. */
static const float *pa_keys(const struct opreg__pa_args *a, int64_t blk, int64_t kvh, float *buf) {
    int64_t count = a->d * a->bs, base = blk * a->kblk + kvh * count;
    int dt = pa_cache_dt(a);
    const char *src = (const char *)a->kc + base * pa_es(dt);
    if (dt == OPREG_DTYPE_F32) return (const float *)src;
    pa_widen_any(dt, buf, 0, src, 1, count, count);
    return buf;
}

/* The first @p n tokens of value block @p blk of KV head @p kvh
 * ([head_size][block_size]) as f32 (fp8 codes without kv_scale) into
 * columns [col, col + n) of the rows of @p dst (@p ld floats apart). The
 * columns past the sequence's end are left as they are: pa_pv_block loads
 * them as zeros. */
static void pa_values_into(const struct opreg__pa_args *a, int64_t blk, int64_t kvh, int64_t n,
                           float *dst, int64_t ld, int64_t col) {
    int64_t d = a->d, bs = a->bs, base = blk * a->vblk + kvh * d * bs;
    int dt = pa_cache_dt(a);
    pa_widen_any(dt, dst + col, ld, (const char *)a->vc + base * pa_es(dt), d, bs, n);
}

/* fp8 key block @p blk of KV head @p kvh as bf16 into @p buf, in its
 * layout: every e4m3fn and e5m2 value (NaN included) is a bf16, so the
 * pairs walk multiplies the codes' exact values. */
static const uint16_t *pa_keys_bf16(const struct opreg__pa_args *a, int64_t blk, int64_t kvh,
                                    uint16_t *buf) {
    int64_t count = a->d * a->bs, i = 0;
    const uint8_t *c = (const uint8_t *)a->kc + blk * a->kblk + kvh * count;
    if (a->kind == 1)
        for (; i < count; i += VW)
            vstore(OPREG_DTYPE_BF16, buf + i, vload_e4m3(c + i));
    else
        for (; i < count; i += VW)
            vstore(OPREG_DTYPE_BF16, buf + i, vload_e5m2(c + i));
    return buf;
}

/* Vectors j .. j + nj - 1 (nj <= 4) of a key block's products with the
 * query patterns @p qp (w floats a chunk of head dims), summed over the
 * @p nc chunks (@p chunk floats apart at @p kp) into @p out: four chains of
 * multiply-adds side by side. Inlined with nj constant for whole groups of
 * four, so the common case tests nothing in its loop. */
AI void pa_qk(const float *kp, const float *qp, int64_t j, int64_t nc, int64_t chunk, int64_t w,
              int64_t nj, float *out) {
    vf t[4] = { vzero(), vzero(), vzero(), vzero() };
    const float *q[4];
    for (int64_t u = 0; u < 4; u++)
        q[u] = qp + ((j + u) * VW) % w;
    for (int64_t c = 0; c < nc; c++, kp += chunk)
#pragma GCC unroll 4
        for (int64_t u = 0; u < 4; u++)
            if (u < nj)
                t[u] = vfma(vload(OPREG_DTYPE_F32, kp + u * VW),
                            vload(OPREG_DTYPE_F32, q[u] + c * w), t[u]);
#pragma GCC unroll 4
    for (int64_t u = 0; u < 4; u++)
        if (u < nj) vstore(OPREG_DTYPE_F32, out + u * VW, t[u]);
}

/* The logits of a block's tokens into @p dst: token t's is the sum of
 * @p runs lanes at @p lanes + t * runs, VW tokens at a time where the
 * block of @p bs has them, else one by one up to the @p n in the sequence
 * (the tokens past n get logits the softmax drops). */
AI void pa_lane_sums(float *dst, const float *lanes, int64_t runs, int64_t bs, int64_t n) {
    /* whole vectors of tokens by the SIMD header, the rest one by one */
    int64_t off = bs / VW * VW;
    vsum_runs_n(dst, lanes, runs, off);
    for (; off < n; off++) {
        float dot = 0.0f;
        for (int64_t e = 0; e < runs; e++)
            dot += lanes[off * runs + e];
        dst[off] = dot;
    }
}

/* Query heads that one walk over a bf16 key block multiplies by pairs. */
#define PA_PAIR_HEADS 4

/* The bf16 key block at @p kb ([nc][bs][x] in the cache, @p chunk = bs * x
 * elements a slice) times @p nh (<= PA_PAIR_HEADS) query heads' patterns
 * (@p qp, @p qlen floats a head: per slice c a vector of bf16 pairs, the
 * slice's x/2 pairs repeated), by vdot_bf16x2, the keys read where they lie:
 * vector j of @p nvec holds 2 * VW bf16, x/2 lanes a token, and each lane
 * sums its pair's products over the slices. Four vectors of tokens for
 * every head at a time: each key vector is loaded once for the heads, and
 * 4 * nh chains of products run side by side. Head g's lanes go to
 * @p lanes + g * @p ll. While the slices are walked, part c of @p nc of
 * the fetches @p fetch plans in nc parts is issued. Inlined with nh
 * and nj constant for the common cases. */
AI void pa_qk_pairs_group(const uint16_t *kb, const float *qp, int64_t qlen, int64_t j, int64_t nj,
                          int64_t nc, int64_t chunk, int64_t nh, const struct pa_fetch *fetch,
                          float *lanes, int64_t ll) {
    vf t[PA_PAIR_HEADS][4];
#pragma GCC unroll 4
    for (int64_t g = 0; g < PA_PAIR_HEADS; g++)
#pragma GCC unroll 4
        for (int64_t u = 0; u < 4; u++)
            t[g][u] = vzero();
    for (int64_t c = 0; c < nc; c++) {
        vf k[4] = { vzero(), vzero(), vzero(), vzero() };
        pa_fetch_part(fetch, c);
#pragma GCC unroll 4
        for (int64_t u = 0; u < 4; u++)
            if (u < nj) k[u] = vload_bits(kb + c * chunk + (j + u) * 2 * VW);
#pragma GCC unroll 4
        for (int64_t g = 0; g < PA_PAIR_HEADS; g++)
            if (g < nh) {
                vf q = vload(OPREG_DTYPE_F32, qp + g * qlen + c * VW);
#pragma GCC unroll 4
                for (int64_t u = 0; u < 4; u++)
                    if (u < nj) t[g][u] = vdot_bf16x2(t[g][u], k[u], q);
            }
    }
#pragma GCC unroll 4
    for (int64_t g = 0; g < PA_PAIR_HEADS; g++)
#pragma GCC unroll 4
        for (int64_t u = 0; u < 4; u++)
            if (g < nh && u < nj) vstore(OPREG_DTYPE_F32, lanes + g * ll + (j + u) * VW, t[g][u]);
}

/* Every vector of a bf16 key block for @p nh (<= PA_PAIR_HEADS) heads:
 * pa_qk_pairs_group four vectors at a time, inlined with nh = 4 and
 * whole groups of four for the common case, the fetches @p fetch plans
 * spread over the first group's slices. */
AI void pa_qk_pairs(const uint16_t *kb, const float *qp, int64_t qlen, int64_t nvec, int64_t nc,
                    int64_t chunk, int64_t nh, const struct pa_fetch *fetch, float *lanes,
                    int64_t ll) {
    for (int64_t j = 0; j < nvec; j += 4, fetch = NULL) {
        if (nh == PA_PAIR_HEADS && nvec - j >= 4)
            pa_qk_pairs_group(kb, qp, qlen, j, 4, nc, chunk, PA_PAIR_HEADS, fetch, lanes, ll);
        else
            pa_qk_pairs_group(kb, qp, qlen, j, nvec - j < 4 ? nvec - j : 4, nc, chunk, nh, fetch,
                              lanes, ll);
    }
}

/* Query heads and value vectors that pa_pv_block holds: PA_PV_HEADS x
 * PA_PV_VECS probability vectors, beside PA_PV_HEADS accumulators and a
 * value vector. On AVX-512 all 16 + 5 sit in its 32 registers; on AVX2
 * (16 registers) some probabilities stay on the stack and are taken as
 * the multiply-adds' memory operands, which measured faster than two
 * vectors of tokens in registers and twice the accumulator traffic. */
#define PA_PV_HEADS 4
#define PA_PV_VECS  4

/* What pa_pv_block adds a chunk's products to: each accumulator as it is
 * (KEEP), times its head's factor (SCALE: the chunk raised the running
 * maximum of some head; the others' factor is 1), or zero (FRESH: the
 * first chunk, so the accumulators need no zeroing beforehand). */
enum { PA_ACC_KEEP, PA_ACC_SCALE, PA_ACC_FRESH };

/* For every head dim, the accumulators of @p nh (<= PA_PV_HEADS) heads
 * (@p acc, @p d vectors a head; taken as @p from says, with @p factor's
 * nh factors for SCALE) plus the products of their probabilities (@p p,
 * PA_CHUNK floats a head) with @p nv (<= PA_PV_VECS) vectors of the dim's
 * row of values: vector u of dim i's row starts i * @p ld elements past
 * @p rows[u], in the cache where values are read in place, else in the
 * buffer they were widened into. The probabilities stay in registers for
 * the whole walk over the dims, so a dim costs its value loads, its
 * accumulators' loads and stores, and nh * nv multiply-adds. The values
 * are of dtype @p dt (f32, bf16, f16 or fp8 codes: pa_load), widened in
 * registers; the last vector holds @p tail tokens (tail <= VW), the lanes
 * past them loaded as zeros, since a stale NaN past the sequence's end
 * would poison 0 * NaN.
 * Each accumulator lane adds the chunk's vectors in order, whatever the
 * grouping. Inlined with dt, nh, nv, tail and from constant for the
 * common cases. */
AI void pa_pv_block(int dt, vf *acc, int64_t d, int64_t ld, const float *p, const void *const *rows,
                    int64_t nh, int64_t nv, int64_t tail, int from, const float *factor) {
    vf pr[PA_PV_HEADS][PA_PV_VECS], f[PA_PV_HEADS];
    const char *rp[PA_PV_VECS];
    int64_t es = pa_es(dt);
#pragma GCC unroll 4
    for (int64_t u = 0; u < PA_PV_VECS; u++) {
        rp[u] = u < nv ? rows[u] : NULL;
#pragma GCC unroll 4
        for (int64_t g = 0; g < PA_PV_HEADS; g++)
            pr[g][u] =
                g < nh && u < nv ? vload(OPREG_DTYPE_F32, p + g * PA_CHUNK + u * VW) : vzero();
    }
#pragma GCC unroll 4
    for (int64_t g = 0; g < PA_PV_HEADS; g++)
        f[g] = from == PA_ACC_SCALE && g < nh ? vset1(factor[g]) : vzero();
    for (int64_t i = 0; i < d; i++) {
        vf t[PA_PV_HEADS];
#pragma GCC unroll 4
        for (int64_t g = 0; g < PA_PV_HEADS; g++) {
            if (g >= nh || from == PA_ACC_FRESH)
                t[g] = vzero();
            else if (from == PA_ACC_SCALE)
                t[g] = vmul(acc[g * d + i], f[g]);
            else
                t[g] = acc[g * d + i];
        }
#pragma GCC unroll 4
        for (int64_t u = 0; u < PA_PV_VECS; u++)
            if (u < nv) {
                const void *src = rp[u] + i * ld * es;
                vf r = u == nv - 1 && tail < VW ? pa_load_n(dt, src, tail) : pa_load(dt, src);
#pragma GCC unroll 4
                for (int64_t g = 0; g < PA_PV_HEADS; g++)
                    if (g < nh) t[g] = vfma(pr[g][u], r, t[g]);
            }
#pragma GCC unroll 4
        for (int64_t g = 0; g < PA_PV_HEADS; g++)
            if (g < nh) acc[g * d + i] = t[g];
    }
}

/* The value products of a chunk of @p nt tokens whose value vectors start
 * at @p rows, the rows of successive head dims @p ld elements apart, for
 * @p nh heads, added to the accumulators as @p from says (pa_pv_block;
 * @p factor: a factor per head): pa_pv_block over groups of heads and of
 * vectors, whole groups inlined with their sizes constant. */
AI void pa_pv_dims(int dt, vf *acc, int64_t d, int64_t ld, const float *p, const void *const *rows,
                   int64_t nh, int64_t nt, int from, const float *factor) {
    int64_t nvt = (nt + VW - 1) / VW, tail = nt - (nvt - 1) * VW;
    for (int64_t g0 = 0; g0 < nh; g0 += PA_PV_HEADS) {
        int64_t gn = nh - g0 < PA_PV_HEADS ? nh - g0 : PA_PV_HEADS;
        for (int64_t v0 = 0; v0 < nvt; v0 += PA_PV_VECS) {
            int64_t vn = nvt - v0 < PA_PV_VECS ? nvt - v0 : PA_PV_VECS;
            int64_t vt = v0 + vn == nvt ? tail : VW;
            int f = v0 == 0 ? from : PA_ACC_KEEP; /* later groups add to the first's */
            const float *pg = p + g0 * PA_CHUNK + v0 * VW;
            vf *ag = acc + g0 * d;
            const void *const *rg = rows + v0;
            if (gn < PA_PV_HEADS || vn < PA_PV_VECS || vt < VW)
                pa_pv_block(dt, ag, d, ld, pg, rg, gn, vn, vt, f, factor + g0);
            else if (f == PA_ACC_KEEP)
                pa_pv_block(dt, ag, d, ld, pg, rg, PA_PV_HEADS, PA_PV_VECS, VW, PA_ACC_KEEP, NULL);
            else if (f == PA_ACC_SCALE)
                pa_pv_block(dt, ag, d, ld, pg, rg, PA_PV_HEADS, PA_PV_VECS, VW, PA_ACC_SCALE,
                            factor + g0);
            else
                pa_pv_block(dt, ag, d, ld, pg, rg, PA_PV_HEADS, PA_PV_VECS, VW, PA_ACC_FRESH, NULL);
        }
    }
}

/* One step of the online softmax over a chunk, vectorised: @p lg holds the
 * raw q.k of @p n tokens (up to nv * VW), the first of them @p pos0 - 1
 * positions before the sequence's last (ALiBi's j - L + 1); on return the
 * chunk's probabilities under the new running maximum *m, zero (or, past
 * the exp's range, below 1e-37) from n to nv * VW. *sum is rescaled to the
 * new maximum and the chunk's probabilities added: opreg__pa_softmax_block's
 * arithmetic with the exponentials taken VW at a time. */
AI void pa_softmax_chunk(float *lg, int64_t n, int64_t nv, float scale, float slope, int64_t pos0,
                         float *m, float *sum) {
    static const float iota[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
    vf vm = vset1(-INFINITY), vs = vzero(), lane = vload(OPREG_DTYPE_F32, iota);
    for (int64_t v = 0; v < nv; v++) {
        vf pos = vadd(vset1((float)(pos0 + v * VW)), lane);
        vf t = vfma(vset1(scale), vload(OPREG_DTYPE_F32, lg + v * VW), vmul(vset1(slope), pos));
        vstore(OPREG_DTYPE_F32, lg + v * VW, t);
    }
    for (int64_t off = n; off < nv * VW; off++)
        lg[off] = -INFINITY;
    for (int64_t v = 0; v < nv; v++)
        vm = vmax(vm, vload(OPREG_DTYPE_F32, lg + v * VW));
    float mx = vhmax(vm);
    if (*m > mx) mx = *m;
    *sum *= expf(*m - mx);
    *m = mx;
    for (int64_t v = 0; v < nv; v++) {
        vf e = vexp_s(vsub(vload(OPREG_DTYPE_F32, lg + v * VW), vset1(mx)), 1.0f, 1);
        vs = vadd(vs, e);
        vstore(OPREG_DTYPE_F32, lg + v * VW, e);
    }
    *sum += vhsum(vs);
}

/* Whether keys are multiplied as bf16 pairs (bf16 caches in place, fp8
 * caches widened to bf16 a block at a time): attention.c's choice, where a
 * block's slices fill whole vectors of pairs. */
static bool pa_keys_by_pairs(const struct opreg__pa_args *a) {
    return a->pairs && (a->x == 8 || a->x == 16) && (a->bs * a->x) % (2 * VW) == 0;
}

/* Whether a chunk's values can be read where they lie: blocks of whole
 * vectors, so that no vector of a chunk's tokens spans two blocks. */
static bool pa_values_direct(const struct opreg__pa_args *a) {
    return a->bs % VW == 0;
}

/* Query heads h0..h0+nh-1 of sequence @p s, on KV head @p kvh. The blocks
 * are taken PA_CHUNK tokens at a time: the logits of a chunk's blocks
 * first, then one softmax step over the chunk, then its values, so that
 * each head dim's accumulator is read and written once a chunk instead of
 * once a block (at 4 heads of 128 the accumulators are 32 KiB, past a 32
 * KiB L1 with the blocks beside them). */
static void pa_attend(const struct opreg__pa_args *a, int64_t s, int64_t kvh, int64_t h0,
                      int64_t nh, const struct pa_bufs *sb) {
    int64_t d = a->d, bs = a->bs, x = a->x, l = a->len[s];
    int64_t w = VW > x ? VW : x, chunk = bs * x, nvec = chunk / VW;
    int64_t cb = PA_CHUNK / bs, ct = cb * bs; /* blocks and tokens a chunk */
    float *buf = sb->keys, *vbuf = sb->vals;
    /* Values are read in place where every vector of a chunk's tokens lies
     * in one block; else (blocks narrower than a vector) each block is
     * widened into vbuf first. */
    bool direct = pa_values_direct(a);
    int vdt = pa_cache_dt(a);
    /* fp8 codes are widened to their values; kv_scale goes on the logits
     * (with the softmax's scale) and on the output */
    float kvs = a->kind ? a->kv_scale : 1.0f, lscale = a->scale * kvs;
    bool pairs = pa_keys_by_pairs(a);
    const void *vrows[PA_CHUNK / VW];
    for (int64_t v = 0; !direct && v < PA_CHUNK / VW; v++)
        vrows[v] = vbuf + v * VW;
    /* Per head dim, the products summed lane by lane (a lane: the tokens at
     * one offset modulo VW); reduced across lanes once, at the end. */
    vf *acc = sb->acc;
    float p[OPREG__CPU_PA_HEADS][PA_CHUNK];
    /* a block's lanes: bs * x (x <= 16) for one head, or bs * x / 2 for
     * each of PA_PAIR_HEADS */
    float lanes[PA_PAIR_HEADS * OPREG__CPU_PA_MAX_BLOCK * 8];
    float m[OPREG__CPU_PA_HEADS], sum[OPREG__CPU_PA_HEADS], slope[OPREG__CPU_PA_HEADS];
    float factor[OPREG__CPU_PA_HEADS];
    for (int64_t g = 0; g < nh; g++) {
        int64_t h = h0 + g;
        if (pairs) {
            /* per slice, one vector: lane k the bf16 pair k % (x/2) of the
             * slice, as the keys' lanes hold them */
            const uint16_t *qh = (const uint16_t *)a->q + s * a->q_stride + h * d;
            uint32_t *qp = (uint32_t *)(sb->qpat + g * sb->qlen);
            for (int64_t c = 0; c < d / x; c++)
                for (int64_t e = 0; e < x / 2; e++) {
                    uint32_t bits = (uint32_t)qh[c * x + 2 * e] | (uint32_t)qh[c * x + 2 * e + 1]
                                                                      << 16;
                    for (int64_t k = e; k < VW; k += x / 2)
                        qp[c * VW + k] = bits;
                }
        } else {
            /* w is a multiple of x (both powers of two): the chunk's x
             * values repeated w / x times, without a division per element */
            for (int64_t c = 0; c < d / x; c++)
                for (int64_t e = 0; e < x; e++) {
                    float v = opreg__cpu_ld(a->dt, a->q, s * a->q_stride + h * d + c * x + e);
                    for (int64_t k = e; k < w; k += x)
                        sb->qpat[g * sb->qlen + c * w + k] = v;
                }
        }
        m[g] = -INFINITY;
        sum[g] = 0.0f;
        slope[g] = a->alibi ? a->alibi[h] : 0.0f;
    }
    for (int64_t b0 = 0; b0 * bs < l; b0 += cb) {
        int64_t t0 = b0 * bs, nt = l - t0 < ct ? l - t0 : ct;
        int64_t nv = (nt + VW - 1) / VW; /* vectors of the chunk's tokens */
        for (int64_t b = b0; b * bs < t0 + nt; b++) {
            int64_t blk = a->bt[s * a->max_blocks + b], col = (b - b0) * bs;
            int64_t n = l - b * bs < bs ? l - b * bs : bs;
            int64_t next = (b + 1) * bs < l ? a->bt[s * a->max_blocks + b + 1] : -1;
            /* the next block's lines, a part for each slice (pairs) or
             * query head */
            struct pa_fetch fetch = pa_fetch_plan(a, next, kvh, pairs ? d / x : nh);
            if (pairs) {
                const uint16_t *kb =
                    a->kind ? pa_keys_bf16(a, blk, kvh, (uint16_t *)buf)
                            : (const uint16_t *)a->kc + blk * a->kblk + kvh * chunk * (d / x);
                int64_t ll = chunk / 2;
                for (int64_t g0 = 0; g0 < nh; g0 += PA_PAIR_HEADS) {
                    int64_t gn = nh - g0 < PA_PAIR_HEADS ? nh - g0 : PA_PAIR_HEADS;
                    pa_qk_pairs(kb, sb->qpat + g0 * sb->qlen, sb->qlen, chunk / (2 * VW), d / x,
                                chunk, gn, g0 == 0 ? &fetch : NULL, lanes, ll);
                    /* each token's logit is the sum of its x/2 lanes */
                    for (int64_t g = 0; g < gn; g++)
                        pa_lane_sums(p[g0 + g] + col, lanes + g * ll, x / 2, bs, n);
                }
            } else {
                const float *kb = pa_keys(a, blk, kvh, buf);
                for (int64_t g = 0; g < nh; g++) {
                    pa_fetch_part(&fetch, g);
                    /* four vectors of tokens at a time, so that four chains
                     * of multiply-adds run side by side */
                    for (int64_t j = 0; j < nvec; j += 4) {
                        const float *qg = sb->qpat + g * sb->qlen;
                        if (nvec - j >= 4 && w == VW) /* one query vector for all four */
                            pa_qk(kb + j * VW, qg, j, d / x, chunk, VW, 4, lanes + j * VW);
                        else
                            pa_qk(kb + j * VW, qg, j, d / x, chunk, w, nvec - j, lanes + j * VW);
                    }
                    /* each token's logit is the sum of its x lanes */
                    pa_lane_sums(p[g] + col, lanes, x, bs, n);
                }
            }
            if (direct)
                for (int64_t off = 0; off < bs; off += VW)
                    vrows[(col + off) / VW] =
                        (const char *)a->vc + (blk * a->vblk + kvh * d * bs + off) * pa_es(vdt);
            else
                pa_values_into(a, blk, kvh, n, vbuf, PA_CHUNK, col);
        }
        /* the accumulators start at the first chunk; after it, a head
         * whose maximum the chunk raised scales what came before */
        int from = b0 == 0 ? PA_ACC_FRESH : PA_ACC_KEEP;
        for (int64_t g = 0; g < nh; g++) {
            float before = m[g];
            pa_softmax_chunk(p[g], nt, nv, lscale, slope[g], t0 - l + 1, &m[g], &sum[g]);
            /* the factor the chunk's new maximum puts on what came before
             * (pa_softmax_chunk's own, computed the same way) */
            factor[g] = m[g] != before ? expf(before - m[g]) : 1.0f;
            if (from == PA_ACC_KEEP && m[g] != before) from = PA_ACC_SCALE;
        }
        if (direct && vdt == OPREG_DTYPE_BF16)
            pa_pv_dims(OPREG_DTYPE_BF16, acc, d, bs, &p[0][0], vrows, nh, nt, from, factor);
        else if (direct && vdt == OPREG_DTYPE_F16)
            pa_pv_dims(OPREG_DTYPE_F16, acc, d, bs, &p[0][0], vrows, nh, nt, from, factor);
        else if (direct && vdt == OPREG_DTYPE_F8_E4M3FN)
            pa_pv_dims(OPREG_DTYPE_F8_E4M3FN, acc, d, bs, &p[0][0], vrows, nh, nt, from, factor);
        else if (direct && vdt == OPREG_DTYPE_F8_E5M2)
            pa_pv_dims(OPREG_DTYPE_F8_E5M2, acc, d, bs, &p[0][0], vrows, nh, nt, from, factor);
        else if (direct)
            pa_pv_dims(OPREG_DTYPE_F32, acc, d, bs, &p[0][0], vrows, nh, nt, from, factor);
        else
            pa_pv_dims(OPREG_DTYPE_F32, acc, d, PA_CHUNK, &p[0][0], vrows, nh, nt, from, factor);
    }
    /* each head dim's lanes summed, VW dims a vector (vhsum_each adds as
     * vhsum does), times kv_scale, divided by the head's sum and rounded
     * as opreg__cpu_st rounds */
    for (int64_t g = 0; g < nh; g++) {
        int64_t es = (int64_t)opreg__cpu_es(a->dt), o = (s * a->hq + h0 + g) * d, i = 0;
        vf rs = vset1(l > 0 ? sum[g] : 1.0f), vk = vset1(kvs);
        for (; i + VW <= d; i += VW) {
            vf h = vhsum_each((const float *)(acc + g * d + i));
            vstore_exact_n(a->dt, (char *)a->out + (o + i) * es,
                           l > 0 ? vdiv(vmul(h, vk), rs) : vzero(), VW);
        }
        for (; i < d; i++)
            opreg__cpu_st(a->dt, a->out, o + i,
                          l > 0 ? vhsum(acc[g * d + i]) * kvs / sum[g] : 0.0f);
    }
}

/* The buffers of a pass of up to @p heads query heads, carved from this
 * thread's scratch; false when there is none. The accumulators come first,
 * so their vectors are aligned (the scratch is 64-byte aligned); the float
 * buffers after them are read with unaligned loads. */
static bool pa_scratch(const struct opreg__pa_args *a, int64_t heads, struct pa_bufs *sb) {
    int64_t d = a->d, qlen = d * (VW > a->x ? VW / a->x : 1);
    /* keys: f32 widened, none for bf16 pairs in place, bf16 for fp8 pairs */
    int64_t nacc = heads * d * VW, nq = heads * qlen, nk = d * a->bs;
    if (pa_keys_by_pairs(a)) nk = a->kind ? nk / 2 : 0;
    int64_t nv = pa_values_direct(a) ? 0 : d * PA_CHUNK;
    float *base = opreg__cpu_scratch((size_t)(nacc + nq + nk + nv) * sizeof(float));
    if (!base) return false;
    sb->acc = (vf *)base;
    sb->qpat = base + nacc;
    sb->keys = sb->qpat + nq;
    sb->vals = sb->keys + nk;
    sb->qlen = qlen;
    return true;
}

static void attention_range(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__pa_args *a = args;
    int64_t group = a->hq / a->hkv;
    int64_t heads = group < OPREG__CPU_PA_HEADS ? group : OPREG__CPU_PA_HEADS;
    struct pa_bufs sb;
    /* A key chunk must fill whole vectors, a token's slices must be runs
     * that vsum_runs adds (x of 4, 8 or 16: 16 bytes of f32, bf16/f16 or
     * fp8, vLLM's layouts), and the buffers must exist; otherwise the
     * portable kernel. */
    if ((a->x != 4 && a->x != 8 && a->x != 16) || (a->bs * a->x) % VW != 0 ||
        !pa_scratch(a, heads, &sb)) {
        opreg__cpu_pa_portable_range(args, r0, r1);
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        int64_t s = r / a->hkv, kvh = r % a->hkv;
        for (int64_t g = 0; g < group; g += OPREG__CPU_PA_HEADS)
            pa_attend(a, s, kvh, kvh * group + g,
                      group - g < OPREG__CPU_PA_HEADS ? group - g : OPREG__CPU_PA_HEADS, &sb);
    }
}

#endif
