/* Helpers of the plugin tests: the full op and kernel listing of a
 * registry, to compare before and after a load, and a log capture. */
#ifndef OPREG_TESTS_PLUGIN_TEST_H
#define OPREG_TESTS_PLUGIN_TEST_H

#include "opreg/opreg.h"
#include "test.h"

#include <stdlib.h>

/* Every defined op with its canonical schema, the kernel kind and the place
 * of registration of each key, and whether it has a composite, one op a
 * line. The caller frees the string. */
static inline char *registry_listing(opreg_registry *reg) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    buf[0] = '\0';
    for (size_t i = 0; i < opreg_registry_num_ops(reg); i++) {
        const opreg_op *op = opreg_registry_op(reg, i);
        if (!opreg_op_is_defined(op)) continue;
        char schema[1024];
        opreg_schema_format(opreg_op_schema(op), OPREG_SCHEMA_CANONICAL, schema, sizeof schema);
        if (cap - len < 4096) {
            cap *= 2;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                return NULL;
            }
            buf = b;
        }
        len += (size_t)snprintf(buf + len, cap - len, "%s|%s|composite=%d", opreg_op_name(op),
                                schema, (int)opreg_op_has_composite(op));
        for (int k = 0; k < opreg_key_count(); k++) {
            opreg_kernel_kind kind = opreg_op_kernel_kind(op, k);
            if (kind == OPREG_KERNEL_NONE) continue;
            opreg_support_info info;
            DLDevice dev = { (DLDeviceType)opreg_key_backend(k)->device_type, 0 };
            opreg_explain_support(&info, reg, opreg_op_name(op), &dev);
            len += (size_t)snprintf(buf + len, cap - len, "|%s=%d:%s", opreg_key_name(k), (int)kind,
                                    info.message);
        }
        len += (size_t)snprintf(buf + len, cap - len, "\n");
    }
    return buf;
}

/* The log, kept. */
static char plugin_test_log[8192];
static inline void plugin_test_log_fn(void *user, opreg_log_level level, const char *msg) {
    (void)user, (void)level;
    size_t n = strlen(plugin_test_log);
    snprintf(plugin_test_log + n, sizeof plugin_test_log - n, "%s\n", msg);
}

#endif
