/* Every op of the catalogue, on the CPU key, against its Reference kernel:
 * each dtype the op takes, over shapes chosen to miss the vector widths
 * (0, 1 and odd sizes: an empty batch first), single rows, long rows,
 * strided rows where the op allows them, caches that are halves of a
 * combined KV cache (kv_split), and each option (fp8 caches, per-token
 * scales, GPT-J rotation, ALiBi, no bias). Both calls get byte-identical
 * copies of the same random inputs; every written and returned tensor is
 * compared with the dtype's tolerance (include/opreg/inputs.h). The whole table
 * runs once per instruction-set path this CPU has (portable, AVX2,
 * AVX-512, ...). */
#include "backends/cpu/kernels/cpu_kernels.h"
#include "test.h"
#include "ops/register/catalogue.h"
#include "opreg/inputs.h"

#include <stdio.h>
#include <string.h>

#define NORM                                                                                       \
    "tokens=0,hidden=8", "tokens=1,hidden=1", "tokens=3,hidden=37", "tokens=9,hidden=4100",        \
        "tokens=2,hidden=70001"
#define ROTARY                                                                                     \
    "tokens=0,heads=2,kv_heads=1,head_size=8,max_pos=4",                                           \
        "tokens=1,heads=1,kv_heads=1,head_size=2,max_pos=4",                                       \
        "tokens=5,heads=3,kv_heads=1,head_size=66,rot_dim=34,gptj=1,max_pos=64",                   \
        "tokens=7,heads=4,kv_heads=2,head_size=80,max_pos=64,gptj=1",                              \
        "tokens=33,heads=2,kv_heads=2,head_size=128,rot_dim=64,max_pos=256",                       \
        "tokens=9,heads=3,kv_heads=1,head_size=64,max_pos=32,row_pad=64",                          \
        "tokens=6,heads=2,kv_heads=2,head_size=32,max_pos=16,qk_3d=1,row_pad=3,gptj=1"
#define KV_CACHE                                                                                   \
    "tokens=0,kv_heads=1,head_size=16,blocks=2,block_size=2",                                      \
        "tokens=1,kv_heads=1,head_size=16,blocks=1,block_size=1",                                  \
        "tokens=13,kv_heads=3,head_size=48,blocks=5,block_size=4,row_pad=24",                      \
        "tokens=40,kv_heads=2,head_size=64,blocks=8,block_size=8,kv_fp8=1",                        \
        "tokens=21,kv_heads=2,head_size=32,blocks=6,block_size=4,kv_split=1,row_pad=8"
#define BLOCKS(extra)                                                                              \
    "kv_heads=1,head_size=16,blocks=2,block_size=1,pairs=0" extra,                                 \
        "kv_heads=1,head_size=16,blocks=2,block_size=1,pairs=1" extra,                             \
        "kv_heads=3,head_size=48,blocks=9,block_size=5,pairs=4" extra,                             \
        "kv_heads=2,head_size=32,blocks=7,block_size=3,pairs=3,kv_split=1" extra
#define GEMM                                                                                       \
    "tokens=0,hidden=8,out_features=4", "tokens=1,hidden=1,out_features=1",                        \
        "tokens=5,hidden=33,out_features=17,bias=0", "tokens=70,hidden=300,out_features=65"

/* Decode shapes for the gemv provider: M = 1..16, K = 1, odd K and N. */
#define DECODE                                                                                     \
    "tokens=1,hidden=7,out_features=5", "tokens=3,hidden=65,out_features=33,bias=0",               \
        "tokens=16,hidden=1,out_features=9", "tokens=16,hidden=257,out_features=19",               \
        "tokens=8,hidden=4099,out_features=7,bias=0"

typedef struct op_case {
    const char *op;
    const char *shapes[12];
} op_case;

static const op_case cases[] = {
    { "rms_norm", { NORM, "tokens=5,hidden=33,row_pad=7" } },
    { "fused_add_rms_norm", { NORM, "tokens=5,hidden=33,row_pad=7" } },
    { "silu_and_mul", { NORM } },
    { "gelu_and_mul", { NORM } },
    { "gelu_tanh_and_mul", { NORM } },
    { "gelu_new", { NORM } },
    { "gelu_fast", { NORM } },
    { "gelu_quick", { NORM } },
    { "rotary_embedding", { ROTARY } },
    { "batched_rotary_embedding", { ROTARY } },
    { "reshape_and_cache", { KV_CACHE } },
    { "reshape_and_cache_flash", { KV_CACHE } },
    { "copy_blocks", { BLOCKS(",layers=1"), BLOCKS(",layers=3") } },
    { "swap_blocks", { BLOCKS("") } },
    { "static_scaled_fp8_quant", { NORM } },
    { "dynamic_scaled_fp8_quant", { NORM } },
    { "static_scaled_int8_quant", { NORM } },
    { "dynamic_scaled_int8_quant", { NORM } },
    { "moe_align_block_size",
      { "tokens=0,topk=1,experts=3,block_size=2", "tokens=1,topk=1,experts=1,block_size=1",
        "tokens=37,topk=3,experts=7,block_size=5", "tokens=300,topk=2,experts=64,block_size=16",
        /* far more experts than ids: the inputs' memory follows the ids too */
        "tokens=37,topk=3,experts=2147483647,block_size=1" } },
    { "topk_softmax",
      { "tokens=0,experts=4,topk=2", "tokens=1,experts=1,topk=1", "tokens=9,experts=7,topk=3",
        "tokens=130,experts=64,topk=8" } },
    { "paged_attention_v1",
      { "seqs=0,heads=2,kv_heads=1,head_size=64,max_seq_len=8,block_size=8,blocks=2",
        "seqs=1,heads=1,kv_heads=1,head_size=64,max_seq_len=1,block_size=8,blocks=1",
        "seqs=3,heads=4,kv_heads=2,head_size=64,max_seq_len=37,block_size=16,blocks=12,alibi=1",
        "seqs=2,heads=2,kv_heads=2,head_size=80,max_seq_len=50,block_size=8,blocks=16,kv_fp8=1",
        "seqs=2,heads=8,kv_heads=1,head_size=32,max_seq_len=9,block_size=1,blocks=20",
        "seqs=1,heads=12,kv_heads=12,head_size=256,max_seq_len=70,block_size=32,blocks=3",
        "seqs=3,heads=4,kv_heads=2,head_size=64,max_seq_len=40,block_size=16,blocks=9,"
        "kv_split=1",
        "seqs=4,heads=2,kv_heads=1,head_size=32,max_seq_len=20,block_size=8,blocks=12,"
        "row_pad=64" } },
    { "cutlass_scaled_mm",
      { GEMM, "tokens=9,hidden=40,out_features=24,per_token=1,per_channel=1,row_pad=5",
        "tokens=6,hidden=32,out_features=10,fp8=1,per_channel=1", DECODE,
        "tokens=13,hidden=33,out_features=6,fp8=1,per_token=1,row_pad=3" } },
    { "linear", { GEMM, DECODE } },
};

static opreg_status call(const opreg_op *op, opreg_dispatch_key key, opreg_inputs *in) {
    return opreg_call_boxed_key(op, key, opreg_inputs_args(in), opreg_inputs_nargs(in), NULL, 0,
                                opreg_inputs_rets(in), opreg_inputs_nrets(in));
}

/* Each provider of each op: whether it ran at least once, and why it
 * declined when it did not. */
static struct seen {
    char op[64], provider[OPREG_PROVIDER_NAME_MAX + 1], reason[160];
    int runs;
} seen[256];
static size_t nseen;
static int runs_total, declined_total;

static struct seen *seen_of(const char *op, const char *provider) {
    for (size_t i = 0; i < nseen; i++)
        if (strcmp(seen[i].op, op) == 0 && strcmp(seen[i].provider, provider) == 0) return &seen[i];
    if (nseen == sizeof seen / sizeof seen[0]) abort();
    struct seen *s = &seen[nseen++];
    snprintf(s->op, sizeof s->op, "%s", op);
    snprintf(s->provider, sizeof s->provider, "%s", provider);
    return s;
}

/* One op, dtype and shape: each provider of the CPU key that takes these
 * inputs (pinned in turn) against the Reference key, on clones of them. */
static void run_one(const opreg_op *op, const char *name, int dtype, const char *shape_text) {
    opreg_sizes shape;
    opreg_inputs *base = NULL, *ref = NULL;
    char err[256] = "";
    const char *dt = opreg_dtype_name((opreg_dtype)dtype);
    opreg_registry *reg = opreg_registry_default();
    if (opreg_sizes_parse(&shape, shape_text, err, sizeof err) != 0) {
        TEST_FAIL_AT("%s %s: bad shape '%s': %s", name, dt, shape_text, err);
        return;
    }
    if (opreg_inputs_build(&base, op, dtype, &shape, 42, err, sizeof err) != OPREG_OK) {
        TEST_FAIL_AT("%s %s %s: building inputs: %s %s", name, dt, shape_text, err,
                     opreg_last_error());
        return;
    }
    static opreg_call_explanation x;
    CHECK_EQ_INT(opreg_explain_call(&x, op, OPREG_KEY_CPU, opreg_inputs_args(base),
                                    opreg_inputs_nargs(base), NULL, 0),
                 OPREG_OK);
    CHECK(x.supported);
    CHECK(x.nproviders > 0);
    CHECK_EQ_INT(opreg_inputs_clone(&ref, base), OPREG_OK);
    opreg_status sr = ref ? call(op, OPREG_KEY_REFERENCE, ref) : OPREG_ERR_OUT_OF_MEMORY;
    if (sr != OPREG_OK)
        TEST_FAIL_AT("%s %s %s: Reference: %s", name, dt, shape_text, opreg_last_error());
    for (size_t i = 0; i < x.nproviders && sr == OPREG_OK; i++) {
        const opreg_provider_info *p = &x.providers[i];
        struct seen *s = seen_of(name, p->name);
        if (p->verdict == OPREG_PROVIDER_DECLINED) {
            snprintf(s->reason, sizeof s->reason, "%s", p->reason);
            declined_total++;
            continue;
        }
        char spec[128];
        snprintf(spec, sizeof spec, "%s=%s", name, p->name);
        CHECK_EQ_INT(opreg_registry_set_providers(reg, spec), OPREG_OK);
        /* A provider after the chosen one was not asked: ask it, pinned. */
        static opreg_call_explanation pinned;
        CHECK_EQ_INT(opreg_explain_call(&pinned, op, OPREG_KEY_CPU, opreg_inputs_args(base),
                                        opreg_inputs_nargs(base), NULL, 0),
                     OPREG_OK);
        if (!pinned.supported) {
            for (size_t j = 0; j < pinned.nproviders; j++)
                if (strcmp(pinned.providers[j].name, p->name) == 0)
                    snprintf(s->reason, sizeof s->reason, "%s", pinned.providers[j].reason);
            declined_total++;
            continue;
        }
        opreg_inputs *cpu = NULL;
        CHECK_EQ_INT(opreg_inputs_clone(&cpu, base), OPREG_OK);
        opreg_status sc = cpu ? call(op, OPREG_KEY_CPU, cpu) : OPREG_ERR_OUT_OF_MEMORY;
        if (sc != OPREG_OK)
            TEST_FAIL_AT("%s %s %s: CPU provider %s: %s", name, dt, shape_text, p->name,
                         opreg_last_error());
        if (sc == OPREG_OK) {
            opreg_diff diff;
            opreg_inputs_compare(&diff, cpu, ref);
            if (!diff.ok)
                TEST_FAIL_AT("%s %s %s: provider %s: %s%s (max abs %g, rel %g; %lld of %lld bad)",
                             name, dt, shape_text, p->name, diff.why, diff.first_bad, diff.max_abs,
                             diff.max_rel, (long long)diff.bad, (long long)diff.checked);
            /* an empty batch may compare nothing (no output element) */
            CHECK(diff.checked > 0 || strstr(shape_text, "=0,") || strstr(shape_text, "pairs=0"));
            s->runs++;
            runs_total++;
        }
        opreg_inputs_free(cpu);
    }
    CHECK_EQ_INT(opreg_registry_set_providers(reg, NULL), OPREG_OK);
    opreg_inputs_free(ref);
    opreg_inputs_free(base);
}

static void run_table(void) {
    int runs = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const opreg_generator *e = opreg__catalogue_generators;
        char full[96];
        const opreg_op *op = NULL;
        while (e->name && strcmp(e->name, cases[c].op) != 0)
            e++;
        snprintf(full, sizeof full, "_C::%s", cases[c].op);
        CHECK_EQ_INT(opreg_op_find(&op, opreg_registry_default(), full), OPREG_OK);
        if (!e->name || !op) {
            TEST_FAIL_AT("%s: no builder or no op", full);
            continue;
        }
        for (int dt = 0; dt < 32; dt++) {
            if (!(e->dtypes & (1u << dt))) continue;
            for (size_t s = 0; s < 12 && cases[c].shapes[s]; s++) {
                run_one(op, full, dt, cases[c].shapes[s]);
                runs++;
            }
        }
    }
    printf("  %d op x dtype x shape cases, %d provider runs against Reference, %d declined\n", runs,
           runs_total, declined_total);
}

/* Every provider of every op, on every case it takes; each provider runs
 * at least once unless this CPU lacks its instructions. */
TEST(every_provider_every_op_every_dtype_every_shape) {
    run_table();
    for (size_t i = 0; i < nseen; i++) {
        if (seen[i].runs) {
            printf("  %-34s %-12s %d runs\n", seen[i].op, seen[i].provider, seen[i].runs);
            continue;
        }
        if (strstr(seen[i].reason, "this CPU lacks"))
            printf("  %-34s %-12s not run here: %s\n", seen[i].op, seen[i].provider,
                   seen[i].reason);
        else
            TEST_FAIL_AT("%s: provider %s never ran (%s)", seen[i].op, seen[i].provider,
                         seen[i].reason);
    }
}

/* Every op of the catalogue has a row above. */
TEST(table_covers_the_catalogue) {
    for (const opreg_generator *e = opreg__catalogue_generators; e->name; e++) {
        bool found = false;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            found |= strcmp(cases[c].op, e->name) == 0;
        if (!found) TEST_FAIL_AT("no shapes for %s", e->name);
    }
}

/* The GEMM rows again on each instruction-set path below the best: the
 * gemv provider runs the path OPREG_CPU_ISA (here its in-process cap)
 * allows. */
TEST(gemm_on_every_path) {
    int best = opreg__cpu_isa_detected();
    for (int isa = OPREG__ISA_PORTABLE; isa < best; isa++) {
        int old = opreg__cpu_set_isa_limit(isa);
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            const opreg_generator *e = opreg__catalogue_generators;
            const opreg_op *op = NULL;
            char full[96];
            if (strcmp(cases[c].op, "linear") != 0 && strcmp(cases[c].op, "cutlass_scaled_mm") != 0)
                continue;
            while (e->name && strcmp(e->name, cases[c].op) != 0)
                e++;
            snprintf(full, sizeof full, "_C::%s", cases[c].op);
            CHECK_EQ_INT(opreg_op_find(&op, opreg_registry_default(), full), OPREG_OK);
            for (int dt = 0; dt < 32 && e->name && op; dt++)
                for (size_t s = 0; s < 12 && cases[c].shapes[s] && (e->dtypes & (1u << dt)); s++)
                    run_one(op, full, dt, cases[c].shapes[s]);
        }
        opreg__cpu_set_isa_limit(old);
    }
}

int main(void) {
    RUN(table_covers_the_catalogue);
    RUN(every_provider_every_op_every_dtype_every_shape);
    RUN(gemm_on_every_path);
    return test_summary();
}
