/* paged_attention_v1 on every ISA path against a double-precision
 * reference written from ops-reference.md §3.7: key_cache
 * [blk][kvh][d/x][off][d%x], value_cache [blk][kvh][d][off], the blocks in
 * a shuffled order and padded apart, query rows padded apart. The shapes
 * cross the SIMD kernel's chunks of tokens (64) and its blocks at every
 * block size vLLM uses, with partial last blocks and chunks, empty
 * sequences, grouped-query heads beyond one pass (8), ALiBi, and fp8
 * caches; block and chunk sizes that do not fill a vector, and keys
 * sliced other than 16 bytes a slice (x of 1 to 64), take the portable
 * kernel, which is checked the same way. The cache slots past a
 * sequence's end hold NaN. */
#include "kern_test.h"

struct pa_shape {
    int64_t hq, hkv, d, bs;
    int alibi;
    int64_t lens[4];
    int nseq;
    int64_t x; /* key slices; 0: 16 bytes' worth, as vLLM lays them out */
};

static const struct pa_shape shapes[] = {
    { 4, 2, 64, 16, 0, { 0, 1, 16, 17 }, 4, 0 }, { 4, 2, 64, 16, 1, { 64, 65, 130, 5 }, 4, 0 },
    { 8, 1, 128, 16, 0, { 200, 63 }, 2, 0 },     { 2, 2, 80, 8, 1, { 33, 71 }, 2, 0 },
    { 12, 1, 32, 32, 0, { 97, 32 }, 2, 0 },      { 4, 2, 32, 1, 0, { 5, 70 }, 2, 0 },
    { 2, 1, 256, 32, 1, { 129 }, 1, 0 },         { 6, 3, 64, 4, 0, { 9, 66 }, 2, 0 },
    { 4, 1, 64, 16, 0, { 70, 16 }, 2, 1 },       { 4, 1, 64, 16, 0, { 70, 16 }, 2, 2 },
    { 4, 1, 64, 16, 1, { 70, 16 }, 2, 4 },       { 4, 1, 64, 16, 0, { 70, 16 }, 2, 32 },
    { 4, 1, 64, 32, 0, { 70, 16 }, 2, 64 },      { 4, 1, 64, 16, 1, { 70, 16 }, 2, 16 },
    { 4, 2, 120, 16, 0, { 37, 16 }, 2, 8 }, /* head dims past the last whole vector */
};

/* Whether this pass forces bf16 keys' products by pairs (VDPBF16PS) on
 * (opreg__cpu_set_gemv_pairs, the choice they share with the GEMVs). */
static int pairs_pass;

/* The caches' element @p i as f32: the dtype's value, or a code's. */
static double cache_value(int dt, int kind, const void *c, int64_t i, float kv_scale) {
    if (kind == 0) return kt_ld(dt, c, i);
    uint8_t code = ((const uint8_t *)c)[i];
    return (double)(kind == 1 ? opreg__e4m3fn_to_f32(code) : opreg__e5m2_to_f32(code)) * kv_scale;
}

/* One case: dtype @p dt of query and output, caches in it (@p kind 0) or
 * fp8 codes (1 e4m3fn, 2 e5m2). */
static bool one_case(int isa, int dt, int kind, const struct pa_shape *sh) {
    int64_t hq = sh->hq, hkv = sh->hkv, d = sh->d, bs = sh->bs, nseq = sh->nseq;
    int64_t x = sh->x ? sh->x : 16 / (kind ? 1 : (int64_t)kt_es(dt)), max_blocks = 0, nblk = 0;
    for (int s = 0; s < nseq; s++) {
        int64_t nb = (sh->lens[s] + bs - 1) / bs;
        max_blocks = nb > max_blocks ? nb : max_blocks;
        nblk += nb;
    }
    nblk += 2; /* blocks no sequence uses */
    int64_t blk_stride = hkv * d * bs + 8, q_stride = hq * d + 16;
    size_t ces = kind ? 1 : kt_es(dt);
    float kv_scale = kind ? 0.03125f : 1.0f, scale = 1.0f / sqrtf((float)d);
    unsigned char *kc = malloc((size_t)(nblk * blk_stride) * ces);
    unsigned char *vc = malloc((size_t)(nblk * blk_stride) * ces);
    void *q = kt_fill(dt, nseq * q_stride, -2.0, 2.0);
    void *out = kt_fill(dt, nseq * hq * d, 1e3, 1e3);
    int32_t *bt = calloc((size_t)(nseq * (max_blocks ? max_blocks : 1)), sizeof *bt);
    int32_t lens[4];
    float slopes[16];
    double *want = calloc((size_t)(nseq * hq * d), sizeof *want);
    double *p = malloc(260 * sizeof *p);
    bool ok = true;
    for (int64_t i = 0; i < nblk * blk_stride; i++) {
        if (kind) {
            /* codes of magnitudes up to about 30 (e4m3fn 0x5F: 30, e5m2
             * 0x4B: 28), under 1 once scaled: logits spread enough that
             * a key decoded wrong shows */
            double top = kind == 1 ? 0x60 : 0x4C;
            kc[i] = (uint8_t)((kt_uniform(0, 1) < 0.5 ? 0x80 : 0) | (int)kt_uniform(0, top));
            vc[i] = (uint8_t)((kt_uniform(0, 1) < 0.5 ? 0x80 : 0) | (int)kt_uniform(0, top));
        } else {
            kt_st(dt, kc, i, kt_uniform(-1, 1));
            kt_st(dt, vc, i, kt_uniform(-1, 1));
        }
    }
    /* blocks handed out backwards, so no sequence's are in address order */
    for (int s = 0, next = (int)nblk - 1; s < nseq; s++) {
        lens[s] = (int32_t)sh->lens[s];
        for (int64_t b = 0; b * bs < lens[s]; b++)
            bt[s * max_blocks + b] = next--;
    }
    /* the slots of a last block past its sequence's end hold NaN, keys and
     * values: no kernel may let them into a result (0 * NaN is NaN) */
    for (int s = 0; s < nseq; s++)
        for (int64_t t = lens[s]; t % bs != 0; t++)
            for (int64_t kvh = 0; kvh < hkv; kvh++)
                for (int64_t i = 0; i < d; i++) {
                    int64_t base = bt[s * max_blocks + t / bs] * blk_stride + kvh * d * bs;
                    int64_t ki = base + (i / x) * bs * x + (t % bs) * x + i % x;
                    int64_t vi = base + i * bs + t % bs;
                    if (kind) {
                        kc[ki] = vc[vi] = 0x7f; /* NaN in e4m3fn and e5m2 */
                    } else {
                        kt_st(dt, kc, ki, NAN);
                        kt_st(dt, vc, vi, NAN);
                    }
                }
    for (int64_t h = 0; h < hq; h++)
        slopes[h] = -0.25f * (float)(h + 1);
    for (int s = 0; s < nseq; s++)
        for (int64_t h = 0; h < hq; h++) {
            int64_t kvh = h / (hq / hkv), l = lens[s];
            double mx = -INFINITY, sum = 0;
            for (int64_t t = 0; t < l; t++) {
                int64_t base = bt[s * max_blocks + t / bs] * blk_stride + kvh * d * bs;
                double dot = 0;
                for (int64_t i = 0; i < d; i++)
                    dot += kt_ld(dt, q, s * q_stride + h * d + i) *
                           cache_value(dt, kind, kc, base + (i / x) * bs * x + (t % bs) * x + i % x,
                                       kv_scale);
                p[t] = scale * dot + (sh->alibi ? slopes[h] * (double)(t - l + 1) : 0.0);
                mx = p[t] > mx ? p[t] : mx;
            }
            for (int64_t t = 0; t < l; t++)
                sum += p[t] = exp(p[t] - mx);
            for (int64_t i = 0; i < d; i++) {
                double o = 0;
                for (int64_t t = 0; t < l; t++)
                    o += p[t] * cache_value(dt, kind, vc,
                                            bt[s * max_blocks + t / bs] * blk_stride +
                                                kvh * d * bs + i * bs + t % bs,
                                            kv_scale);
                want[(s * hq + h) * d + i] = l > 0 ? kt_round(dt, o / sum) : 0.0;
            }
        }
    opreg__cpu_paged_attention_v1(isa, out, q, q_stride, kc, vc, bt, lens,
                                  sh->alibi ? slopes : NULL, nseq, hq, hkv, d, x, bs, blk_stride,
                                  blk_stride, max_blocks, scale, dt, kind, kv_scale);
    char what[96];
    snprintf(what, sizeof what, "hq %d hkv %d d %d bs %d x %d kv %d alibi %d pairs %d", (int)hq,
             (int)hkv, (int)d, (int)bs, (int)x, kind, sh->alibi, pairs_pass);
    /* the output is a weighted mean of values under 1 in magnitude, so
     * errors are measured against 1 */
    ok = kt_check_close(what, isa, dt, out, want, nseq * hq * d, 1.0);
    free(kc);
    free(vc);
    free(q);
    free(out);
    free(bt);
    free(want);
    free(p);
    return ok;
}

TEST(matches_the_reference_on_every_path) {
    KT_FOR_EACH_ISA(isa) {
        for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
            for (int t = 0; t < 3; t++)
                CHECK(one_case(isa, kt_float_dtypes[t], 0, &shapes[c]));
            /* fp8 caches with a bf16 query (keys by bf16 pairs) and an
             * f32 one (keys widened to f32) */
            for (int kind = 1; kind <= 2; kind++) {
                CHECK(one_case(isa, OPREG_DTYPE_BF16, kind, &shapes[c]));
                CHECK(one_case(isa, OPREG_DTYPE_F32, kind, &shapes[c]));
            }
        }
    }
}

int main(void) {
    kt_report_isas("test_cpu_attention");
    for (pairs_pass = 0; pairs_pass < 2; pairs_pass++) {
        if (pairs_pass && opreg__cpu_isa_detected() < OPREG__ISA_AVX512_BF16) {
            printf("test_cpu_attention: bf16 keys by VDPBF16PS NOT CHECKABLE on this CPU (no "
                   "AVX512-BF16; their pairs by two FMAs were checked above)\n");
            break;
        }
        opreg__cpu_set_gemv_pairs(pairs_pass);
        RUN(matches_the_reference_on_every_path);
    }
    return test_summary();
}
