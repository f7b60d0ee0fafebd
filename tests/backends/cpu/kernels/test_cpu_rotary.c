/* rotary_embedding kernels (NeoX and GPT-J, query and key in place, and the
 * batched form's offsets) on every ISA path here, against a double
 * reference written from ops-reference.md §3.3: for i < rot_dim/2,
 * x' = x cos_i - y sin_i, y' = y cos_i + x sin_i, rounded once to T. */
#include "kern_test.h"

struct rope_case {
    int64_t tokens, nq, nk, head_size, rot_dim;
};

static void ref_rotate(int dt, double *e, int64_t heads, int64_t hs, const void *cache, int64_t row,
                       int64_t rot, bool neox) {
    int64_t half = rot / 2;
    for (int64_t h = 0; h < heads; h++)
        for (int64_t i = 0; i < half; i++) {
            int64_t xi = h * hs + (neox ? i : 2 * i), yi = h * hs + (neox ? i + half : 2 * i + 1);
            double c = kt_ld(dt, cache, row * rot + i), s = kt_ld(dt, cache, row * rot + half + i);
            double x = e[xi], y = e[yi];
            e[xi] = kt_round(dt, x * c - y * s);
            e[yi] = kt_round(dt, y * c + x * s);
        }
}

static void check_case(int dt, struct rope_case c, bool neox, bool with_offsets, bool with_key) {
    const int64_t max_pos = 64;
    int64_t qs = c.nq * c.head_size + 2, ks = c.nk * c.head_size; /* a strided query */
    int64_t nqe = c.tokens * qs, nke = c.tokens * ks;
    void *q0 = kt_fill(dt, nqe, -2.0, 2.0), *k0 = kt_fill(dt, nke, -2.0, 2.0);
    void *cache = kt_fill(dt, 2 * max_pos * c.rot_dim, -1.0, 1.0);
    int64_t *pos = malloc(sizeof *pos * (size_t)c.tokens),
            *off = malloc(sizeof *off * (size_t)c.tokens);
    double *wq = malloc(sizeof *wq * (size_t)nqe), *wk = malloc(sizeof *wk * (size_t)nke);
    for (int64_t t = 0; t < c.tokens; t++) {
        pos[t] = (t * 7 + 3) % max_pos;
        off[t] = with_offsets ? (t % 2) * max_pos : 0;
    }
    for (int64_t i = 0; i < nqe; i++)
        wq[i] = kt_ld(dt, q0, i);
    for (int64_t i = 0; i < nke; i++)
        wk[i] = kt_ld(dt, k0, i);
    for (int64_t t = 0; t < c.tokens; t++) {
        ref_rotate(dt, wq + t * qs, c.nq, c.head_size, cache, pos[t] + off[t], c.rot_dim, neox);
        if (with_key)
            ref_rotate(dt, wk + t * ks, c.nk, c.head_size, cache, pos[t] + off[t], c.rot_dim, neox);
    }
    KT_FOR_EACH_ISA(isa) {
        void *q = kt_copy(dt, q0, nqe), *k = kt_copy(dt, k0, nke);
        bool ok;
        opreg__cpu_rotary(isa, dt, pos, with_offsets ? off : NULL, c.tokens, q, qs, c.nq,
                          with_key ? k : NULL, ks, c.nk, c.head_size, cache, c.rot_dim, neox);
        /* |x cos - y sin| may cancel: absolute error against |x| + |y| */
        ok = kt_check_close("rotary q", isa, dt, q, wq, nqe, 2.0) &&
             kt_check_close("rotary k", isa, dt, k, wk, nke, 2.0);
        free(q), free(k);
        if (!ok) {
            fprintf(stderr, "  %s tokens %d heads %d/%d hs %d rot %d offsets %d key %d\n",
                    neox ? "neox" : "gptj", (int)c.tokens, (int)c.nq, (int)c.nk, (int)c.head_size,
                    (int)c.rot_dim, with_offsets, with_key);
            test_current_failed = 1;
            break;
        }
    }
    free(q0), free(k0), free(cache), free(pos), free(off), free(wq), free(wk);
}

TEST(rotary_matches_reference) {
    static const struct rope_case cases[] = {
        { 1, 1, 1, 2, 2 },        { 3, 2, 1, 8, 8 },     { 5, 4, 2, 64, 64 },
        { 2, 3, 3, 80, 40 },      { 7, 2, 2, 26, 26 },   { 1, 32, 8, 128, 128 },
        { 300, 32, 8, 128, 128 }, { 40, 4, 4, 256, 96 }, { 3, 2, 1, 36, 34 },
    };
    for (int d = 0; d < 3; d++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            for (int neox = 0; neox < 2; neox++) {
                check_case(kt_float_dtypes[d], cases[i], neox, false, true);
                check_case(kt_float_dtypes[d], cases[i], neox, true, i % 2 == 0);
                if (test_current_failed) return;
            }
}

/* Fixed example: cos = 0, sin = 1 turns (x, y) into (-y, x) exactly. */
TEST(rotary_quarter_turn) {
    float q[4] = { 1, 2, 3, 4 }, cache[2] = { 0.0f, 1.0f };
    int64_t pos = 0;
    KT_FOR_EACH_ISA(isa) {
        float e[4] = { 1, 2, 3, 4 };
        memcpy(q, e, sizeof q);
        opreg__cpu_rotary(isa, OPREG_DTYPE_F32, &pos, NULL, 1, q, 4, 1, NULL, 4, 0, 4, cache, 2,
                          true);
        CHECK(q[0] == -2.0f && q[1] == 1.0f && q[2] == 3.0f && q[3] == 4.0f);
        memcpy(q, e, sizeof q);
        opreg__cpu_rotary(isa, OPREG_DTYPE_F32, &pos, NULL, 1, q, 4, 1, NULL, 4, 0, 4, cache, 2,
                          false);
        CHECK(q[0] == -2.0f && q[1] == 1.0f && q[2] == 3.0f && q[3] == 4.0f);
    }
}

int main(void) {
    kt_report_isas("test_cpu_rotary");
    RUN(rotary_matches_reference);
    RUN(rotary_quarter_turn);
    return test_summary();
}
