/* common/dtype_convert.h and common/dtype_access.h against an independent
 * slow reference: every bf16 and f16 pattern and every fp8 pattern decodes
 * to the value its fields say and round-trips through float; float ->
 * narrow matches a reference that decodes codes with ldexpl and rounds by
 * binary search and midpoints, on ties, near-ties, subnormals, overflow,
 * inf, NaN and random floats; a double stored into any float dtype is
 * rounded once; integer and bool stores truncate, saturate and never hit
 * an undefined conversion. */
#include "common/dtype_access.h"
#include "common/dtype_convert.h"
#include "test.h"

#include <float.h>
#include <math.h>

typedef struct fmt {
    const char *name;
    int mbits, bias;
    uint32_t max_code; /* largest finite positive code */
    int fn;            /* e4m3fn: no inf, NaN = 0x7F */
    uint32_t sign_bit;
} fmt;

static const fmt BF16 = { "bf16", 7, 127, 0x7F7F, 0, 0x8000 };
static const fmt F16 = { "f16", 10, 15, 0x7BFF, 0, 0x8000 };
static const fmt E4M3 = { "e4m3fn", 3, 7, 0x7E, 1, 0x80 };
static const fmt E5M2 = { "e5m2", 2, 15, 0x7B, 0, 0x80 };

/* Value of a positive code as if every exponent were normal (so max_code+1
 * gives the first value past the range). */
static long double ref_decode(const fmt *f, uint32_t code) {
    uint32_t e = code >> f->mbits, m = code & ((1u << f->mbits) - 1u);
    if (e == 0) return ldexpl((long double)m, 1 - f->bias - f->mbits);
    return ldexpl((long double)((1u << f->mbits) + m), (int)e - f->bias - f->mbits);
}

static int is_nan_code(const fmt *f, uint32_t code) {
    uint32_t a = code & ~f->sign_bit;
    if (f->fn) return a == 0x7F;
    return a > f->max_code + 1;
}

/* Round x (any finite or not) per the rules in dtype_convert.h. */
static uint32_t ref_round(const fmt *f, long double x, int sat) {
    uint32_t sign = signbit(x) ? f->sign_bit : 0, lo = 0, hi = f->max_code + 1, c, r;
    long double a = fabsl(x);
    if (isnan(x)) {
        if (sat) return 0x7F;
        if (f == &BF16) return 0x7FC0;
        if (f == &F16) return sign | 0x7E00;
        return sign | 0x7F;
    }
    if (isinf(x))
        r = f->max_code + 1;
    else {
        /* largest c with decode(c) <= a */
        while (lo < hi) {
            uint32_t mid = (lo + hi + 1) / 2;
            if (ref_decode(f, mid) <= a)
                lo = mid;
            else
                hi = mid - 1;
        }
        c = lo;
        if (c == f->max_code + 1)
            r = c;
        else {
            long double d0 = ref_decode(f, c), d1 = ref_decode(f, c + 1), m = (d0 + d1) / 2;
            if (a == d0 || a < m)
                r = c;
            else if (a > m)
                r = c + 1;
            else
                r = (c & 1) ? c + 1 : c;
        }
    }
    if (r > f->max_code) {
        if (sat) return sign | f->max_code;
        return sign | (f->fn ? 0x7Fu : f->max_code + 1);
    }
    return sign | r;
}

static uint32_t fast_round(const fmt *f, float x, int sat) {
    if (f == &BF16) return opreg__f32_to_bf16(x);
    if (f == &F16) return opreg__f32_to_f16(x);
    if (f == &E4M3) return sat ? opreg__f32_to_e4m3fn_sat(x) : opreg__f32_to_e4m3fn(x);
    return sat ? opreg__f32_to_e5m2_sat(x) : opreg__f32_to_e5m2(x);
}

static float fast_decode(const fmt *f, uint32_t code) {
    if (f == &BF16) return opreg__bf16_to_f32((uint16_t)code);
    if (f == &F16) return opreg__f16_to_f32((uint16_t)code);
    if (f == &E4M3) return opreg__e4m3fn_to_f32((uint8_t)code);
    return opreg__e5m2_to_f32((uint8_t)code);
}

static const fmt *const FMTS[4] = { &BF16, &F16, &E4M3, &E5M2 };
static long checked;

/* Compare fast and reference rounding of x for every format (and the
 * saturating fp8 variants); returns 0 and reports on the first mismatch. */
static int check_value(float x) {
    for (int i = 0; i < 4; i++)
        for (int sat = 0; sat <= (i >= 2); sat++) {
            uint32_t want = ref_round(FMTS[i], (long double)x, sat);
            uint32_t got = fast_round(FMTS[i], x, sat);
            checked++;
            if (want != got) {
                fprintf(stderr, "%s%s(%a = 0x%08x): got 0x%x, want 0x%x\n", FMTS[i]->name,
                        sat ? "_sat" : "", (double)x, (unsigned)opreg__f32_bits(x), got, want);
                return 0;
            }
        }
    return 1;
}

TEST(every_pattern_decodes_and_round_trips) {
    long n = 0;
    for (int i = 0; i < 4; i++) {
        const fmt *f = FMTS[i];
        uint32_t count = f->sign_bit << 1;
        for (uint32_t code = 0; code < count; code++) {
            float v = fast_decode(f, code);
            if (is_nan_code(f, code)) {
                CHECK(isnan(v));
                CHECK(is_nan_code(f, fast_round(f, v, 0)));
                n++;
                continue;
            }
            {
                uint32_t mag = code & ~f->sign_bit;
                long double want =
                    mag == f->max_code + 1 ? (long double)INFINITY : ref_decode(f, mag);
                if (code & f->sign_bit) want = -want;
                if ((long double)v != want || !signbit(v) != !signbit(want)) {
                    TEST_FAIL_AT("%s 0x%x decodes to %a, want %La", f->name, code, (double)v, want);
                    return;
                }
            }
            CHECK_EQ_INT(fast_round(f, v, 0), code);
            if (i >= 2 && (code & ~f->sign_bit) <= f->max_code)
                CHECK_EQ_INT(fast_round(f, v, 1), code);
            n++;
        }
    }
    CHECK_EQ_INT(n, 65536 * 2 + 256 * 2);
}

TEST(ties_and_neighbours_of_every_pair) {
    for (int i = 0; i < 4; i++) {
        const fmt *f = FMTS[i];
        for (uint32_t c = 0; c <= f->max_code; c++) {
            long double lo = ref_decode(f, c), hi = ref_decode(f, c + 1);
            float m = (float)((lo + hi) / 2); /* exact: one more bit than the format */
            float xs[6];
            CHECK((long double)m == (lo + hi) / 2);
            xs[0] = m;
            xs[1] = nextafterf(m, INFINITY);
            xs[2] = nextafterf(m, 0.0f);
            xs[3] = (float)lo;
            xs[4] = nextafterf((float)lo, INFINITY);
            xs[5] = (float)(hi * 2 > (long double)FLT_MAX ? FLT_MAX : hi * 2);
            for (int k = 0; k < 6; k++) {
                if (!check_value(xs[k]) || !check_value(-xs[k])) {
                    TEST_FAIL_AT("%s pair 0x%x", f->name, c);
                    return;
                }
            }
        }
    }
}

TEST(special_values) {
    static const float xs[] = { 0.0f,       -0.0f,           448.0f,     464.0f,      464.00003f,
                                479.99997f, 480.0f,          57344.0f,   61440.0f,    61439.996f,
                                65504.0f,   65519.996f,      65520.0f,   65536.0f,    FLT_MAX,
                                FLT_MIN,    1e-45f,          1e-40f,     0x1p-9f,     0x1p-10f,
                                0x1.8p-10f, 0x1p-16f,        0x1p-17f,   0x1.8p-17f,  0x1p-24f,
                                0x1p-25f,   0x1.000002p-25f, 0x1.8p-24f, 1.0f / 3.0f, 3.0e38f,
                                3.3961e38f };
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        CHECK(check_value(xs[i]));
        CHECK(check_value(-xs[i]));
    }
    CHECK(check_value(INFINITY));
    CHECK(check_value(-INFINITY));
    CHECK(check_value(NAN));
    CHECK(check_value(-NAN));
    CHECK(check_value(opreg__f32_from_bits(0x7F800001u))); /* signalling NaN */
    CHECK(check_value(opreg__f32_from_bits(0xFFC12345u)));
    /* documented overflow behaviour */
    CHECK_EQ_INT(opreg__f32_to_e4m3fn(500.0f), 0x7F);
    CHECK_EQ_INT(opreg__f32_to_e4m3fn(-1e9f), 0xFF);
    CHECK_EQ_INT(opreg__f32_to_e4m3fn(464.0f), 0x7E);
    CHECK_EQ_INT(opreg__f32_to_e4m3fn(465.0f), 0x7F);
    CHECK_EQ_INT(opreg__f32_to_e4m3fn_sat(1e9f), 0x7E);
    CHECK_EQ_INT(opreg__f32_to_e4m3fn_sat(-INFINITY), 0xFE);
    CHECK_EQ_INT(opreg__f32_to_e5m2(1e9f), 0x7C);
    CHECK_EQ_INT(opreg__f32_to_e5m2_sat(-1e9f), 0xFB);
    CHECK_EQ_INT(opreg__f32_to_bf16(NAN), 0x7FC0);
    CHECK_EQ_INT(opreg__f32_to_f16(65520.0f), 0x7C00);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

TEST(random_floats) {
    for (long i = 0; i < 1000000; i++) {
        uint32_t u = (uint32_t)next_rand();
        /* half the samples in the fp8/f16 exponent range, where it matters most */
        if (i & 1) u = (u & 0x807FFFFFu) | ((uint32_t)(100 + (u >> 23) % 50) << 23);
        if (!check_value(opreg__f32_from_bits(u))) {
            TEST_FAIL_AT("random sample %ld", i);
            return;
        }
    }
}

/* Doubles are stored by rounding to odd in float first, then to the format:
 * the result must be the correctly rounded one, also next to a tie. */
TEST(double_stores_round_once) {
    static const int dts[4] = { OPREG_DTYPE_BF16, OPREG_DTYPE_F16, OPREG_DTYPE_F8_E4M3FN,
                                OPREG_DTYPE_F8_E5M2 };
    for (long i = 0; i < 400000; i++) {
        const fmt *f = FMTS[i & 3];
        uint32_t c = (uint32_t)(next_rand() % f->max_code);
        long double lo = ref_decode(f, c), hi = ref_decode(f, c + 1), m = (lo + hi) / 2;
        double d = (double)m * (1.0 + ((i >> 2) % 3 - 1.0) * 0x1p-40);
        uint64_t cell = 0; /* the store writes 1 or 2 bytes of it */
        opreg__st(&cell, dts[i & 3], 0, d);
        uint32_t got = (uint32_t)(cell & (f->sign_bit == 0x80 ? 0xFFu : 0xFFFFu));
        if (got != ref_round(f, d, 0)) {
            TEST_FAIL_AT("%s store of %a: got 0x%x, want 0x%x", f->name, d, got,
                         ref_round(f, d, 0));
            return;
        }
        if (fabs(opreg__ld(&cell, dts[i & 3], 0)) !=
            (double)ref_decode(f, got & (f->sign_bit - 1))) {
            TEST_FAIL_AT("%s load of 0x%x", f->name, got);
            return;
        }
    }
}

/* Integer stores truncate toward zero and saturate; NaN stores 0; bool is
 * v != 0; loads give back the stored value exactly. */
TEST(integer_and_bool_stores) {
    static const struct {
        int dt;
        double v, want;
    } cases[] = {
        { OPREG_DTYPE_I8, 3.9, 3 },
        { OPREG_DTYPE_I8, -3.9, -3 },
        { OPREG_DTYPE_I8, 1000, 127 },
        { OPREG_DTYPE_I8, -1000, -128 },
        { OPREG_DTYPE_I8, NAN, 0 },
        { OPREG_DTYPE_U8, -1, 0 },
        { OPREG_DTYPE_U8, 255.5, 255 },
        { OPREG_DTYPE_U8, 1e300, 255 },
        { OPREG_DTYPE_I16, -40000, -32768 },
        { OPREG_DTYPE_I16, 12345.7, 12345 },
        { OPREG_DTYPE_I32, 3e9, 2147483647.0 },
        { OPREG_DTYPE_I32, -3e9, -2147483648.0 },
        { OPREG_DTYPE_I32, INFINITY, 2147483647.0 },
        { OPREG_DTYPE_I64, 1e19, 0x1.fffffffffffffp62 },
        { OPREG_DTYPE_I64, -1e19, -0x1p63 },
        { OPREG_DTYPE_I64, -INFINITY, -0x1p63 },
        { OPREG_DTYPE_I64, 0x1p52 + 1, 0x1p52 + 1 },
        { OPREG_DTYPE_BOOL, 0.25, 1 },
        { OPREG_DTYPE_BOOL, -0.0, 0 },
        { OPREG_DTYPE_BOOL, NAN, 1 },
        { OPREG_DTYPE_F32, 1.0 + 0x1p-30, 1.0 },
        { OPREG_DTYPE_F64, 0.1, 0.1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t cell = 0;
        opreg__st(&cell, cases[i].dt, 0, cases[i].v);
        double got = opreg__ld(&cell, cases[i].dt, 0);
        if (got != cases[i].want) {
            TEST_FAIL_AT("case %zu: dtype %d store of %g loads %.17g, want %.17g", i, cases[i].dt,
                         cases[i].v, got, cases[i].want);
        }
        if (opreg__round_to(cases[i].dt, cases[i].v) != cases[i].want)
            TEST_FAIL_AT("case %zu: round_to disagrees with the store", i);
    }
    /* a bool byte other than 0 or 1 still loads as true */
    uint8_t b = 7;
    CHECK(opreg__ld(&b, OPREG_DTYPE_BOOL, 0) == 1.0);
    /* an unknown dtype stores nothing and loads 0 */
    uint64_t cell = 0x5555;
    opreg__st(&cell, 99, 0, 1.0);
    CHECK(cell == 0x5555 && opreg__ld(&cell, 99, 0) == 0.0);
}

int main(void) {
    RUN(every_pattern_decodes_and_round_trips);
    RUN(ties_and_neighbours_of_every_pair);
    RUN(special_values);
    RUN(random_floats);
    RUN(double_stores_round_once);
    RUN(integer_and_bool_stores);
    printf("%ld float->narrow conversions compared with the reference\n", checked);
    return test_summary();
}
