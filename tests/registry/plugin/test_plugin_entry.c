/* Plugins given by their entry function (opreg__plugin_load_entry, the
 * loader's path after dlsym, which tests/fuzz/fuzz_plugin_desc drives):
 * - such a plugin loads, registers, unloads and is finalised like a file;
 * - a backend table smaller than version 1.0's is refused from its size
 *   alone: nothing past it is read (the key's checks read the name and
 *   version first), and no tensor is allocated through an alloc whose free
 *   the table does not reach (both found by the fuzzer). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "plugin_test.h"
#include "registry/internal.h"

#include <sys/mman.h>
#include <unistd.h>

#define CHECK_STATUS(expr, want)                                                                   \
    do {                                                                                           \
        opreg_status check_st_ = (expr);                                                           \
        if (check_st_ != (want)) {                                                                 \
            TEST_FAIL_AT("%s: got %s, want %s (%s)", #expr, opreg_status_name(check_st_),          \
                         opreg_status_name(want), opreg_last_error());                             \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define CHECK_OK(expr) CHECK_STATUS(expr, OPREG_OK)

static opreg_status kernel(void *ctx, const opreg_op *op, const opreg_value *args,
                           opreg_value *rets) {
    (void)ctx, (void)op, (void)args, (void)rets;
    return OPREG_OK;
}

static int finis;

static opreg_status init(const opreg_host *h, opreg_plugin *plugin, opreg_dispatch_key key,
                         void **user) {
    opreg_library *lib;
    (void)key, (void)user;
    opreg_kernel k = { kernel, NULL, NULL, 0 };
    opreg_status st = h->library_create(&lib, plugin, OPREG_LIBRARY_DEF, "ent", OPREG_KEY_CPU);
    if (st == OPREG_OK) st = h->library_def(NULL, lib, "op(Tensor x) -> ()");
    if (st == OPREG_OK) st = h->library_impl(lib, "op", OPREG_KEY_CPU, &k);
    return st;
}

static void fini(void *user) {
    (void)user;
    finis++;
}

static opreg_plugin_desc desc = {
    .struct_size = sizeof(opreg_plugin_desc),
    .abi_version = OPREG_PLUGIN_ABI_VERSION,
    .name = "ent",
    .version = "0.1",
    .init = init,
    .fini = fini,
};

static const opreg_plugin_desc *entry(const opreg_host *h) {
    (void)h;
    return &desc;
}

TEST(entry_loads_like_a_file) {
    opreg_registry *reg;
    opreg_plugin *p;
    const opreg_op *op;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg__plugin_load_entry(&p, reg, "built-in:ent", entry));
    CHECK(p != NULL);
    CHECK_OK(opreg_op_find(&op, reg, "ent::op"));
    opreg_plugin_info info;
    CHECK_OK(opreg_plugin_info_at(&info, reg, 0));
    CHECK_EQ_STR(info.path, "built-in:ent");
    CHECK_EQ_STR(info.name, "ent");
    CHECK_EQ_INT(info.state, OPREG_PLUGIN_LOADED);
    opreg_plugin_unload(p);
    CHECK(!opreg_op_is_defined(op));
    CHECK_EQ_INT(finis, 0);
    opreg_registry_reclaim(reg);
    CHECK_EQ_INT(finis, 1);
    CHECK_STATUS(opreg__plugin_load_entry(&p, reg, "x", NULL), OPREG_ERR_INVALID_ARGUMENT);
    CHECK(p == NULL);
    opreg_registry_destroy(reg);
    CHECK_EQ_INT(finis, 1);
}

TEST(backend_too_small_refused_by_its_size) {
    opreg_registry *reg;
    opreg_plugin *p;
    CHECK_OK(opreg_registry_create(&reg));
    char *before = registry_listing(reg);
    int keys = opreg_key_count();
    /* The table ends where an unmapped page begins: any read past its
     * struct_size faults, in every build. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *pages = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(pages != MAP_FAILED);
    CHECK(mprotect(pages + page, page, PROT_NONE) == 0);
    for (uint32_t size = 8; size < offsetof(opreg_backend, flags); size += 8) {
        opreg_backend *b = (opreg_backend *)(void *)(pages + page - size);
        memset(b, 0, size);
        b->struct_size = size;
        desc.backend = b;
        finis = 0;
        CHECK_STATUS(opreg__plugin_load_entry(&p, reg, "built-in:small", entry),
                     OPREG_ERR_INVALID_ARGUMENT);
        CHECK(p == NULL);
        char want[96];
        snprintf(want, sizeof want, "backend: struct_size %u is too small", size);
        CHECK_CONTAINS(opreg_last_error(), want);
        CHECK_CONTAINS(opreg_last_error(), "plugin 'ent' (built-in:small)");
        desc.backend = NULL;
        CHECK_EQ_INT(opreg_key_count(), keys);
        char *after = registry_listing(reg);
        CHECK_EQ_STR(after, before);
        free(after);
    }
    /* Version 1.0's table, against the unmapped page, loads: nothing of
     * what 1.1 appended is read. */
    size_t v1 = offsetof(opreg_backend, flags);
    opreg_backend *b = (opreg_backend *)(void *)(pages + page - v1);
    memset(b, 0, v1);
    b->struct_size = (uint32_t)v1;
    b->abi_version = OPREG_BACKEND_ABI_VERSION;
    b->name = "entv1";
    b->device_type = 40;
    desc.backend = b;
    CHECK_OK(opreg__plugin_load_entry(&p, reg, "built-in:v1", entry));
    opreg_plugin_unload(p);
    desc.backend = NULL;
    free(before);
    munmap(pages, 2 * page);
    opreg_registry_destroy(reg);
    CHECK_EQ_INT(finis, 1); /* for the one whose init ran */
}

int main(void) {
    RUN(entry_loads_like_a_file);
    RUN(backend_too_small_refused_by_its_size);
    return test_summary();
}
