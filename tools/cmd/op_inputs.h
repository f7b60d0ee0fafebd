/* Random, valid inputs for the ops of the catalogue, a deep copy of them, and
 * the comparison of what two runs wrote. Used by `opreg run`; public API only.
 *
 * A builder makes, on the CPU, every argument of an op in schema order: float
 * data in the requested dtype, the op's fixed dtypes elsewhere (int8/fp8
 * outputs, int32/int64 indices), and index tensors that satisfy the op's
 * data checks (positions inside the cos/sin cache, slots inside the cache,
 * block tables inside the blocks, expert ids below the experts). The same
 * seed gives the same bytes. */
#ifndef OPREG_TOOLS_OP_INPUTS_H
#define OPREG_TOOLS_OP_INPUTS_H

#include "opreg/opreg.h"

#define OP_SHAPE_MAX 24

/* The sizes of a run: `--shape k=v,...` plus the defaults a builder asked for. */
typedef struct op_shape {
    size_t n;
    struct {
        char name[24];
        int64_t value;
        bool given; /* from --shape */
        bool used;  /* read by the builder */
    } kv[OP_SHAPE_MAX];
} op_shape;

/* Parse "tokens=64,hidden=4096" into @p out (which it clears). Returns 0, or
 * -1 with a message in @p err. */
int op_shape_parse(op_shape *out, const char *text, char *err, size_t cap);

/* Print the used sizes as "k=v,k=v" (snprintf semantics). */
size_t op_shape_format(const op_shape *shape, char *buf, size_t cap);

/* The inputs of one call (opaque): tensors, lists, strings, boxed arguments
 * and return slots. It owns all of them. */
typedef struct op_inputs op_inputs;

/* Build random inputs for @p op ("_C::NAME" of the catalogue) in @p dtype
 * (OPREG_DTYPE_F32 etc.; a negative value asks for the op's default). Sizes
 * come from @p shape, whose `used` flags are set; a given key that the op
 * does not use is an error. Returns OPREG_OK, OPREG_ERR_INVALID_ARGUMENT
 * (bad dtype or size, unknown key: a usage error, message in @p err),
 * OPREG_ERR_NOT_FOUND (no builder for the op), or a tensor allocation's
 * status. `*out` is the caller's, freed with op_inputs_free(). */
opreg_status op_inputs_build(op_inputs **out, const opreg_op *op, int dtype, op_shape *shape,
                             uint64_t seed, char *err, size_t cap);

/* A deep copy of @p src: new tensors with the same bytes, shapes and
 * strides; the return slots are empty. */
opreg_status op_inputs_clone(op_inputs **out, const op_inputs *src);

/* Whether op_inputs_to_device() can reach @p device: the CPU, a CUDA
 * device, or a backend (a plugin's) with copy_to_device and copy_to_host. */
bool op_inputs_device_reachable(DLDevice device);

/* A copy of @p src with its tensors on @p device (a CUDA device or a
 * plugin's, say): same shapes, strides and bytes, copied on a CUDA device's
 * current stream or through the backend's copy functions.
 * The tensor arguments whose positions are set in @p host_args stay in
 * host memory (swap_blocks' block_mapping, which the op takes on the
 * host). The return slots are empty. */
opreg_status op_inputs_to_device(op_inputs **out, const op_inputs *src, DLDevice device,
                                 uint32_t host_args);

/* Copy the bytes of every tensor of @p dev (made by op_inputs_to_device()
 * from a clone of @p host's inputs) back into @p host, and its returned
 * tensors into new host tensors in @p host's return slots. The backends'
 * copies wait, and are ordered after the work queued before them. */
opreg_status op_inputs_fetch(op_inputs *host, const op_inputs *dev);

/* Free the inputs, their tensors and any returned tensor. NULL is a no-op. */
void op_inputs_free(op_inputs *in);

const opreg_value *op_inputs_args(const op_inputs *in);
size_t op_inputs_nargs(const op_inputs *in);
/* The return slots (at least the schema's number of returns). */
opreg_value *op_inputs_rets(op_inputs *in);
size_t op_inputs_nrets(const op_inputs *in);
/* Free the returned tensors and empty the slots (before another call). */
void op_inputs_clear_rets(op_inputs *in);
/* The op the inputs are for. */
const opreg_op *op_inputs_op(const op_inputs *in);
/* The dtype of the op's float data (or its index dtype for moe_align_block_size). */
opreg_dtype op_inputs_dtype(const op_inputs *in);

/* The tolerance of one dtype: |got - want| <= atol * max(1, max|want|) +
 * rtol * |want|, or, when `units` >= 0, at most `units` steps apart in the
 * dtype's value order (an ulp for fp8, one integer step for int8, exact for
 * index types). */
typedef struct op_tolerance {
    double atol, rtol;
    int units;
} op_tolerance;
op_tolerance op_tolerance_of(opreg_dtype dtype);

/* The result of comparing every written argument (`Tensor!`, `Tensor[]!`)
 * and every returned tensor of two runs of the same inputs. */
typedef struct op_diff {
    double max_abs, max_rel;
    bool ok;             /* every element within its dtype's tolerance */
    int64_t bad;         /* elements outside tolerance */
    int64_t checked;     /* elements compared */
    char worst[64];      /* the argument with the largest error, or the first bad one */
    char first_bad[160]; /* the first element outside tolerance: name, index, values */
    char why[160];       /* a structural mismatch (shape, dtype, missing return) */
} op_diff;

/* Compare @p got with @p want (same op, cloned from the same inputs). */
void op_inputs_compare(op_diff *out, const op_inputs *got, const op_inputs *want);

/* ---- for the builders (tools/op_inputs_ops.c) ---- */

typedef struct op_builder op_builder;

/* A size: the --shape value of @p name, or @p def; marks it used. */
int64_t opb_dim(op_builder *b, const char *name, int64_t def);
/* A count that may be 0 (e.g. row padding); marks it used. */
int64_t opb_count(op_builder *b, const char *name, int64_t def);
/* A flag (0 or 1) given like a size; marks it used. */
bool opb_flag(op_builder *b, const char *name, bool def);
/* Fail the build with a usage message (returns 0 for convenience). */
int opb_fail(op_builder *b, const char *fmt, ...);
bool opb_failed(const op_builder *b);
opreg_dtype opb_dtype(const op_builder *b);
/* A uniform random number in [0, 1), and an integer in [0, n). */
double opb_uniform(op_builder *b);
int64_t opb_below(op_builder *b, int64_t n);
/* A new zeroed CPU tensor owned by the inputs; NULL after a failure. With
 * @p strides, a strided view of a buffer of @p span elements. */
DLTensor *opb_tensor(op_builder *b, opreg_dtype dtype, int ndim, const int64_t *shape);
DLTensor *opb_tensor_strided(op_builder *b, opreg_dtype dtype, int ndim, const int64_t *shape,
                             const int64_t *strides, int64_t span);
/* Fill with uniform values in [lo, hi), rounded to the tensor's dtype. */
void opb_fill(op_builder *b, DLTensor *t, double lo, double hi);
/* The opreg dtype of a tensor (u8 when opreg has none). */
opreg_dtype opb_dtype_of(const DLTensor *t);
/* Element @p i (flat, contiguous order) as a double, and its store. */
double opb_get(const DLTensor *t, int64_t i);
void opb_set(DLTensor *t, int64_t i, double v);
/* Append the next argument, in schema order. */
void opb_arg(op_builder *b, opreg_value v);
void opb_arg_tensor(op_builder *b, DLTensor *t);
void opb_arg_str(op_builder *b, const char *s);
void opb_arg_list(op_builder *b, DLTensor *const *items, size_t n);

/* A builder: appends the op's arguments. */
typedef void (*op_build_fn)(op_builder *b);
typedef struct op_builder_entry {
    const char *name; /* without namespace */
    op_build_fn build;
    uint32_t dtypes;  /* accepted --dtype values, as 1u << dtype */
    opreg_dtype dflt; /* default --dtype */
} op_builder_entry;
/* The table of builders, ended by a NULL name. */
extern const op_builder_entry op_builders[];

#define OPB_FLOATS ((1u << OPREG_DTYPE_F32) | (1u << OPREG_DTYPE_F16) | (1u << OPREG_DTYPE_BF16))

#endif
