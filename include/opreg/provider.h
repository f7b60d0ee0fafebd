/// @file provider.h
/// @brief Providers: several implementations of one op on one key, chosen
/// by the call's arguments, and the queries that say which one runs and why.
///
/// A backend key of an op holds an ordered list of *providers*. Each has a
/// name, a kernel and an optional predicate that looks at the call's
/// arguments (dtypes, shapes, strides, scalars, the CPU's instruction sets)
/// and accepts the call or declines it with a reason. A call runs the first
/// provider that accepts. A plain `impl` is the provider named `default`,
/// without a predicate, at priority 0; a key whose list is one provider
/// without a predicate is called directly, at the cost of one indirect call,
/// as before providers existed.
///
/// Order: providers placed by priority come first, highest priority first,
/// earlier registration first among equals. Then each provider placed
/// before or after another (its *anchor*) is inserted next to it, in
/// registration order, so of two providers placed after the same anchor the
/// later one is nearer to it. A provider whose anchor is not registered for
/// that op and key goes to the end of the list (opreg_explain_call() says
/// so). Registering a provider under a name the op and key already have
/// replaces it (with the override warning of `impl`), until the newer one's
/// library closes. See docs/providers.md.
///
/// Pinning and disabling (for debugging and tests): the environment
/// variable `OPREG_PROVIDERS`, read when a registry is created, and
/// opreg_registry_set_providers(), take a comma-separated list of
/// `OP=NAME` (only provider NAME runs for OP, on every key that has a
/// provider NAME) and `OP=-NAME` (provider NAME never runs for OP). OP is a
/// full op name (`_C::linear`), a namespace (`_C::*`) or `*`.
#ifndef OPREG_PROVIDER_H
#define OPREG_PROVIDER_H

#include "opreg/dispatch.h"
#include "opreg/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The longest provider name, in bytes, without the terminating NUL.
#define OPREG_PROVIDER_NAME_MAX 31
/// The most providers one op may have, over all its keys.
#define OPREG_MAX_PROVIDERS 24

/// Where a provider goes in its op and key's list.
typedef enum opreg_provider_place {
    OPREG_PROVIDER_AT_PRIORITY = 0, ///< by `priority`, highest first
    OPREG_PROVIDER_BEFORE = 1,      ///< immediately before the provider named `anchor`
    OPREG_PROVIDER_AFTER = 2,       ///< immediately after it
} opreg_provider_place;

/// A provider's predicate: whether it takes this call. Returns true to
/// accept, or false to decline and write why, one phrase without a final
/// period (e.g. "input rows are not dense"), into @p why (@p why_cap bytes,
/// NUL-terminated; @p why may be NULL when nobody asks). @p args holds every
/// argument in schema order, with the boxed call's type checks passed (each
/// tensor non-NULL) but not the op's own checks: read metadata only (dtype,
/// shape, strides, device, scalars), never tensor data, which may be absent
/// (Meta tensors), and check a tensor's rank and that its shape is not NULL
/// before reading its sizes (the op's checks have not run yet; a predicate
/// that accepts what it cannot read leaves the refusal to them). Called from
/// any thread, concurrently; must not register.
/// @p context is the provider's kernel context.
typedef bool (*opreg_supports_fn)(void *context, const opreg_op *op, const opreg_value *args,
                                  char *why, size_t why_cap);

/// A provider, as given to opreg_library_provider().
typedef struct opreg_provider {
    /// sizeof(opreg_provider) as the caller compiled it: fields past it are
    /// taken as zero, so a caller built against this version keeps working.
    uint32_t struct_size;
    /// An identifier of at most ::OPREG_PROVIDER_NAME_MAX bytes, unique per
    /// op and key; copied. `default`, `composite` and `fallback` are taken.
    const char *name;
    /// The kernel, as for opreg_library_impl(); its context is also the
    /// predicate's, and its `release` runs when the registration goes.
    opreg_kernel kernel;
    /// NULL: the provider accepts every call.
    opreg_supports_fn supports;
    /// How `priority` and `anchor` are read.
    opreg_provider_place place;
    /// For ::OPREG_PROVIDER_AT_PRIORITY: higher runs first; `default` is 0.
    int32_t priority;
    /// For ::OPREG_PROVIDER_BEFORE and ::OPREG_PROVIDER_AFTER: the name of a
    /// provider of the same op and key (it may be registered later); copied.
    const char *anchor;
} opreg_provider;

/// Add provider @p provider for op @p name (as for opreg_library_impl():
/// "name", "name.overload" or "ns::name[.overload]" in the library's
/// namespace) on backend @p key (::OPREG_KEY_NONE for the library's
/// default key; not Composite) to library @p lib. Nothing is kept of
/// @p provider but copies. The provider is withdrawn when @p lib closes.
/// @return ::OPREG_OK; ::OPREG_ERR_INVALID_ARGUMENT (a NULL pointer, a name
/// that is not an identifier or is reserved, a bad place or key, an anchor
/// missing for a relative place); ::OPREG_ERR_UNSUPPORTED when the op would
/// have more than ::OPREG_MAX_PROVIDERS providers; ::OPREG_ERR_OUT_OF_MEMORY.
/// A failure leaves the registry as it was and is recorded in the library.
OPREG_API opreg_status opreg_library_provider(opreg_library *lib, const char *name,
                                              opreg_dispatch_key key,
                                              const opreg_provider *provider);

/// Replace the registry's pins and disables by @p spec (the syntax of
/// `OPREG_PROVIDERS`, above; NULL or "" clears them), and rebuild every
/// op's dispatch table. Takes the registration lock.
/// @return ::OPREG_OK; ::OPREG_ERR_INVALID_ARGUMENT for a spec that does not
/// parse (the message points at the item), leaving the old one in force;
/// ::OPREG_ERR_OUT_OF_MEMORY.
OPREG_API opreg_status opreg_registry_set_providers(opreg_registry *reg, const char *spec);

/// The registry's pins and disables as text (the syntax of
/// `OPREG_PROVIDERS`; "" for none), into @p buf of @p cap bytes.
/// @return the length of the whole text (it was cut when >= @p cap).
OPREG_API size_t opreg_registry_providers(opreg_registry *reg, char *buf, size_t cap);

/// What happened to one provider when a call was explained.
typedef enum opreg_provider_verdict {
    OPREG_PROVIDER_RUNS = 0,        ///< the first that accepts: it would run
    OPREG_PROVIDER_DECLINED = 1,    ///< its predicate declined (see `reason`)
    OPREG_PROVIDER_DISABLED = 2,    ///< pinned away or disabled (see `reason`)
    OPREG_PROVIDER_NOT_REACHED = 3, ///< after the one that runs
} opreg_provider_verdict;

/// The word for @p verdict that explanations print: "runs", "declined",
/// "disabled" or "not reached"; "unknown" for a value outside the enum. A
/// static string, not to be freed.
OPREG_API const char *opreg_provider_verdict_name(opreg_provider_verdict verdict);

/// One provider of an explained call.
typedef struct opreg_provider_info {
    char name[OPREG_PROVIDER_NAME_MAX + 1]; ///< the provider's name
    opreg_provider_verdict verdict;         ///< what it did with the call
    char reason[160];                       ///< why it declined or is disabled, else ""
    char where[160];                        ///< where it was registered
} opreg_provider_info;

/// The answer of opreg_explain_call().
typedef struct opreg_call_explanation {
    bool supported;         ///< a provider accepts, and the op's checks pass
    opreg_dispatch_key key; ///< the key explained (::OPREG_KEY_NONE if none)
    int chosen;             ///< index into `providers` of the one that runs, or -1
    /// The status of the op's checks (its Meta kernel) on these arguments,
    /// ::OPREG_OK when they pass or the op has no Meta kernel.
    opreg_status check_status;
    size_t nproviders;                                  ///< entries of `providers`
    opreg_provider_info providers[OPREG_MAX_PROVIDERS]; ///< in the order tried
    char message[2048]; ///< the whole answer for people, a line per provider
} opreg_call_explanation;

/// Say which provider of op @p op would run these arguments, and why each
/// earlier one declined or was disabled: the call is bound and type-checked
/// as by opreg_call_boxed(), then the providers of @p key (or, for
/// ::OPREG_KEY_NONE, of the key the tensors' device selects) are asked in
/// order, and the op's own checks (its Meta kernel, when it has one) are
/// run on the arguments. Nothing is computed and no argument is written, so
/// Meta tensors are enough: pass @p key to ask about a backend with
/// tensors that live elsewhere. Fills @p out (the caller's).
/// @return ::OPREG_OK whatever the answer (a call that would be refused is
/// an answer: `supported` false and `message` says why), or the status and
/// message of the boxed call's own refusal of the arguments (arity, types,
/// devices), or ::OPREG_ERR_INVALID_ARGUMENT for NULL pointers or a key that
/// is not a backend key.
OPREG_API opreg_status opreg_explain_call(opreg_call_explanation *out, const opreg_op *op,
                                          opreg_dispatch_key key, const opreg_value *args,
                                          size_t nargs, const opreg_kwarg *kwargs, size_t nkwargs);

/// Whether a call of op @p op with these arguments would run on @p key (or
/// the key of the tensors' device, for ::OPREG_KEY_NONE): opreg_explain_call()'s
/// `supported`, without the text. False for arguments the boxed call refuses.
OPREG_API bool opreg_is_supported_for(const opreg_op *op, opreg_dispatch_key key,
                                      const opreg_value *args, size_t nargs,
                                      const opreg_kwarg *kwargs, size_t nkwargs);

#ifdef __cplusplus
}
#endif

#endif
