/// @file schema.h
/// @brief PyTorch's operator-schema language: parse, inspect, compare, print.
///
/// opreg reads schema text exactly as PyTorch's C++ parser
/// (`torch::jit::parseSchema`, `torch._C.parse_schema`) does, e.g.
/// `rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()`.
///
/// A parsed ::opreg_schema is immutable and lives in one allocation (an
/// arena): every pointer that an accessor returns (types, arguments, names,
/// defaults) stays valid until opreg_schema_free() on that schema, and is
/// owned by it. Accessors never fail on a valid handle and never allocate.
#ifndef OPREG_SCHEMA_H
#define OPREG_SCHEMA_H

#include "opreg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A parsed schema (opaque).
typedef struct opreg_schema opreg_schema;
/// A node of a type tree, owned by its schema (opaque).
typedef struct opreg_type opreg_type;
/// An alias annotation such as `(a!)`, `(a|b -> *)` or the `!` shorthand, owned by its schema.
typedef struct opreg_alias opreg_alias;
/// An argument or a return of a schema, owned by its schema.
typedef struct opreg_argument opreg_argument;
/// A default value of an argument, owned by its schema.
typedef struct opreg_default opreg_default;

/// Parse flags.
enum opreg_schema_flags {
    /// Registration mode (the default, flags == 0), as PyTorch's `m.def()`
    /// and `Library.define`: an unknown lower-case type name is an error
    /// ("unknown type specifier"), except in a schema whose text starts with
    /// `aten::` or `prim::`; `double` and `int64_t` get PyTorch 2.x's hints.
    OPREG_SCHEMA_STRICT = 0,
    /// Accept type variables: any unknown identifier starting with a
    /// lower-case letter is a type variable, as `torch._C.parse_schema` does.
    OPREG_SCHEMA_ALLOW_TYPEVARS = 1u << 0,
};

/// Where and why a parse failed. Filled by opreg_schema_parse() on failure.
typedef struct opreg_schema_error {
    opreg_status status; ///< ::OPREG_ERR_SCHEMA_SYNTAX or ::OPREG_ERR_SCHEMA_INVALID
    size_t offset;       ///< byte offset of the offending token in the input
    size_t length;       ///< its length in bytes (0 at end of input)
    size_t line;         ///< 1-based line of the offending token
    size_t column;       ///< 1-based column (in bytes) within that line
    char message[512];   ///< one-line message, PyTorch's wording, NUL-terminated
} opreg_schema_error;

/// Parse one schema from @p text (@p len bytes; it need not be NUL-terminated
/// and may contain NUL bytes, which are rejected as invalid tokens).
///
/// On success `*out` receives a new schema that the caller owns and releases
/// with opreg_schema_free(). On failure `*out` is set to NULL, @p err (if not
/// NULL) is filled, and opreg_last_error() holds the message followed by the
/// source line and a caret line under the offending token. The input is not
/// retained. Any input, of any length or nesting depth, is safe.
///
/// @return ::OPREG_OK, ::OPREG_ERR_SCHEMA_SYNTAX (the grammar, the lexer,
/// bad default values), ::OPREG_ERR_SCHEMA_INVALID (the checks of PyTorch's
/// FunctionSchema: a non-default positional argument after a default one, an
/// illegal overload name), ::OPREG_ERR_INVALID_ARGUMENT (NULL pointers,
/// unknown flags, text longer than 2 GiB),
/// ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_schema_parse(opreg_schema **out, const char *text, size_t len,
                                          unsigned flags, opreg_schema_error *err);

/// Release a schema and everything it owns. NULL is a no-op.
OPREG_API void opreg_schema_free(opreg_schema *schema);

/// The namespace, e.g. "_C" for `_C::rms_norm`; "" when the text has none.
OPREG_API const char *opreg_schema_namespace(const opreg_schema *schema);
/// The operator name without namespace or overload, e.g. "rms_norm".
OPREG_API const char *opreg_schema_name(const opreg_schema *schema);
/// The overload name, e.g. "out" for `add.out`; "" when there is none.
OPREG_API const char *opreg_schema_overload(const opreg_schema *schema);

/// Number of arguments (the `*` marker and `...` are not arguments).
OPREG_API size_t opreg_schema_num_arguments(const opreg_schema *schema);
/// Argument @p i (0-based), or NULL when out of range.
OPREG_API const opreg_argument *opreg_schema_argument(const opreg_schema *schema, size_t i);
/// Number of returns (`...` is not a return).
OPREG_API size_t opreg_schema_num_returns(const opreg_schema *schema);
/// Return @p i (0-based), or NULL when out of range.
OPREG_API const opreg_argument *opreg_schema_return(const opreg_schema *schema, size_t i);

/// True when the argument list ends in `...`.
OPREG_API bool opreg_schema_is_vararg(const opreg_schema *schema);
/// True when the return list is or ends in `...`.
OPREG_API bool opreg_schema_is_varret(const opreg_schema *schema);
/// True when some argument is written (`!`), as PyTorch's `is_mutable()`.
OPREG_API bool opreg_schema_is_mutable(const opreg_schema *schema);
/// True when some type of the schema is a type variable.
OPREG_API bool opreg_schema_has_type_variables(const opreg_schema *schema);

/// Structural equality: names, arguments (name, type, alias annotations as
/// sets, kwarg-only flag, default value) and returns. Fresh sets (`!`) are
/// equal whatever their numbers. NULL equals only NULL.
OPREG_API bool opreg_schema_equal(const opreg_schema *a, const opreg_schema *b);
/// A hash consistent with opreg_schema_equal(). NULL hashes to 0.
OPREG_API uint64_t opreg_schema_hash(const opreg_schema *schema);

/// Printing styles.
typedef enum opreg_schema_style {
    /// opreg's canonical form: PyTorch's printed form, except where that would
    /// not parse back to an equal schema. `Tensor!` stays `Tensor!`; alias
    /// sets keep their source order; `Tensor(a!)?[]` keeps its order; Device
    /// and string defaults stay quoted; complex defaults print as `2.j`;
    /// enum-like defaults keep their names (`reduction=Mean`, `dtype=float32`:
    /// PyTorch's `1` would read back as 1.0 for a float argument); a list of
    /// equal ints collapses to one value only for a sized list of that size.
    OPREG_SCHEMA_CANONICAL = 0,
    /// Exactly what PyTorch's `operator<<(ostream&, const FunctionSchema&)`
    /// prints (`str(torch._C.parse_schema(s))`), non-re-parseable forms
    /// such as `Tensor($0! -> )` and `d=cpu` included.
    OPREG_SCHEMA_TORCH = 1,
} opreg_schema_style;

/// Print @p schema into @p buf like snprintf: at most @p cap bytes including
/// the terminating NUL are written (nothing when @p cap is 0), and the return
/// value is the full length without the NUL, so a return >= @p cap means the
/// output was truncated. @p buf is the caller's.
OPREG_API size_t opreg_schema_format(const opreg_schema *schema, opreg_schema_style style,
                                     char *buf, size_t cap);

/// Print @p schema into a new NUL-terminated string, which the caller owns and
/// releases with opreg_string_free(). NULL only when out of memory (the last
/// error then says so).
OPREG_API char *opreg_schema_to_string(const opreg_schema *schema, opreg_schema_style style);

/// Release a string returned by opreg. NULL is a no-op.
OPREG_API void opreg_string_free(char *str);

/// The kinds of type nodes. The names are the schema spellings.
typedef enum opreg_type_kind {
    OPREG_TYPE_TENSOR = 0,         ///< `Tensor`
    OPREG_TYPE_INT = 1,            ///< `int` (also `DeviceIndex`, `ConstQuantizerPtr`)
    OPREG_TYPE_SYMINT = 2,         ///< `SymInt`
    OPREG_TYPE_SYMBOOL = 3,        ///< `SymBool`
    OPREG_TYPE_FLOAT = 4,          ///< `float` (a C double)
    OPREG_TYPE_COMPLEX = 5,        ///< `complex`
    OPREG_TYPE_BOOL = 6,           ///< `bool`
    OPREG_TYPE_STR = 7,            ///< `str` (also `Dimname`)
    OPREG_TYPE_SCALAR = 8,         ///< `Scalar`
    OPREG_TYPE_SCALAR_TYPE = 9,    ///< `ScalarType`
    OPREG_TYPE_LAYOUT = 10,        ///< `Layout`
    OPREG_TYPE_MEMORY_FORMAT = 11, ///< `MemoryFormat`
    OPREG_TYPE_DEVICE = 12,        ///< `Device`
    OPREG_TYPE_GENERATOR = 13,     ///< `Generator`
    OPREG_TYPE_STORAGE = 14,       ///< `Storage`
    OPREG_TYPE_STREAM = 15,        ///< `Stream`
    OPREG_TYPE_QSCHEME = 16,       ///< `QScheme`
    OPREG_TYPE_QUANTIZER = 17,     ///< `Quantizer`
    OPREG_TYPE_CAPSULE = 18,       ///< `Capsule`
    OPREG_TYPE_ANY = 19,           ///< `Any`
    OPREG_TYPE_ANY_CLASS = 20,     ///< `AnyClassType`
    OPREG_TYPE_ANY_ENUM = 21,      ///< `AnyEnumType`
    OPREG_TYPE_NONE = 22,          ///< `NoneType` (also spelled `None`)
    OPREG_TYPE_LIST = 23,          ///< `T[]` or `T[N]`: one element type
    OPREG_TYPE_OPTIONAL = 24,      ///< `T?`: one element type
    OPREG_TYPE_TUPLE = 25,         ///< `(A, B, ...)`: zero or more element types
    OPREG_TYPE_DICT = 26,          ///< `Dict(K, V)`: key then value
    OPREG_TYPE_UNION = 27,         ///< `Union(A, B, ...)`: two or more member types
    OPREG_TYPE_FUTURE = 28,        ///< `Future(T)`
    OPREG_TYPE_RREF = 29,          ///< `RRef(T)`
    OPREG_TYPE_AWAIT = 30,         ///< `Await(T)`
    OPREG_TYPE_VAR = 31,           ///< a type variable such as `t`
    OPREG_TYPE_CLASS = 32,         ///< a custom class `__torch__.torch.classes.ns.Cls`
} opreg_type_kind;

/// The kind of a type node.
OPREG_API opreg_type_kind opreg_type_get_kind(const opreg_type *type);
/// Number of element types: 1 for list, optional, Future, RRef and Await; 2
/// for Dict; the member count for tuples and unions; 0 otherwise.
OPREG_API size_t opreg_type_num_elements(const opreg_type *type);
/// Element type @p i, or NULL when out of range.
OPREG_API const opreg_type *opreg_type_element(const opreg_type *type, size_t i);
/// For a sized list `T[N]`, N; -1 for an unsized list or any other kind.
OPREG_API int64_t opreg_type_list_size(const opreg_type *type);
/// The spelling of a leaf type ("Tensor", "int", the type variable's name, or
/// the custom class's qualified name); NULL for the composite kinds.
OPREG_API const char *opreg_type_name(const opreg_type *type);
/// The alias annotation written on this node (an atom or a list's `[]`), or
/// NULL. Only the type spine of an argument carries annotations: as in
/// PyTorch, annotations inside tuples, dicts, unions and futures are dropped.
OPREG_API const opreg_alias *opreg_type_alias(const opreg_type *type);
/// Write the short spelling of @p type into @p buf, as messages print it,
/// without alias annotations: "Tensor?[]", "int[2]", "(str[], int)".
/// @return the length of the full spelling (snprintf's semantics: the text
///         is cut, NUL-terminated, when @p cap is too small).
OPREG_API size_t opreg_type_format(const opreg_type *type, char *buf, size_t cap);

/// Number of alias sets before the op runs; "*" names the wildcard set.
OPREG_API size_t opreg_alias_num_before(const opreg_alias *alias);
/// Before-set @p i, or NULL when out of range. The order is the source order.
OPREG_API const char *opreg_alias_before(const opreg_alias *alias, size_t i);
/// Number of alias sets after the op runs; equal to the before-sets when the
/// annotation has no `->`, and 0 for the `!` shorthand.
OPREG_API size_t opreg_alias_num_after(const opreg_alias *alias);
/// After-set @p i, or NULL when out of range.
OPREG_API const char *opreg_alias_after(const opreg_alias *alias, size_t i);
/// True for a written annotation: `(a!)`, `(a|b! -> c)` or the `!` shorthand.
OPREG_API bool opreg_alias_is_write(const opreg_alias *alias);
/// True for the `Tensor!` shorthand, which PyTorch stores as a fresh set
/// `$N` (N counts from 0 within one schema) with an empty after-set.
OPREG_API bool opreg_alias_is_fresh(const opreg_alias *alias);

/// The name of an argument or return; "" for an unnamed return.
OPREG_API const char *opreg_argument_name(const opreg_argument *arg);
/// The type of an argument or return.
OPREG_API const opreg_type *opreg_argument_type(const opreg_argument *arg);
/// True for an argument after `*`. Always false for returns.
OPREG_API bool opreg_argument_is_kwarg_only(const opreg_argument *arg);
/// True when the argument is written: PyTorch's `alias_info()->isWrite()`,
/// where a list `T(a!)[]` inherits the write flag of its element.
OPREG_API bool opreg_argument_is_write(const opreg_argument *arg);
/// True for an out argument: kwarg-only and written (PyTorch's `is_out()`).
OPREG_API bool opreg_argument_is_out(const opreg_argument *arg);
/// The default value, or NULL when there is none (always NULL for returns).
OPREG_API const opreg_default *opreg_argument_default(const opreg_argument *arg);

/// The kinds of default values. As in PyTorch, defaults are untyped: the
/// value's kind comes from the text (`int x=1.5` holds a float).
typedef enum opreg_default_kind {
    OPREG_DEFAULT_NONE = 0,    ///< `None`
    OPREG_DEFAULT_BOOL = 1,    ///< `True` or `False`
    OPREG_DEFAULT_INT = 2,     ///< an integer; also enum-like names (`long`, `Mean`, `float32`)
    OPREG_DEFAULT_FLOAT = 3,   ///< a double
    OPREG_DEFAULT_COMPLEX = 4, ///< an imaginary literal such as `2j`
    OPREG_DEFAULT_STRING = 5,  ///< a string literal, unescaped
    OPREG_DEFAULT_DEVICE = 6,  ///< a `Device` default such as "cuda:0"
    OPREG_DEFAULT_LIST = 7,    ///< a list of ints, floats, bools or complex numbers
} opreg_default_kind;

/// The kind of a default value.
OPREG_API opreg_default_kind opreg_default_get_kind(const opreg_default *value);
/// The value of a ::OPREG_DEFAULT_BOOL.
OPREG_API bool opreg_default_bool(const opreg_default *value);
/// The value of a ::OPREG_DEFAULT_INT.
OPREG_API int64_t opreg_default_int(const opreg_default *value);
/// The value of a ::OPREG_DEFAULT_FLOAT, or the imaginary part of a ::OPREG_DEFAULT_COMPLEX.
OPREG_API double opreg_default_float(const opreg_default *value);
/// The bytes of a ::OPREG_DEFAULT_STRING or ::OPREG_DEFAULT_DEVICE (NUL-terminated;
/// a string may hold NUL bytes, so use @p len). @p len may be NULL.
OPREG_API const char *opreg_default_string(const opreg_default *value, size_t *len);
/// For a ::OPREG_DEFAULT_DEVICE: the device type ("cpu", "cuda", ...) and
/// its index (-1 when not given). @p index may be NULL.
OPREG_API const char *opreg_default_device(const opreg_default *value, int64_t *index);
/// Number of elements of a ::OPREG_DEFAULT_LIST.
OPREG_API size_t opreg_default_list_size(const opreg_default *value);
/// Element @p i of a ::OPREG_DEFAULT_LIST, or NULL when out of range.
OPREG_API const opreg_default *opreg_default_list_item(const opreg_default *value, size_t i);

#ifdef __cplusplus
}
#endif

#endif
