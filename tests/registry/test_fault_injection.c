/* Allocation failures, one at a time, as SQLite tests them: each scenario is
 * first run to count the allocations it makes (K), then run again for every
 * N in 1..K with the Nth allocation failing (common/fault.h; the build
 * option OPREG_FAULT_INJECTION). The call in which the failure lands must
 * return OPREG_ERR_OUT_OF_MEMORY with a message that says so, leave the
 * registry's listing (defined ops and their kernels, op records, keys,
 * plugins) exactly as it was before the call, and succeed when retried
 * without the failure. A close, which returns nothing, must allocate
 * nothing at all. Leaks are left to LeakSanitizer, checked after each
 * scenario (the ASan build), and every run frees all it made.
 *
 * Scenarios: a registry with the whole catalogue and its kernels; a library
 * of the test's own (defaults, overloads, kernels before their def, a
 * fallback, enough ops to grow every table); closing libraries that
 * replaced kernels; loading and unloading plugins (plugin_v1, and
 * plugin_halfway, whose init fails by design); the plugin search over the
 * test plugins' folder; and parsing the schema corpus. At the end, each scenario's line says how
 * many allocations and distinct call sites it reached; when K is large the runs step by a stride,
 * and every distinct site is then still failed at least once. OPREG_FI_LEAK_CHECK_EACH=1 checks for
 * leaks after every run instead of after every scenario (slower; it names the run that leaked), and
 * OPREG_FI_SITES=1 lists the sites, as file and offset for addr2line. */
#define _GNU_SOURCE /* dladdr */

#include "common/fault.h"
#include "opreg/opreg.h"
#include "opreg/plugin.h"
#include "registry/plugin/plugin_test.h"
#include "test.h"
#include "leak_check.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <time.h>

OPREG_DECLARE_LIBRARY(_C);
OPREG_DECLARE_LIBRARY_IMPL(_C, REFERENCE);
OPREG_DECLARE_LIBRARY_IMPL(_C, META);
OPREG_DECLARE_LIBRARY_IMPL(_C, CPU);

/* Runs above this many allocations step by a stride (sites still covered). */
#define MAX_RUNS 4000

/* ---- allocation sites ----------------------------------------------------- */

struct site {
    const void *addr;
    unsigned long first; /* the allocation number of its first call */
    bool failed;
};

static struct site sites[8192];
static size_t nsites;
static const void *all_sites[8192]; /* every scenario's, for the total */
static size_t nall_sites;
static bool counting;        /* the counting run: record sites */
static unsigned long armed;  /* the allocation that fails in this run */
static const void *armed_at; /* its site, once reached */

static struct site *site_of(const void *addr) {
    for (size_t i = 0; i < nsites; i++)
        if (sites[i].addr == addr) return &sites[i];
    return NULL;
}

static void trace(void *user, const void *addr, unsigned long index) {
    (void)user;
    if (index == armed) {
        armed_at = addr;
        struct site *s = site_of(addr);
        if (s) s->failed = true;
    }
    if (!counting || site_of(addr) || nsites == sizeof sites / sizeof sites[0]) return;
    sites[nsites++] = (struct site){ addr, index, false };
    for (size_t i = 0; i < nall_sites; i++)
        if (all_sites[i] == addr) return;
    if (nall_sites < sizeof all_sites / sizeof all_sites[0]) all_sites[nall_sites++] = addr;
}

/* ---- the state compared before and after a failed call ---------------------- */

static void append(char **buf, size_t *len, size_t *cap, const char *text) {
    size_t n = strlen(text);
    if (*len + n + 1 > *cap) {
        while (*len + n + 1 > *cap)
            *cap *= 2;
        *buf = realloc(*buf, *cap);
        if (!*buf) abort();
    }
    memcpy(*buf + *len, text, n + 1);
    *len += n;
}

/* The defined ops with their kernels, then the keys and the plugin list; and
 * the number of op records when @p records (a single call creates none when
 * it fails; a library init of many calls keeps the records of those that
 * succeeded, as documented). */
static char *snapshot(opreg_registry *reg, bool records) {
    opreg__fi_pause(true);
    size_t len = 0, cap = 1 << 12;
    char *buf = malloc(cap), line[8192];
    if (!buf) abort();
    buf[0] = '\0';
    if (reg) {
        char *ops = registry_listing(reg);
        if (!ops) abort();
        append(&buf, &len, &cap, ops);
        free(ops);
        if (records) {
            snprintf(line, sizeof line, "records=%zu\n", opreg_registry_num_ops(reg));
            append(&buf, &len, &cap, line);
        }
        for (size_t i = 0; i < opreg_plugin_count(reg); i++) {
            opreg_plugin_info info;
            if (opreg_plugin_info_at(&info, reg, i) != OPREG_OK) abort();
            snprintf(line, sizeof line, "plugin %s|%s|%s|%d|%u|%d|%s\n", info.path, info.name,
                     info.version, (int)info.state, (unsigned)info.abi_version, (int)info.key,
                     info.reason);
            append(&buf, &len, &cap, line);
        }
    }
    for (int k = 0; k < opreg_key_count(); k++) {
        char why[256] = "";
        bool ok = opreg_key_is_available(k, why, sizeof why);
        snprintf(line, sizeof line, "key %d %s %d %s\n", k, opreg_key_name(k), (int)ok, why);
        append(&buf, &len, &cap, line);
    }
    opreg__fi_pause(false);
    return buf;
}

/* ---- steps ------------------------------------------------------------------- */

/* Whether the armed failure is still to come: only then is a listing taken
 * before a step. */
static bool pending(void) {
    return armed && !opreg__fi_failed();
}

/* After a step that returned @p st (@p want without a failure): when the
 * failure landed in it, check the status, the message and the listing. True
 * when it landed, so the caller retries. */
static bool landed(opreg_registry *reg, const char *before, bool records, opreg_status st,
                   opreg_status want, const char *what) {
    if (!before || !opreg__fi_failed()) return false;
    if (st == want && want == OPREG_OK) {
        TEST_FAIL_AT("%s: allocation %lu failed (site %p) but the call returned OPREG_OK", what,
                     armed, armed_at);
        return true;
    }
    if (st != OPREG_ERR_OUT_OF_MEMORY) {
        TEST_FAIL_AT("%s: allocation %lu failed (site %p): status %s, not OPREG_ERR_OUT_OF_MEMORY "
                     "(%s)",
                     what, armed, armed_at, opreg_status_name(st), opreg_last_error());
        return true;
    }
    if (!strstr(opreg_last_error(), "out of memory")) {
        TEST_FAIL_AT("%s: allocation %lu failed (site %p): the message does not say so: \"%s\"",
                     what, armed, armed_at, opreg_last_error());
        return true;
    }
    char *after = snapshot(reg, records);
    if (strcmp(before, after) != 0)
        TEST_FAIL_AT("%s: allocation %lu failed (site %p) and the registry changed:\nbefore:\n%s\n"
                     "after:\n%s",
                     what, armed, armed_at, before, after);
    free(after);
    return true;
}

/* One fallible call of a scenario: run it; if the failure landed there,
 * check what it left and run it again, which must then give @p want. */
#define STEP_AS(reg, records, want, call)                                                          \
    do {                                                                                           \
        char *before_ = pending() ? snapshot((reg), (records)) : NULL;                             \
        opreg_clear_error(); /* a message left from before cannot pass for this one's */           \
        opreg_status st_ = (call);                                                                 \
        if (landed((reg), before_, (records), st_, (want), #call)) st_ = (call);                   \
        free(before_);                                                                             \
        if (test_current_failed) return;                                                           \
        if (st_ != (want)) {                                                                       \
            TEST_FAIL_AT("%s: %s (%s), expected %s", #call, opreg_status_name(st_),                \
                         opreg_last_error(), opreg_status_name(want));                             \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define STEP(reg, call)      STEP_AS(reg, true, OPREG_OK, call)
#define STEP_MANY(reg, call) STEP_AS(reg, false, OPREG_OK, call)

/* A call that returns nothing (a close, an unload, reclaim, destroy): it must
 * not allocate, so there is nothing that could fail. */
#define NO_ALLOC(call)                                                                             \
    do {                                                                                           \
        unsigned long n0_ = opreg__fi_count();                                                     \
        call;                                                                                      \
        if (opreg__fi_count() != n0_) {                                                            \
            TEST_FAIL_AT("%s allocated %lu times", #call, opreg__fi_count() - n0_);                \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* ---- the driver ------------------------------------------------------------------ */

static bool leak_check_each(void) {
    const char *e = getenv("OPREG_FI_LEAK_CHECK_EACH");
    return e && *e == '1';
}

struct result {
    const char *name;
    unsigned long allocations, runs;
    size_t sites, sites_failed;
};
static struct result results[8];
static size_t nresults;

static void report(const struct result *r) {
    printf("  %-10s %6lu allocations, %4zu distinct sites (%zu failed), %6lu failing runs\n",
           r->name, r->allocations, r->sites, r->sites_failed, r->runs);
}

/* Run @p fn with allocation n failing (0: none); false when it failed a check. */
static bool run_once(void (*fn)(void), unsigned long n) {
    armed = n;
    armed_at = NULL;
    opreg__fi_arm(n, false);
    fn();
    unsigned long left = opreg__fi_disarm();
    if (!test_current_failed && n && !opreg__fi_failed())
        TEST_FAIL_AT("allocation %lu was never reached (%lu to go): the scenario is not "
                     "deterministic",
                     n, left);
    if (!test_current_failed && leak_check_each() && leaks_found())
        TEST_FAIL_AT("memory leaked (see the report above)");
    if (test_current_failed && n)
        fprintf(stderr, "  (with allocation %lu failing, at site %p)\n", n, armed_at);
    return !test_current_failed;
}

static void drive(const char *name, void (*fn)(void)) {
    struct result r = { name, 0, 0, 0, 0 };
    nsites = 0;
    opreg__fi_trace(trace, NULL);
    counting = true;
    bool ok = run_once(fn, 0);
    counting = false;
    r.allocations = opreg__fi_count();
    r.sites = nsites;
    unsigned long stride = r.allocations > MAX_RUNS ? r.allocations / MAX_RUNS + 1 : 1;
    for (unsigned long n = 1; ok && n <= r.allocations; n += stride, r.runs++)
        ok = run_once(fn, n);
    for (size_t i = 0; ok && i < nsites; i++)
        if (!sites[i].failed) {
            ok = run_once(fn, sites[i].first);
            r.runs++;
        }
    for (size_t i = 0; i < nsites; i++)
        r.sites_failed += sites[i].failed;
    opreg__fi_trace(NULL, NULL);
    armed = 0;
    if (ok && leaks_found()) TEST_FAIL_AT("%s: memory leaked (see the report above)", name);
    results[nresults++] = r;
}

/* ---- kernels ------------------------------------------------------------------------ */

static int released;

static opreg_status kernel_a(void *ctx, const opreg_op *op, const opreg_value *args,
                             opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    ((float *)args[0].u.tensor->data)[0] = 1;
    return OPREG_OK;
}

static opreg_status kernel_b(void *ctx, const opreg_op *op, const opreg_value *args,
                             opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    ((float *)args[0].u.tensor->data)[0] = 2;
    return OPREG_OK;
}

static void release(void *ctx) {
    (void)ctx;
    released++;
}

/* Call `op(Tensor! out)`-like op @p name on a one-float CPU tensor made on
 * the stack (no allocation); the value the kernel wrote. */
static float call_value(opreg_registry *reg, const char *name) {
    float v = 0;
    int64_t one = 1;
    DLTensor t = {
        .data = &v, .device = { kDLCPU, 0 }, .ndim = 1, .dtype = { kDLFloat, 32, 1 }, .shape = &one
    };
    const opreg_op *op;
    if (opreg_op_find(&op, reg, name) != OPREG_OK) return -1;
    opreg_value args[1] = { opreg_tensor_value(&t) };
    return opreg_call_boxed(op, args, 1, NULL, 0, NULL, 0) == OPREG_OK ? v : -1;
}

/* ---- scenarios ------------------------------------------------------------------------ */

/* The process-default registry's construction: a registry, then the
 * catalogue's definitions and its Reference, Meta and CPU kernels. */
static void scenario_catalogue(void) {
    opreg_registry *reg = NULL;
    char *before = pending() ? snapshot(NULL, false) : NULL;
    opreg_clear_error();
    opreg_status st = opreg_registry_create(&reg);
    if (landed(NULL, before, false, st, OPREG_OK, "opreg_registry_create")) {
        CHECK(reg == NULL);
        st = opreg_registry_create(&reg);
    }
    free(before);
    CHECK_EQ_INT(st, OPREG_OK);
    opreg_library *libs[4] = { NULL };
    STEP_MANY(reg, opreg_library_init__C(reg, &libs[0]));
    STEP_MANY(reg, opreg_library_impl_init__C_REFERENCE(reg, &libs[1]));
    STEP_MANY(reg, opreg_library_impl_init__C_META(reg, &libs[2]));
    STEP_MANY(reg, opreg_library_impl_init__C_CPU(reg, &libs[3]));
    CHECK(opreg_is_op_supported(reg, "_C::rms_norm"));
    NO_ALLOC(opreg_library_close(libs[3]));
    CHECK(opreg_op_kernel_kind(opreg_registry_op(reg, 0), OPREG_KEY_CPU) == OPREG_KERNEL_NONE);
    NO_ALLOC(opreg_registry_destroy(reg));
}

/* A library of the test's own: a definition with defaults and keyword-only
 * arguments, an overload, a kernel registered before its op is defined,
 * composite and direct kernels, a second IMPL library that overrides one and
 * adds a fallback, and then 80 more ops (the name table, the record list and
 * the library's list of definitions all grow). */
static void scenario_library(void) {
    opreg_registry *reg = NULL;
    opreg__fi_pause(true);
    CHECK_EQ_INT(opreg_registry_create(&reg), OPREG_OK);
    opreg__fi_pause(false);
    opreg_library *def = NULL, *impl = NULL;
    opreg_kernel ka = { kernel_a, &released, release, 0 }, kb = { kernel_b, NULL, NULL, 0 };
    STEP(reg, opreg_library_create(&def, reg, OPREG_LIBRARY_DEF, "fi", OPREG_KEY_CPU, "fi.c", 1));
    STEP(reg, opreg_library_impl(def, "early", OPREG_KEY_CPU, &ka));
    STEP(reg, opreg_library_def(NULL, def, "early(Tensor! out) -> ()"));
    STEP(reg, opreg_library_def(NULL, def,
                                "fi::a(Tensor! out, Tensor? x=None, float alpha=1.5, *, "
                                "int[2] stride=1, str mode=\"same\", bool[3] mask=[True, False, "
                                "True]) -> ()"));
    STEP(reg, opreg_library_def(NULL, def, "a.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"));
    STEP(reg, opreg_library_impl(def, "a", OPREG_KEY_CPU, &ka));
    STEP(reg, opreg_library_impl(def, "a", OPREG_KEY_META, &kb));
    STEP(reg, opreg_library_impl(def, "a.out", OPREG_KEY_COMPOSITE, &kb));
    STEP(reg, opreg_library_create(&impl, reg, OPREG_LIBRARY_IMPL, "fi", OPREG_KEY_CPU, "fi.c", 2));
    STEP(reg, opreg_library_impl(impl, "fi::a", OPREG_KEY_NONE, &kb)); /* overrides */
    STEP(reg, opreg_library_fallback(impl, OPREG_KEY_META, &ka));
    CHECK(call_value(reg, "fi::early") == 1);
    CHECK(call_value(reg, "fi::a") == 2);
    for (int i = 0; i < 80; i++) {
        char schema[64];
        snprintf(schema, sizeof schema, "op%d(Tensor! out, int[] sizes=[1, 2]) -> ()", i);
        STEP(reg, opreg_library_def(NULL, def, schema));
    }
    NO_ALLOC(opreg_library_close(impl));
    CHECK(call_value(reg, "fi::a") == 1);
    NO_ALLOC(opreg_library_close(def));
    int before = released;
    NO_ALLOC(opreg_registry_reclaim(reg));
    CHECK(released > before); /* the withdrawn kernels' contexts, at reclaim */
    NO_ALLOC(opreg_registry_destroy(reg));
}

/* Closing libraries: B replaces A's CPU kernel and adds a composite and a
 * fallback; closing B brings A's back (the listing as it was before B), and
 * closing A leaves nothing. Only the registrations can fail: no close may
 * allocate. */
static void scenario_close(void) {
    opreg_registry *reg = NULL;
    STEP(NULL, opreg_registry_create(&reg));
    opreg_library *a = NULL, *b = NULL, *c = NULL;
    opreg_kernel ka = { kernel_a, &released, release, 0 }, kb = { kernel_b, &released, release, 0 };
    STEP(reg, opreg_library_create(&a, reg, OPREG_LIBRARY_DEF, "cl", OPREG_KEY_CPU, "a.c", 1));
    STEP(reg, opreg_library_def(NULL, a, "f(Tensor! out) -> ()"));
    STEP(reg, opreg_library_def(NULL, a, "g(Tensor! out) -> ()"));
    STEP(reg, opreg_library_impl(a, "f", OPREG_KEY_CPU, &ka));
    STEP(reg, opreg_library_impl(a, "g", OPREG_KEY_META, &ka));
    char *with_a = snapshot(reg, false);
    STEP(reg, opreg_library_create(&b, reg, OPREG_LIBRARY_IMPL, "cl", OPREG_KEY_CPU, "b.c", 1));
    STEP(reg, opreg_library_impl(b, "f", OPREG_KEY_CPU, &kb));
    STEP(reg, opreg_library_impl(b, "g", OPREG_KEY_COMPOSITE, &kb));
    STEP(reg, opreg_library_create(&c, reg, OPREG_LIBRARY_IMPL, "cl", OPREG_KEY_CPU, "c.c", 1));
    STEP(reg, opreg_library_fallback(c, OPREG_KEY_CPU, &kb));
    STEP(reg, opreg_library_impl(c, "f", OPREG_KEY_CPU, &kb));
    CHECK(call_value(reg, "cl::f") == 2 && call_value(reg, "cl::g") == 2);
    NO_ALLOC(opreg_library_close(b)); /* the older of two overrides */
    NO_ALLOC(opreg_library_close(c)); /* the newest, with a fallback */
    char *after = snapshot(reg, false);
    bool same = strcmp(with_a, after) == 0;
    free(with_a);
    free(after);
    CHECK(same);
    CHECK(call_value(reg, "cl::f") == 1);
    NO_ALLOC(opreg_library_close(a));
    CHECK(opreg_registry_num_ops(reg) == 2 && !opreg_op_is_defined(opreg_registry_op(reg, 0)));
    NO_ALLOC(opreg_registry_reclaim(reg));
    NO_ALLOC(opreg_registry_destroy(reg));
}

static opreg_status twice_cpu(void *ctx, const opreg_op *op, const opreg_value *args,
                              opreg_value *rets) {
    (void)ctx, (void)op, (void)args, (void)rets;
    return OPREG_OK;
}

/* Plugins: plugin_v1 loads (a key taken back, an op defined, kernels on
 * three keys), is unloaded and loads again; plugin_halfway is refused by
 * design after its init registered halfway. A load that runs out of memory
 * leaves no record in the plugin list and the key as it was. The registry
 * is made, and each plugin loaded once, with the counter paused, so that the
 * keys exist and the op records are there (records are never removed). */
static void scenario_plugins(void) {
    opreg_registry *reg = NULL;
    opreg_library *base = NULL;
    opreg_plugin *p = NULL;
    opreg__fi_pause(true);
    CHECK_EQ_INT(opreg_registry_create(&reg), OPREG_OK);
    opreg__fi_pause(false);
    /* The registry's first attempt makes its plugin list. */
    STEP_AS(reg, true, OPREG_ERR_IO, opreg_plugin_load(NULL, reg, "/no/such/plugin.so"));
    opreg__fi_pause(true);
    CHECK_EQ_INT(
        opreg_library_create(&base, reg, OPREG_LIBRARY_DEF, "base", OPREG_KEY_CPU, "base.c", 1),
        OPREG_OK);
    CHECK_EQ_INT(opreg_library_def(NULL, base, "twice(Tensor x) -> ()"), OPREG_OK);
    CHECK_EQ_INT(opreg_library_impl_fn(base, "twice", OPREG_KEY_CPU, twice_cpu, NULL), OPREG_OK);
    CHECK_EQ_INT(opreg_plugin_load(&p, reg, PLUGIN_V1), OPREG_OK);
    opreg_plugin_unload(p);
    CHECK(opreg_plugin_load(NULL, reg, PLUGIN_HALFWAY) == OPREG_ERR_DEVICE);
    opreg_registry_reclaim(reg);
    opreg__fi_pause(false);

    STEP(reg, opreg_plugin_load(&p, reg, PLUGIN_V1));
    CHECK(opreg_is_op_supported(reg, "v1test::scale"));
    NO_ALLOC(opreg_plugin_unload(p));
    CHECK(!opreg_is_op_supported(reg, "v1test::scale"));
    STEP(reg, opreg_plugin_load(&p, reg, PLUGIN_V1));
    STEP_AS(reg, true, OPREG_ERR_DEVICE, opreg_plugin_load(NULL, reg, PLUGIN_HALFWAY));
    NO_ALLOC(opreg_plugin_unload(p));
    for (int i = 0; i < 4; i++) { /* the list grows past its first 8 records */
        STEP(reg, opreg_plugin_load(&p, reg, PLUGIN_V1));
        NO_ALLOC(opreg_plugin_unload(p));
    }
    NO_ALLOC(opreg_registry_reclaim(reg));
    NO_ALLOC(opreg_registry_destroy(reg));
}

static int cmp_line(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What a search leaves that a second search cannot change, line by line in
 * sorted order (a second search loads in another order): the ops and their
 * kernels, and the plugins loaded. (Each search records its refusals again,
 * so refused records are left out.) */
static char *search_state(opreg_registry *reg) {
    opreg__fi_pause(true);
    char *text = registry_listing(reg), line[4096];
    size_t len = strlen(text), cap = len + 1;
    for (size_t i = 0; i < opreg_plugin_count(reg); i++) {
        opreg_plugin_info info;
        if (opreg_plugin_info_at(&info, reg, i) != OPREG_OK) abort();
        if (info.state != OPREG_PLUGIN_LOADED) continue;
        snprintf(line, sizeof line, "loaded %s|%s\n", info.path, info.name);
        append(&text, &len, &cap, line);
    }
    char *lines[256];
    size_t n = 0;
    for (char *p = strtok(text, "\n"); p && n < 256; p = strtok(NULL, "\n"))
        lines[n++] = p;
    qsort(lines, n, sizeof *lines, cmp_line);
    char *sorted = malloc(len + 2);
    if (!sorted) abort();
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        at += (size_t)sprintf(sorted + at, "%s\n", lines[i]);
    sorted[at] = '\0';
    free(text);
    opreg__fi_pause(false);
    return sorted;
}

static char *searched; /* search_state() after the search without a failure */

/* The plugin search over the test plugins' folder: two load, three are
 * refused. When it runs out of memory it says so, and searching again
 * completes it: the same plugins end up loaded as without the failure. */
static void scenario_search(void) {
    opreg_registry *reg = NULL;
    opreg__fi_pause(true);
    CHECK_EQ_INT(opreg_registry_create(&reg), OPREG_OK);
    opreg__fi_pause(false);
    size_t n = 0;
    opreg_clear_error();
    opreg_status st = opreg_plugin_load_search(reg, &n);
    if (armed && opreg__fi_failed()) {
        if (st != OPREG_ERR_OUT_OF_MEMORY || !strstr(opreg_last_error(), "out of memory"))
            TEST_FAIL_AT("search with allocation %lu failing (site %p): %s, \"%s\"", armed,
                         armed_at, opreg_status_name(st), opreg_last_error());
        opreg__fi_disarm();
        st = opreg_plugin_load_search(reg, &n);
    }
    CHECK_EQ_INT(st, OPREG_OK);
    char *state = search_state(reg);
    if (!armed) {
        free(searched);
        searched = state;
    } else {
        bool same = strcmp(state, searched) == 0;
        if (!same)
            TEST_FAIL_AT("after a failed search and a second one:\n%s\nwithout the failure:\n%s",
                         state, searched);
        free(state);
    }
    NO_ALLOC(opreg_registry_destroy(reg));
}

/* ---- the schema corpus ------------------------------------------------------------------ */

/* Parse one schema and print it back, with allocation n failing (0: none);
 * the allocations made, or (unsigned long)-1 when a check failed. */
static unsigned long parse_once(const char *text, size_t len, unsigned long n, bool *parses) {
    /* A schema held meanwhile takes the parser's spare first chunk, so that
     * the one parsed allocates its own, as a first parse would. */
    opreg_schema *hold = NULL, *s = NULL;
    opreg__fi_pause(true);
    if (opreg_schema_parse(&hold, "hold() -> ()", 12, 0, NULL) != OPREG_OK) abort();
    opreg__fi_pause(false);
    armed = n;
    armed_at = NULL;
    opreg__fi_arm(n, false);
    unsigned long result = 0;
    opreg_clear_error();
    opreg_status st = opreg_schema_parse(&s, text, len, OPREG_SCHEMA_ALLOW_TYPEVARS, NULL);
    if (n && opreg__fi_failed()) {
        if (st != OPREG_ERR_OUT_OF_MEMORY || s || !strstr(opreg_last_error(), "out of memory")) {
            TEST_FAIL_AT("parse with allocation %lu failing (site %p): %s, schema %p, \"%s\"\n  "
                         "%.*s",
                         n, armed_at, opreg_status_name(st), (void *)s, opreg_last_error(),
                         (int)len, text);
            result = (unsigned long)-1;
        }
        opreg__fi_disarm();
        st = opreg_schema_parse(&s, text, len, OPREG_SCHEMA_ALLOW_TYPEVARS, NULL);
        if (result == 0 && st != OPREG_OK) {
            TEST_FAIL_AT("parse again after a failure: %s", opreg_last_error());
            result = (unsigned long)-1;
        }
    }
    *parses = st == OPREG_OK;
    if (st == OPREG_OK) {
        opreg_clear_error();
        char *str = opreg_schema_to_string(s, OPREG_SCHEMA_CANONICAL);
        if (!str && (!opreg__fi_failed() || !strstr(opreg_last_error(), "out of memory"))) {
            TEST_FAIL_AT("opreg_schema_to_string: NULL with \"%s\"", opreg_last_error());
            result = (unsigned long)-1;
        }
        opreg_string_free(str);
    }
    opreg_schema_free(s);
    if (result == 0) result = opreg__fi_count();
    opreg__fi_disarm();
    opreg_schema_free(hold);
    return result;
}

static size_t corpus_lines;

static void scenario_corpus(void) {
    struct result r = { "corpus", 0, 0, 0, 0 };
    DIR *d = opendir(OPREG_CORPUS_DIR);
    if (!d) {
        printf("  corpus     skipped: no folder %s\n", OPREG_CORPUS_DIR);
        return;
    }
    nsites = 0;
    opreg__fi_trace(trace, NULL);
    size_t nlines = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t l = strlen(e->d_name);
        if (l < 9 || strcmp(e->d_name + l - 8, ".schemas") != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", OPREG_CORPUS_DIR, e->d_name);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL);
        char line[1 << 16];
        while (fgets(line, sizeof line, f)) {
            size_t len = strcspn(line, "\r\n");
            bool parses;
            counting = true;
            unsigned long k = parse_once(line, len, 0, &parses);
            counting = false;
            if (!parses) continue; /* the nameless ones: another test's business */
            nlines++;
            r.allocations += k;
            for (unsigned long n = 1; n <= k && !test_current_failed; n++, r.runs++)
                if (parse_once(line, len, n, &parses) == (unsigned long)-1) break;
            if (test_current_failed) break;
        }
        fclose(f);
        if (test_current_failed) break;
    }
    closedir(d);
    opreg__fi_trace(NULL, NULL);
    armed = 0;
    r.sites = nsites;
    for (size_t i = 0; i < nsites; i++)
        r.sites_failed += sites[i].failed;
    if (!test_current_failed && leaks_found()) TEST_FAIL_AT("corpus: memory leaked");
    results[nresults++] = r;
    corpus_lines = nlines;
}

/* ---- main --------------------------------------------------------------------------------- */

TEST(catalogue) {
    drive("catalogue", scenario_catalogue);
}

TEST(own_library) {
    drive("library", scenario_library);
}

TEST(close) {
    drive("close", scenario_close);
}

TEST(plugins) {
    drive("plugins", scenario_plugins);
}

TEST(search) {
    char path[4096];
    snprintf(path, sizeof path, "%s", PLUGIN_V1);
    char *slash = strrchr(path, '/');
    CHECK(slash != NULL);
    *slash = '\0';
    setenv("OPREG_PLUGIN_PATH", path, 1);
    drive("search", scenario_search);
    unsetenv("OPREG_PLUGIN_PATH");
    free(searched);
}

TEST(corpus) {
    scenario_corpus();
}

int main(void) {
    /* The first parse of a thread allocates the parser's spare chunk, which
     * then stays: make it before anything is counted. */
    opreg_schema *s = NULL;
    if (opreg_schema_parse(&s, "warm() -> ()", 12, 0, NULL) != OPREG_OK) return 1;
    opreg_schema_free(s);
    clock_t t0 = clock();
    RUN(catalogue);
    RUN(own_library);
    RUN(close);
    RUN(plugins);
    RUN(search);
    RUN(corpus);
    printf("allocations reached and failed, by scenario:\n");
    for (size_t i = 0; i < nresults; i++)
        report(&results[i]);
    printf("  (%zu distinct allocation sites in all)\n", nall_sites);
    const char *list = getenv("OPREG_FI_SITES");
    for (size_t i = 0; list && *list == '1' && i < nall_sites; i++) {
        Dl_info info;
        if (dladdr(all_sites[i], &info) && info.dli_fname)
            printf("  site %s +0x%zx\n", info.dli_fname,
                   (size_t)((const char *)all_sites[i] - (const char *)info.dli_fbase));
    }
    if (corpus_lines)
        printf("  (corpus: %zu schemas that parse, each failed at each of its allocations)\n",
               corpus_lines);
    printf("  (%.1f s of CPU time)\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
    return test_summary();
}
