/* libFuzzer target for the plugin loader: the description a plugin's entry
 * point returns, the backend table it points to, and what its init does
 * through the host table, all decoded from the input and loaded with
 * opreg__plugin_load_entry() (the file loader's path after dlsym) into a
 * registry created and destroyed for each input.
 *
 * The plugin's memory (the description, its strings, the backend table) is
 * allocated to exactly the size the plugin declares, so that a read past
 * struct_size is an ASan report, and it is poisoned when the loader gives
 * the plugin's code back: at once for a refusal before init, after fini
 * (or, without fini, after the reclaim that would dlclose) once init ran.
 *
 * Invariants (each an abort, besides ASan, UBSan and LeakSanitizer):
 *  - a refusal returns a known status with a message, records the attempt
 *    as refused with a reason (unless it ran out of memory), and leaves the
 *    registry's ops and kernels on the keys that existed, and those keys'
 *    availability, as they were; a key it added is unavailable;
 *  - a load either succeeds with a plugin handle or refuses with none;
 *  - fini runs once for each plugin whose init ran, after the release of
 *    every kernel context it registered, and never for the others; each
 *    such context is released once. */
#define _POSIX_C_SOURCE 200809L

#include "opreg/opreg.h"
#include "registry/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define FZ_ASAN 1
#endif
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz_plugin_desc: invariant violated: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  last error: %s\n", opreg_last_error());
    __builtin_trap();
}

static void poison(const void *p, size_t n) {
#ifdef FZ_ASAN
    __asan_poison_memory_region(p, n);
#else
    (void)p, (void)n;
#endif
}

static void unpoison(const void *p, size_t n) {
#ifdef FZ_ASAN
    __asan_unpoison_memory_region(p, n);
#else
    (void)p, (void)n;
#endif
}

/* ---- the input ----------------------------------------------------------------- */

static const uint8_t *in;
static size_t in_left;

static uint8_t u8(void) {
    if (!in_left) return 0;
    in_left--;
    return *in++;
}

static bool print_steps;

static void note(const char *fmt, ...) {
    if (!print_steps) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/* ---- one plugin's memory and what it saw ---------------------------------------- */

#define MAX_PLUGINS 8
#define MAX_BLOCKS  8
#define MAX_LIBS    6

typedef struct plugin_mem {
    void *blocks[MAX_BLOCKS]; /* description, strings, backend table */
    size_t sizes[MAX_BLOCKS];
    int nblocks;
    bool given_back; /* poisoned: the loader may no longer read it */
    bool init_ran;   /* init was called: fini is due */
    bool has_fini;   /* the description has a fini */
    bool loaded;     /* loaded and not yet unloaded */
    bool pending;    /* unloaded, or init failed: fini waits for reclaim */
    int fini_calls;  /* how often fini ran */
    int registered;  /* kernel contexts with a release, accepted */
    int released;    /* and released */
    opreg_plugin *plugin;
    opreg_library *libs[MAX_LIBS];
    bool lib_closed[MAX_LIBS];
    int nlibs;
    opreg_dispatch_key key;
} plugin_mem;

static plugin_mem mems[MAX_PLUGINS];
static int nmems;
static plugin_mem *loading;            /* the plugin whose entry or init runs */
static opreg_plugin_desc *next_desc;   /* what the entry point returns */
static bool entry_refuses, entry_says; /* return NULL, with a message or not */
static opreg_registry *reg;

static void *plugin_block(plugin_mem *m, size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p || m->nblocks == MAX_BLOCKS) abort();
    m->blocks[m->nblocks] = p;
    m->sizes[m->nblocks++] = n ? n : 1;
    return p;
}

static const char *plugin_string(plugin_mem *m, const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s);
    char *d = plugin_block(m, n + 1);
    memcpy(d, s, n + 1);
    return d;
}

/* The plugin's code goes away: nothing of its memory may be read again. */
static void give_back(plugin_mem *m) {
    if (m->given_back) return;
    m->given_back = true;
    for (int i = 0; i < m->nblocks; i++)
        poison(m->blocks[i], m->sizes[i]);
}

static void free_mem(plugin_mem *m) {
    for (int i = 0; i < m->nblocks; i++) {
        unpoison(m->blocks[i], m->sizes[i]);
        free(m->blocks[i]);
    }
    memset(m, 0, sizeof *m);
}

/* ---- the plugin's code ------------------------------------------------------------- */

static opreg_status kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                           opreg_value *rets) {
    (void)ctx, (void)op, (void)args, (void)rets;
    return OPREG_OK;
}

/* A kernel context with a release: counts on its plugin. */
struct counted {
    plugin_mem *m;
    int released;
};

static void release(void *ctx) {
    struct counted *c = ctx;
    if (c->released++) fail("a kernel context was released twice");
    if (c->m->fini_calls) fail("a kernel context was released after its plugin's fini");
    c->m->released++;
    free(c);
}

static bool available(void *ctx, char *why, size_t cap) {
    (void)ctx;
    (void)why, (void)cap;
    return true;
}

static bool unavailable(void *ctx, char *why, size_t cap) {
    (void)ctx;
    if (why && cap) snprintf(why, cap, "the fuzzed device is switched off");
    return false;
}

static bool unavailable_silent(void *ctx, char *why, size_t cap) {
    (void)ctx, (void)why, (void)cap;
    return false;
}

static int count_devices(void *ctx) {
    (void)ctx;
    return 2;
}

static opreg_status dev_alloc(void *ctx, void **out, size_t bytes, int device_id) {
    (void)ctx, (void)device_id;
    *out = malloc(bytes ? bytes : 1);
    return *out ? OPREG_OK : OPREG_ERR_OUT_OF_MEMORY;
}

static opreg_status dev_alloc_fails(void *ctx, void **out, size_t bytes, int device_id) {
    (void)ctx, (void)bytes, (void)device_id;
    *out = NULL;
    return OPREG_ERR_DEVICE;
}

static void dev_free(void *ctx, void *ptr, size_t bytes, int device_id) {
    (void)ctx, (void)bytes, (void)device_id;
    free(ptr);
}

static opreg_status dev_sync(void *ctx, int device_id) {
    (void)ctx, (void)device_id;
    return OPREG_OK;
}

static const char *const namespaces[] = { "fzp", "fzq", "base", "_C", "", "bad ns", NULL, "fzp" };
static const char *const schemas[] = {
    "op(Tensor x) -> ()",
    "op2(Tensor x, int n=1) -> Tensor",
    "fzp::op3(Tensor(a!) x) -> ()",
    "base::twice(Tensor x) -> ()",
    "op(Tensor x) -> ()",
    "bad(",
    "op4(Tensor x, *, int k) -> ()",
    NULL,
};
static const char *const op_names[] = { "op",   "twice", "base::twice", "op2",
                                        "nope", "",      NULL,          "fzp::op3" };

static opreg_dispatch_key key_choice(uint8_t b, opreg_dispatch_key own) {
    static const opreg_dispatch_key keys[] = { OPREG_KEY_CPU,
                                               OPREG_KEY_META,
                                               OPREG_KEY_COMPOSITE,
                                               OPREG_KEY_NONE,
                                               OPREG_KEY_REFERENCE,
                                               31,
                                               99,
                                               OPREG_KEY_CUDA };
    if (b < 96) return own;
    return keys[b % 8];
}

static opreg_library *pick_lib(plugin_mem *m, uint8_t b) {
    if (!m->nlibs) return NULL;
    int i = b % m->nlibs;
    return m->lib_closed[i] ? NULL : m->libs[i];
}

static void init_step(plugin_mem *m, const opreg_host *h, opreg_plugin *plugin,
                      opreg_dispatch_key key) {
    uint8_t what = u8(), a = u8(), b = u8();
    opreg_library *lib;
    opreg_status st;
    switch (what % 9) {
    case 0:
    case 1: { /* a library: DEF of a namespace of its own (or not), or IMPL */
        opreg_library_kind kind = what % 9 == 0 ? OPREG_LIBRARY_DEF : OPREG_LIBRARY_IMPL;
        const char *ns = namespaces[a % 8];
        if (kind == OPREG_LIBRARY_IMPL && a % 8 == 0) ns = "base";
        if (m->nlibs == MAX_LIBS) break;
        st = h->library_create(&lib, plugin, kind, ns, key_choice(b, key));
        note("    library_create(%s, %s) -> %s\n", kind == OPREG_LIBRARY_DEF ? "DEF" : "IMPL",
             ns ? ns : "(NULL)", opreg_status_name(st));
        if (st == OPREG_OK) m->libs[m->nlibs++] = lib;
        break;
    }
    case 2:
        if (!(lib = pick_lib(m, a))) break;
        st = h->library_def(NULL, lib, schemas[b % 8] ? schemas[b % 8] : "x");
        note("    library_def(%s) -> %s\n", schemas[b % 8] ? schemas[b % 8] : "x",
             opreg_status_name(st));
        break;
    case 3:
    case 4: { /* a kernel, with a counted context or none */
        if (!(lib = pick_lib(m, a))) break;
        uint8_t c = u8();
        struct counted *ctx = NULL;
        opreg_kernel k = { kernel, NULL, NULL, c & 1 ? OPREG_KERNEL_MIXED_DEVICES : 0 };
        if (c & 2) {
            ctx = calloc(1, sizeof *ctx);
            if (!ctx) abort();
            ctx->m = m;
            k.context = ctx;
            k.release = release;
        }
        if (what % 9 == 3)
            st = h->library_impl(lib, op_names[b % 8], key_choice(c, key), &k);
        else
            st = h->library_fallback(lib, key_choice(b, key), &k);
        note("    library_%s(%s) -> %s\n", what % 9 == 3 ? "impl" : "fallback",
             what % 9 == 3 && op_names[b % 8] ? op_names[b % 8] : "", opreg_status_name(st));
        if (ctx && st == OPREG_OK)
            m->registered++;
        else
            free(ctx); /* not taken: still the plugin's */
        break;
    }
    case 5: /* close one of its libraries itself */
        if (!m->nlibs || m->lib_closed[a % m->nlibs]) break;
        h->library_close(m->libs[a % m->nlibs]);
        m->lib_closed[a % m->nlibs] = true;
        note("    library_close\n");
        break;
    case 6: { /* a tensor on its own device, or on the CPU */
        DLTensor *t;
        int64_t n = a % 5;
        DLDevice d = { kDLCPU, 0 };
        if (key != OPREG_KEY_NONE && !(b & 1)) {
            d.device_type = (DLDeviceType)opreg_key_backend(key)->device_type;
            d.device_id = b >> 7;
        }
        st = h->tensor_empty(&t, d, OPREG_DTYPE_F32, 1, &n);
        note("    tensor_empty -> %s\n", opreg_status_name(st));
        if (st == OPREG_OK) h->tensor_free(t);
        break;
    }
    case 7: { /* a call of what is registered now */
        const opreg_op *op;
        const char *name = a & 1 ? "base::twice" : "fzp::op";
        if (h->op_find(&op, plugin, name) != OPREG_OK) break;
        int64_t n = 2;
        float data[2] = { 1, 2 };
        DLTensor t = { 0 };
        t.data = data;
        t.ndim = 1;
        t.shape = &n;
        t.device.device_type = kDLCPU;
        t.dtype.code = kDLFloat;
        t.dtype.bits = 32;
        t.dtype.lanes = 1;
        opreg_value v = opreg_tensor_value(&t);
        st = h->call_boxed(op, &v, 1, NULL, 0, NULL, 0);
        note("    call %s -> %s\n", name, opreg_status_name(st));
        if (OPREG_HOST_HAS(h, check_args)) h->check_args(op, &v, 1);
        break;
    }
    default:
        if (OPREG_HOST_HAS(h, plugin_path) && !h->plugin_path(plugin))
            fail("the host gives no plugin path");
        h->log(OPREG_LOG_INFO, "fuzz");
        break;
    }
}

static opreg_status plugin_init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                                void **user) {
    plugin_mem *m = loading;
    if (!m || m->given_back) fail("init ran for a plugin that is not loading");
    if (m->init_ran) fail("init ran twice");
    m->init_ran = true;
    m->key = key;
    if (!h || !plugin || !user) fail("init got a NULL argument");
    if (m->has_fini) { /* fini frees it: a fini that is not called leaks */
        plugin_mem **u = malloc(sizeof *u);
        if (!u) abort();
        *u = m;
        *user = u;
    }
    int steps = u8() % 8;
    note("    init: %d steps, key %d\n", steps, (int)key);
    for (int i = 0; i < steps; i++)
        init_step(m, h, plugin, key);
    uint8_t end = u8();
    if (end < 160) return OPREG_OK;
    opreg_status st = (opreg_status)(1 + end % OPREG_ERR_MUTATION);
    if (end & 1) return h->set_error(st, "the fuzzed init gives up");
    opreg_clear_error();
    return st; /* no message */
}

static void plugin_fini(void *user) {
    if (!user) fail("fini got no user state: init never ran, or its state was lost");
    plugin_mem *m = *(plugin_mem **)user;
    free(user);
    if (m->fini_calls++) fail("fini ran twice");
    if (m->loaded) fail("fini ran for a plugin that is still loaded");
    if (m->released != m->registered)
        fail("fini ran with %d of %d kernel contexts released", m->released, m->registered);
    give_back(m); /* the loader unloads the code next */
}

static const opreg_plugin_desc *entry(const opreg_host *h) {
    if (!h || h->struct_size < offsetof(opreg_host, library_create)) fail("entry got a bad host");
    if (entry_refuses) {
        if (entry_says) h->set_error(OPREG_ERR_DEVICE, "the fuzzed plugin has no device");
        return NULL;
    }
    return next_desc;
}

/* ---- building a description --------------------------------------------------------- */

static char long_a[301];

static const char *const plugin_names[] = {
    "fz0",        "fz1",      "fz2",      "fz3",      "fz0", "fz1", "",       long_a + 269,
    long_a + 268, "bad-name", "bad name", "\xc3\xbc", NULL,  "CPU", "opencl", long_a + 100,
};

static const char *const backend_names[] = {
    "fzb0",      "fzb1", "fzb2", "fzb3",       "CPU",        "cpu",       "Meta", "cuda",
    "Reference", "",     NULL,   long_a + 269, long_a + 268, "composite", "fz0",  "FZB0",
};

/* Each backend name's own device type (a plugin may still ask for another). */
static int32_t device_type_of(int name) {
    return name < 4 ? 20 + name : 40 + name;
}

static uint32_t struct_size(uint8_t b, uint32_t exact) {
    static const uint32_t odd[16] = { 0,  4,  8,  12, 15, 16,   24,    31,
                                      32, 40, 47, 56, 64, 4096, 65535, UINT32_MAX };
    if (b < 160) return exact;
    if (b < 176) return exact - 8 * (b % 4 + 1);
    if (b < 192) return exact + 8 * (b % 4 + 1);
    return odd[b % 16];
}

static uint32_t version(uint8_t b, uint32_t ours) {
    static const uint32_t major[4] = { 1, 0, 2, 0xffff }, minor[4] = { 1, 0, 2, 0xffff };
    if (b < 192) return ours;
    return major[b % 4] << 16 | minor[(b >> 2) % 4];
}

/* Bytes of memory behind a table that says @p size: a plugin compiled with
 * a header of that size, or (past 4 KiB, a lie) a bit more than the host
 * knows. At least the struct_size member itself. */
static size_t table_bytes(uint32_t size, size_t known) {
    if (size < 4) return 4;
    if (size <= 4096) return size;
    return known + 16;
}

static opreg_backend *make_backend(plugin_mem *m) {
    uint8_t sb = u8(), vb = u8(), nb = u8(), db = u8(), fb = u8(), gb = u8();
    opreg_backend b;
    memset(&b, 0, sizeof b);
    b.struct_size = struct_size(sb, sizeof(opreg_backend));
    b.abi_version = version(vb, OPREG_BACKEND_ABI_VERSION);
    b.name = plugin_string(m, backend_names[nb % 16]);
    static const int32_t types[8] = { kDLCPU,    kDLCUDA,     (int32_t)OPREG_DEVICE_META,
                                      kDLOpenCL, kDLCUDAHost, 63,
                                      1000,      -1 };
    b.device_type = db < 192 ? device_type_of(nb % 16) : types[db % 8];
    b.context = m;
    b.is_available = fb % 4 == 0   ? NULL
                     : fb % 4 == 1 ? available
                     : fb % 4 == 2 ? unavailable
                                   : unavailable_silent;
    b.device_count = fb & 4 ? count_devices : NULL;
    if (fb & 8) {
        b.alloc = fb & 16 ? dev_alloc_fails : dev_alloc;
        b.free = dev_free;
    }
    b.synchronize = fb & 32 ? dev_sync : NULL;
    b.flags = gb < 200 ? 0 : (uint32_t)gb;
    size_t n = table_bytes(b.struct_size, sizeof b);
    opreg_backend *t = plugin_block(m, n);
    memcpy(t, &b, n < sizeof b ? n : sizeof b);
    note("  backend: size %u abi %x name %s type %d\n", b.struct_size, b.abi_version,
         b.name ? b.name : "(NULL)", (int)b.device_type);
    return t;
}

static opreg_plugin_desc *make_desc(plugin_mem *m) {
    uint8_t sb = u8(), vb = u8(), nb = u8(), verb = u8(), bb = u8(), fb = u8();
    opreg_plugin_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = struct_size(sb, sizeof(opreg_plugin_desc));
    d.abi_version = version(vb, OPREG_PLUGIN_ABI_VERSION);
    d.name = plugin_string(m, plugin_names[nb % 16]);
    static const char *const versions[4] = { "1.0", NULL, "", long_a };
    d.version = plugin_string(m, versions[verb % 4]);
    d.backend = bb < 96 ? NULL : make_backend(m);
    d.init = fb < 8 ? NULL : plugin_init;
    d.fini = fb & 1 ? plugin_fini : NULL;
    size_t n = table_bytes(d.struct_size, sizeof d);
    opreg_plugin_desc *t = plugin_block(m, n);
    memcpy(t, &d, n < sizeof d ? n : sizeof d);
    /* What the loader may call: what struct_size covers. */
    m->has_fini = d.fini && d.struct_size >= offsetof(opreg_plugin_desc, fini) + sizeof d.fini;
    note("  desc: size %u abi %x name %s init %d fini %d\n", d.struct_size, d.abi_version,
         d.name ? d.name : "(NULL)", d.init != NULL, d.fini != NULL);
    return t;
}

/* ---- the steps --------------------------------------------------------------------- */

static bool avail[OPREG_MAX_KEYS];
static int nkeys;

/* The registry as a text, as tests/registry/plugin/plugin_test.h's registry_listing
 * writes it, but over the keys of the last snapshot_keys() only (a plugin's
 * key stays after its init failed, docs/plugins.md, and shows the composite
 * kernels as registered for it too), and without the reason of a key that
 * was down (a plugin key's is that of the last plugin to hold it). The
 * caller frees it. */
static char *listing(void) {
    size_t cap = 1 << 14, len = 0;
    char *buf = malloc(cap);
    if (!buf) abort();
    buf[0] = '\0';
    for (size_t i = 0; i < opreg_registry_num_ops(reg); i++) {
        const opreg_op *op = opreg_registry_op(reg, i);
        if (!opreg_op_is_defined(op)) continue;
        char line[8192], schema[1024];
        opreg_schema_format(opreg_op_schema(op), OPREG_SCHEMA_CANONICAL, schema, sizeof schema);
        size_t n = (size_t)snprintf(line, sizeof line, "%s|composite=%d", schema,
                                    (int)opreg_op_has_composite(op));
        for (int k = 0; k < nkeys && n < sizeof line; k++) {
            opreg_kernel_kind kind = opreg_op_kernel_kind(op, k);
            if (kind == OPREG_KERNEL_NONE) continue;
            if (!avail[k]) {
                n += (size_t)snprintf(line + n, sizeof line - n, "|%s=%d", opreg_key_name(k),
                                      (int)kind);
                continue;
            }
            opreg_support_info info;
            DLDevice dev = { (DLDeviceType)opreg_key_backend(k)->device_type, 0 };
            opreg_explain_support(&info, reg, opreg_op_name(op), &dev);
            n += (size_t)snprintf(line + n, sizeof line - n, "|%s=%d:%s", opreg_key_name(k),
                                  (int)kind, info.message);
        }
        size_t add = strlen(line) + 2;
        while (len + add > cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) abort();
            buf = b;
        }
        len += (size_t)snprintf(buf + len, cap - len, "%s\n", line);
    }
    return buf;
}

static void snapshot_keys(void) {
    nkeys = opreg_key_count();
    for (int k = 0; k < nkeys; k++)
        avail[k] = opreg_key_is_available(k, NULL, 0);
}

static void load_one(void) {
    if (nmems == MAX_PLUGINS) return;
    plugin_mem *m = &mems[nmems++];
    uint8_t how = u8();
    entry_refuses = how >= 248;
    entry_says = how & 1;
    next_desc = make_desc(m);
    snapshot_keys();
    char *before = listing();
    size_t count = opreg_plugin_count(reg);
    char label[32];
    snprintf(label, sizeof label, "fuzz:%d", nmems - 1);
    opreg_plugin *p = (opreg_plugin *)(uintptr_t)1;
    loading = m;
    opreg_clear_error();
    opreg_status st = opreg__plugin_load_entry(&p, reg, label, entry);
    loading = NULL;
    note("  load -> %s: %s\n", opreg_status_name(st), opreg_last_error());
    /* Every attempt is recorded, but one that ran out of memory, which leaves
     * the list as it was. */
    bool recorded = opreg_plugin_count(reg) == count + 1;
    if (!recorded && !(st == OPREG_ERR_OUT_OF_MEMORY && opreg_plugin_count(reg) == count))
        fail("the attempt was not recorded");
    opreg_plugin_info info;
    memset(&info, 0, sizeof info);
    info.state = OPREG_PLUGIN_REFUSED;
    info.reason = "(not recorded)";
    if (recorded && opreg_plugin_info_at(&info, reg, count) != OPREG_OK)
        fail("no record of the attempt");
    if (st == OPREG_OK) {
        if (!p) fail("loaded, but no plugin handle");
        if (info.state != OPREG_PLUGIN_LOADED) fail("loaded, but recorded as %d", info.state);
        if (!m->init_ran) fail("loaded without init");
        m->plugin = p;
        m->loaded = true;
    } else {
        if (p) fail("refused, but a plugin handle came back");
        if ((int)st < 0 || (int)st > OPREG_ERR_MUTATION) fail("unknown status %d", (int)st);
        if (!opreg_last_error()[0]) fail("refused with %s and no message", opreg_status_name(st));
        if (info.state != OPREG_PLUGIN_REFUSED || !info.reason[0])
            fail("refused, but recorded as %d with reason '%s'", info.state, info.reason);
        char *after = listing();
        if (strcmp(before, after) != 0)
            fail("a refused load changed the registry:\nbefore:\n%s\nafter:\n%s", before, after);
        free(after);
        for (int k = 0; k < opreg_key_count(); k++) {
            bool now = opreg_key_is_available(k, NULL, 0);
            if (k < nkeys ? now != avail[k] : now)
                fail("a refused load changed the availability of key %d (%s)", k,
                     opreg_key_name(k));
        }
        if (m->init_ran)
            m->pending = true; /* its code stays until reclaim runs fini */
        else
            give_back(m);
    }
    free(before);
}

static void unload_one(void) {
    uint8_t b = u8();
    if (!nmems) return;
    plugin_mem *m = &mems[b % nmems];
    if (!m->loaded) return;
    opreg_plugin_unload(m->plugin);
    m->loaded = false;
    m->pending = true;
    if (m->key != OPREG_KEY_NONE && opreg_key_is_available(m->key, NULL, 0))
        fail("the key of an unloaded plugin is still available");
    note("  unload %d\n", b % nmems);
}

/* After reclaim or destroy: every pending plugin's fini has run, and its
 * code is gone. */
static void after_reclaim(void) {
    for (int i = 0; i < nmems; i++) {
        plugin_mem *m = &mems[i];
        if (!m->pending) continue;
        if (m->has_fini && m->fini_calls != 1)
            fail("plugin %d: fini ran %d times, not once", i, m->fini_calls);
        if (m->released != m->registered)
            fail("plugin %d: %d of %d kernel contexts released", i, m->released, m->registered);
        m->pending = false;
        give_back(m);
    }
}

/* Keys are process-wide and never withdrawn: give every backend name its
 * key once, here, through a plugin whose init fails, so that each input
 * finds the same keys (all released) whatever ran before it. */
static opreg_status failing_init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                                 void **user) {
    (void)plugin, (void)key, (void)user;
    return h->set_error(OPREG_ERR_DEVICE, "the key is taken once, at start-up");
}

static opreg_backend claim_backend;
static opreg_plugin_desc claim_desc;

static const opreg_plugin_desc *claim_entry(const opreg_host *h) {
    (void)h;
    return &claim_desc;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    memset(long_a, 'a', sizeof long_a - 1);
    for (int i = 0; i < 16; i++) {
        if (!backend_names[i]) continue;
        claim_backend.struct_size = sizeof claim_backend;
        claim_backend.abi_version = OPREG_BACKEND_ABI_VERSION;
        claim_backend.name = backend_names[i];
        claim_backend.device_type = device_type_of(i);
        claim_desc.struct_size = sizeof claim_desc;
        claim_desc.abi_version = OPREG_PLUGIN_ABI_VERSION;
        claim_desc.name = "fzkeys";
        claim_desc.backend = &claim_backend;
        claim_desc.init = failing_init;
        if (opreg_registry_create(&reg) != OPREG_OK) abort();
        opreg__plugin_load_entry(NULL, reg, "start-up", claim_entry);
        opreg_registry_destroy(reg);
    }
    reg = NULL;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    in = data;
    in_left = size;
    print_steps = getenv("OPREG_FUZZ_PRINT") != NULL;
    if (opreg_registry_create(&reg) != OPREG_OK) abort();
    /* An op with a CPU kernel, for plugins to replace and to call. */
    opreg_library *base;
    opreg_kernel k = { kernel, NULL, NULL, 0 };
    if (opreg_library_create(&base, reg, OPREG_LIBRARY_DEF, "base", OPREG_KEY_CPU, __FILE__,
                             __LINE__) != OPREG_OK ||
        opreg_library_def(NULL, base, "twice(Tensor x) -> ()") != OPREG_OK ||
        opreg_library_impl(base, "twice", OPREG_KEY_CPU, &k) != OPREG_OK)
        abort();
    int steps = 1 + u8() % 8;
    for (int i = 0; i < steps; i++) {
        uint8_t s = u8();
        if (s < 160) {
            note("load %d\n", nmems);
            load_one();
        } else if (s < 200) {
            unload_one();
        } else if (s < 232) {
            note("reclaim\n");
            opreg_registry_reclaim(reg);
            after_reclaim();
        } else {
            opreg_library_close(base); /* the base op goes, and its kernels */
            base = NULL;
        }
    }
    opreg_library_close(base);
    for (int i = 0; i < nmems; i++)
        if (mems[i].loaded) mems[i].loaded = false, mems[i].pending = true;
    opreg_registry_destroy(reg);
    reg = NULL;
    after_reclaim();
    for (int i = 0; i < nmems; i++) {
        plugin_mem *m = &mems[i];
        if (!m->init_ran && m->fini_calls) fail("plugin %d: fini ran without init", i);
        free_mem(m);
    }
    nmems = 0;
    return 0;
}
