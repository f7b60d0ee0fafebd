/* Every op of the catalogue on the GPU, in every dtype its builder takes,
 * on the default sizes and on odd ones (widths that are not multiples of a
 * vector, single rows, fp8 caches, ALiBi, per-row scales, ...): inputs are
 * built on the host, copied to the device, run there by dispatch, copied
 * back, and compared with the Reference key's results on the same inputs,
 * with the tolerances `opreg run` uses for every backend. Exits 77 without
 * a CUDA device. */
#define _POSIX_C_SOURCE 200809L
#include "cuda_test.h"
#include "ops/register/catalogue.h"
#include "opreg/inputs.h"

#include <string.h>

static const struct {
    const char *op;
    const char *shapes[5]; /* beside the defaults; NULL-terminated */
} cases[] = {
    { "rms_norm", { "tokens=3,hidden=1001", "tokens=1,hidden=8192", NULL } },
    { "fused_add_rms_norm",
      { "tokens=3,hidden=1001", "tokens=1,hidden=8192", "tokens=9,hidden=520,row_pad=8", NULL } },
    { "silu_and_mul", { "tokens=5,hidden=501", "tokens=1,hidden=4096", NULL } },
    { "gelu_and_mul", { "tokens=5,hidden=501", NULL } },
    { "gelu_tanh_and_mul", { "tokens=5,hidden=501", NULL } },
    { "gelu_new", { "tokens=5,hidden=1001", NULL } },
    { "gelu_fast", { "tokens=5,hidden=1001", NULL } },
    { "gelu_quick", { "tokens=5,hidden=1001", NULL } },
    { "rotary_embedding",
      { "tokens=7,heads=3,kv_heads=1,head_size=64,rot_dim=32,gptj=1",
        "tokens=1,heads=2,kv_heads=2,head_size=80",
        "tokens=9,heads=3,kv_heads=1,head_size=64,row_pad=64",
        "tokens=6,heads=2,kv_heads=2,head_size=32,qk_3d=1,row_pad=3", NULL } },
    { "batched_rotary_embedding",
      { "tokens=7,heads=3,kv_heads=1,head_size=64,rot_dim=32,gptj=1", NULL } },
    { "reshape_and_cache",
      { "tokens=13,kv_heads=2,head_size=64,blocks=8,block_size=16,kv_fp8=1",
        "tokens=5,kv_heads=3,head_size=32,blocks=4,block_size=8",
        "tokens=21,kv_heads=2,head_size=32,blocks=6,block_size=4,kv_split=1,row_pad=8", NULL } },
    { "reshape_and_cache_flash",
      { "tokens=13,kv_heads=2,head_size=64,blocks=8,block_size=16,kv_fp8=1",
        "tokens=21,kv_heads=2,head_size=32,blocks=6,block_size=4,kv_split=1", NULL } },
    { "copy_blocks",
      { "layers=3,pairs=5,blocks=16,kv_heads=2,head_size=32,block_size=8",
        "layers=2,pairs=3,blocks=8,kv_heads=2,head_size=32,block_size=4,kv_split=1", NULL } },
    { "swap_blocks",
      { "pairs=5,blocks=16,kv_heads=2,head_size=32,block_size=8",
        "pairs=3,blocks=8,kv_heads=2,head_size=32,block_size=4,kv_split=1", NULL } },
    { "static_scaled_fp8_quant", { "tokens=3,hidden=1001", NULL } },
    { "dynamic_scaled_fp8_quant", { "tokens=3,hidden=1001", NULL } },
    { "static_scaled_int8_quant", { "tokens=3,hidden=1001", NULL } },
    { "dynamic_scaled_int8_quant", { "tokens=3,hidden=1001", "tokens=1,hidden=8192", NULL } },
    { "moe_align_block_size",
      { "tokens=37,topk=3,experts=67,block_size=8",
        /* past the dense line: ranked on the host first */
        "tokens=37,topk=3,experts=2147483647,block_size=1",
        "tokens=5,topk=2,experts=1000000,block_size=4", NULL } },
    { "topk_softmax", { "tokens=33,experts=67,topk=5", NULL } },
    { "paged_attention_v1",
      { "seqs=3,heads=4,kv_heads=2,head_size=64,max_seq_len=100,block_size=16,alibi=1",
        "seqs=2,heads=8,kv_heads=1,head_size=128,max_seq_len=300,block_size=16,kv_fp8=1",
        "seqs=3,heads=4,kv_heads=2,head_size=64,max_seq_len=40,block_size=16,blocks=9,kv_split=1,"
        "row_pad=64",
        NULL } },
    { "cutlass_scaled_mm",
      { "tokens=65,hidden=130,out_features=67,per_token=1,per_channel=1",
        "tokens=1,hidden=32,out_features=5,bias=0", NULL } },
    { "linear", { "tokens=65,hidden=130,out_features=67,bias=0", NULL } },
};

static int runs, failures;

/* One op, dtype and size on the device against the reference; host_args as
 * opreg_inputs_to_device() takes it. */
static void run_one(const opreg_op *op, int dtype, const char *shape_text, uint32_t host_args) {
    opreg_sizes shape;
    char err[512];
    opreg_inputs *base = NULL, *ref = NULL, *got = NULL, *dev = NULL;
    const DLDevice cuda0 = { kDLCUDA, 0 };
    const char *name = opreg_op_name(op), *dt = dtype < 0 ? "-" : opreg_dtype_name(dtype);
    opreg_status st;
    runs++;
    if (opreg_sizes_parse(&shape, shape_text, err, sizeof err) != 0 ||
        opreg_inputs_build(&base, op, dtype, &shape, 5, err, sizeof err) != OPREG_OK) {
        fprintf(stderr, "%s %s [%s]: no inputs: %s\n", name, dt, shape_text, err);
        failures++;
        return;
    }
    st = opreg_inputs_clone(&ref, base);
    if (st == OPREG_OK) st = opreg_inputs_clone(&got, base);
    if (st == OPREG_OK)
        st = opreg_call_boxed_key(op, OPREG_KEY_REFERENCE, opreg_inputs_args(ref),
                                  opreg_inputs_nargs(ref), NULL, 0, opreg_inputs_rets(ref),
                                  opreg_inputs_nrets(ref));
    if (st == OPREG_OK) st = opreg_inputs_to_device(&dev, base, cuda0, host_args);
    if (st == OPREG_OK)
        st = opreg_call_boxed(op, opreg_inputs_args(dev), opreg_inputs_nargs(dev), NULL, 0,
                              opreg_inputs_rets(dev), opreg_inputs_nrets(dev));
    if (st == OPREG_OK) st = opreg_inputs_fetch(got, dev);
    if (st != OPREG_OK) {
        fprintf(stderr, "%s %s [%s]: %s: %s\n", name, dt, shape_text, opreg_status_name(st),
                opreg_last_error());
        failures++;
    } else {
        opreg_diff diff;
        opreg_inputs_compare(&diff, got, ref);
        if (!diff.ok) {
            fprintf(stderr, "%s %s [%s]: %lld of %lld elements outside tolerance; %s %s\n", name,
                    dt, shape_text, (long long)diff.bad, (long long)diff.checked, diff.first_bad,
                    diff.why);
            failures++;
        }
    }
    opreg_inputs_free(dev);
    opreg_inputs_free(got);
    opreg_inputs_free(ref);
    opreg_inputs_free(base);
}

TEST(every_op_and_dtype_matches_the_reference) {
    opreg_registry *reg = opreg_registry_default();
    CHECK(reg != NULL);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const opreg_op *op;
        char full[64];
        snprintf(full, sizeof full, "_C::%s", cases[c].op);
        CHECK_EQ_INT(opreg_op_find(&op, reg, full), OPREG_OK);
        const opreg_generator *b = opreg__catalogue_generators;
        while (b->name && strcmp(b->name, cases[c].op) != 0)
            b++;
        CHECK(b->name != NULL);
        bool swap = strcmp(cases[c].op, "swap_blocks") == 0;
        /* swap_blocks: host to device, device to host, device to device */
        const uint32_t hosts[3] = { (1u << 0) | (1u << 2), (1u << 1) | (1u << 2), 1u << 2 };
        for (int dt = 0; dt < 32; dt++) {
            if (!((b->dtypes >> dt) & 1u)) continue;
            for (int s = -1; s < 5 && (s < 0 || cases[c].shapes[s]); s++)
                for (int h = 0; h < (swap ? 3 : 1); h++)
                    run_one(op, dt, s < 0 ? "" : cases[c].shapes[s], swap ? hosts[h] : 0);
        }
    }
    printf("%d runs, %d failures\n", runs, failures);
    CHECK_EQ_INT(failures, 0);
}

int main(void) {
    cuda_test_require_device();
    RUN(every_op_and_dtype_matches_the_reference);
    return test_summary();
}
