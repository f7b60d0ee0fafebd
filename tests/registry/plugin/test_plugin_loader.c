/* The plugin loader and the ABI stability rules (docs/plugins.md):
 * - each failure (missing file, not a plugin, a future major version, an
 *   init that fails halfway) leaves the op and kernel listing unchanged;
 * - a plugin built against the frozen 1.0 header loads and works;
 * - a plugin that uses a 1.1 member degrades on a simulated 1.0 host;
 * - unload withdraws everything; fini and the unloading of the code wait
 *   for reclaim; a plugin's key is taken back by the next of its name. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "plugin_test.h"
#include "registry/internal.h"

#include <unistd.h>

static opreg_status base_twice(void *ctx, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    (void)ctx, (void)op, (void)rets;
    float *o = args[0].u.tensor->data;
    const float *x = args[1].u.tensor->data;
    for (int64_t i = 0; i < opreg_tensor_numel(args[1].u.tensor); i++)
        o[i] = 2.0f * x[i];
    return OPREG_OK;
}

/* A registry with an op of its own (base::twice on CPU), so that a plugin
 * has something to override. */
static opreg_registry *new_registry(opreg_library **lib) {
    opreg_registry *reg = NULL;
    if (opreg_registry_create(&reg) != OPREG_OK) return NULL;
    opreg_library_create(lib, reg, OPREG_LIBRARY_DEF, "base", OPREG_KEY_CPU, __FILE__, __LINE__);
    opreg_library_def(NULL, *lib, "twice(Tensor! out, Tensor x) -> ()");
    opreg_library_impl_fn(*lib, "twice", OPREG_KEY_CPU, base_twice, NULL);
    return reg;
}

static const opreg_plugin_info *info_of(opreg_registry *reg, size_t i) {
    static opreg_plugin_info info;
    return opreg_plugin_info_at(&info, reg, i) == OPREG_OK ? &info : NULL;
}

/* Load @p path, expect @p want, and compare the listings around it. */
static int refused_unchanged(opreg_registry *reg, const char *path, opreg_status want, char *msg,
                             size_t cap) {
    char *before = registry_listing(reg);
    int keys = opreg_key_count();
    opreg_plugin *p = (opreg_plugin *)1;
    opreg_status st = opreg_plugin_load(&p, reg, path);
    snprintf(msg, cap, "%s", opreg_last_error());
    char *after = registry_listing(reg);
    int ok = st == want && p == NULL && before && after && strcmp(before, after) == 0;
    if (!ok)
        fprintf(stderr, "load %s: status %s (want %s), keys %d -> %d\nbefore:\n%s\nafter:\n%s\n",
                path, opreg_status_name(st), opreg_status_name(want), keys, opreg_key_count(),
                before, after);
    free(before);
    free(after);
    return ok;
}

TEST(missing_file) {
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    char msg[2048];
    CHECK(refused_unchanged(reg, PLUGIN_DIR "/no_such_plugin.so", OPREG_ERR_IO, msg, sizeof msg));
    CHECK_CONTAINS(msg, "no such file");
    CHECK_EQ_INT(opreg_plugin_count(reg), 1);
    CHECK_EQ_INT(info_of(reg, 0)->state, OPREG_PLUGIN_REFUSED);
    CHECK_CONTAINS(info_of(reg, 0)->reason, "no such file");
    opreg_registry_destroy(reg);
}

TEST(not_a_plugin) {
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    char msg[2048];
    CHECK(refused_unchanged(reg, PLUGIN_NONE, OPREG_ERR_PLUGIN, msg, sizeof msg));
    CHECK_CONTAINS(msg, "is not an opreg plugin: it does not export opreg_plugin_entry");
    /* A file that is no shared library at all. */
    CHECK(refused_unchanged(reg, OPREG_SOURCE_DIR "/README.md", OPREG_ERR_IO, msg, sizeof msg));
    CHECK_CONTAINS(msg, "cannot be loaded");
    opreg_registry_destroy(reg);
}

TEST(future_major_refused) {
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    char msg[2048];
    CHECK(refused_unchanged(reg, PLUGIN_FUTURE, OPREG_ERR_ABI_MISMATCH, msg, sizeof msg));
    CHECK_CONTAINS(msg, "plugin 'future'");
    CHECK_CONTAINS(msg, "built for plugin ABI 2.0");
    CHECK_CONTAINS(msg, "this opreg has plugin ABI 1.3");
    CHECK_EQ_INT(info_of(reg, 0)->abi_version, 2u << 16);
    CHECK_EQ_STR(info_of(reg, 0)->name, "future");
    opreg_registry_destroy(reg);
}

TEST(init_fails_halfway) {
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    char msg[2048];
    CHECK(refused_unchanged(reg, PLUGIN_HALFWAY, OPREG_ERR_DEVICE, msg, sizeof msg));
    CHECK_CONTAINS(msg, "plugin 'halfway'");
    CHECK_CONTAINS(msg, "init failed: halfway: the device went away during init");
    /* base::twice still runs its own kernel. */
    const opreg_op *op;
    CHECK_EQ_INT(opreg_op_find(&op, reg, "base::twice"), OPREG_OK);
    float x[2] = { 1, 2 }, o[2] = { 0, 0 };
    int64_t shape[1] = { 2 };
    DLTensor tx = { x, { kDLCPU, 0 }, 1, { kDLFloat, 32, 1 }, shape, NULL, 0 };
    DLTensor to = { o, { kDLCPU, 0 }, 1, { kDLFloat, 32, 1 }, shape, NULL, 0 };
    opreg_value args[2] = { opreg_tensor_value(&to), opreg_tensor_value(&tx) };
    CHECK_EQ_INT(opreg_call_boxed(op, args, 2, NULL, 0, NULL, 0), OPREG_OK);
    CHECK(o[1] == 4.0f);
    /* The key stays (keys are never withdrawn), unavailable, with the reason. */
    opreg_dispatch_key key;
    CHECK_EQ_INT(opreg_key_find(&key, "halfway"), OPREG_OK);
    char why[256];
    CHECK(!opreg_key_is_available(key, why, sizeof why));
    CHECK_CONTAINS(why, "plugin 'halfway' failed to initialise");
    /* A second attempt takes the same key back: no key is used up. */
    int keys = opreg_key_count();
    CHECK(refused_unchanged(reg, PLUGIN_HALFWAY, OPREG_ERR_DEVICE, msg, sizeof msg));
    CHECK_EQ_INT(opreg_key_count(), keys);
    CHECK_EQ_INT(info_of(reg, 1)->key, key);
    /* fini waits for reclaim (the test's ASan run sees a leak otherwise). */
    opreg_registry_reclaim(reg);
    opreg_registry_destroy(reg);
}

static opreg_status call_scale(opreg_registry *reg, float alpha, float *out) {
    const opreg_op *op;
    OPREG__TRY(opreg_op_find(&op, reg, "v1test::scale"));
    float x[3] = { 1, 2, 3 };
    int64_t shape[1] = { 3 };
    DLTensor tx = { x, { kDLCPU, 0 }, 1, { kDLFloat, 32, 1 }, shape, NULL, 0 };
    DLTensor to = { out, { kDLCPU, 0 }, 1, { kDLFloat, 32, 1 }, shape, NULL, 0 };
    opreg_value args[3] = { opreg_tensor_value(&to), opreg_tensor_value(&tx),
                            opreg_float_value(alpha) };
    return opreg_call_boxed(op, args, 3, NULL, 0, NULL, 0);
}

TEST(v1_plugin_loads_and_works) {
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    plugin_test_log[0] = '\0';
    opreg_set_log_callback(plugin_test_log_fn, NULL, OPREG_LOG_DEBUG);
    char *before = registry_listing(reg);
    opreg_plugin *p = NULL;
    CHECK_EQ_INT(opreg_plugin_load(&p, reg, PLUGIN_V1), OPREG_OK);
    CHECK(p != NULL);
    const opreg_plugin_info *info = info_of(reg, 0);
    CHECK_EQ_INT(info->state, OPREG_PLUGIN_LOADED);
    CHECK_EQ_INT(info->abi_version, 1u << 16);
    CHECK_EQ_STR(info->name, "v1test");
    CHECK_EQ_STR(info->version, "1.0.0");
    opreg_dispatch_key key = info->key;
    CHECK_EQ_STR(opreg_key_name(key), "v1dev");
    CHECK(opreg_key_is_available(key, NULL, 0));
    float out[3] = { 0 };
    CHECK_EQ_INT(call_scale(reg, 2.0f, out), OPREG_OK);
    CHECK(out[0] == 2.0f && out[2] == 6.0f);
    /* The explanation names the plugin. */
    opreg_support_info si;
    DLDevice cpu = { kDLCPU, 0 };
    CHECK_EQ_INT(opreg_explain_support(&si, reg, "v1test::scale", &cpu), OPREG_OK);
    CHECK_CONTAINS(si.message, "registered at plugin 'v1test' (" PLUGIN_V1 ")");
    /* A second load of the same plugin is refused while the first is loaded. */
    char msg[2048];
    CHECK(refused_unchanged(reg, PLUGIN_V1, OPREG_ERR_ALREADY_DEFINED, msg, sizeof msg));
    CHECK_CONTAINS(msg, "already loaded");
    /* Unload: its ops go, the key stays unavailable; fini waits for reclaim. */
    opreg_plugin_unload(p);
    char *after = registry_listing(reg);
    CHECK_EQ_STR(after, before);
    free(after);
    CHECK_EQ_INT(call_scale(reg, 2.0f, out), OPREG_ERR_NOT_FOUND);
    char why[256];
    CHECK(!opreg_key_is_available(key, why, sizeof why));
    CHECK_CONTAINS(why, "plugin 'v1test' was unloaded");
    CHECK(strstr(plugin_test_log, "v1test: fini") == NULL);
    opreg_registry_reclaim(reg);
    CHECK_CONTAINS(plugin_test_log, "v1test: fini");
    /* Loading it again takes the same key back. */
    int keys = opreg_key_count();
    CHECK_EQ_INT(opreg_plugin_load(&p, reg, PLUGIN_V1), OPREG_OK);
    CHECK_EQ_INT(opreg_key_count(), keys);
    CHECK_EQ_INT(info_of(reg, 2)->key, key);
    CHECK(opreg_key_is_available(key, NULL, 0));
    CHECK_EQ_INT(call_scale(reg, 3.0f, out), OPREG_OK);
    CHECK(out[1] == 6.0f);
    free(before);
    opreg_set_log_callback(NULL, NULL, OPREG_LOG_DEBUG);
    opreg_registry_destroy(reg); /* unloads it, then fini */
}

/* Copy @p src to @p dst (a second file with the same plugin inside). */
static int copy_file(const char *src, const char *dst) {
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    char buf[1 << 14];
    size_t n;
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
        ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = 0;
    return ok;
}

/* A second file carrying the name of a loaded plugin is refused: its code
 * is unloaded at once, so nothing may read its description afterwards (this
 * read freed memory and crashed), and it leaves no key, library or kernel.
 * The same file under another name (a link) is refused before its entry
 * point runs again over the loaded plugin's state. */
TEST(same_name_other_file) {
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    opreg_plugin *p = NULL;
    CHECK_EQ_INT(opreg_plugin_load(&p, reg, PLUGIN_V1), OPREG_OK);
    char copy[] = "/tmp/opreg_plugin_copy_XXXXXX";
    int fd = mkstemp(copy);
    CHECK(fd >= 0);
    close(fd);
    CHECK(copy_file(PLUGIN_V1, copy));
    int keys = opreg_key_count();
    char msg[2048];
    CHECK(refused_unchanged(reg, copy, OPREG_ERR_ALREADY_DEFINED, msg, sizeof msg));
    CHECK_CONTAINS(msg, "plugin 'v1test' (");
    CHECK_CONTAINS(msg, "a plugin of that name is already loaded from " PLUGIN_V1);
    CHECK_EQ_INT(opreg_key_count(), keys);
    const opreg_plugin_info *info = info_of(reg, 1);
    CHECK_EQ_INT(info->state, OPREG_PLUGIN_REFUSED);
    CHECK_EQ_INT(info->key, OPREG_KEY_NONE);
    CHECK_EQ_STR(info->name, "v1test");
    char link[sizeof copy + 8];
    snprintf(link, sizeof link, "%s.so", copy);
    CHECK(symlink(PLUGIN_V1, link) == 0);
    CHECK(refused_unchanged(reg, link, OPREG_ERR_ALREADY_DEFINED, msg, sizeof msg));
    CHECK_CONTAINS(msg, "the same file is already loaded as plugin 'v1test' from " PLUGIN_V1);
    /* The loaded plugin still works, and reclaim and destroy touch nothing
     * of the refused copies. */
    float out[3] = { 0 };
    CHECK_EQ_INT(call_scale(reg, 2.0f, out), OPREG_OK);
    CHECK(out[2] == 6.0f);
    opreg_registry_reclaim(reg);
    opreg_registry_destroy(reg);
    unlink(link);
    unlink(copy);
}

/* Run minor::uses_host_checks and minor::twice on a bad input. */
static void run_minor(opreg_registry *reg, bool *host_checks, opreg_status *bad, char *msg,
                      size_t cap) {
    const opreg_op *q, *tw;
    opreg_value ret = opreg_none();
    *bad = OPREG_ERR_INTERNAL;
    if (opreg_op_find(&q, reg, "minor::uses_host_checks") != OPREG_OK ||
        opreg_call_boxed(q, NULL, 0, NULL, 0, &ret, 1) != OPREG_OK)
        return;
    *host_checks = ret.u.b;
    CHECK_EQ_INT(opreg_op_find(&tw, reg, "minor::twice"), OPREG_OK);
    float x[2] = { 1, 2 }, o[3];
    int64_t s2[1] = { 2 }, s3[1] = { 3 };
    DLTensor tx = { x, { kDLCPU, 0 }, 1, { kDLFloat, 32, 1 }, s2, NULL, 0 };
    DLTensor to = { o, { kDLCPU, 0 }, 1, { kDLFloat, 32, 1 }, s3, NULL, 0 };
    opreg_value args[2] = { opreg_tensor_value(&to), opreg_tensor_value(&tx) };
    *bad = opreg_call_boxed(tw, args, 2, NULL, 0, NULL, 0);
    snprintf(msg, cap, "%s", opreg_last_error());
    to.shape = s2;
    CHECK_EQ_INT(opreg_call_boxed(tw, args, 2, NULL, 0, NULL, 0), OPREG_OK);
    CHECK(o[1] == 4.0f);
}

TEST(minor_member_current_host) {
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    opreg_plugin *p;
    CHECK_EQ_INT(opreg_plugin_load(&p, reg, PLUGIN_MINOR), OPREG_OK);
    bool host_checks = false;
    opreg_status bad;
    char msg[512];
    run_minor(reg, &host_checks, &bad, msg, sizeof msg);
    CHECK(host_checks);
    CHECK_EQ_INT(bad, OPREG_ERR_SHAPE);
    CHECK_CONTAINS(msg, "minor::twice: out and x must be f32 of the same size");
    opreg_registry_destroy(reg);
}

TEST(minor_member_older_host) {
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    plugin_test_log[0] = '\0';
    opreg_set_log_callback(plugin_test_log_fn, NULL, OPREG_LOG_DEBUG);
    opreg_plugin *p;
    /* A 1.0 host: its table ends before check_args. */
    CHECK_EQ_INT(opreg__plugin_load_with_host(&p, reg, PLUGIN_MINOR,
                                              offsetof(opreg_host, check_args), 1u << 16),
                 OPREG_OK);
    opreg_set_log_callback(NULL, NULL, OPREG_LOG_DEBUG);
    CHECK_CONTAINS(plugin_test_log, "has no check_args; the plugin checks arguments itself");
    bool host_checks = true;
    opreg_status bad;
    char msg[512];
    run_minor(reg, &host_checks, &bad, msg, sizeof msg);
    CHECK(!host_checks);
    CHECK_EQ_INT(bad, OPREG_ERR_SHAPE);
    CHECK_CONTAINS(msg, "minor::twice: out and x must be f32 of the same size");
    opreg_registry_destroy(reg);
}

TEST(v1_plugin_on_v1_host) {
    /* The frozen plugin also runs on a host as old as itself. */
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    opreg_plugin *p;
    CHECK_EQ_INT(opreg__plugin_load_with_host(&p, reg, PLUGIN_V1, offsetof(opreg_host, check_args),
                                              1u << 16),
                 OPREG_OK);
    float out[3] = { 0 };
    CHECK_EQ_INT(call_scale(reg, 0.5f, out), OPREG_OK);
    CHECK(out[1] == 1.0f);
    opreg_registry_destroy(reg);
}

TEST(search_path) {
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    /* The folder of the test plugins: v1test, minor and prov load; future, halfway
     * and the non-plugin are listed as refused, with their reasons. */
    setenv("OPREG_PLUGIN_PATH", "/nonexistent:" PLUGIN_DIR, 1);
    size_t loaded = 0;
    CHECK_EQ_INT(opreg_plugin_load_search(reg, &loaded), OPREG_OK);
    unsetenv("OPREG_PLUGIN_PATH");
    CHECK_EQ_INT(loaded, 3);
    int refused = 0;
    for (size_t i = 0; i < opreg_plugin_count(reg); i++)
        refused += info_of(reg, i)->state == OPREG_PLUGIN_REFUSED;
    CHECK_EQ_INT(refused, 3);
    CHECK(opreg_plugin_dir()[0] == '/');
    CHECK_CONTAINS(opreg_plugin_dir(), "/opreg/plugins");
    opreg_registry_reclaim(reg);
    opreg_registry_destroy(reg);
}

/* prov::fill on @p n floats: the value it wrote. */
static float call_fill(opreg_registry *reg, int64_t n) {
    const opreg_op *op;
    if (opreg_op_find(&op, reg, "prov::fill") != OPREG_OK) return -1.0f;
    float data[8] = { 0 };
    int64_t shape[1] = { n };
    DLTensor t = { 0 };
    t.data = data;
    t.ndim = 1;
    t.shape = shape;
    t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_F32);
    t.device.device_type = kDLCPU;
    opreg_value v = opreg_tensor_value(&t);
    if (opreg_call_boxed(op, &v, 1, NULL, 0, NULL, 0) != OPREG_OK) return -2.0f;
    return data[0];
}

TEST(provider_from_a_plugin) {
    opreg_library *lib;
    opreg_registry *reg = new_registry(&lib);
    opreg_plugin *p;
    CHECK_EQ_INT(opreg_plugin_load(&p, reg, PLUGIN_PROVIDER), OPREG_OK);
    CHECK(call_fill(reg, 7) == 7.0f); /* the plugin's provider, in front */
    CHECK(call_fill(reg, 3) == 1.0f); /* it declines: `default` runs */
    const opreg_op *op;
    CHECK_EQ_INT(opreg_op_find(&op, reg, "prov::fill"), OPREG_OK);
    float data[3];
    int64_t shape[1] = { 3 };
    DLTensor t = { 0 };
    t.data = data;
    t.ndim = 1;
    t.shape = shape;
    t.dtype = opreg_dtype_to_dlpack(OPREG_DTYPE_F32);
    t.device.device_type = kDLCPU;
    opreg_value v = opreg_tensor_value(&t);
    opreg_call_explanation x;
    CHECK_EQ_INT(opreg_explain_call(&x, op, OPREG_KEY_NONE, &v, 1, NULL, 0), OPREG_OK);
    CHECK_EQ_STR(x.providers[0].name, "seven");
    CHECK_EQ_STR(x.providers[0].reason, "takes 7 elements, not 3");
    CHECK_CONTAINS(x.providers[0].where, "plugin 'prov'");
    CHECK_EQ_STR(x.providers[1].name, "default");
    CHECK_EQ_INT(x.chosen, 1);
    opreg_registry_destroy(reg);
    /* On a 1.1 host (its table ends after plugin_path) the plugin registers
     * its impl alone, and says so. */
    reg = new_registry(&lib);
    plugin_test_log[0] = '\0';
    opreg_set_log_callback(plugin_test_log_fn, NULL, OPREG_LOG_DEBUG);
    CHECK_EQ_INT(opreg__plugin_load_with_host(&p, reg, PLUGIN_PROVIDER,
                                              offsetof(opreg_host, library_provider),
                                              (1u << 16) | 1u),
                 OPREG_OK);
    opreg_set_log_callback(NULL, NULL, OPREG_LOG_DEBUG);
    CHECK_CONTAINS(plugin_test_log, "the host has no library_provider");
    CHECK(call_fill(reg, 7) == 1.0f);
    opreg_registry_destroy(reg);
}

int main(void) {
    RUN(missing_file);
    RUN(not_a_plugin);
    RUN(future_major_refused);
    RUN(init_fails_halfway);
    RUN(v1_plugin_loads_and_works);
    RUN(same_name_other_file);
    RUN(minor_member_current_host);
    RUN(minor_member_older_host);
    RUN(v1_plugin_on_v1_host);
    RUN(search_path);
    RUN(provider_from_a_plugin);
    return test_summary();
}
