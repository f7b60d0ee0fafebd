/// @file opcheck.h
/// @brief opcheck: every registered op's contract checked on generated
/// inputs, on every key that has a kernel, for any library or plugin.
///
/// For each op that matches a pattern, opreg_opcheck() builds inputs with
/// the op's generator (opreg/inputs.h; the options may give one), runs
/// them on every key that has a kernel and can run here, and reports each
/// check per op and key as passed, failed (with the first counter-example:
/// dtype, sizes, argument, values), a warning, or not applicable (with
/// why). The checks (::opreg_check_kind) are described in docs/opcheck.md.
///
/// Threads: opreg_opcheck() may run on any thread; it calls the ops from
/// two threads at once for ::OPREG_CHECK_THREADS. A report belongs to the
/// caller and may be read from any thread.
#ifndef OPREG_OPCHECK_H
#define OPREG_OPCHECK_H

#include "opreg/inputs.h"
#include "opreg/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The checks, as bits of ::opreg_opcheck_options' `checks`.
typedef enum opreg_check_kind {
    /// Every tensor argument not marked `!` is byte-identical after the
    /// call, and the guard zones around every buffer (and the gaps of a
    /// strided view) are untouched.
    OPREG_CHECK_MUTATION = 1u << 0,
    /// Arguments marked `!` that the kernel never writes (a warning).
    OPREG_CHECK_SCHEMA = 1u << 1,
    /// The Meta kernel accepts exactly the calls the key's kernel accepts,
    /// valid and invalid, and the returned shapes and dtypes agree.
    OPREG_CHECK_META = 1u << 2,
    /// The key's results agree with the Reference key's (and the keys'
    /// with each other) within the dtype's tolerance (opreg_tolerance_of()).
    OPREG_CHECK_BACKENDS = 1u << 3,
    /// Each invalid input is refused with a status and a message, and no
    /// byte of any argument changes.
    OPREG_CHECK_REFUSALS = 1u << 4,
    /// Two threads calling at once get the bytes of a call alone.
    OPREG_CHECK_THREADS = 1u << 5,
    /// Empty, one-element and odd sizes: the keys agree with the
    /// Reference key there too (the checks above, at those sizes).
    OPREG_CHECK_EDGES = 1u << 6,
    /// Every check.
    OPREG_CHECK_ALL = 0x7f,
} opreg_check_kind;

/// The outcome of one check of one op on one key.
typedef enum opreg_check_result {
    OPREG_CHECK_PASSED = 0,         ///< it held on every input tried
    OPREG_CHECK_WARNING = 1,        ///< it held, with something worth reading
    OPREG_CHECK_FAILED = 2,         ///< a counter-example is in the message
    OPREG_CHECK_NOT_APPLICABLE = 3, ///< not run; the message says why
} opreg_check_result;

/// Options of opreg_opcheck(). Zero-initialise, set `struct_size`, then
/// the fields wanted.
typedef struct opreg_opcheck_options {
    /// sizeof(opreg_opcheck_options) as the caller compiled it: fields
    /// past it are taken as zero.
    uint32_t struct_size;
    /// ::opreg_check_kind bits; 0 runs every check.
    uint32_t checks;
    /// Dtypes to try, as `1u << dtype`; 0 tries every dtype the op's
    /// generator takes.
    uint32_t dtypes;
    /// The seed of the generated inputs (0 is a seed like any other).
    uint64_t seed;
    /// Sizes for every op ("tokens=3,hidden=17"), or NULL for the
    /// generators' defaults; a size an op does not read is ignored for it.
    const char *sizes;
    /// A generator for the ops that declare none (instead of the one
    /// derived from their schema), or NULL. Not owned.
    const opreg_generator *generator;
    /// Keys to check, as `1u << key`; 0 checks every key with a kernel.
    uint32_t keys;
} opreg_opcheck_options;

/// The results of one run (opaque), owned by the caller.
typedef struct opreg_check_report opreg_check_report;

/// One result: a check of one op on one key.
typedef struct opreg_check_item {
    const char *op;            ///< the op's full name
    const char *key;           ///< the key's name ("CPU"; "-" for checks of the op alone)
    opreg_check_kind check;    ///< one bit
    opreg_check_result result; ///< passed, warning, failed, not applicable
    /// The counter-example or reason: dtype, sizes, argument, values.
    const char *message;
} opreg_check_item;

/// Check every op whose full name matches @p pattern: "ns::name" (one op,
/// all its overloads unless one is named), "name" (an op of that name in any
/// namespace), "ns::*" (a namespace), "*" or NULL (everything registered in @p reg,
/// plugins' ops included; NULL @p reg is the process-default registry).
/// @p options may be NULL (every check, every dtype, default sizes).
/// `*out` receives the report (the caller's; free with
/// opreg_check_report_free()), also when checks failed.
/// @return ::OPREG_OK when the run completed (read the report for
/// failures); ::OPREG_ERR_NOT_FOUND (nothing matches @p pattern);
/// ::OPREG_ERR_INVALID_ARGUMENT (bad sizes text, NULL @p out);
/// ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_opcheck(opreg_registry *reg, const char *pattern,
                                     const opreg_opcheck_options *options,
                                     opreg_check_report **out);

/// The number of items in @p report.
OPREG_API size_t opreg_check_report_count(const opreg_check_report *report);
/// Item @p i (NULL past the end); valid while @p report lives.
OPREG_API const opreg_check_item *opreg_check_report_item(const opreg_check_report *report,
                                                          size_t i);
/// The number of items with @p result.
OPREG_API size_t opreg_check_report_tally(const opreg_check_report *report,
                                          opreg_check_result result);
/// The report as JSON: an array of one object per op, key and check, with
/// the members op, key, check, result and message. The string is the
/// caller's (free with opreg_string_free()); NULL when out of memory.
OPREG_API char *opreg_check_report_json(const opreg_check_report *report);
/// Free a report. NULL is a no-op.
OPREG_API void opreg_check_report_free(opreg_check_report *report);

/// The name of one check ("mutation", "schema", "meta", "backends",
/// "refusals", "threads", "edges"), or "?".
OPREG_API const char *opreg_check_kind_name(opreg_check_kind check);
/// Parse a comma-separated list of check names ("mutation,meta") into
/// ::opreg_check_kind bits in `*out`.
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT naming the unknown check.
OPREG_API opreg_status opreg_check_kinds_parse(uint32_t *out, const char *text);
/// Parse a comma-separated list of dtype names ("f32,bf16") into
/// `1u << dtype` bits in `*out`, as ::opreg_opcheck_options' `dtypes`.
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT naming the unknown dtype.
OPREG_API opreg_status opreg_check_dtypes_parse(uint32_t *out, const char *text);
/// Parse a comma-separated list of dispatch key names ("CPU,Reference";
/// case does not matter: "cuda" is the CUDA key) into `1u << key` bits in
/// `*out`, as ::opreg_opcheck_options' `keys`.
/// @return ::OPREG_OK, or ::OPREG_ERR_INVALID_ARGUMENT naming the unknown key.
OPREG_API opreg_status opreg_check_keys_parse(uint32_t *out, const char *text);
/// The name of a result ("passed", "warning", "failed", "not applicable").
OPREG_API const char *opreg_check_result_name(opreg_check_result result);

#ifdef __cplusplus
}
#endif

#endif
