/* The mutation sanitizer: with it on, each key of a dispatch table that
 * resolves a kernel runs a guard instead, which hashes the bytes of every
 * tensor argument the schema does not mark written, calls the kernel, hashes
 * them again and reports the arguments whose bytes changed.
 *
 * The guards are put in when a table is published (resolve.c), so a call
 * with the sanitizer off runs exactly the code it ran before the sanitizer
 * existed. A guard's record lives in its table and names only what lives as
 * long as the table (the plan, registrations and their closed libraries are
 * all freed at reclaim), so a call that loaded a table may report from it
 * even while another thread closes the library. */
#include "registry/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the hash ----------------------------------------------------------------- */

/* Four lanes of multiply, xor and rotate over 8-byte words, fed 32 bytes a
 * step. Each step is a bijection of its lane for a fixed word, and of the
 * word for a fixed lane, so a change to a single word always changes the
 * hash; other changes escape it with odds of about 2^-64. */
#define HASH_K1 0x9E3779B97F4A7C15ull
#define HASH_K2 0xC2B2AE3D27D4EB4Full
#define HASH_K3 0x165667B19E3779F9ull

struct mhash {
    uint64_t v[4];
    uint64_t len;
    size_t nbuf;
    unsigned char buf[32];
};

static inline uint64_t rotl64(uint64_t x, int r) {
    return x << r | x >> (64 - r);
}

static inline uint64_t hash_step(uint64_t v, uint64_t w) {
    return rotl64((v ^ w) * HASH_K2, 31);
}

static void hash_init(struct mhash *h) {
    h->v[0] = HASH_K1;
    h->v[1] = HASH_K2;
    h->v[2] = HASH_K3;
    h->v[3] = HASH_K1 ^ HASH_K3;
    h->len = 0;
    h->nbuf = 0;
}

static inline void hash_block(uint64_t v[4], const unsigned char *p) {
    uint64_t w[4];
    memcpy(w, p, 32);
    v[0] = hash_step(v[0], w[0]);
    v[1] = hash_step(v[1], w[1]);
    v[2] = hash_step(v[2], w[2]);
    v[3] = hash_step(v[3], w[3]);
}

static void hash_update(struct mhash *h, const void *data, size_t n) {
    const unsigned char *p = data;
    h->len += n;
    if (h->nbuf) {
        size_t take = 32 - h->nbuf < n ? 32 - h->nbuf : n;
        memcpy(h->buf + h->nbuf, p, take);
        h->nbuf += take;
        p += take;
        n -= take;
        if (h->nbuf < 32) return;
        hash_block(h->v, h->buf);
        h->nbuf = 0;
    }
    uint64_t v[4] = { h->v[0], h->v[1], h->v[2], h->v[3] }; /* in registers */
    for (; n >= 32; p += 32, n -= 32)
        hash_block(v, p);
    memcpy(h->v, v, sizeof v);
    memcpy(h->buf, p, n);
    h->nbuf = n;
}

static uint64_t hash_final(const struct mhash *h) {
    unsigned char tail[32] = { 0 };
    uint64_t v[4] = { h->v[0], h->v[1], h->v[2], h->v[3] };
    memcpy(tail, h->buf, h->nbuf);
    hash_block(v, tail);
    uint64_t x = h->len * HASH_K1;
    for (int i = 0; i < 4; i++)
        x = hash_step(x, v[i]);
    x ^= x >> 33;
    x *= HASH_K3;
    return x ^ x >> 29;
}

/* ---- the elements of a view ------------------------------------------------------ */

#define MAX_NDIM 64
/* Device memory is copied to the host this much at a time. */
#define BOUNCE_BYTES ((size_t)1 << 20)

/* A view's layout, from its metadata alone; `ok` false for a tensor the
 * sanitizer does not read (no data, a size or stride it cannot follow). */
struct layout {
    bool ok;
    size_t esize;   /* bytes per element */
    size_t run;     /* bytes of the innermost contiguous run */
    int outer;      /* dimensions [0, outer) are walked; the rest is the run */
    int64_t lo, hi; /* the bytes the view spans, from data + byte_offset */
};

static struct layout layout_of(const DLTensor *t) {
    struct layout L = { false, 0, 0, 0, 0, 0 };
    if (!t->data || t->ndim < 0 || t->ndim > MAX_NDIM || (t->ndim && !t->shape)) return L;
    L.esize = ((size_t)t->dtype.bits * t->dtype.lanes + 7u) / 8u;
    int64_t numel = opreg_tensor_numel(t);
    if (!L.esize || numel <= 0 || (uint64_t)numel > (uint64_t)INT64_MAX / L.esize) return L;
    int64_t lo = 0, hi = 0, es = (int64_t)L.esize;
    for (int d = 0; d < t->ndim; d++) {
        int64_t s = t->strides ? t->strides[d] : 0, span;
        if (!t->strides) { /* compact row-major */
            s = 1;
            for (int j = d + 1; j < t->ndim; j++)
                s *= t->shape[j];
        }
        if (t->shape[d] == 1) continue;
        if (__builtin_mul_overflow(t->shape[d] - 1, s, &span) ||
            __builtin_mul_overflow(span, es, &span) ||
            __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi))
            return L;
    }
    L.lo = lo;
    L.hi = hi + es;
    /* The trailing dimensions that are dense form one run. */
    int64_t run = es;
    int d = t->ndim;
    for (; d > 0; d--) {
        int64_t n = t->shape[d - 1]; /* a stride of a size-1 dimension is never used */
        if (n != 1 && t->strides && t->strides[d - 1] * es != run) break;
        run *= n;
    }
    L.run = (size_t)run;
    L.outer = d;
    L.ok = true;
    return L;
}

/* Hash the elements of @p t as laid out from @p base (data + byte_offset,
 * in host memory), in index order. */
static void hash_view(struct mhash *h, const char *base, const DLTensor *t,
                      const struct layout *L) {
    if (L->outer == 0) {
        hash_update(h, base, L->run);
        return;
    }
    int64_t idx[MAX_NDIM] = { 0 };
    int64_t es = (int64_t)L->esize;
    const char *p = base;
    for (;;) {
        hash_update(h, p, L->run);
        int d = L->outer - 1;
        for (; d >= 0; d--) {
            if (t->shape[d] == 1) continue;
            int64_t s = t->strides[d] * es; /* outer > 0: strides are given */
            if (++idx[d] < t->shape[d]) {
                p += s;
                break;
            }
            p -= s * (idx[d] - 1);
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

/* ---- reading tensors ---------------------------------------------------------- */

/* Bit k: key k was found without a copy to the host, and the log says so. */
static _Atomic uint64_t said_unreadable;

static void say_unreadable_once(int32_t key) {
    uint64_t bit = 1ull << (key < 0 || key > OPREG_MAX_KEYS ? OPREG_MAX_KEYS : key);
    if (atomic_fetch_or_explicit(&said_unreadable, bit, memory_order_relaxed) & bit) return;
    const char *name = key >= 0 ? opreg_key_name(key) : NULL;
    opreg__log(OPREG_LOG_INFO,
               "mutation check: tensors on %s are not checked: its backend has no copy to the "
               "host",
               name ? name : "a device that no backend handles");
}

static bool host_readable(DLDevice d) {
    return opreg_key_of_device(d) == OPREG_KEY_CPU || d.device_type == kDLCUDAManaged;
}

/* Hash the elements of @p t into *@p out; false when it is not read (no
 * data, the Meta device, a device that cannot be read, or a layout the
 * sanitizer does not follow). */
static bool hash_tensor(const DLTensor *t, uint64_t *out) {
    if (t->device.device_type == OPREG_DEVICE_META) return false;
    struct layout L = layout_of(t);
    if (!L.ok) return false;
    struct mhash h;
    hash_init(&h);
    int32_t key = opreg_key_of_device(t->device);
    const opreg_backend *b = key >= 0 ? opreg_key_backend(key) : NULL;
    if (host_readable(t->device)) {
        /* Managed memory: the device may still be writing it. */
        if (key != OPREG_KEY_CPU && b && b->synchronize &&
            b->synchronize(b->context, t->device.device_id) != OPREG_OK)
            return false;
        hash_view(&h, (const char *)t->data + t->byte_offset, t, &L);
        *out = hash_final(&h);
        return true;
    }
    if (!b || !b->copy_to_host) {
        say_unreadable_once(key);
        return false;
    }
    /* The copy runs on the device's current stream, after the kernel. */
    if (L.lo < 0 && (uint64_t)-L.lo > t->byte_offset) return false;
    size_t from = (size_t)((int64_t)t->byte_offset + L.lo), span = (size_t)(L.hi - L.lo);
    bool dense = L.outer == 0;
    char *buf = malloc(dense && span > BOUNCE_BYTES ? BOUNCE_BYTES : span);
    if (!buf) {
        opreg__log(OPREG_LOG_WARN, "mutation check: out of memory for a copy of %zu bytes", span);
        return false;
    }
    bool ok = true;
    if (dense) {
        for (size_t at = 0; at < span && ok; at += BOUNCE_BYTES) {
            size_t n = span - at < BOUNCE_BYTES ? span - at : BOUNCE_BYTES;
            ok = b->copy_to_host(b->context, buf, t->data, from + at, n, t->device.device_id) ==
                 OPREG_OK;
            if (ok) hash_update(&h, buf, n);
        }
    } else {
        ok = b->copy_to_host(b->context, buf, t->data, from, span, t->device.device_id) == OPREG_OK;
        if (ok) hash_view(&h, buf - L.lo, t, &L);
    }
    free(buf);
    if (ok) *out = hash_final(&h);
    return ok;
}

/* Whether two views may share bytes: their spans meet on one device (or
 * both in host memory; a handle backend's buffers only when the handle is
 * the same). */
static bool may_overlap(const DLTensor *a, const struct layout *la, const DLTensor *b) {
    struct layout lb = layout_of(b);
    if (!lb.ok) return false;
    bool ha = host_readable(a->device), hb = host_readable(b->device);
    if (ha != hb) return false;
    if (!ha) {
        if (a->device.device_type != b->device.device_type ||
            a->device.device_id != b->device.device_id)
            return false;
        int32_t key = opreg_key_of_device(a->device);
        const opreg_backend *be = key >= 0 ? opreg_key_backend(key) : NULL;
        if (be && (be->flags & OPREG_BACKEND_DATA_IS_HANDLE) && a->data != b->data) return false;
    }
    intptr_t a0 = (intptr_t)a->data + (intptr_t)a->byte_offset;
    intptr_t b0 = (intptr_t)b->data + (intptr_t)b->byte_offset;
    return a0 + la->lo < b0 + lb.hi && b0 + lb.lo < a0 + la->hi;
}

/* ---- the guard ------------------------------------------------------------------ */

/* One tensor of a call: where it sits and, if read-only and read, its hash. */
struct watched {
    const DLTensor *t;
    uint32_t arg;
    int32_t item; /* index in a tensor list, or -1 */
    bool write;
    bool hashed;
    uint64_t hash;
};

#define STACK_WATCH 32

static size_t count_tensors(const struct opreg__plan *p, const opreg_value *args) {
    size_t n = 0;
    for (uint32_t i = 0; i < p->ntensor; i++) {
        const opreg_value *v = &args[p->tensor_pos[i]];
        if (v->kind == OPREG_VALUE_TENSOR)
            n += v->u.tensor != NULL;
        else if (v->kind == OPREG_VALUE_TENSOR_LIST && v->u.tensors.items)
            n += v->u.tensors.len;
    }
    return n;
}

static size_t collect(struct watched *w, const struct opreg__plan *p, const opreg_value *args) {
    size_t n = 0;
    for (uint32_t i = 0; i < p->ntensor; i++) {
        uint32_t pos = p->tensor_pos[i];
        const opreg_value *v = &args[pos];
        bool write = p->args[pos].write;
        if (v->kind == OPREG_VALUE_TENSOR && v->u.tensor)
            w[n++] = (struct watched){ v->u.tensor, pos, -1, write, false, 0 };
        else if (v->kind == OPREG_VALUE_TENSOR_LIST && v->u.tensors.items)
            for (size_t j = 0; j < v->u.tensors.len; j++)
                if (v->u.tensors.items[j])
                    w[n++] =
                        (struct watched){ v->u.tensors.items[j], pos, (int32_t)j, write, false, 0 };
    }
    return n;
}

/* Hash the read-only tensors that share no bytes with a written one (the
 * caller may pass one buffer as both: the op then writes it rightly). */
static void hash_before(struct watched *w, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (w[i].write) continue;
        struct layout L = layout_of(w[i].t);
        bool aliased = false;
        for (size_t j = 0; j < n && !aliased && L.ok; j++)
            aliased = w[j].write && may_overlap(w[i].t, &L, w[j].t);
        w[i].hashed = L.ok && !aliased && hash_tensor(w[i].t, &w[i].hash);
    }
}

/* The provider of a list that took the call: the first enabled one that
 * accepts these arguments, asked again (predicates read metadata only). */
static const struct opreg__pitem *provider_that_ran(const struct opreg__chain *c,
                                                    const opreg_op *op, const opreg_value *args) {
    for (uint32_t i = 0; i < c->n; i++) {
        const struct opreg__pitem *it = &c->items[i];
        if (!it->pin && (!it->supports || it->supports(it->context, op, args, NULL, 0))) return it;
    }
    return NULL;
}

/* "kernel registered at a.c:12 by library _C", and the like. */
static void describe_kernel(char *buf, size_t cap, const struct opreg__guard *g, const opreg_op *op,
                            const opreg_value *args) {
    const struct opreg__kreg *r = g->reg;
    if (g->chain) {
        const struct opreg__pitem *it = provider_that_ran(g->chain, op, args);
        if (!it) {
            snprintf(buf, cap, "one of its providers");
            return;
        }
        r = it->reg;
    }
    if (!r) {
        snprintf(buf, cap, "kernel of unknown registration");
        return;
    }
    const char *what = g->kind == OPREG_KERNEL_COMPOSITE  ? "composite kernel"
                       : g->kind == OPREG_KERNEL_FALLBACK ? "fallback kernel"
                                                          : "kernel";
    if (r->pname[0])
        snprintf(buf, cap, "provider '%s' registered at %s by library %s", r->pname,
                 opreg__kreg_where(r), r->lib->ns);
    else
        snprintf(buf, cap, "%s registered at %s by library %s", what, opreg__kreg_where(r),
                 r->lib->ns);
}

/* Compare after the call; log each argument whose bytes changed. Returns
 * how many did, with the first report in @p first. */
static size_t hash_after(const struct opreg__guard *g, struct watched *w, size_t n,
                         const opreg_op *op, const opreg_value *args, char *first, size_t cap) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h;
        if (!w[i].hashed || !hash_tensor(w[i].t, &h) || h == w[i].hash) continue;
        char item[32] = "", kernel[768], line[1024];
        if (w[i].item >= 0) snprintf(item, sizeof item, " (item %d)", (int)w[i].item);
        describe_kernel(kernel, sizeof kernel, g, op, args);
        snprintf(
            line, sizeof line, "mutation check: %s on %s wrote its read-only argument '%s'%s (%s)",
            g->plan->op_name, opreg_key_name(g->key), g->plan->args[w[i].arg].name, item, kernel);
        opreg__log(OPREG_LOG_ERROR, "%s", line);
        if (!bad++) snprintf(first, cap, "%s", line);
    }
    return bad;
}

static opreg_status guard_call(void *ctx, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    const struct opreg__guard *g = ctx;
    size_t n = count_tensors(g->plan, args);
    struct watched stack[STACK_WATCH], *w = stack;
    if (n > STACK_WATCH && !(w = malloc(n * sizeof *w))) {
        opreg__log(OPREG_LOG_WARN, "mutation check: out of memory; %s runs unchecked",
                   g->plan->op_name);
        return g->fn(g->context, op, args, rets);
    }
    n = collect(w, g->plan, args);
    hash_before(w, n);
    opreg_status st = g->fn(g->context, op, args, rets);
    char first[1024];
    size_t bad = hash_after(g, w, n, op, args, first, sizeof first);
    if (w != stack) free(w);
    /* A kernel that refused keeps its own status and message. */
    if (bad && st == OPREG_OK && g->mode == OPREG_MUTATION_FAIL) {
        if (rets) /* the call fails: its returns are not the caller's */
            for (uint32_t i = 0; i < g->plan->nreturns; i++)
                opreg_value_release(&rets[i]);
        if (bad > 1)
            return opreg__fail(OPREG_ERR_MUTATION, "%s (and %zu more arguments)", first, bad - 1);
        return opreg__fail(OPREG_ERR_MUTATION, "%s", first);
    }
    return st;
}

/* ---- switching ---------------------------------------------------------------- */

void opreg__mutation_wrap(struct opreg__table *t, const struct opreg_op *op) {
    uint8_t mode = (uint8_t)atomic_load_explicit(&op->reg->mutation, memory_order_relaxed);
    for (int32_t k = 0; k < OPREG_MAX_KEYS; k++) {
        if (!(t->kernel_mask & (1u << k))) continue; /* stubs explain themselves */
        opreg_dispatch_entry *e = &t->e[k];
        struct opreg__guard *g = &t->guard[k];
        const struct opreg__chain *c = &t->chain[k];
        *g = (struct opreg__guard){ e->fn, e->context, t->plan, NULL, NULL, k, e->kind, mode };
        if (c->n && e->context == (const void *)c) {
            g->chain = c;
        } else if (c->n) { /* one provider, called directly */
            for (uint32_t i = 0; i < c->n && !g->reg; i++)
                if (c->items[i].reg->id == e->id) g->reg = c->items[i].reg;
        } else {
            g->reg = opreg__kreg_of(op, k, e->id);
        }
        e->fn = guard_call;
        e->context = g;
    }
}

static bool mode_from_text(opreg_mutation_mode *out, const char *s) {
    static const struct {
        const char *text;
        opreg_mutation_mode mode;
    } names[] = { { "0", OPREG_MUTATION_OFF },
                  { "off", OPREG_MUTATION_OFF },
                  { "1", OPREG_MUTATION_REPORT },
                  { "report", OPREG_MUTATION_REPORT },
                  { "fail", OPREG_MUTATION_FAIL } };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i].text) == 0) {
            *out = names[i].mode;
            return true;
        }
    return false;
}

void opreg__mutation_from_env(struct opreg_registry *reg) {
    const char *s = getenv("OPREG_CHECK_MUTATION");
    opreg_mutation_mode mode = OPREG_MUTATION_OFF;
    if (!s || !*s) return;
    if (!mode_from_text(&mode, s))
        opreg__log(OPREG_LOG_WARN,
                   "OPREG_CHECK_MUTATION='%s' is ignored: it takes 0, off, 1, report or fail", s);
    atomic_store_explicit(&reg->mutation, (int)mode, memory_order_relaxed);
}

opreg_status opreg_registry_set_mutation_check(opreg_registry *reg, opreg_mutation_mode mode) {
    if (!reg)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_registry_set_mutation_check: reg is NULL");
    if (mode != OPREG_MUTATION_OFF && mode != OPREG_MUTATION_REPORT && mode != OPREG_MUTATION_FAIL)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_registry_set_mutation_check: unknown mode %d", (int)mode);
    opreg__lock(reg);
    opreg_status st = OPREG_OK;
    if (atomic_load_explicit(&reg->mutation, memory_order_relaxed) != (int)mode) {
        /* Every defined op's table is rebuilt: reserve them first, so that
         * a failure leaves the old mode in force with nothing changed. */
        st = opreg__spares_reserve(reg, reg->ndefined);
        if (st == OPREG_OK) {
            atomic_store_explicit(&reg->mutation, (int)mode, memory_order_relaxed);
            opreg__publish_all(reg);
            opreg__spares_trim(reg, false);
        }
    }
    opreg__unlock(reg);
    return st;
}

opreg_mutation_mode opreg_registry_mutation_check(const opreg_registry *reg) {
    if (!reg) return OPREG_MUTATION_OFF;
    return (opreg_mutation_mode)atomic_load_explicit(&reg->mutation, memory_order_relaxed);
}
