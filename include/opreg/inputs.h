/// @file inputs.h
/// @brief Generated inputs: seeded, valid arguments for an op, their deep
/// copies on any reachable device, and the comparison of what two runs
/// wrote within each dtype's tolerance.
///
/// A *generator* makes, on the CPU, every argument of one op in schema
/// order: float data in the requested dtype, the op's fixed dtypes
/// elsewhere, and index tensors that satisfy the op's data checks. Its
/// sizes have names ("tokens", "hidden") and defaults; a caller overrides
/// them with an ::opreg_sizes (`tokens=64,hidden=4096`). The same seed
/// gives the same bytes. A library declares the generator of an op it
/// defines with opreg_library_generator() (the `_C` catalogue declares one
/// for each of its ops); `opreg run`, the benches, the tests and opcheck
/// (opreg/opcheck.h) all build their inputs through opreg_inputs_build().
/// An op without a generator gets inputs derived from its schema
/// (opreg_inputs_build_from_schema()). See docs/opcheck.md.
///
/// Threads: an ::opreg_inputs and an ::opreg_gen belong to one thread at a
/// time; different ones may be used from different threads at once.
#ifndef OPREG_INPUTS_H
#define OPREG_INPUTS_H

#include "opreg/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The most sizes one ::opreg_sizes holds.
#define OPREG_SIZES_MAX 24

/// How a generator reads a size (opreg_gen_dim(), opreg_gen_count(),
/// opreg_gen_flag()); opcheck's edge cases pick values by it.
typedef enum opreg_size_kind {
    OPREG_SIZE_DIM = 0,   ///< a size of at least 1
    OPREG_SIZE_COUNT = 1, ///< a count that may be 0 (tokens, padding)
    OPREG_SIZE_FLAG = 2,  ///< 0 or 1
} opreg_size_kind;

/// The named sizes of one build: those the caller gave plus the defaults
/// the generator asked for. A plain value type (no pointers).
typedef struct opreg_sizes {
    size_t n; ///< entries used in kv
    /// The sizes by name, in the order they were given or first read.
    struct {
        char name[24]; ///< NUL-terminated
        int64_t value;
        bool given;   ///< set by the caller (opreg_sizes_parse() or by hand)
        bool used;    ///< read by the generator in the last build
        uint8_t kind; ///< an ::opreg_size_kind, set when the generator reads it
    } kv[OPREG_SIZES_MAX];
} opreg_sizes;

/// Parse "tokens=64,hidden=4096" into @p out, which it clears first; every
/// entry is marked `given`. Returns 0, or -1 with a message in @p err
/// (@p cap bytes, NUL-terminated).
OPREG_API int opreg_sizes_parse(opreg_sizes *out, const char *text, char *err, size_t cap);

/// Print the used sizes of @p sizes as "k=v,k=v" into @p buf (@p cap
/// bytes), with snprintf's semantics: returns the length it needed.
OPREG_API size_t opreg_sizes_format(const opreg_sizes *sizes, char *buf, size_t cap);

/// Set size @p name to @p value (given), adding it if absent. Returns 0,
/// or -1 when @p sizes is full or @p name is longer than 23 bytes.
OPREG_API int opreg_sizes_set(opreg_sizes *sizes, const char *name, int64_t value);

/// The inputs of one call (opaque): tensors, lists, strings, the boxed
/// arguments and the return slots. It owns all of them.
typedef struct opreg_inputs opreg_inputs;

/// A generator's handle on the inputs it is building (opaque).
typedef struct opreg_gen opreg_gen;

/// A generator: appends the op's arguments to @p g in schema order with
/// the opreg_gen_* functions. It reports a bad size with opreg_gen_fail().
typedef void (*opreg_generator_fn)(opreg_gen *g);

/// Every float dtype a generator may be asked for (f32, f16, bf16).
#define OPREG_GEN_FLOATS                                                                           \
    ((1u << OPREG_DTYPE_F32) | (1u << OPREG_DTYPE_F16) | (1u << OPREG_DTYPE_BF16))

/// An op's generator, as declared with opreg_library_generator().
typedef struct opreg_generator {
    const char *name;         ///< the op's name without namespace (for tables; may be NULL)
    opreg_generator_fn build; ///< never NULL
    uint32_t dtypes;          ///< accepted dtypes, as `1u << dtype`
    opreg_dtype dflt;         ///< the dtype used when the caller asks for none
    /// The tensor arguments (bit i: argument i) that stay in host memory
    /// when the inputs go to a device (swap_blocks' block_mapping).
    uint32_t host_args;
    void *context; ///< read with opreg_gen_context(); not owned
} opreg_generator;

/// Declare @p gen as the generator of op @p name ("op" or "op.overload" of
/// the library's namespace), which @p lib must have defined. @p gen is not
/// copied: it must stay valid until the op's definition goes (its library
/// closes). A second declaration replaces the first.
/// @return ::OPREG_OK; ::OPREG_ERR_INVALID_ARGUMENT (NULL argument, no build
/// function); ::OPREG_ERR_NOT_FOUND (the library defines no such op).
OPREG_API opreg_status opreg_library_generator(opreg_library *lib, const char *name,
                                               const opreg_generator *gen);

/// The generator declared for @p op, or NULL. The pointer is the
/// declaring library's and valid while the op's definition lasts.
OPREG_API const opreg_generator *opreg_op_generator(const opreg_op *op);

/// Build seeded random inputs for @p op in @p dtype (a negative value asks
/// for the generator's default) with @p gen, or the op's declared generator
/// when @p gen is NULL. Sizes come from @p sizes, whose `used` and `kind`
/// flags are set; a given size the generator does not read is an error.
/// @return ::OPREG_OK; ::OPREG_ERR_INVALID_ARGUMENT (a dtype or size the
/// generator does not take, an unknown size: a usage error, message in
/// @p err, @p cap bytes); ::OPREG_ERR_NOT_FOUND (no generator, or @p op is
/// not defined); ::OPREG_ERR_INTERNAL (the generator made a different
/// number of arguments than the schema has); or a tensor allocation's
/// status. `*out` is the caller's, freed with opreg_inputs_free().
OPREG_API opreg_status opreg_inputs_build_with(opreg_inputs **out, const opreg_op *op,
                                               const opreg_generator *gen, int dtype,
                                               opreg_sizes *sizes, uint64_t seed, char *err,
                                               size_t cap);

/// opreg_inputs_build_with() with the op's declared generator, falling
/// back to opreg_inputs_build_from_schema() when it has none.
OPREG_API opreg_status opreg_inputs_build(opreg_inputs **out, const opreg_op *op, int dtype,
                                          opreg_sizes *sizes, uint64_t seed, char *err, size_t cap);

/// Inputs derived from @p op's schema alone: every `Tensor` (and every item
/// of a `Tensor[]`, of length `list`, default 2) is a [rows, cols] tensor
/// (sizes `rows`, default 4, and `cols`, default 8) of uniform values in
/// [-1, 1) in @p dtype (f32 when negative); `int` and `SymInt` arguments
/// take the size named after the argument (default 1), `float` 0.5,
/// `bool` false, `str` "", `ScalarType` @p dtype, optional arguments None
/// unless they have no default; other types are refused with
/// ::OPREG_ERR_UNSUPPORTED. Otherwise as opreg_inputs_build_with().
OPREG_API opreg_status opreg_inputs_build_from_schema(opreg_inputs **out, const opreg_op *op,
                                                      int dtype, opreg_sizes *sizes, uint64_t seed,
                                                      char *err, size_t cap);

/// A deep copy of @p src: new host tensors with the same bytes, shapes and
/// strides; the return slots are empty. `*out` is the caller's.
OPREG_API opreg_status opreg_inputs_clone(opreg_inputs **out, const opreg_inputs *src);

/// Whether opreg_inputs_to_device() can reach @p device: host memory, or a
/// backend (a plugin's, CUDA) with copy_to_device and copy_to_host.
OPREG_API bool opreg_inputs_device_reachable(DLDevice device);

/// A copy of @p src with its tensors on @p device: same shapes, strides and
/// bytes, copied through the device's backend (which waits). The tensor
/// arguments whose positions are set in @p host_args stay in host memory
/// (swap_blocks' block_mapping, which the op takes on the host). On a Meta
/// device the tensors have shapes and no data. The return slots are empty.
/// `*out` is the caller's.
OPREG_API opreg_status opreg_inputs_to_device(opreg_inputs **out, const opreg_inputs *src,
                                              DLDevice device, uint32_t host_args);

/// Copy the bytes of every tensor of @p dev (made by opreg_inputs_to_device()
/// from a clone of @p host) back into @p host, and its returned tensors
/// into new host tensors in @p host's return slots (owned by @p host).
OPREG_API opreg_status opreg_inputs_fetch(opreg_inputs *host, const opreg_inputs *dev);

/// Free the inputs, their tensors and any returned tensor. NULL is a no-op.
OPREG_API void opreg_inputs_free(opreg_inputs *in);

/// The boxed arguments, in schema order (owned by @p in).
OPREG_API const opreg_value *opreg_inputs_args(const opreg_inputs *in);
/// The number of arguments.
OPREG_API size_t opreg_inputs_nargs(const opreg_inputs *in);
/// The return slots (opreg_inputs_nrets() of them, at least the schema's
/// number of returns); a call writes them, and @p in owns the tensors.
OPREG_API opreg_value *opreg_inputs_rets(opreg_inputs *in);
/// The number of return slots.
OPREG_API size_t opreg_inputs_nrets(const opreg_inputs *in);
/// Free the returned tensors and empty the slots (before another call).
OPREG_API void opreg_inputs_clear_rets(opreg_inputs *in);
/// The op the inputs are for.
OPREG_API const opreg_op *opreg_inputs_op(const opreg_inputs *in);
/// The dtype the inputs were built in (the op's float data, or its index
/// dtype for moe_align_block_size).
OPREG_API opreg_dtype opreg_inputs_dtype(const opreg_inputs *in);

/// The tolerance of one dtype: |got - want| <= atol * max(1, max|want|) +
/// rtol * |want|, or, when `units` >= 0, at most `units` steps apart in the
/// dtype's value order (an ulp for fp8, one integer step for int8, exact
/// for index types).
typedef struct opreg_tolerance {
    double atol; ///< absolute, scaled by max(1, max|want|)
    double rtol; ///< relative
    int units;   ///< steps apart allowed, or -1 to use atol and rtol
} opreg_tolerance;

/// The tolerance `opreg run`, the tests and opcheck use for @p dtype.
OPREG_API opreg_tolerance opreg_tolerance_of(opreg_dtype dtype);

/// The result of comparing every written argument (`Tensor!`, `Tensor[]!`)
/// and every returned tensor of two runs of the same inputs.
typedef struct opreg_diff {
    double max_abs;      ///< the largest absolute error
    double max_rel;      ///< the largest relative error
    bool ok;             ///< every element within its dtype's tolerance
    int64_t bad;         ///< elements outside tolerance
    int64_t checked;     ///< elements compared
    char worst[64];      ///< the argument with the largest error, or the first bad one
    char first_bad[160]; ///< the first element outside tolerance: name, index, values
    char why[160];       ///< a structural mismatch (shape, dtype, missing return)
} opreg_diff;

/// Compare @p got with @p want (the same op, cloned from the same inputs).
OPREG_API void opreg_inputs_compare(opreg_diff *out, const opreg_inputs *got,
                                    const opreg_inputs *want);

/// @name For generators
/// @{

/// A size: the value given for @p name, or @p def; marks it used. A value
/// below 1 fails the build.
OPREG_API int64_t opreg_gen_dim(opreg_gen *g, const char *name, int64_t def);
/// A count that may be 0 (tokens, row padding); marks it used.
OPREG_API int64_t opreg_gen_count(opreg_gen *g, const char *name, int64_t def);
/// A flag (0 or 1) given like a size; marks it used.
OPREG_API bool opreg_gen_flag(opreg_gen *g, const char *name, bool def);
/// Fail the build with a usage message (printf format); returns 0. The
/// first failure wins; later calls of the generator become no-ops.
OPREG_API int opreg_gen_fail(opreg_gen *g, const char *fmt, ...);
/// Whether the build has failed.
OPREG_API bool opreg_gen_failed(const opreg_gen *g);
/// The dtype being built.
OPREG_API opreg_dtype opreg_gen_dtype(const opreg_gen *g);
/// The generator's context (::opreg_generator's `context`).
OPREG_API void *opreg_gen_context(const opreg_gen *g);
/// A uniform random number in [0, 1), from the build's seeded stream.
OPREG_API double opreg_gen_uniform(opreg_gen *g);
/// A uniform random integer in [0, @p n) (0 when @p n <= 0).
OPREG_API int64_t opreg_gen_below(opreg_gen *g, int64_t n);
/// A new zeroed CPU tensor owned by the inputs; NULL after a failure.
OPREG_API DLTensor *opreg_gen_tensor(opreg_gen *g, opreg_dtype dtype, int ndim,
                                     const int64_t *shape);
/// A strided view with @p strides (elements) over a zeroed buffer of
/// @p span elements, owned by the inputs; NULL after a failure.
OPREG_API DLTensor *opreg_gen_tensor_strided(opreg_gen *g, opreg_dtype dtype, int ndim,
                                             const int64_t *shape, const int64_t *strides,
                                             int64_t span);
/// Fill @p t (its whole buffer, for a view) with uniform values in
/// [@p lo, @p hi), rounded to its dtype (fp8: magnitudes about 1/8 to 2).
OPREG_API void opreg_gen_fill(opreg_gen *g, DLTensor *t, double lo, double hi);
/// The opreg dtype of a tensor (u8 when opreg has none).
OPREG_API opreg_dtype opreg_gen_dtype_of(const DLTensor *t);
/// Element @p i (flat, contiguous order) of a host tensor, as a double
/// (exact; fp8 decoded to its value).
OPREG_API double opreg_gen_get(const DLTensor *t, int64_t i);
/// Store @p v into element @p i of a host tensor: a float dtype (fp8
/// included) rounds to nearest even, fp8 e4m3fn without saturating; an
/// integer truncates toward zero and saturates at its range (NaN stores 0);
/// bool stores `v != 0`. The same rounding as the library's kernels.
OPREG_API void opreg_gen_set(DLTensor *t, int64_t i, double v);
/// Append the next argument, in schema order (a tensor in it must be one
/// of the build's).
OPREG_API void opreg_gen_arg(opreg_gen *g, opreg_value v);
/// Append a tensor argument.
OPREG_API void opreg_gen_arg_tensor(opreg_gen *g, DLTensor *t);
/// Append a string argument (copied; at most 15 bytes are kept).
OPREG_API void opreg_gen_arg_str(opreg_gen *g, const char *s);
/// Append a list of @p n tensors (at most 8; the array is copied).
OPREG_API void opreg_gen_arg_list(opreg_gen *g, DLTensor *const *items, size_t n);
/// Append an `int[]` argument of @p n items (at most 8; copied).
OPREG_API void opreg_gen_arg_ints(opreg_gen *g, const int64_t *items, size_t n);
/// @}

#ifdef __cplusplus
}
#endif

#endif
