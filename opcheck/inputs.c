/* The inputs of one op call: sizes, seeded random tensors, the boxed
 * arguments in schema order, deep copies (on any reachable device, with
 * guard zones for opcheck), and the generator found for an op. The
 * catalogue's generators are ops/register/catalogue_inputs.c, the
 * comparison compare.c, the inputs derived from a schema schema_inputs.c. */
#include "opcheck/opcheck_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NUMEL ((int64_t)1 << 31)

struct opreg_gen {
    opreg_inputs *in;
    opreg_sizes *shape;
    const opreg_generator *gen;
    uint64_t rng;
    opreg_dtype dtype;
    opreg_status st;
    char *err;
    size_t cap;
};

/* ---- sizes ---- */

int opreg_sizes_parse(opreg_sizes *out, const char *text, char *err, size_t cap) {
    memset(out, 0, sizeof *out);
    for (const char *p = text; *p;) {
        const char *eq = strchr(p, '='), *end = strchr(p, ',');
        char *num_end;
        if (!end) end = p + strlen(p);
        if (!eq || eq > end || eq == p || (size_t)(eq - p) >= sizeof out->kv[0].name) {
            snprintf(err, cap, "bad size '%.*s' in --shape (expected key=value)", (int)(end - p),
                     p);
            return -1;
        }
        if (out->n == OPREG_SIZES_MAX) {
            snprintf(err, cap, "too many sizes in --shape (at most %d)", OPREG_SIZES_MAX);
            return -1;
        }
        long long v = strtoll(eq + 1, &num_end, 10);
        if (num_end != end || eq + 1 == end || v < 0) {
            snprintf(err, cap, "bad value '%.*s' for '%.*s' in --shape", (int)(end - eq - 1),
                     eq + 1, (int)(eq - p), p);
            return -1;
        }
        memcpy(out->kv[out->n].name, p, (size_t)(eq - p));
        out->kv[out->n].value = v;
        out->kv[out->n].given = true;
        out->n++;
        p = *end ? end + 1 : end;
    }
    return 0;
}

int opreg_sizes_set(opreg_sizes *s, const char *name, int64_t value) {
    size_t i;
    if (strlen(name) >= sizeof s->kv[0].name) return -1;
    for (i = 0; i < s->n; i++)
        if (strcmp(s->kv[i].name, name) == 0) break;
    if (i == s->n) {
        if (s->n == OPREG_SIZES_MAX) return -1;
        snprintf(s->kv[i].name, sizeof s->kv[i].name, "%s", name);
        s->kv[i].kind = OPREG_SIZE_DIM;
        s->n++;
    }
    s->kv[i].value = value;
    s->kv[i].given = true;
    s->kv[i].used = false;
    return 0;
}

size_t opreg_sizes_format(const opreg_sizes *shape, char *buf, size_t cap) {
    size_t len = 0;
    if (cap) buf[0] = '\0';
    for (size_t i = 0; i < shape->n; i++) {
        if (!shape->kv[i].used) continue;
        int w = snprintf(buf + (len < cap ? len : cap), len < cap ? cap - len : 0, "%s%s=%" PRId64,
                         len ? "," : "", shape->kv[i].name, shape->kv[i].value);
        len += (size_t)w;
    }
    return len;
}

/* ---- the builder's helpers ---- */

int opreg_gen_fail(opreg_gen *b, const char *fmt, ...) {
    if (b->st != OPREG_OK) return 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, b->cap, fmt, ap);
    va_end(ap);
    b->st = OPREG_ERR_INVALID_ARGUMENT;
    return 0;
}

bool opreg_gen_failed(const opreg_gen *b) {
    return b->st != OPREG_OK;
}

opreg_dtype opreg_gen_dtype(const opreg_gen *b) {
    return b->dtype;
}

void *opreg_gen_context(const opreg_gen *b) {
    return b->gen ? b->gen->context : NULL;
}

static int64_t lookup(opreg_gen *b, const char *name, int64_t def, opreg_size_kind kind) {
    opreg_sizes *s = b->shape;
    size_t i;
    for (i = 0; i < s->n; i++)
        if (strcmp(s->kv[i].name, name) == 0) break;
    if (i == s->n) {
        if (s->n == OPREG_SIZES_MAX) return opreg_gen_fail(b, "too many sizes"), def;
        snprintf(s->kv[i].name, sizeof s->kv[i].name, "%s", name);
        s->kv[i].value = def;
        s->kv[i].given = false;
        s->n++;
    }
    s->kv[i].used = true;
    s->kv[i].kind = (uint8_t)kind;
    return s->kv[i].value;
}

int64_t opreg_gen_dim(opreg_gen *b, const char *name, int64_t def) {
    int64_t v = lookup(b, name, def, OPREG_SIZE_DIM);
    if (v < 1) opreg_gen_fail(b, "size '%s' must be >= 1", name);
    return v;
}

int64_t opreg_gen_count(opreg_gen *b, const char *name, int64_t def) {
    int64_t v = lookup(b, name, def, OPREG_SIZE_COUNT);
    if (v < 0) opreg_gen_fail(b, "'%s' must be >= 0", name);
    return v;
}

bool opreg_gen_flag(opreg_gen *b, const char *name, bool def) {
    int64_t v = lookup(b, name, def, OPREG_SIZE_FLAG);
    if (v > 1) opreg_gen_fail(b, "'%s' is a flag: 0 or 1", name);
    return v == 1;
}

/* splitmix64 */
static uint64_t next_u64(opreg_gen *b) {
    uint64_t z = (b->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double opreg_gen_uniform(opreg_gen *b) {
    return (double)(next_u64(b) >> 11) * (1.0 / 9007199254740992.0);
}

int64_t opreg_gen_below(opreg_gen *b, int64_t n) {
    return n > 0 ? (int64_t)(next_u64(b) % (uint64_t)n) : 0;
}

static opreg_status add_tensor(opreg_gen *b, DLTensor *base, DLTensor *view) {
    opreg_inputs *in = b->in;
    if (in->ntensors == OPREG__IN_MAX_TENSORS) {
        opreg_tensor_free(view != base ? view : NULL);
        opreg_tensor_free(base);
        return opreg_gen_fail(b, "too many tensors"), OPREG_ERR_INVALID_ARGUMENT;
    }
    in->base[in->ntensors] = base;
    in->view[in->ntensors] = view;
    in->ntensors++;
    return OPREG_OK;
}

DLTensor *opreg_gen_tensor_strided(opreg_gen *b, opreg_dtype dtype, int ndim, const int64_t *shape,
                                   const int64_t *strides, int64_t span) {
    DLTensor *base, *view;
    int64_t numel = 1;
    opreg_status st;
    if (b->st != OPREG_OK) return NULL;
    for (int d = 0; d < ndim; d++)
        numel *= shape[d];
    if (numel > MAX_NUMEL || span > MAX_NUMEL)
        return opreg_gen_fail(b, "a tensor of %" PRId64 " elements is too large", numel), NULL;
    if (strides) {
        st = opreg_tensor_empty_cpu(&base, dtype, 1, &span);
    } else {
        st = opreg_tensor_empty_cpu(&base, dtype, ndim, shape);
    }
    if (st != OPREG_OK) {
        snprintf(b->err, b->cap, "%s", opreg_last_error());
        b->st = st;
        return NULL;
    }
    memset(base->data, 0, opreg_tensor_nbytes(base));
    view = base;
    if (strides && (st = opreg_tensor_view(&view, base, ndim, shape, strides, 0)) != OPREG_OK) {
        snprintf(b->err, b->cap, "%s", opreg_last_error());
        b->st = st;
        opreg_tensor_free(base);
        return NULL;
    }
    return add_tensor(b, base, view) == OPREG_OK ? view : NULL;
}

DLTensor *opreg_gen_tensor(opreg_gen *b, opreg_dtype dtype, int ndim, const int64_t *shape) {
    return opreg_gen_tensor_strided(b, dtype, ndim, shape, NULL, 0);
}

opreg_dtype opreg_gen_dtype_of(const DLTensor *t) {
    opreg_dtype dt = OPREG_DTYPE_U8;
    (void)opreg_dtype_from_dlpack(&dt, t->dtype);
    return dt;
}

void opreg_gen_fill(opreg_gen *b, DLTensor *t, double lo, double hi) {
    size_t k = 0;
    if (!t) return;
    while (k < b->in->ntensors && b->in->view[k] != t)
        k++;
    t = k < b->in->ntensors ? b->in->base[k] : t; /* a strided view: fill its whole buffer */
    opreg_dtype dt = opreg_gen_dtype_of(t);
    int64_t n = opreg_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        if (dt == OPREG_DTYPE_F8_E4M3FN || dt == OPREG_DTYPE_F8_E5M2) {
            /* codes of magnitude about 1/8..2, never NaN: exponent field 4..7 (e4m3) */
            int shift = dt == OPREG_DTYPE_F8_E4M3FN ? 3 : 2, bias = shift == 3 ? 4 : 12;
            uint64_t r = next_u64(b);
            ((uint8_t *)t->data + t->byte_offset)[i] =
                (uint8_t)((r & 0x80) | ((bias + (r >> 8) % 4) << shift) |
                          ((r >> 16) & ((1u << shift) - 1)));
        } else {
            opreg_gen_set(t, i, lo + (hi - lo) * opreg_gen_uniform(b));
        }
    }
}

/* ---- arguments ---- */

void opreg_gen_arg(opreg_gen *b, opreg_value v) {
    if (b->st != OPREG_OK) return;
    if (b->in->nargs == OPREG__IN_MAX_ARGS) {
        opreg_gen_fail(b, "too many arguments");
        return;
    }
    b->in->args[b->in->nargs++] = v;
}

void opreg_gen_arg_tensor(opreg_gen *b, DLTensor *t) {
    opreg_gen_arg(b, opreg_tensor_value(t));
}

void opreg_gen_arg_str(opreg_gen *b, const char *s) {
    opreg_inputs *in = b->in;
    opreg_value v;
    if (b->st != OPREG_OK || in->nargs == OPREG__IN_MAX_ARGS) {
        opreg_gen_arg(b, opreg_none());
        return;
    }
    snprintf(in->strs[in->nargs], sizeof in->strs[0], "%s", s);
    v.kind = OPREG_VALUE_STR;
    v.flags = 0;
    v.u.s.ptr = in->strs[in->nargs];
    v.u.s.len = strlen(in->strs[in->nargs]);
    opreg_gen_arg(b, v);
}

void opreg_gen_arg_list(opreg_gen *b, DLTensor *const *items, size_t n) {
    opreg_inputs *in = b->in;
    if (b->st != OPREG_OK || in->nargs == OPREG__IN_MAX_ARGS) {
        opreg_gen_arg(b, opreg_none());
        return;
    }
    if (n > OPREG__IN_MAX_LIST) {
        opreg_gen_fail(b, "a list of %zu tensors is longer than %d", n, OPREG__IN_MAX_LIST);
        return;
    }
    memcpy(in->lists[in->nargs], items, n * sizeof *items);
    opreg_gen_arg(b, opreg_tensor_list_value(in->lists[in->nargs], n));
}

void opreg_gen_arg_ints(opreg_gen *b, const int64_t *items, size_t n) {
    opreg_inputs *in = b->in;
    if (b->st != OPREG_OK || in->nargs == OPREG__IN_MAX_ARGS) {
        opreg_gen_arg(b, opreg_none());
        return;
    }
    if (n > OPREG__IN_MAX_LIST) {
        opreg_gen_fail(b, "a list of %zu ints is longer than %d", n, OPREG__IN_MAX_LIST);
        return;
    }
    if (n) memcpy(in->ints[in->nargs], items, n * sizeof *items);
    opreg_gen_arg(b, opreg_int_list_value(in->ints[in->nargs], n));
}

/* ---- building, copying, freeing ---- */

opreg_status opreg_inputs_build_with(opreg_inputs **out, const opreg_op *op,
                                     const opreg_generator *e, int dtype, opreg_sizes *shape,
                                     uint64_t seed, char *err, size_t cap) {
    const char *full = op ? opreg_op_name(op) : "(null)";
    const opreg_schema *schema = op ? opreg_op_schema(op) : NULL;
    opreg_gen b;
    *out = NULL;
    if (!e) e = op ? opreg_op_generator(op) : NULL;
    if (!e || !e->build || !schema) {
        snprintf(err, cap, schema ? "no input generator for %s" : "%s is not defined", full);
        return OPREG_ERR_NOT_FOUND;
    }
    if (dtype < 0) dtype = (int)e->dflt;
    if (dtype >= 32 || !(e->dtypes & (1u << dtype))) {
        size_t len = (size_t)snprintf(err, cap, "%s takes --dtype", full);
        for (int d = 0; d < 32 && len < cap; d++)
            if (e->dtypes & (1u << d))
                len +=
                    (size_t)snprintf(err + len, cap - len, " %s", opreg_dtype_name((opreg_dtype)d));
        return OPREG_ERR_INVALID_ARGUMENT;
    }
    b.in = calloc(1, sizeof *b.in);
    if (!b.in) return snprintf(err, cap, "out of memory"), OPREG_ERR_OUT_OF_MEMORY;
    b.in->op = op;
    b.in->dtype = (opreg_dtype)dtype;
    b.shape = shape;
    b.gen = e;
    b.rng = seed * 0x2545F4914F6CDD1Dull + 1;
    b.dtype = (opreg_dtype)dtype;
    b.st = OPREG_OK;
    b.err = err;
    b.cap = cap;
    for (size_t i = 0; i < shape->n; i++)
        shape->kv[i].used = false;
    e->build(&b);
    for (size_t i = 0; b.st == OPREG_OK && i < shape->n; i++)
        if (shape->kv[i].given && !shape->kv[i].used) {
            char used[256];
            opreg_sizes_format(shape, used, sizeof used);
            opreg_gen_fail(&b, "%s has no size '%s' (its sizes: %s)", full, shape->kv[i].name,
                           used);
        }
    if (b.st == OPREG_OK && b.in->nargs != opreg_schema_num_arguments(schema)) {
        snprintf(err, cap, "input generator of %s made %zu arguments, the schema has %zu", full,
                 b.in->nargs, opreg_schema_num_arguments(schema));
        b.st = OPREG_ERR_INTERNAL;
    }
    if (b.st != OPREG_OK) {
        opreg_inputs_free(b.in);
        return b.st;
    }
    *out = b.in;
    return OPREG_OK;
}

opreg_status opreg_inputs_build(opreg_inputs **out, const opreg_op *op, int dtype,
                                opreg_sizes *shape, uint64_t seed, char *err, size_t cap) {
    if (op && !opreg_op_generator(op) && opreg_op_schema(op))
        return opreg_inputs_build_from_schema(out, op, dtype, shape, seed, err, cap);
    return opreg_inputs_build_with(out, op, NULL, dtype, shape, seed, err, cap);
}

static DLTensor *remap(const opreg_inputs *src, opreg_inputs *dst, const DLTensor *t) {
    for (size_t i = 0; i < src->ntensors; i++)
        if (src->view[i] == t) return dst->view[i];
    return NULL;
}

/* Whether @p d is memory the host reads: the CPU key's. */
bool opreg__inputs_on_host(DLDevice d) {
    return opreg_key_of_device(d) == OPREG_KEY_CPU;
}
#define on_host opreg__inputs_on_host

/* Copy @p bytes from byte @p so of @p src on @p sd to byte @p doff of @p dst
 * on @p dd, one side being host memory or both. Device memory is reached
 * through its backend's copy functions (whose data may be a handle), which
 * wait for the copy. */
opreg_status opreg__inputs_copy(void *dst, size_t doff, DLDevice dd, const void *src, size_t so,
                                DLDevice sd, size_t bytes) {
    bool dh = on_host(dd), sh = on_host(sd);
    const opreg_backend *b;
    if (!bytes) return OPREG_OK;
    if (dh && sh) {
        memcpy((char *)dst + doff, (const char *)src + so, bytes);
        return OPREG_OK;
    }
    b = opreg_key_backend(opreg_key_of_device(dh ? sd : dd));
    if (sh && b && b->copy_to_device)
        return b->copy_to_device(b->context, dst, doff, (const char *)src + so, bytes,
                                 dd.device_id);
    if (dh && b && b->copy_to_host)
        return b->copy_to_host(b->context, (char *)dst + doff, src, so, bytes, sd.device_id);
    return OPREG_ERR_UNSUPPORTED;
}

/* Whether a backend can take the tool's inputs: host memory, or a backend
 * with both copy functions. */
bool opreg_inputs_device_reachable(DLDevice device) {
    const opreg_backend *b = opreg_key_backend(opreg_key_of_device(device));
    return on_host(device) || (b && b->copy_to_device && b->copy_to_host);
}

/* Whether base tensor @p i of @p src is an argument in @p host_args. */
static bool pinned_to_host(const opreg_inputs *src, size_t i, uint32_t host_args) {
    for (size_t a = 0; a < src->nargs && a < 32; a++)
        if ((host_args >> a) & 1u && src->args[a].kind == OPREG_VALUE_TENSOR &&
            src->args[a].u.tensor == src->view[i])
            return true;
    return false;
}

/* A new tensor on @p where shaped like @p sb, between guard zones of
 * @p guard bytes (filled with OPREG__GUARD_BYTE) when @p guard > 0:
 * `*alloc` is then the whole buffer and the result a view of it. */
static opreg_status new_base(DLTensor **alloc, DLTensor **out, DLDevice where, const DLTensor *sb,
                             size_t guard) {
    opreg_dtype dt = opreg_gen_dtype_of(sb);
    size_t nbytes = opreg_tensor_nbytes(sb);
    int64_t total = (int64_t)(nbytes + 2 * guard);
    unsigned char zone[OPREG__GUARD_BYTES];
    opreg_status st;
    *alloc = NULL;
    if (!guard || where.device_type == OPREG_DEVICE_META || guard > sizeof zone)
        return opreg_tensor_empty(out, where, dt, sb->ndim, sb->shape);
    st = opreg_tensor_empty(alloc, where, OPREG_DTYPE_U8, 1, &total);
    if (st != OPREG_OK) return st;
    memset(zone, OPREG__GUARD_BYTE, guard);
    st = opreg__inputs_copy((*alloc)->data, (size_t)(*alloc)->byte_offset, where, zone, 0,
                            (DLDevice){ kDLCPU, 0 }, guard);
    if (st == OPREG_OK)
        st = opreg__inputs_copy((*alloc)->data, (size_t)(*alloc)->byte_offset + guard + nbytes,
                                where, zone, 0, (DLDevice){ kDLCPU, 0 }, guard);
    if (st == OPREG_OK) st = opreg_tensor_view(out, *alloc, sb->ndim, sb->shape, NULL, guard);
    if (st != OPREG_OK) {
        opreg_tensor_free(*alloc);
        *alloc = NULL;
        return st;
    }
    (*out)->dtype = opreg_dtype_to_dlpack(dt); /* a typed view of the byte buffer */
    return OPREG_OK;
}

static void free_tensor(DLTensor *alloc, DLTensor *base, DLTensor *view) {
    if (view != base) opreg_tensor_free(view);
    opreg_tensor_free(base);
    opreg_tensor_free(alloc);
}

opreg_status opreg__inputs_to_device_guarded(opreg_inputs **out, const opreg_inputs *src,
                                             DLDevice device, uint32_t host_args, size_t guard) {
    opreg_inputs *d = calloc(1, sizeof *d);
    opreg_status st = OPREG_OK;
    *out = NULL;
    if (!d) return OPREG_ERR_OUT_OF_MEMORY;
    memcpy(d, src, sizeof *d);
    d->ntensors = 0;
    d->nreplaced = 0;
    d->guard = device.device_type == OPREG_DEVICE_META ? 0 : guard;
    memset(d->rets, 0, sizeof d->rets);
    for (size_t i = 0; i < src->ntensors && st == OPREG_OK; i++) {
        const DLTensor *sb = src->base[i], *sv = src->view[i];
        DLTensor *na = NULL, *nb = NULL, *nv = NULL;
        DLDevice where = device;
        if (pinned_to_host(src, i, host_args)) where.device_type = kDLCPU, where.device_id = 0;
        st = new_base(&na, &nb, where, sb, d->guard);
        if (st != OPREG_OK) break;
        if (where.device_type != OPREG_DEVICE_META)
            st = opreg__inputs_copy(nb->data, (size_t)nb->byte_offset, nb->device, sb->data,
                                    (size_t)sb->byte_offset, sb->device, opreg_tensor_nbytes(sb));
        nv = nb;
        if (st == OPREG_OK && sv != sb)
            st = opreg_tensor_view(&nv, nb, sv->ndim, sv->shape, sv->strides,
                                   sv->byte_offset - sb->byte_offset);
        if (st != OPREG_OK) {
            free_tensor(na, nb, nb);
            break;
        }
        d->alloc[i] = na;
        d->base[i] = nb;
        d->view[i] = nv;
        d->ntensors++;
    }
    if (st != OPREG_OK) {
        opreg_inputs_free(d);
        return st;
    }
    for (size_t a = 0; a < d->nargs; a++) {
        opreg_value *v = &d->args[a];
        if (v->kind == OPREG_VALUE_TENSOR) {
            v->u.tensor = remap(src, d, v->u.tensor);
        } else if (v->kind == OPREG_VALUE_TENSOR_LIST) {
            for (size_t k = 0; k < v->u.tensors.len; k++)
                d->lists[a][k] = remap(src, d, src->lists[a][k]);
            v->u.tensors.items = d->lists[a];
        } else if (v->kind == OPREG_VALUE_STR) {
            v->u.s.ptr = d->strs[a];
        } else if (v->kind == OPREG_VALUE_INT_LIST) {
            v->u.ints.items = d->ints[a];
        }
    }
    *out = d;
    return OPREG_OK;
}

opreg_status opreg_inputs_to_device(opreg_inputs **out, const opreg_inputs *src, DLDevice device,
                                    uint32_t host_args) {
    return opreg__inputs_to_device_guarded(out, src, device, host_args, 0);
}

/* A clone is a copy "to" the CPU: new host tensors, the same bytes. */
opreg_status opreg_inputs_clone(opreg_inputs **out, const opreg_inputs *src) {
    DLDevice cpu = { kDLCPU, 0 };
    return opreg_inputs_to_device(out, src, cpu, 0);
}

opreg_status opreg_inputs_fetch(opreg_inputs *host, const opreg_inputs *dev) {
    opreg_status st = OPREG_OK;
    for (size_t i = 0; i < dev->ntensors && i < host->ntensors && st == OPREG_OK; i++) {
        const DLTensor *s = dev->base[i];
        DLTensor *t = host->base[i];
        st = opreg__inputs_copy(t->data, (size_t)t->byte_offset, t->device, s->data,
                                (size_t)s->byte_offset, s->device, opreg_tensor_nbytes(s));
    }
    opreg_inputs_clear_rets(host);
    for (size_t r = 0; r < OPREG__IN_MAX_RETS && st == OPREG_OK; r++) {
        const opreg_value *v = &dev->rets[r];
        DLTensor *t = NULL;
        if (v->kind != OPREG_VALUE_TENSOR) {
            host->rets[r] = *v;
            continue;
        }
        const DLTensor *s = v->u.tensor;
        st = opreg_tensor_empty_cpu(&t, opreg_gen_dtype_of(s), s->ndim, s->shape);
        if (st == OPREG_OK) {
            host->rets[r] = opreg_tensor_value(t);
            st = opreg__inputs_copy(t->data, 0, t->device, s->data, (size_t)s->byte_offset,
                                    s->device, opreg_tensor_nbytes(s));
        }
    }
    return st;
}

void opreg_inputs_clear_rets(opreg_inputs *in) {
    for (size_t r = 0; r < OPREG__IN_MAX_RETS; r++) {
        if (in->rets[r].kind == OPREG_VALUE_TENSOR) opreg_tensor_free(in->rets[r].u.tensor);
        in->rets[r] = opreg_none();
    }
}

void opreg_inputs_free(opreg_inputs *in) {
    if (!in) return;
    opreg_inputs_clear_rets(in);
    for (size_t i = 0; i < in->ntensors; i++)
        free_tensor(in->alloc[i], in->base[i], in->view[i]);
    for (size_t i = 0; i < in->nreplaced; i++)
        opreg_tensor_free(in->replaced[i]);
    free(in);
}

const opreg_value *opreg_inputs_args(const opreg_inputs *in) {
    return in->args;
}
size_t opreg_inputs_nargs(const opreg_inputs *in) {
    return in->nargs;
}
opreg_value *opreg_inputs_rets(opreg_inputs *in) {
    return in->rets;
}
size_t opreg_inputs_nrets(const opreg_inputs *in) {
    (void)in;
    return OPREG__IN_MAX_RETS;
}
opreg_dtype opreg_inputs_dtype(const opreg_inputs *in) {
    return in->dtype;
}
const opreg_op *opreg_inputs_op(const opreg_inputs *in) {
    return in->op;
}
