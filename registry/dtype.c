/* Dtypes and devices: DLPack codes, names, sizes (from common/dtype_list.h),
 * and device spellings. */
#include "common/dtype_list.h"
#include "registry/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dtype_info {
    opreg_dtype dtype;
    uint8_t code, bits;
    const char *name;  /* opreg's short name */
    const char *torch; /* PyTorch's name */
    const char *alias; /* another PyTorch spelling, or NULL */
};

#define DTYPE_INFO(arg, D, CODE, BITS, NAME, TORCH, ALIAS)                                         \
    { OPREG_DTYPE_##D, CODE, BITS, NAME, TORCH, ALIAS },
static const struct dtype_info dtypes[] = { OPREG__DTYPE_LIST(DTYPE_INFO, 0) };
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

/* " f32 f16 ...", for opreg_dtype_from_name()'s message. */
#define DTYPE_NAME(arg, D, CODE, BITS, NAME, TORCH, ALIAS) " " NAME
static const char short_names[] = OPREG__DTYPE_LIST(DTYPE_NAME, 0);

static const struct dtype_info *info_of(opreg_dtype dtype) {
    for (size_t i = 0; i < NDTYPES; i++)
        if (dtypes[i].dtype == dtype) return &dtypes[i];
    return NULL;
}

DLDataType opreg_dtype_to_dlpack(opreg_dtype dtype) {
    const struct dtype_info *d = info_of(dtype);
    DLDataType t = { 0, 0, 0 };
    if (d) {
        t.code = d->code;
        t.bits = d->bits;
        t.lanes = 1;
    }
    return t;
}

opreg_status opreg_dtype_from_dlpack(opreg_dtype *out, DLDataType type) {
    if (!out)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_dtype_from_dlpack: out is NULL");
    if (type.lanes == 1)
        for (size_t i = 0; i < NDTYPES; i++)
            if (dtypes[i].code == type.code && dtypes[i].bits == type.bits) {
                *out = dtypes[i].dtype;
                return OPREG_OK;
            }
    return opreg__fail(OPREG_ERR_SHAPE,
                       "DLPack data type (code %u, bits %u, lanes %u) is not an opreg dtype",
                       type.code, type.bits, type.lanes);
}

const char *opreg_dtype_name(opreg_dtype dtype) {
    const struct dtype_info *d = info_of(dtype);
    return d ? d->name : NULL;
}

opreg_status opreg_dtype_from_name(opreg_dtype *out, const char *name) {
    if (!out || !name)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_dtype_from_name: %s is NULL",
                           out ? "name" : "out");
    for (size_t i = 0; i < NDTYPES; i++) {
        const struct dtype_info *d = &dtypes[i];
        if (strcmp(name, d->name) == 0 || strcmp(name, d->torch) == 0 ||
            (d->alias && strcmp(name, d->alias) == 0)) {
            *out = d->dtype;
            return OPREG_OK;
        }
    }
    return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                       "unknown dtype '%s'; expected one of%s (or PyTorch's names)", name,
                       short_names);
}

size_t opreg_dtype_size(opreg_dtype dtype) {
    const struct dtype_info *d = info_of(dtype);
    return d ? d->bits / 8u : 0;
}

size_t opreg_device_format(DLDevice device, char *buf, size_t cap) {
    opreg_dispatch_key k = opreg_key_of_device(device);
    const opreg_backend *b = k == OPREG_KEY_NONE ? NULL : opreg_key_backend(k);
    int n;
    if (!b)
        n = snprintf(buf, cap, "device_type_%d:%d", (int)device.device_type, device.device_id);
    else if (k == OPREG_KEY_META || (k == OPREG_KEY_CPU && device.device_id == 0))
        n = snprintf(buf, cap, "%s", b->name);
    else
        n = snprintf(buf, cap, "%s:%d", b->name, device.device_id);
    return n < 0 ? 0 : (size_t)n;
}

opreg_status opreg_device_parse(DLDevice *out, const char *text) {
    if (!out || !text)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_device_parse: %s is NULL",
                           out ? "text" : "out");
    char name[32];
    const char *colon = strchr(text, ':');
    size_t len = colon ? (size_t)(colon - text) : strlen(text);
    long index = 0;
    if (colon) {
        char *end = NULL;
        if (colon[1] < '0' || colon[1] > '9' || (index = strtol(colon + 1, &end, 10)) > 65535 ||
            *end)
            return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                               "device '%s': the index after ':' must be a number from 0 to 65535",
                               text);
    }
    if (len == 0 || len >= sizeof name)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "device '%s': expected e.g. cpu, cuda:0, meta", text);
    memcpy(name, text, len);
    name[len] = '\0';
    opreg_dispatch_key k;
    if (opreg_key_find(&k, name) != OPREG_OK || k == OPREG_KEY_COMPOSITE)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "device '%s': no backend named '%s' (expected e.g. cpu, cuda:0, meta)",
                           text, name);
    out->device_type = (DLDeviceType)opreg_key_backend(k)->device_type;
    out->device_id = (int32_t)index;
    return OPREG_OK;
}
