/* reshape_and_cache(_flash) inner copies, "auto" and fp8, on a reference
 * written from ops-reference.md §3.4: key_cache[blk][h][d/x][off][d%x] and
 * value_cache[blk][h][d][off] (flash: [blk][off][h][d] for both), slot < 0
 * skipped, fp8 = saturating cast of v / kv_scale. Bit-exact. */
#include "kern_test.h"

enum { NBLK = 6, BS = 4, H = 3, D = 24, T = 9 };

static uint8_t to_fp8(int kind, float v) {
    return kind == 1 ? opreg__f32_to_e4m3fn_sat(v) : opreg__f32_to_e5m2_sat(v);
}

/* Expected caches: start from the same fill, scatter like the spec. */
static void ref_scatter(int dt, int kind, bool flash, const void *key, const void *value,
                        int64_t stride, const int64_t *slots, unsigned char *kc, unsigned char *vc,
                        float kv_scale, int64_t x) {
    size_t es = kt_es(dt), ces = kind ? 1 : es;
    for (int64_t t = 0; t < T; t++) {
        int64_t blk, off;
        if (slots[t] < 0) continue;
        blk = slots[t] / BS;
        off = slots[t] % BS;
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < D; i++) {
                int64_t src = t * stride + h * D + i;
                int64_t kd = flash ? (slots[t] * H + h) * D + i
                                   : (((blk * H + h) * (D / x) + i / x) * BS + off) * x + i % x;
                int64_t vd = flash ? kd : ((blk * H + h) * D + i) * BS + off;
                if (kind) {
                    kc[kd] = to_fp8(kind, (float)kt_ld(dt, key, src) / kv_scale);
                    vc[vd] = to_fp8(kind, (float)kt_ld(dt, value, src) / kv_scale);
                } else {
                    memcpy(kc + (size_t)kd * ces, (const char *)key + (size_t)src * es, es);
                    memcpy(vc + (size_t)vd * ces, (const char *)value + (size_t)src * es, es);
                }
            }
    }
}

TEST(reshape_and_cache_exact) {
    const int64_t slots[T] = { 5, -1, 0, 23, 7, -3, 12, 4, 18 };
    const int64_t stride = H * D + 8; /* token stride > H*D */
    for (int d = 0; d < 3; d++)
        for (int kind = 0; kind < 3; kind++)
            for (int flash = 0; flash < 2; flash++) {
                int dt = kt_float_dtypes[d];
                size_t ces = kind ? 1 : kt_es(dt), csize = (size_t)NBLK * BS * H * D * ces;
                int64_t x = (int64_t)(16 / ces);
                float kv_scale = flash ? 1.0f : 0.25f;
                void *key = kt_fill(dt, T * stride, -600.0, 600.0);
                void *value = kt_fill(dt, T * stride, -3.0, 3.0);
                unsigned char *wk = malloc(csize), *wv = malloc(csize);
                memset(wk, 0xA5, csize);
                memset(wv, 0x5A, csize);
                ref_scatter(dt, kind, flash, key, value, stride, slots, wk, wv, kv_scale, x);
                unsigned char *kc = malloc(csize), *vc = malloc(csize);
                memset(kc, 0xA5, csize);
                memset(vc, 0x5A, csize);
                /* a dense cache's block stride: [H][D/x][BS][x] for the key
                 * (x need not divide D in these inner copies) */
                int64_t kblk = flash ? BS * H * D : H * (D / x) * BS * x;
                if (flash)
                    opreg__cpu_reshape_and_cache_flash_generic(key, stride, value, stride, kc, kblk,
                                                               vc, BS * H * D, slots, T, H, D, BS,
                                                               dt, kind, kv_scale);
                else
                    opreg__cpu_reshape_and_cache_generic(key, stride, value, stride, kc, kblk, vc,
                                                         BS * H * D, slots, T, H, D, BS, x, dt,
                                                         kind, kv_scale);
                if (!kt_check_bytes("key_cache", OPREG__ISA_PORTABLE, kc, wk, csize) ||
                    !kt_check_bytes("value_cache", OPREG__ISA_PORTABLE, vc, wv, csize)) {
                    fprintf(stderr, "  %s kind %d flash %d\n", kt_dt_name(dt), kind, flash);
                    test_current_failed = 1;
                }
                free(kc), free(vc), free(key), free(value), free(wk), free(wv);
                if (test_current_failed) return;
            }
}

int main(void) {
    RUN(reshape_and_cache_exact);
    return test_summary();
}
