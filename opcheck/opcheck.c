/* opcheck: for each op, dtype and size case, the generated inputs run on
 * every key that has a kernel, between guard zones; the bytes before and
 * after each call, the results against the Reference key's, the Meta
 * kernel's verdicts, the refusals of mutated inputs and two concurrent
 * calls decide each check (opreg/opcheck.h, docs/opcheck.md). */
#define _POSIX_C_SOURCE 200809L
#include "opcheck/opcheck_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCHECKS 7

/* ---- the report ---- */

struct opreg_check_report {
    size_t n, cap;
    opreg_check_item *items;
};

static const char *const check_names[NCHECKS] = { "mutation", "schema",  "meta", "backends",
                                                  "refusals", "threads", "edges" };

const char *opreg_check_kind_name(opreg_check_kind check) {
    for (int i = 0; i < NCHECKS; i++)
        if (check == (opreg_check_kind)(1u << i)) return check_names[i];
    return "?";
}

opreg_status opreg_check_kinds_parse(uint32_t *out, const char *text) {
    *out = 0;
    for (const char *p = text ? text : ""; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        int i;
        for (i = 0; i < NCHECKS; i++)
            if (strlen(check_names[i]) == n && !strncmp(check_names[i], p, n)) break;
        if (i == NCHECKS) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "unknown check '%.*s' (mutation, schema, meta, backends, refusals, threads, "
                     "edges)",
                     (int)(n < 40 ? n : 40), p);
            *out = 0;
            return opreg_set_error(OPREG_ERR_INVALID_ARGUMENT, msg);
        }
        *out |= 1u << i;
        p += n + (end != NULL);
    }
    return OPREG_OK;
}

/* Each comma-separated item of @p text, its bit from @p bit_of (-1: unknown,
 * named in the error with @p what). */
static opreg_status parse_list(uint32_t *out, const char *text, const char *what,
                               int (*bit_of)(const char *name)) {
    *out = 0;
    for (const char *p = text ? text : ""; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), p);
        int bit = bit_of(name);
        if (bit < 0 || bit >= 32) {
            char msg[96];
            snprintf(msg, sizeof msg, "unknown %s '%s'", what, name);
            *out = 0;
            return opreg_set_error(OPREG_ERR_INVALID_ARGUMENT, msg);
        }
        *out |= 1u << bit;
        p += n + (end != NULL);
    }
    return OPREG_OK;
}

static int dtype_bit(const char *name) {
    opreg_dtype dt;
    return opreg_dtype_from_name(&dt, name) == OPREG_OK ? (int)dt : -1;
}

static bool same_ascii_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a + 32) : *a;
        char y = *b >= 'A' && *b <= 'Z' ? (char)(*b + 32) : *b;
        if (x != y) return false;
    }
    return *a == *b;
}

static int key_bit(const char *name) {
    for (int k = 0; k < opreg_key_count(); k++)
        if (same_ascii_nocase(opreg_key_name(k), name)) return k;
    return -1;
}

opreg_status opreg_check_dtypes_parse(uint32_t *out, const char *text) {
    if (!out)
        return opreg_set_error(OPREG_ERR_INVALID_ARGUMENT, "opreg_check_dtypes_parse: NULL out");
    return parse_list(out, text, "dtype", dtype_bit);
}

opreg_status opreg_check_keys_parse(uint32_t *out, const char *text) {
    if (!out)
        return opreg_set_error(OPREG_ERR_INVALID_ARGUMENT, "opreg_check_keys_parse: NULL out");
    return parse_list(out, text, "key", key_bit);
}

const char *opreg_check_result_name(opreg_check_result result) {
    switch (result) {
    case OPREG_CHECK_PASSED:
        return "passed";
    case OPREG_CHECK_WARNING:
        return "warning";
    case OPREG_CHECK_FAILED:
        return "failed";
    case OPREG_CHECK_NOT_APPLICABLE:
        return "not applicable";
    }
    return "?";
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static opreg_status report_add(opreg_check_report *r, const char *op, const char *key, int check,
                               opreg_check_result result, const char *message) {
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        opreg_check_item *it = realloc(r->items, cap * sizeof *it);
        if (!it) return OPREG_ERR_OUT_OF_MEMORY;
        r->items = it;
        r->cap = cap;
    }
    opreg_check_item *it = &r->items[r->n];
    it->op = dup_str(op);
    it->key = dup_str(key);
    it->message = dup_str(message);
    it->check = (opreg_check_kind)(1u << check);
    it->result = result;
    if (!it->op || !it->key || !it->message) {
        free((char *)it->op);
        free((char *)it->key);
        free((char *)it->message);
        return OPREG_ERR_OUT_OF_MEMORY;
    }
    r->n++;
    return OPREG_OK;
}

size_t opreg_check_report_count(const opreg_check_report *r) {
    return r ? r->n : 0;
}

const opreg_check_item *opreg_check_report_item(const opreg_check_report *r, size_t i) {
    return r && i < r->n ? &r->items[i] : NULL;
}

size_t opreg_check_report_tally(const opreg_check_report *r, opreg_check_result result) {
    size_t n = 0;
    for (size_t i = 0; r && i < r->n; i++)
        n += r->items[i].result == result;
    return n;
}

void opreg_check_report_free(opreg_check_report *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) {
        free((char *)r->items[i].op);
        free((char *)r->items[i].key);
        free((char *)r->items[i].message);
    }
    free(r->items);
    free(r);
}

/* A growing string for the JSON text. */
typedef struct text {
    char *p;
    size_t len, cap;
    bool oom;
} text;

static void put(text *t, const char *fmt, ...) {
    va_list ap;
    int n;
    if (t->oom) return;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) break;
        size_t cap = 2 * t->cap + (size_t)n + 1;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->oom = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    t->len += (size_t)n;
}

static void put_json_str(text *t, const char *s) {
    put(t, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            put(t, "\\%c", c);
        else if (c < 0x20)
            put(t, "\\u%04x", c);
        else
            put(t, "%c", c);
    }
    put(t, "\"");
}

char *opreg_check_report_json(const opreg_check_report *r) {
    text t = { malloc(256), 0, 256, false };
    if (!t.p) return NULL;
    t.p[0] = '\0';
    put(&t, "[");
    for (size_t i = 0; r && i < r->n; i++) {
        const opreg_check_item *it = &r->items[i];
        put(&t, "%s\n  {\"op\": ", i ? "," : "");
        put_json_str(&t, it->op);
        put(&t, ", \"key\": ");
        put_json_str(&t, it->key);
        put(&t, ", \"check\": \"%s\", \"result\": \"%s\", \"message\": ",
            opreg_check_kind_name(it->check), opreg_check_result_name(it->result));
        put_json_str(&t, it->message);
        put(&t, "}");
    }
    put(&t, "%s]\n", r && r->n ? "\n" : "");
    if (t.oom) {
        free(t.p);
        return NULL;
    }
    return t.p;
}

/* ---- the verdicts of one op on one key ---- */

typedef struct verdict {
    opreg_check_result result;
    bool ran;
    char msg[512];
} verdict;

/* Record a failure (or warning) of one check; the first counter-example
 * stays. */
static void note(verdict *v, opreg_check_result result, const char *fmt, ...) {
    va_list ap;
    v->ran = true;
    if (v->result == OPREG_CHECK_FAILED ||
        (v->result == OPREG_CHECK_WARNING && result != OPREG_CHECK_FAILED))
        return;
    v->result = result;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
}

static void ran(verdict *v) {
    v->ran = true;
}

/* One key under check. */
typedef struct keyinfo {
    opreg_dispatch_key key;
    DLDevice device;
    const char *name;
    bool usable;
    bool anchor_only; /* Reference outside the caller's keys: compared with, not reported */
    char why[200];
    verdict v[NCHECKS];
    opreg_inputs *result; /* the default case's results, on the host */
} keyinfo;

enum { C_MUTATION, C_SCHEMA, C_META, C_BACKENDS, C_REFUSALS, C_THREADS, C_EDGES };

/* What one case of one op needs. */
typedef struct ctx {
    const opreg_op *op;
    const opreg_schema *schema;
    const opreg_generator *gen;
    uint32_t checks;
    uint32_t host_args;
    bool meta;       /* the op has a Meta kernel */
    char where[320]; /* "dtype f32, sizes tokens=64,hidden=1024" */
} ctx;

/* ---- bytes of every tensor ---- */

typedef struct snap {
    size_t n;
    uint8_t *b[OPREG__IN_MAX_TENSORS];
    size_t len[OPREG__IN_MAX_TENSORS];
} snap;

static void snap_free(snap *s) {
    for (size_t i = 0; i < s->n; i++)
        free(s->b[i]);
    s->n = 0;
}

/* Read every tensor's bytes (with its guard zones) into host memory. */
static opreg_status snap_take(snap *s, const opreg_inputs *in) {
    s->n = 0;
    for (size_t i = 0; i < in->ntensors; i++) {
        const DLTensor *t = in->alloc[i] ? in->alloc[i] : in->base[i];
        size_t len = opreg_tensor_nbytes(t);
        opreg_status st;
        s->b[i] = malloc(len ? len : 1);
        s->len[i] = len;
        s->n = i + 1;
        if (!s->b[i]) return OPREG_ERR_OUT_OF_MEMORY;
        if (t->device.device_type == OPREG_DEVICE_META || !len) continue;
        st = opreg__inputs_copy(s->b[i], 0, (DLDevice){ kDLCPU, 0 }, t->data,
                                (size_t)t->byte_offset, t->device, len);
        if (st != OPREG_OK) return st;
    }
    return OPREG_OK;
}

/* The argument that holds tensor @p i of @p in, and whether it is written
 * (`!`); -1 when no argument names it. */
static int arg_of(const ctx *c, const opreg_inputs *in, size_t i, bool *write) {
    const DLTensor *v = in->view[i];
    *write = false;
    for (size_t a = 0; a < in->nargs; a++) {
        const opreg_value *x = &in->args[a];
        bool hit = x->kind == OPREG_VALUE_TENSOR && x->u.tensor == v;
        for (size_t k = 0; x->kind == OPREG_VALUE_TENSOR_LIST && k < x->u.tensors.len; k++)
            hit |= x->u.tensors.items[k] == v;
        if (hit) {
            *write = opreg_argument_is_write(opreg_schema_argument(c->schema, a));
            return (int)a;
        }
    }
    return -1;
}

static const char *arg_name(const ctx *c, int a) {
    return a < 0 ? "(an internal tensor)"
                 : opreg_argument_name(opreg_schema_argument(c->schema, (size_t)a));
}

/* Mark the bytes of @p view's elements inside its base's data, which
 * starts at @p base_off bytes into the view's buffer. */
static void mark_elements(uint8_t *mask, size_t mlen, const DLTensor *view, int64_t rel) {
    int64_t idx[64] = { 0 }, numel = opreg_tensor_numel(view);
    size_t item = (size_t)(view->dtype.bits / 8) * view->dtype.lanes;
    if (!item) item = 1;
    for (int64_t e = 0; e < numel; e++) {
        int64_t off = rel;
        for (int d = 0; d < view->ndim; d++)
            off += idx[d] * (view->strides ? view->strides[d] : 1) * (int64_t)item;
        if (!view->strides) off = rel + e * (int64_t)item;
        for (size_t b = 0; b < item; b++)
            if (off >= 0 && (size_t)off + b < mlen) mask[(size_t)off + b] = 1;
        for (int d = view->ndim - 1; d >= 0; d--) {
            if (++idx[d] < view->shape[d]) break;
            idx[d] = 0;
        }
    }
}

/* Compare the bytes before and after a call: guard zones, read-only
 * tensors, the gaps of written views. Returns false with a description in
 * @p msg at the first difference; @p kind says what it was (0 guard, 1
 * read-only, 2 gap). @p unwritten, when not NULL, gets the written (`!`)
 * arguments whose bytes did not change, as bits. */
static bool compare_snaps(const ctx *c, const opreg_inputs *in, const snap *before,
                          const snap *after, char *msg, size_t cap, uint64_t *unwritten) {
    size_t g = in->guard;
    bool ok = true;
    if (unwritten) *unwritten = 0;
    for (size_t i = 0; i < in->ntensors && i < before->n && i < after->n; i++) {
        const uint8_t *b = before->b[i], *a = after->b[i];
        size_t len = before->len[i], data = len - 2 * g;
        bool write;
        int arg = arg_of(c, in, i, &write);
        if (in->base[i]->device.device_type == OPREG_DEVICE_META) continue;
        for (size_t k = 0; ok && k < len; k++) {
            if (a[k] == b[k]) continue;
            if (k < g || k >= g + data) {
                snprintf(msg, cap,
                         "wrote %s the buffer of '%s' (guard byte %s%zu: 0x%02x -> 0x%02x)",
                         k < g ? "before" : "past the end of", arg_name(c, arg), k < g ? "-" : "+",
                         k < g ? g - k : k - g - data, b[k], a[k]);
                ok = false;
            } else if (!write) {
                snprintf(msg, cap,
                         "wrote its read-only argument '%s' (byte %zu of %zu: 0x%02x -> 0x%02x)",
                         arg_name(c, arg), k - g, data, b[k], a[k]);
                ok = false;
            }
        }
        if (ok && write && in->view[i] != in->base[i]) {
            uint8_t *mask = calloc(data ? data : 1, 1);
            if (mask) {
                mark_elements(mask, data, in->view[i],
                              (int64_t)(in->view[i]->byte_offset - in->base[i]->byte_offset));
                for (size_t k = 0; ok && k < data; k++)
                    if (!mask[k] && a[g + k] != b[g + k]) {
                        snprintf(msg, cap,
                                 "wrote between the elements of the strided view '%s' (byte %zu "
                                 "of its buffer)",
                                 arg_name(c, arg), k);
                        ok = false;
                    }
                free(mask);
            }
        }
        if (unwritten && write && arg >= 0 && arg < 64 && data && !memcmp(a + g, b + g, data))
            *unwritten |= 1ull << arg;
        if (!ok) break;
    }
    return ok;
}

/* Whether any byte of any tensor changed; @p msg names the first. */
static bool changed(const ctx *c, const opreg_inputs *in, const snap *before, const snap *after,
                    char *msg, size_t cap) {
    for (size_t i = 0; i < before->n && i < after->n; i++) {
        bool write;
        if (in->base[i]->device.device_type == OPREG_DEVICE_META) continue;
        for (size_t k = 0; k < before->len[i]; k++)
            if (before->b[i][k] != after->b[i][k]) {
                snprintf(msg, cap, "'%s' byte %zu: 0x%02x -> 0x%02x",
                         arg_name(c, arg_of(c, in, i, &write)), k >= in->guard ? k - in->guard : k,
                         before->b[i][k], after->b[i][k]);
                return true;
            }
    }
    return false;
}

/* ---- calls ---- */

static opreg_status call_key(const opreg_op *op, opreg_dispatch_key key, opreg_inputs *in) {
    opreg_inputs_clear_rets(in);
    return opreg_call_boxed_key(op, key, in->args, in->nargs, NULL, 0, in->rets,
                                OPREG__IN_MAX_RETS);
}

static void copy_err(char *dst, size_t cap) {
    const char *e = opreg_last_error();
    snprintf(dst, cap, "%s", e && *e ? e : "(no message)");
}

/* The results of @p dev (a copy of @p host's inputs on a device) as new
 * host inputs. */
static opreg_status fetch_copy(opreg_inputs **out, const opreg_inputs *host,
                               const opreg_inputs *dev) {
    opreg_status st = opreg_inputs_clone(out, host);
    if (st == OPREG_OK) st = opreg_inputs_fetch(*out, dev);
    if (st != OPREG_OK) {
        opreg_inputs_free(*out);
        *out = NULL;
    }
    return st;
}

/* Whether two host runs wrote the same bytes everywhere (arguments and
 * returns); @p msg names the first difference. */
static bool same_bytes(const ctx *c, const opreg_inputs *x, const opreg_inputs *y, char *msg,
                       size_t cap) {
    for (size_t i = 0; i < x->ntensors && i < y->ntensors; i++) {
        size_t n = opreg_tensor_nbytes(x->base[i]);
        const uint8_t *p = (const uint8_t *)x->base[i]->data + x->base[i]->byte_offset;
        const uint8_t *q = (const uint8_t *)y->base[i]->data + y->base[i]->byte_offset;
        bool write;
        for (size_t k = 0; k < n; k++)
            if (p[k] != q[k]) {
                snprintf(msg, cap, "'%s' differs at byte %zu (0x%02x alone, 0x%02x concurrent)",
                         arg_name(c, arg_of(c, x, i, &write)), k, p[k], q[k]);
                return false;
            }
    }
    for (size_t r = 0; r < OPREG__IN_MAX_RETS; r++) {
        const opreg_value *a = &x->rets[r], *b = &y->rets[r];
        if (a->kind != OPREG_VALUE_TENSOR || b->kind != OPREG_VALUE_TENSOR) continue;
        size_t n = opreg_tensor_nbytes(a->u.tensor);
        if (n != opreg_tensor_nbytes(b->u.tensor) ||
            memcmp(a->u.tensor->data, b->u.tensor->data, n)) {
            snprintf(msg, cap, "return %zu differs between a call alone and concurrent calls", r);
            return false;
        }
    }
    return true;
}

/* ---- one case on one key ---- */

typedef struct thread_call {
    const opreg_op *op;
    opreg_dispatch_key key;
    opreg_inputs *in;
    opreg_status st;
    pthread_barrier_t *start;
} thread_call;

static void *thread_main(void *p) {
    thread_call *t = p;
    pthread_barrier_wait(t->start);
    t->st = call_key(t->op, t->key, t->in);
    return NULL;
}

/* Two calls at once on copies of @p host, against @p alone. */
static void check_threads(const ctx *c, keyinfo *k, const opreg_inputs *host,
                          const opreg_inputs *alone) {
    opreg_inputs *dev[2] = { NULL, NULL }, *got = NULL;
    thread_call tc[2];
    pthread_t th[2];
    pthread_barrier_t start;
    char msg[300];
    int started = 0;
    if (pthread_barrier_init(&start, NULL, 2) != 0) return;
    for (int i = 0; i < 2; i++) {
        if (opreg_inputs_to_device(&dev[i], host, k->device, c->host_args) != OPREG_OK) goto done;
        tc[i] = (thread_call){ c->op, k->key, dev[i], OPREG_OK, &start };
    }
    for (; started < 2; started++)
        if (pthread_create(&th[started], NULL, thread_main, &tc[started]) != 0) break;
    if (started < 2) {
        /* the barrier would wait for ever: let the started one go */
        if (started == 1) {
            tc[1].in = dev[1];
            thread_main(&tc[1]);
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    ran(&k->v[C_THREADS]);
    for (int i = 0; i < 2; i++) {
        if (tc[i].st != OPREG_OK) {
            note(&k->v[C_THREADS], OPREG_CHECK_FAILED,
                 "%s: a call alone succeeded, one of two concurrent calls failed: %s: %s", c->where,
                 opreg_status_name(tc[i].st), opreg_last_error());
            break;
        }
        if (fetch_copy(&got, host, dev[i]) != OPREG_OK) break;
        if (!same_bytes(c, alone, got, msg, sizeof msg)) {
            note(&k->v[C_THREADS], OPREG_CHECK_FAILED, "%s: two concurrent calls: %s", c->where,
                 msg);
            opreg_inputs_free(got);
            break;
        }
        opreg_inputs_free(got);
        got = NULL;
    }
done:
    pthread_barrier_destroy(&start);
    opreg_inputs_free(dev[0]);
    opreg_inputs_free(dev[1]);
}

/* Whether the returned tensors of the Meta call agree with the key's. */
static bool same_returns(const opreg_inputs *meta, const opreg_inputs *dev, char *msg, size_t cap) {
    for (size_t r = 0; r < OPREG__IN_MAX_RETS; r++) {
        const opreg_value *m = &meta->rets[r], *d = &dev->rets[r];
        if (d->kind != OPREG_VALUE_TENSOR) continue;
        if (m->kind != OPREG_VALUE_TENSOR) {
            snprintf(msg, cap, "return %zu: Meta returns no tensor", r);
            return false;
        }
        const DLTensor *a = m->u.tensor, *b = d->u.tensor;
        bool same =
            a->ndim == b->ndim && a->dtype.code == b->dtype.code && a->dtype.bits == b->dtype.bits;
        for (int i = 0; same && i < a->ndim; i++)
            same = a->shape[i] == b->shape[i];
        if (!same) {
            char sa[32], sb[32];
            snprintf(sa, sizeof sa, "%d-d %s", a->ndim, opreg_dtype_name(opreg_gen_dtype_of(a)));
            snprintf(sb, sizeof sb, "%d-d %s", b->ndim, opreg_dtype_name(opreg_gen_dtype_of(b)));
            snprintf(msg, cap, "return %zu: Meta gives %s%s, the kernel %s", r, sa,
                     a->ndim == b->ndim ? " of another shape" : "", sb);
            return false;
        }
    }
    return true;
}

/* The Meta kernel's verdict on @p host (optionally mutated by @p mutate):
 * OK or a refusal; returns in `*out` (the caller's) when asked. */
typedef bool (*mutate_fn)(opreg_inputs *in, size_t arg, int how, char *what, size_t cap);

static opreg_status call_meta(const ctx *c, const opreg_inputs *host, mutate_fn mutate, size_t arg,
                              int how, opreg_inputs **out) {
    DLDevice meta = { OPREG_DEVICE_META, 0 };
    opreg_inputs *m = NULL;
    char what[160];
    opreg_status st = opreg_inputs_to_device(&m, host, meta, 0);
    if (st != OPREG_OK) return OPREG_ERR_INTERNAL;
    if (mutate && !mutate(m, arg, how, what, sizeof what)) {
        opreg_inputs_free(m);
        return OPREG_ERR_INTERNAL;
    }
    st = call_key(c->op, OPREG_KEY_META, m);
    if (out)
        *out = m;
    else
        opreg_inputs_free(m);
    return st;
}

/* ---- invalid inputs: views of an argument with another dtype or shape ---- */

/* A dtype of the same or a smaller item size than @p dt, and another. */
static opreg_dtype other_dtype(opreg_dtype dt) {
    switch (dt) {
    case OPREG_DTYPE_F32:
        return OPREG_DTYPE_F16;
    case OPREG_DTYPE_F16:
        return OPREG_DTYPE_BF16;
    case OPREG_DTYPE_BF16:
        return OPREG_DTYPE_F16;
    case OPREG_DTYPE_F64:
        return OPREG_DTYPE_F32;
    case OPREG_DTYPE_I64:
        return OPREG_DTYPE_I32;
    case OPREG_DTYPE_I32:
        return OPREG_DTYPE_F32;
    case OPREG_DTYPE_I16:
        return OPREG_DTYPE_F16;
    case OPREG_DTYPE_I8:
        return OPREG_DTYPE_U8;
    default:
        return OPREG_DTYPE_I8;
    }
}

enum { MUT_DTYPE, MUT_RANK, MUT_SHRINK, NMUT };

/* Replace tensor argument @p arg of @p in by a view of it that differs in
 * one way (@p how), never reaching past its bytes. The view takes the
 * place of the one it replaces (which is kept, to be freed with the
 * inputs). Returns false when the argument takes no such change. */
static bool mutate_arg(opreg_inputs *in, size_t arg, int how, char *what, size_t cap) {
    opreg_value *v = &in->args[arg];
    DLTensor *t, *view = NULL;
    int64_t shape[64], strides[64];
    int ndim;
    size_t slot = 0;
    if (v->kind != OPREG_VALUE_TENSOR || !(t = v->u.tensor) || in->nreplaced == OPREG__IN_MAX_ARGS)
        return false;
    while (slot < in->ntensors && in->view[slot] != t)
        slot++;
    if (slot == in->ntensors) return false;
    ndim = t->ndim;
    for (int d = 0; d < ndim; d++) {
        shape[d] = t->shape[d];
        strides[d] = t->strides ? t->strides[d] : 1;
    }
    if (!t->strides)
        for (int d = ndim - 2; d >= 0; d--)
            strides[d] = strides[d + 1] * shape[d + 1];
    opreg_dtype dt = opreg_gen_dtype_of(t);
    switch (how) {
    case MUT_DTYPE:
        dt = other_dtype(dt);
        snprintf(what, cap, "as %s", opreg_dtype_name(dt));
        break;
    case MUT_RANK:
        if (ndim < 1) return false;
        ndim--;
        snprintf(what, cap, "with %d dimensions", ndim);
        break;
    default:
        if (ndim < 1 || shape[ndim - 1] < 2) return false;
        shape[ndim - 1]--;
        snprintf(what, cap, "with its last size %" PRId64, shape[ndim - 1]);
        break;
    }
    if (opreg_tensor_view(&view, t, ndim, shape, strides, 0) != OPREG_OK) return false;
    view->dtype = opreg_dtype_to_dlpack(dt);
    if (t != in->base[slot]) in->replaced[in->nreplaced++] = t;
    in->view[slot] = view;
    v->u.tensor = view;
    return true;
}

/* Refusals and Meta's verdicts on every invalid variant of @p host. */
static void check_invalid(const ctx *c, keyinfo *k, const opreg_inputs *host) {
    for (size_t a = 0; a < host->nargs; a++) {
        if (host->args[a].kind != OPREG_VALUE_TENSOR) continue;
        for (int how = 0; how < NMUT; how++) {
            opreg_inputs *dev = NULL;
            snap before = { 0 }, after = { 0 };
            char what[160], desc[200], msg[300], err[300];
            if (opreg__inputs_to_device_guarded(&dev, host, k->device, c->host_args,
                                                OPREG__GUARD_BYTES) != OPREG_OK)
                return;
            if (!mutate_arg(dev, a, how, what, sizeof what)) {
                opreg_inputs_free(dev);
                continue;
            }
            snprintf(desc, sizeof desc, "'%s' %s", arg_name(c, (int)a), what);
            opreg_status st = OPREG_OK;
            if (snap_take(&before, dev) == OPREG_OK) {
                st = call_key(c->op, k->key, dev);
                copy_err(err, sizeof err);
                if (snap_take(&after, dev) == OPREG_OK && st != OPREG_OK &&
                    (c->checks & OPREG_CHECK_REFUSALS)) {
                    ran(&k->v[C_REFUSALS]);
                    if (!err[0] || !strcmp(err, "(no message)"))
                        note(&k->v[C_REFUSALS], OPREG_CHECK_FAILED,
                             "%s, %s: refused (%s) without a message", c->where, desc,
                             opreg_status_name(st));
                    else if (!compare_snaps(c, dev, &before, &after, msg, sizeof msg, NULL) ||
                             changed(c, dev, &before, &after, msg, sizeof msg))
                        note(&k->v[C_REFUSALS], OPREG_CHECK_FAILED,
                             "%s, %s: refused (%s: %s) but changed memory: %s", c->where, desc,
                             opreg_status_name(st), err, msg);
                }
            }
            if (c->meta && (c->checks & OPREG_CHECK_META)) {
                opreg_status ms = call_meta(c, host, mutate_arg, a, how, NULL);
                ran(&k->v[C_META]);
                if (ms != OPREG_ERR_INTERNAL && (ms == OPREG_OK) != (st == OPREG_OK)) {
                    if (ms == OPREG_OK)
                        note(&k->v[C_META], OPREG_CHECK_FAILED,
                             "%s, %s: Meta accepts a call that %s refuses (%s: %s)", c->where, desc,
                             k->name, opreg_status_name(st), err);
                    else
                        note(&k->v[C_META], OPREG_CHECK_FAILED,
                             "%s, %s: Meta refuses (%s: %s) a call that %s accepts", c->where, desc,
                             opreg_status_name(ms), opreg_last_error(), k->name);
                }
            }
            snap_free(&before);
            snap_free(&after);
            opreg_inputs_free(dev);
        }
    }
}

/* ---- valid cases ---- */

/* One valid case on one key: the mutation contract, the `!` arguments
 * left unwritten, agreement with @p ref (the anchor key's results; NULL
 * for the anchor itself), and Meta's verdict and returns. An edge case
 * notes every failure under the edges check. The results, on the host,
 * go to `*out` (the caller's) when the call succeeded. */
static opreg_status run_valid(const ctx *c, keyinfo *k, const opreg_inputs *host, bool edge,
                              const opreg_inputs *ref, const char *ref_name, opreg_inputs **out) {
    opreg_inputs *dev = NULL, *got = NULL, *meta = NULL;
    snap before = { 0 }, after = { 0 };
    char msg[300], err[300];
    uint64_t unwritten = 0;
    const char *pre = edge ? "edge case " : "";
#define V(check) (edge ? &k->v[C_EDGES] : &k->v[check])
    *out = NULL;
    opreg_status st =
        opreg__inputs_to_device_guarded(&dev, host, k->device, c->host_args, OPREG__GUARD_BYTES);
    if (st != OPREG_OK) {
        note(V(C_BACKENDS), OPREG_CHECK_FAILED, "%s%s: the inputs could not be copied to %s: %s",
             pre, c->where, k->name, opreg_last_error());
        return st;
    }
    if ((st = snap_take(&before, dev)) != OPREG_OK) goto done;
    st = call_key(c->op, k->key, dev);
    copy_err(err, sizeof err);
    if (snap_take(&after, dev) != OPREG_OK) goto done;
    if (c->checks & (OPREG_CHECK_MUTATION | OPREG_CHECK_EDGES)) {
        ran(V(C_MUTATION));
        if (!compare_snaps(c, dev, &before, &after, msg, sizeof msg, &unwritten))
            note(V(C_MUTATION), OPREG_CHECK_FAILED, "%s%s: %s", pre, c->where, msg);
    }
    if (!edge && st == OPREG_OK && (c->checks & OPREG_CHECK_SCHEMA)) {
        ran(&k->v[C_SCHEMA]);
        for (int a = 0; a < 64; a++)
            if (unwritten >> a & 1)
                note(&k->v[C_SCHEMA], OPREG_CHECK_WARNING,
                     "%s: '%s' is marked `!` but the kernel left every byte of it unchanged",
                     c->where, arg_name(c, a));
    }
    if (st != OPREG_OK) {
        ran(V(C_BACKENDS));
        if (ref)
            note(V(C_BACKENDS), OPREG_CHECK_FAILED, "%s%s: refuses a call that %s accepts: %s: %s",
                 pre, c->where, ref_name, opreg_status_name(st), err);
        else if (!edge)
            note(V(C_BACKENDS), OPREG_CHECK_FAILED, "%s: refuses the generator's inputs: %s: %s",
                 c->where, opreg_status_name(st), err);
    } else if (fetch_copy(&got, host, dev) == OPREG_OK && ref &&
               (c->checks & (OPREG_CHECK_BACKENDS | OPREG_CHECK_EDGES))) {
        opreg_diff d;
        ran(V(C_BACKENDS));
        opreg_inputs_compare(&d, got, ref);
        if (!d.ok)
            note(V(C_BACKENDS), OPREG_CHECK_FAILED,
                 "%s%s: differs from %s beyond the dtype's tolerance: %s (max abs error %.3g, "
                 "%" PRId64 " of %" PRId64 " elements outside)",
                 pre, c->where, ref_name, d.why[0] ? d.why : d.first_bad, d.max_abs, d.bad,
                 d.checked);
    }
    if (c->meta && (c->checks & (OPREG_CHECK_META | OPREG_CHECK_EDGES))) {
        opreg_status ms = call_meta(c, host, NULL, 0, 0, &meta);
        ran(V(C_META));
        if (ms != OPREG_ERR_INTERNAL && (ms == OPREG_OK) != (st == OPREG_OK))
            note(V(C_META), OPREG_CHECK_FAILED,
                 ms == OPREG_OK ? "%s%s: Meta accepts a call that %s refuses%s%s"
                                : "%s%s: Meta refuses a valid call that %s accepts: %s",
                 pre, c->where, k->name, ms == OPREG_OK ? ": " : opreg_last_error(),
                 ms == OPREG_OK ? err : "");
        else if (ms == OPREG_OK && st == OPREG_OK && !same_returns(meta, dev, msg, sizeof msg))
            note(V(C_META), OPREG_CHECK_FAILED, "%s%s: %s", pre, c->where, msg);
    }
    if (!edge && st == OPREG_OK && got && (c->checks & OPREG_CHECK_THREADS))
        check_threads(c, k, host, got);
    if (!edge && (c->checks & (OPREG_CHECK_REFUSALS | OPREG_CHECK_META))) check_invalid(c, k, host);
#undef V
done:
    snap_free(&before);
    snap_free(&after);
    opreg_inputs_free(meta);
    opreg_inputs_free(dev);
    if (st == OPREG_OK)
        *out = got;
    else
        opreg_inputs_free(got);
    return st;
}

/* ---- one op ---- */

/* The keys of @p op to check, anchor (Reference, else the first) first.
 * When @p mask leaves the Reference key out, it still runs first as the
 * anchor that the `backends` check compares with, and is not reported. */
static size_t find_keys(const opreg_op *op, uint32_t mask, keyinfo *keys) {
    size_t n = 0;
    int nk = opreg_key_count();
    bool composite_only = true;
    for (int k = 0; k < nk; k++) {
        opreg_kernel_kind kind = opreg_op_kernel_kind(op, k);
        if (k != OPREG_KEY_META && (kind == OPREG_KERNEL_DIRECT || kind == OPREG_KERNEL_FALLBACK))
            composite_only = false;
    }
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < nk && n < OPREG_MAX_KEYS; k++) {
            opreg_kernel_kind kind = opreg_op_kernel_kind(op, k);
            bool has = kind == OPREG_KERNEL_DIRECT || kind == OPREG_KERNEL_FALLBACK ||
                       (composite_only && kind == OPREG_KERNEL_COMPOSITE && k == OPREG_KEY_CPU);
            bool masked = mask && !(mask >> k & 1);
            if (k == OPREG_KEY_META || !has || (masked && k != OPREG_KEY_REFERENCE)) continue;
            if ((pass == 0) != (k == OPREG_KEY_REFERENCE)) continue;
            keyinfo *ki = &keys[n++];
            const opreg_backend *b = opreg_key_backend(k);
            memset(ki, 0, sizeof *ki);
            ki->anchor_only = masked;
            ki->key = k;
            ki->name = opreg_key_name(k);
            ki->device.device_type =
                k == OPREG_KEY_REFERENCE || !b ? kDLCPU : (DLDeviceType)b->device_type;
            ki->device.device_id = 0;
            ki->usable = opreg_key_is_available(k, ki->why, sizeof ki->why);
            if (!ki->usable && !ki->why[0]) snprintf(ki->why, sizeof ki->why, "not available here");
            if (ki->usable && !opreg_inputs_device_reachable(ki->device)) {
                ki->usable = false;
                snprintf(ki->why, sizeof ki->why,
                         "its backend has no copy functions to bring the inputs there");
            }
        }
    return n;
}

/* The sizes of one case: the defaults the generator read (@p learned),
 * the caller's where the op reads them (@p given), then the edge case's
 * values: 1 all counts 0, 2 every size 1, 3 every size odd. */
static void case_sizes(opreg_sizes *out, const opreg_sizes *learned, const opreg_sizes *given,
                       int edge) {
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < learned->n; i++) {
        if (!learned->kv[i].used) continue;
        int64_t v = learned->kv[i].value;
        for (size_t j = 0; given && j < given->n; j++)
            if (!strcmp(given->kv[j].name, learned->kv[i].name)) v = given->kv[j].value;
        switch (learned->kv[i].kind) {
        case OPREG_SIZE_COUNT:
            if (edge == 1) v = 0;
            if (edge == 2) v = 1;
            if (edge == 3 && v > 1 && v % 2 == 0) v--;
            break;
        case OPREG_SIZE_DIM:
            if (edge == 2) v = 1;
            if (edge == 3 && v > 1 && v % 2 == 0) v--;
            break;
        default:
            break;
        }
        opreg_sizes_set(out, learned->kv[i].name, v);
    }
}

static const char *const edge_names[4] = { "", "empty (every count 0)", "every size 1",
                                           "odd sizes" };

static opreg_status check_op(opreg_check_report *r, const opreg_op *op,
                             const opreg_opcheck_options *o, const opreg_sizes *given) {
    keyinfo *keys = calloc(OPREG_MAX_KEYS, sizeof *keys);
    ctx c;
    size_t nkeys;
    const char *name = opreg_op_name(op);
    char err[300];
    opreg_status st = OPREG_OK;
    bool any_edge = false;
    char edge_why[300] = "";
    if (!keys) return OPREG_ERR_OUT_OF_MEMORY;
    memset(&c, 0, sizeof c);
    c.op = op;
    c.schema = opreg_op_schema(op);
    c.gen = opreg_op_generator(op);
    if (!c.gen && o->generator) c.gen = o->generator;
    c.checks = o->checks ? o->checks : OPREG_CHECK_ALL;
    c.host_args = c.gen ? c.gen->host_args : 0;
    c.meta = opreg_op_kernel_kind(op, OPREG_KEY_META) != OPREG_KERNEL_NONE;
    nkeys = find_keys(op, o->keys, keys);

    uint32_t dtypes = c.gen ? c.gen->dtypes : OPREG_GEN_FLOATS;
    if (o->dtypes) dtypes &= o->dtypes;
    bool built_any = false;
    err[0] = '\0';
    for (int dt = 0; dt < 32 && st != OPREG_ERR_OUT_OF_MEMORY; dt++) {
        if (!(dtypes >> dt & 1)) continue;
        opreg_sizes learned;
        opreg_inputs *probe = NULL;
        memset(&learned, 0, sizeof learned);
        opreg_status bs =
            c.gen
                ? opreg_inputs_build_with(&probe, op, c.gen, dt, &learned, o->seed, err, sizeof err)
                : opreg_inputs_build(&probe, op, dt, &learned, o->seed, err, sizeof err);
        opreg_inputs_free(probe);
        if (bs != OPREG_OK) continue;
        for (int edge = 0; edge < 4; edge++) {
            opreg_sizes sizes;
            opreg_inputs *host = NULL;
            char sz[200];
            if (edge && !(c.checks & OPREG_CHECK_EDGES)) break;
            case_sizes(&sizes, &learned, given, edge);
            bs = c.gen ? opreg_inputs_build_with(&host, op, c.gen, dt, &sizes, o->seed, err,
                                                 sizeof err)
                       : opreg_inputs_build(&host, op, dt, &sizes, o->seed, err, sizeof err);
            if (bs != OPREG_OK) {
                if (edge)
                    snprintf(edge_why, sizeof edge_why, "%.40s: %.250s", edge_names[edge], err);
                continue;
            }
            built_any = true;
            opreg_sizes_format(&sizes, sz, sizeof sz);
            snprintf(c.where, sizeof c.where, "dtype %s, sizes %.200s%s%s",
                     opreg_dtype_name((opreg_dtype)dt), sz, edge ? " — " : "",
                     edge ? edge_names[edge] : "");
            /* the anchor first; an edge case the anchor refuses does not apply */
            opreg_inputs *ref = NULL;
            const char *ref_name = NULL;
            for (size_t i = 0; i < nkeys; i++) {
                keyinfo *k = &keys[i];
                opreg_inputs *got = NULL;
                if (!k->usable) continue;
                opreg_status cs = run_valid(&c, k, host, edge != 0, ref, ref_name, &got);
                if (!ref_name) {
                    ref_name = k->name;
                    ref = got;
                    got = NULL;
                    if (cs != OPREG_OK) {
                        if (edge) {
                            snprintf(edge_why, sizeof edge_why, "%s: %s refuses it: %s",
                                     edge_names[edge], k->name, opreg_last_error());
                            break;
                        }
                    } else if (edge) {
                        any_edge = true;
                    }
                    continue;
                }
                if (!edge && got) {
                    /* with each other: the keys after the anchor, pairwise */
                    for (size_t j = 1; j < i; j++) {
                        opreg_diff d;
                        if (!keys[j].result) continue;
                        opreg_inputs_compare(&d, got, keys[j].result);
                        if (!d.ok)
                            note(&k->v[C_BACKENDS], OPREG_CHECK_FAILED,
                                 "%s: differs from %s beyond the dtype's tolerance: %s", c.where,
                                 keys[j].name, d.why[0] ? d.why : d.first_bad);
                    }
                    opreg_inputs_free(k->result);
                    k->result = got;
                    got = NULL;
                }
                opreg_inputs_free(got);
            }
            for (size_t i = 0; i < nkeys; i++) {
                opreg_inputs_free(keys[i].result);
                keys[i].result = NULL;
            }
            opreg_inputs_free(ref);
            opreg_inputs_free(host);
        }
    }

    for (size_t i = 0; i < nkeys && st == OPREG_OK; i++) {
        keyinfo *k = &keys[i];
        for (int ch = 0; ch < NCHECKS && st == OPREG_OK; ch++) {
            verdict *v = &k->v[ch];
            opreg_check_result res = v->result;
            const char *msg = v->msg;
            char why[400];
            if (!(c.checks >> ch & 1) || k->anchor_only) continue;
            if (!k->usable) {
                res = OPREG_CHECK_NOT_APPLICABLE;
                snprintf(why, sizeof why, "%s: %s", k->name, k->why);
                msg = why;
            } else if (!built_any) {
                res = OPREG_CHECK_NOT_APPLICABLE;
                snprintf(why, sizeof why, "no inputs: %s", err);
                msg = why;
            } else if (ch == C_BACKENDS && i == 0 && res == OPREG_CHECK_PASSED) {
                res = nkeys > 1 ? OPREG_CHECK_PASSED : OPREG_CHECK_NOT_APPLICABLE;
                snprintf(why, sizeof why,
                         nkeys > 1 ? "the anchor the other keys are compared with"
                                   : "no other key to compare with");
                msg = why;
            } else if (ch == C_META && !c.meta) {
                res = OPREG_CHECK_NOT_APPLICABLE;
                msg = "the op has no Meta kernel";
            } else if (ch == C_EDGES && !any_edge && res == OPREG_CHECK_PASSED) {
                res = OPREG_CHECK_NOT_APPLICABLE;
                snprintf(why, sizeof why, "no edge case applies (%s)",
                         edge_why[0] ? edge_why : "the generator reads no sizes");
                msg = why;
            } else if (!v->ran && res == OPREG_CHECK_PASSED) {
                res = OPREG_CHECK_NOT_APPLICABLE;
                msg = ch == C_THREADS ? "no call succeeded" : "nothing to check";
            } else if (res == OPREG_CHECK_PASSED) {
                msg = "";
            }
            st = report_add(r, name, k->name, ch, res, msg);
        }
    }
    if ((!nkeys || (nkeys == 1 && keys[0].anchor_only)) && st == OPREG_OK)
        st = report_add(r, name, "-", 0, OPREG_CHECK_NOT_APPLICABLE,
                        o->keys ? "none of the keys asked for has a kernel for it"
                                : "no key has a kernel for it (other than Meta)");
    free(keys);
    return st;
}

/* Whether @p name matches "ns::name", "ns::*", "*" or a bare "name" (in
 * any namespace). */
static bool matches(const char *pattern, const char *name) {
    size_t n;
    if (!pattern || !strcmp(pattern, "*")) return true;
    n = strlen(pattern);
    if (n >= 3 && !strcmp(pattern + n - 3, "::*")) return !strncmp(pattern, name, n - 1);
    if (!strstr(pattern, "::")) {
        const char *sep = strstr(name, "::");
        if (sep) name = sep + 2;
    }
    if (!strcmp(pattern, name)) return true;
    /* a name without overload matches its overloads too */
    return !strncmp(pattern, name, n) && name[n] == '.';
}

opreg_status opreg_opcheck(opreg_registry *reg, const char *pattern,
                           const opreg_opcheck_options *options, opreg_check_report **out) {
    opreg_opcheck_options o;
    opreg_sizes given;
    char err[200];
    size_t matched = 0;
    opreg_status st = OPREG_OK;
    if (!out) return opreg_set_error(OPREG_ERR_INVALID_ARGUMENT, "opreg_opcheck: out is NULL");
    *out = NULL;
    memset(&o, 0, sizeof o);
    if (options)
        memcpy(&o, options,
               options->struct_size && options->struct_size < sizeof o ? options->struct_size
                                                                       : sizeof o);
    if (!reg) reg = opreg_registry_default();
    memset(&given, 0, sizeof given);
    if (o.sizes && opreg_sizes_parse(&given, o.sizes, err, sizeof err) != 0)
        return opreg_set_error(OPREG_ERR_INVALID_ARGUMENT, err);
    opreg_check_report *r = calloc(1, sizeof *r);
    if (!r) return opreg_set_error(OPREG_ERR_OUT_OF_MEMORY, "opcheck: out of memory");
    for (size_t i = 0; i < opreg_registry_num_ops(reg) && st == OPREG_OK; i++) {
        const opreg_op *op = opreg_registry_op(reg, i);
        if (!op || !opreg_op_is_defined(op) || !matches(pattern, opreg_op_name(op))) continue;
        matched++;
        st = check_op(r, op, &o, o.sizes ? &given : NULL);
    }
    if (st != OPREG_OK) {
        opreg_check_report_free(r);
        return opreg_set_error(st, "opcheck: out of memory");
    }
    if (!matched) {
        opreg_check_report_free(r);
        snprintf(err, sizeof err, "opcheck: no defined op matches '%s'", pattern ? pattern : "*");
        return opreg_set_error(OPREG_ERR_NOT_FOUND, err);
    }
    *out = r;
    return OPREG_OK;
}
