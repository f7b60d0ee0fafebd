/* Streaming stores (and the prefetches that come with them) change how the
 * outputs of large calls reach memory, never what they are: on every ISA
 * path here, rms_norm, the gated and elementwise activations and the int8
 * quantisations give the same bytes with streaming forced on (threshold
 * one byte) as with it off, for outputs that start at every alignment
 * within a vector, odd widths and strided rows; and the bytes around each
 * output stay untouched. */
#include "kern_test.h"

#include <stdint.h>

#define GUARD  64   /* bytes checked before and after each output */
#define FILL   0xA5 /* what the guards and the untouched gaps hold */
#define ALWAYS 1    /* stream threshold: every call streams */
#define NEVER  INT64_MAX

static const struct {
    int64_t rows, width;
} shapes[] = { { 1, 1 },  { 1, 15 },  { 3, 16 },   { 2, 17 },    { 2, 63 },
               { 4, 64 }, { 5, 100 }, { 3, 4099 }, { 96, 4096 }, { 300, 129 } };

/* Output starts this many elements past a 64-byte boundary. */
static const int64_t offsets[] = { 0, 1, 3, 8, 17, 31 };

enum op { RMS_NORM, SILU_AND_MUL, GELU_NEW, INT8_STATIC, INT8_DYNAMIC, N_OPS };
static const char *const op_names[N_OPS] = { "rms_norm", "silu_and_mul", "gelu_new",
                                             "static_scaled_int8_quant",
                                             "dynamic_scaled_int8_quant" };

/* One call of @p op on path @p isa and rows x width inputs; the output rows
 * are out_stride elements apart (rms_norm, silu_and_mul) or packed. */
static void call(int isa, enum op op, int dt, void *out, int64_t out_stride, const void *in,
                 const void *w, float *scales, int64_t rows, int64_t width) {
    int64_t n = rows * width;
    switch (op) {
    case RMS_NORM:
        opreg__cpu_rms_norm(isa, dt, out, out_stride, in, width, w, rows, width, 1e-6f);
        break;
    case SILU_AND_MUL: /* input rows of 2 * width */
        opreg__cpu_gated(isa, OPREG__ACT_SILU, dt, out, out_stride, in, 2 * width, rows, width);
        break;
    case GELU_NEW:
        opreg__cpu_elementwise(isa, OPREG__ACT_GELU_NEW, dt, out, in, n);
        break;
    case INT8_STATIC:
        opreg__cpu_int8_static(isa, dt, out, in, n, 0.0123f);
        break;
    default:
        opreg__cpu_int8_dynamic(isa, dt, out, scales, in, width, rows, width);
        break;
    }
}

/* Runs one case with streaming on and off; true when the bytes agree. */
static bool one_case(int isa, enum op op, int dt, int64_t rows, int64_t width, int64_t off) {
    bool int8 = op == INT8_STATIC || op == INT8_DYNAMIC;
    size_t oes = int8 ? 1 : kt_es(dt);
    /* Strided output rows for the ops that take them: a gap of 5 elements. */
    int64_t ostride = (op == RMS_NORM || op == SILU_AND_MUL) ? width + 5 : width;
    size_t out_bytes = (size_t)((rows - 1) * ostride + width) * oes;
    size_t region = GUARD + (size_t)off * oes + out_bytes + GUARD;
    int64_t in_n = rows * width * (op == SILU_AND_MUL ? 2 : 1);
    void *in = kt_fill(dt, in_n, -6.0, 6.0), *w = kt_fill(dt, width, 0.5, 1.5);
    unsigned char *buf[2];
    float *scales[2];
    bool ok = true;
    for (int k = 0; k < 2; k++) {
        /* 64-byte aligned, so that off fixes the output's alignment */
        buf[k] = aligned_alloc(64, (region + 63) / 64 * 64);
        memset(buf[k], FILL, region);
        scales[k] = malloc(sizeof(float) * (size_t)rows);
        opreg__cpu_set_stream_bytes(k == 0 ? ALWAYS : NEVER);
        call(isa, op, dt, buf[k] + GUARD + off * (int64_t)oes, ostride, in, w, scales[k], rows,
             width);
    }
    opreg__cpu_set_stream_bytes(0);
    char what[160];
    snprintf(what, sizeof what, "%s %s %" PRId64 "x%" PRId64 " at +%" PRId64 " (streamed vs not)",
             op_names[op], kt_dt_name(dt), rows, width, off);
    ok = kt_check_bytes(what, isa, buf[0], buf[1], region);
    if (op == INT8_DYNAMIC)
        ok = ok && kt_check_bytes(what, isa, scales[0], scales[1], sizeof(float) * (size_t)rows);
    /* The guards and the gaps between strided rows hold the fill still. */
    for (size_t i = 0; ok && i < region; i++) {
        int64_t rel = ((int64_t)i - GUARD) / (int64_t)oes - off;
        bool inside = (int64_t)i >= GUARD + off * (int64_t)oes && rel >= 0 &&
                      rel < (rows - 1) * ostride + width && rel % ostride < width;
        if (!inside && buf[0][i] != FILL) {
            fprintf(stderr, "%s: byte %zu outside the output was written\n", what, i);
            ok = false;
        }
    }
    for (int k = 0; k < 2; k++)
        free(buf[k]), free(scales[k]);
    free(in), free(w);
    return ok;
}

TEST(streamed_outputs_equal_plain_outputs) {
    int cases = 0;
    KT_FOR_EACH_ISA(isa) {
        for (int op = 0; op < N_OPS; op++)
            for (int d = 0; d < 3; d++)
                for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
                        CHECK(one_case(isa, (enum op)op, kt_float_dtypes[d], shapes[s].rows,
                                       shapes[s].width, offsets[o]));
                        cases++;
                    }
    }
    printf("  %d cases\n", cases);
}

/* The default threshold is at least 4 MiB, and the setter hands back what
 * was in force. */
TEST(threshold_default_and_override) {
    int64_t def = opreg__cpu_set_stream_bytes(100);
    CHECK(def >= ((int64_t)4 << 20));
    CHECK(opreg__cpu_stream(100));
    CHECK(!opreg__cpu_stream(99));
    CHECK(opreg__cpu_set_stream_bytes(0) == 100);
    CHECK(opreg__cpu_stream(def));
    CHECK(!opreg__cpu_stream(def - 1));
}

int main(void) {
    kt_report_isas("test_cpu_stream");
    RUN(threshold_default_and_override);
    RUN(streamed_outputs_equal_plain_outputs);
    return test_summary();
}
