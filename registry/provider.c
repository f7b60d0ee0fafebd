/* Providers: the ordered list of implementations a key holds for one op,
 * built into the op's dispatch table when registrations change; the call
 * that runs the first provider that accepts; pins and disables
 * (OPREG_PROVIDERS); and the queries that explain the choice for real
 * arguments. The order is documented in include/opreg/provider.h. */
#include "registry/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pins and disables ------------------------------------------------------ */

enum { SCOPE_ALL, SCOPE_NS, SCOPE_OP };

struct opreg__pin {
    uint8_t scope;
    bool disable;
    size_t op_len;    /* of op */
    const char *op;   /* in text_copy: the op, or the namespace for SCOPE_NS */
    const char *item; /* in text_copy: the whole item, for messages */
    char name[OPREG_PROVIDER_NAME_MAX + 1];
};

struct opreg__pins {
    const char *source; /* "OPREG_PROVIDERS" or "opreg_registry_set_providers" */
    char *text;         /* the spec as given */
    char *text_copy;    /* cut into items */
    size_t n;
    struct opreg__retired retire;
    struct opreg__pin items[];
};

static void pins_free(void *p) {
    struct opreg__pins *pins = p;
    if (!pins) return;
    free(pins->text);
    free(pins->text_copy);
    free(pins);
}

static const struct opreg__pins *pins_of(const struct opreg_registry *reg) {
    return atomic_load_explicit(&((struct opreg_registry *)reg)->pins, memory_order_acquire);
}

static bool pin_matches_op(const struct opreg__pin *p, const struct opreg_op *op) {
    switch (p->scope) {
    case SCOPE_ALL:
        return true;
    case SCOPE_NS:
        return op->ns_len == p->op_len && memcmp(op->name, p->op, p->op_len) == 0;
    default:
        return op->name_len == p->op_len && memcmp(op->name, p->op, p->op_len) == 0;
    }
}

static opreg_status parse_item(struct opreg__pin *pin, char *item, const char *whole) {
    char *eq = strchr(item, '=');
    if (!eq || eq == item)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "provider spec '%s': item '%s' is not OP=NAME or OP=-NAME", whole, item);
    *eq = '\0';
    const char *op = item, *name = eq + 1;
    pin->disable = name[0] == '-';
    if (pin->disable) name++;
    size_t nlen = strlen(name);
    if (nlen == 0 || nlen > OPREG_PROVIDER_NAME_MAX || !opreg__is_ident(name, nlen)) {
        *eq = '=';
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "provider spec '%s': in item '%s', '%s' is not a provider name "
                           "(an identifier of at most %d bytes)",
                           whole, item, name, OPREG_PROVIDER_NAME_MAX);
    }
    memcpy(pin->name, name, nlen + 1);
    size_t olen = strlen(op);
    const char *sep = strstr(op, "::");
    if (strcmp(op, "*") == 0) {
        pin->scope = SCOPE_ALL;
    } else if (sep && strcmp(sep, "::*") == 0 && opreg__is_ident(op, (size_t)(sep - op))) {
        pin->scope = SCOPE_NS;
        olen = (size_t)(sep - op);
    } else if (sep && opreg__is_ident(op, (size_t)(sep - op)) && sep[2]) {
        pin->scope = SCOPE_OP;
    } else {
        *eq = '=';
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "provider spec '%s': in item '%s', '%.*s' is not an op (ns::name), "
                           "a namespace (ns::*) or *",
                           whole, item, (int)(eq - item), item);
    }
    pin->op = op;
    pin->op_len = olen;
    *eq = '='; /* the item stays whole for messages; op is read by length */
    pin->item = item;
    return OPREG_OK;
}

static char *copy_text(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

/* Parse @p spec into a new pins object (NULL for an empty spec). */
static opreg_status pins_parse(struct opreg__pins **out, const char *spec, const char *source) {
    *out = NULL;
    if (!spec || !*spec) return OPREG_OK;
    size_t n = 1;
    for (const char *c = spec; *c; c++)
        n += *c == ',';
    struct opreg__pins *pins = calloc(1, sizeof *pins + n * sizeof pins->items[0]);
    char *text = pins ? copy_text(spec) : NULL, *copy = text ? copy_text(spec) : NULL;
    if (!copy) {
        free(text);
        free(pins);
        return opreg__fail(OPREG_ERR_OUT_OF_MEMORY, "provider spec: out of memory");
    }
    pins->source = source;
    pins->text = text;
    pins->text_copy = copy;
    char *item = copy;
    for (size_t i = 0; i < n; i++) {
        char *comma = strchr(item, ',');
        if (comma) *comma = '\0';
        /* Surrounding blanks are allowed, as in a shell variable split over lines. */
        while (*item == ' ' || *item == '\t' || *item == '\n')
            item++;
        for (char *end = item + strlen(item);
             end > item && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n');)
            *--end = '\0';
        if (*item) {
            opreg_status st = parse_item(&pins->items[pins->n], item, spec);
            if (st != OPREG_OK) {
                pins_free(pins);
                return st;
            }
            pins->n++;
        }
        item = comma ? comma + 1 : item + strlen(item);
    }
    if (pins->n == 0) {
        pins_free(pins);
        return OPREG_OK;
    }
    *out = pins;
    return OPREG_OK;
}

void opreg__pins_from_env(struct opreg_registry *reg) {
    const char *spec = getenv("OPREG_PROVIDERS");
    if (!spec || !*spec) return;
    struct opreg__pins *pins;
    if (pins_parse(&pins, spec, "OPREG_PROVIDERS") != OPREG_OK) {
        opreg__log(OPREG_LOG_WARN, "OPREG_PROVIDERS is ignored: %s", opreg_last_error());
        return;
    }
    atomic_store_explicit(&reg->pins, pins, memory_order_release);
}

void opreg__pins_free(struct opreg_registry *reg) {
    pins_free(atomic_load_explicit(&reg->pins, memory_order_relaxed));
    atomic_store_explicit(&reg->pins, NULL, memory_order_relaxed);
}

opreg_status opreg_registry_set_providers(opreg_registry *reg, const char *spec) {
    if (!reg)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_registry_set_providers: reg is NULL");
    struct opreg__pins *pins;
    OPREG__TRY(pins_parse(&pins, spec, "opreg_registry_set_providers"));
    opreg__lock(reg);
    /* Every defined op's table is rebuilt: reserve them first, so that a
     * failure leaves the old spec in force with nothing changed. */
    opreg_status st = opreg__spares_reserve(reg, reg->ndefined);
    if (st == OPREG_OK) {
        struct opreg__pins *old = atomic_load_explicit(&reg->pins, memory_order_relaxed);
        atomic_store_explicit(&reg->pins, pins, memory_order_release);
        if (old) opreg__retire(reg, &old->retire, pins_free, old);
        opreg__publish_all(reg);
        opreg__spares_trim(reg, false);
    } else {
        pins_free(pins);
    }
    opreg__unlock(reg);
    return st;
}

size_t opreg_registry_providers(opreg_registry *reg, char *buf, size_t cap) {
    if (!reg) return 0;
    opreg__lock(reg);
    const struct opreg__pins *pins = pins_of(reg);
    int n = snprintf(buf, buf ? cap : 0, "%s", pins ? pins->text : "");
    opreg__unlock(reg);
    return n < 0 ? 0 : (size_t)n;
}

/* 1 + the index of the spec item that takes item @p it of @p op's key
 * away, or 0. @p have: the names of the key's providers. A pin applies when
 * the key has the pinned name; the last such pin decides. */
static uint16_t pin_of(const struct opreg__pins *pins, const struct opreg_op *op, const char *name,
                       const char *const *have, size_t nhave) {
    if (!pins) return 0;
    for (size_t i = 0; i < pins->n; i++) {
        const struct opreg__pin *p = &pins->items[i];
        if (p->disable && pin_matches_op(p, op) && strcmp(p->name, name) == 0)
            return (uint16_t)(i + 1);
    }
    for (size_t i = pins->n; i-- > 0;) {
        const struct opreg__pin *p = &pins->items[i];
        if (p->disable || !pin_matches_op(p, op)) continue;
        for (size_t j = 0; j < nhave; j++)
            if (strcmp(have[j], p->name) == 0)
                return strcmp(p->name, name) == 0 ? 0 : (uint16_t)(i + 1);
    }
    return 0;
}

static void pin_reason(char *buf, size_t cap, const struct opreg_registry *reg,
                       const struct opreg__pitem *it) {
    const struct opreg__pins *pins = pins_of(reg);
    if (!pins || it->pin > pins->n) {
        snprintf(buf, cap, "disabled");
        return;
    }
    const struct opreg__pin *p = &pins->items[it->pin - 1];
    snprintf(buf, cap, "%s by '%s' (%s)", p->disable ? "disabled" : "pinned away", p->item,
             pins->source);
}

/* ---- building a key's list ----------------------------------------------------- */

static const char *name_of(const struct opreg__kreg *r) {
    return r->pname[0] ? r->pname : "default";
}

/* The providers of (op, key) in their order, the newest of each name; and
 * which of them sit at the end for want of their anchor. */
static size_t ordered(const struct opreg_op *op, int32_t k, const struct opreg__kreg **out,
                      uint8_t *orphan, size_t cap) {
    const struct opreg__kreg *fixed[OPREG_MAX_PROVIDERS + 1], *rel[OPREG_MAX_PROVIDERS + 1];
    size_t nfixed = 0, nrel = 0;
    for (const struct opreg__kreg *r = op->prov[k]; r; r = r->older) {
        bool seen = false;
        for (size_t i = 0; i < nfixed && !seen; i++)
            seen = strcmp(fixed[i]->pname, r->pname) == 0;
        for (size_t i = 0; i < nrel && !seen; i++)
            seen = strcmp(rel[i]->pname, r->pname) == 0;
        if (seen) continue;
        if (nfixed + nrel >= OPREG_MAX_PROVIDERS) break;
        if (r->place == OPREG_PROVIDER_AT_PRIORITY)
            fixed[nfixed++] = r;
        else
            rel[nrel++] = r;
    }
    if (op->direct[k]) fixed[nfixed++] = op->direct[k]; /* `default`, priority 0 */
    /* Priority-placed: highest priority first, then the earlier registration. */
    for (size_t i = 1; i < nfixed; i++)
        for (size_t j = i; j > 0; j--) {
            const struct opreg__kreg *a = fixed[j - 1], *b = fixed[j];
            int32_t pa = a->pname[0] ? a->priority : 0, pb = b->pname[0] ? b->priority : 0;
            if (pa > pb || (pa == pb && a->id < b->id)) break;
            fixed[j - 1] = b;
            fixed[j] = a;
        }
    size_t n = nfixed < cap ? nfixed : cap;
    memcpy(out, fixed, n * sizeof *out);
    memset(orphan, 0, cap);
    /* Relative ones, in registration order; one whose anchor is itself
     * relative waits until its anchor is in, and any left go last. */
    for (size_t i = 1; i < nrel; i++)
        for (size_t j = i; j > 0 && rel[j - 1]->id > rel[j]->id; j--) {
            const struct opreg__kreg *t = rel[j - 1];
            rel[j - 1] = rel[j];
            rel[j] = t;
        }
    bool placed[OPREG_MAX_PROVIDERS + 1] = { false };
    for (bool progress = true; progress;) {
        progress = false;
        for (size_t i = 0; i < nrel && n < cap; i++) {
            if (placed[i]) continue;
            size_t at = n;
            for (size_t j = 0; j < n; j++)
                if (strcmp(name_of(out[j]), rel[i]->anchor) == 0) at = j;
            if (at == n) continue;
            if (rel[i]->place == OPREG_PROVIDER_AFTER) at++;
            memmove(out + at + 1, out + at, (n - at) * sizeof *out);
            out[at] = rel[i];
            n++;
            placed[i] = progress = true;
        }
    }
    for (size_t i = 0; i < nrel && n < cap; i++)
        if (!placed[i]) {
            orphan[n] = 1;
            out[n++] = rel[i];
        }
    return n;
}

size_t opreg__chain_items_with(const struct opreg_op *op, int32_t key, const char *name) {
    size_t total = 0;
    for (int32_t k = 0; k < OPREG_MAX_KEYS; k++) {
        size_t names = 0;
        bool has_name = false;
        for (const struct opreg__kreg *r = op->prov[k]; r; r = r->older) {
            bool newer = false;
            for (const struct opreg__kreg *q = op->prov[k]; q != r && !newer; q = q->older)
                newer = strcmp(q->pname, r->pname) == 0;
            if (newer) continue;
            names++;
            if (k == key && name && strcmp(r->pname, name) == 0) has_name = true;
        }
        bool impl = op->direct[k] || (k == key && !name);
        if (k == key && name && !has_name) names++;
        if (names) total += names + (impl ? 1 : 0);
    }
    return total;
}

static opreg_status none_accepts(const struct opreg__chain *c, const opreg_op *op,
                                 const opreg_value *args);

/* The entry of a key with several providers, or one with a predicate. */
static opreg_status chain_call(void *ctx, const opreg_op *op, const opreg_value *args,
                               opreg_value *rets) {
    const struct opreg__chain *c = ctx;
    for (uint32_t i = 0; i < c->n; i++) {
        const struct opreg__pitem *it = &c->items[i];
        if (it->pin) continue;
        if (!it->supports || it->supports(it->context, op, args, NULL, 0))
            return it->fn(it->context, op, args, rets);
    }
    return none_accepts(c, op, args);
}

bool opreg__chain_build(struct opreg__table *t, const struct opreg_op *op, int32_t k) {
    if (!op->prov[k]) return false;
    const struct opreg__kreg *order[OPREG_MAX_PROVIDERS];
    uint8_t orphan[OPREG_MAX_PROVIDERS];
    size_t room = OPREG_MAX_PROVIDERS - t->nitems;
    size_t n = ordered(op, k, order, orphan, room);
    const char *names[OPREG_MAX_PROVIDERS];
    for (size_t i = 0; i < n; i++)
        names[i] = name_of(order[i]);
    const struct opreg__pins *pins = pins_of(op->reg);
    struct opreg__pitem *items = &t->items[t->nitems];
    const struct opreg__pitem *only = NULL;
    size_t enabled = 0;
    uint8_t flags = 0;
    for (size_t i = 0; i < n; i++) {
        struct opreg__pitem *it = &items[i];
        it->fn = order[i]->k.fn;
        it->context = order[i]->k.context;
        it->supports = order[i]->pname[0] ? order[i]->supports : NULL;
        it->reg = order[i];
        it->name = names[i];
        it->orphan = orphan[i];
        it->pin = pin_of(pins, op, names[i], names, n);
        if (!it->pin) {
            if (!enabled++) only = it;
            flags |= (uint8_t)order[i]->k.flags;
        }
    }
    t->nitems += (uint32_t)n;
    t->chain[k] = (struct opreg__chain){ items, (uint32_t)n, k };
    opreg_dispatch_entry *e = &t->e[k];
    if (enabled == 1 && !only->supports) { /* one indirect call, as an impl */
        e->fn = only->fn;
        e->context = only->context;
    } else {
        e->fn = chain_call;
        e->context = &t->chain[k];
    }
    e->flags = flags;
    e->kind = enabled ? OPREG_KERNEL_DIRECT : OPREG_KERNEL_NONE;
    e->id = (only ? only : &items[0])->reg->id;
    if (enabled) t->kernel_mask |= 1u << k;
    return true;
}

/* ---- explaining ------------------------------------------------------------------ */

/* Ask item @p it about the call: its verdict and reason. */
static opreg_provider_verdict ask(const struct opreg__pitem *it, const opreg_op *op,
                                  const opreg_value *args, char *why, size_t cap) {
    why[0] = '\0';
    if (it->pin) {
        pin_reason(why, cap, op->reg, it);
        return OPREG_PROVIDER_DISABLED;
    }
    if (it->supports && !it->supports(it->context, op, args, why, cap)) {
        if (!why[0]) snprintf(why, cap, "declined (no reason given)");
        return OPREG_PROVIDER_DECLINED;
    }
    return OPREG_PROVIDER_RUNS;
}

static opreg_status none_accepts(const struct opreg__chain *c, const opreg_op *op,
                                 const opreg_value *args) {
    char text[1536];
    size_t used = 0;
    text[0] = '\0';
    for (uint32_t i = 0; i < c->n && used < sizeof text; i++) {
        char why[256];
        ask(&c->items[i], op, args, why, sizeof why);
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s: %s", i ? "; " : "",
                                 c->items[i].name, why);
    }
    return opreg__fail(OPREG_ERR_UNSUPPORTED, "%s on %s: no provider accepts these arguments (%s)",
                       op->name, opreg_key_name(c->key), text);
}

static void appendf(char *buf, size_t cap, size_t *used, const char *fmt, ...) {
    if (*used >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (n > 0) *used += (size_t)n;
    if (*used >= cap) *used = cap - 1;
}

/* The op's own checks on these arguments: its Meta kernel (a composite or
 * a fallback would compute). Returns are freed. */
opreg_status opreg__check_args(const opreg_op *op, const opreg_value *args, size_t nargs) {
    if (opreg_op_kernel_kind(op, OPREG_KEY_META) != OPREG_KERNEL_DIRECT) return OPREG_OK;
    const opreg_schema *s = opreg_op_schema(op);
    opreg_value rets[8];
    size_t nrets = s ? opreg_schema_num_returns(s) : 0;
    if (nrets > 8)
        return opreg__fail(OPREG_ERR_UNSUPPORTED, "check_args: %s has more than 8 returns",
                           opreg_op_name(op));
    memset(rets, 0, sizeof rets);
    opreg_status st =
        opreg_call_boxed_key(op, OPREG_KEY_META, args, nargs, NULL, 0, nrets ? rets : NULL, nrets);
    if (st == OPREG_OK)
        for (size_t i = 0; i < nrets; i++)
            if (rets[i].kind == OPREG_VALUE_TENSOR) opreg_tensor_free(rets[i].u.tensor);
    return st;
}

const char *opreg_provider_verdict_name(opreg_provider_verdict verdict) {
    switch (verdict) {
    case OPREG_PROVIDER_RUNS:
        return "runs";
    case OPREG_PROVIDER_DECLINED:
        return "declined";
    case OPREG_PROVIDER_DISABLED:
        return "disabled";
    case OPREG_PROVIDER_NOT_REACHED:
        return "not reached";
    }
    return "unknown";
}

/* Fill @p out's providers for key @p k of table @p t (under the lock). */
static void explain_providers(opreg_call_explanation *out, const struct opreg_op *op,
                              const struct opreg__table *t, int32_t k, const opreg_value *args) {
    const struct opreg__chain *c = &t->chain[k];
    if (c->n == 0) { /* an impl, a composite, a fallback, or nothing */
        const opreg_dispatch_entry *e = &t->e[k];
        if (e->kind == OPREG_KERNEL_NONE) return;
        opreg_provider_info *pi = &out->providers[out->nproviders++];
        snprintf(pi->name, sizeof pi->name, "%s",
                 e->kind == OPREG_KERNEL_DIRECT      ? "default"
                 : e->kind == OPREG_KERNEL_COMPOSITE ? "composite"
                                                     : "fallback");
        const struct opreg__kreg *r = opreg__kreg_of(op, k, e->id);
        snprintf(pi->where, sizeof pi->where, "%s", r ? opreg__kreg_where(r) : "(unknown)");
        pi->verdict = OPREG_PROVIDER_RUNS;
        out->chosen = 0;
        return;
    }
    for (uint32_t i = 0; i < c->n && out->nproviders < OPREG_MAX_PROVIDERS; i++) {
        const struct opreg__pitem *it = &c->items[i];
        opreg_provider_info *pi = &out->providers[out->nproviders++];
        snprintf(pi->name, sizeof pi->name, "%s", it->name);
        snprintf(pi->where, sizeof pi->where, "%s%s", opreg__kreg_where(it->reg),
                 it->orphan ? " (its anchor is absent: placed last)" : "");
        if (out->chosen >= 0 && !it->pin) {
            pi->verdict = OPREG_PROVIDER_NOT_REACHED;
            continue;
        }
        pi->verdict = ask(it, op, args, pi->reason, sizeof pi->reason);
        if (pi->verdict == OPREG_PROVIDER_RUNS) out->chosen = (int)i;
    }
}

static void explain_text(opreg_call_explanation *out, const char *head) {
    size_t used = 0, cap = sizeof out->message;
    appendf(out->message, cap, &used, "%s", head);
    for (size_t i = 0; i < out->nproviders; i++) {
        const opreg_provider_info *pi = &out->providers[i];
        appendf(out->message, cap, &used, "\n  %zu. %-14s %s%s%s  [%s]", i + 1, pi->name,
                opreg_provider_verdict_name(pi->verdict), pi->reason[0] ? ": " : "", pi->reason,
                pi->where);
    }
}

opreg_status opreg_explain_call(opreg_call_explanation *out, const opreg_op *op,
                                opreg_dispatch_key key, const opreg_value *args, size_t nargs,
                                const opreg_kwarg *kwargs, size_t nkwargs) {
    if (!out || !op)
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT, "opreg_explain_call: %s is NULL",
                           !out ? "out" : "op");
    memset(out, 0, sizeof *out);
    out->key = OPREG_KEY_NONE;
    out->chosen = -1;
    if (key != OPREG_KEY_NONE && (key < 0 || key >= opreg_key_count()))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_explain_call: %d is not a backend key", (int)key);
    if ((nargs && !args) || (nkwargs && !kwargs))
        return opreg__fail(OPREG_ERR_INVALID_ARGUMENT,
                           "opreg_explain_call: %s is NULL but its count is not 0",
                           nargs && !args ? "args" : "kwargs");
    struct opreg_op *o = (struct opreg_op *)op;
    struct opreg_registry *reg = o->reg;
    opreg__lock(reg);
    const struct opreg__table *t = opreg__table_of(op);
    if (!t->defined) {
        opreg__unlock(reg);
        return t->e[0].fn(NULL, op, args, NULL);
    }
    opreg_value bound[OPREG__MAX_ARGS];
    int32_t device_key;
    opreg_status st = opreg__bind_checked(t, args, nargs, kwargs, nkwargs, bound, &device_key);
    if (st != OPREG_OK) {
        opreg__unlock(reg);
        return st;
    }
    int32_t k = key == OPREG_KEY_NONE ? device_key : key;
    char head[1024];
    if (k == OPREG__KEY_UNKNOWN) {
        opreg__unlock(reg);
        snprintf(out->message, sizeof out->message,
                 "%s: not supported: a tensor argument is on a device that no registered "
                 "backend handles",
                 o->name);
        return OPREG_OK;
    }
    out->key = k;
    explain_providers(out, o, t, k, bound);
    size_t nbound = t->plan->nargs;
    char why[256];
    bool avail = opreg_key_is_available(k, why, sizeof why);
    opreg__unlock(reg);
    if (!avail) {
        snprintf(head, sizeof head, "%s on %s: not supported: the %s backend is unavailable: %s",
                 o->name, opreg_key_name(k), opreg_key_name(k), why);
    } else if (out->nproviders == 0) {
        snprintf(head, sizeof head,
                 "%s on %s: not supported: no provider, composite or fallback kernel for %s",
                 o->name, opreg_key_name(k), opreg_key_name(k));
    } else if (out->chosen < 0) {
        snprintf(head, sizeof head, "%s on %s: not supported: no provider accepts these arguments",
                 o->name, opreg_key_name(k));
    } else {
        out->check_status = opreg__check_args(op, bound, nbound);
        if (out->check_status != OPREG_OK)
            snprintf(head, sizeof head,
                     "%s on %s: not supported: provider '%s' would run, but the op's checks "
                     "refuse these arguments: %s",
                     o->name, opreg_key_name(k), out->providers[out->chosen].name,
                     opreg_last_error());
        else {
            out->supported = true;
            snprintf(head, sizeof head, "%s on %s: provider '%s' runs", o->name, opreg_key_name(k),
                     out->providers[out->chosen].name);
        }
    }
    explain_text(out, head);
    return OPREG_OK;
}

bool opreg_is_supported_for(const opreg_op *op, opreg_dispatch_key key, const opreg_value *args,
                            size_t nargs, const opreg_kwarg *kwargs, size_t nkwargs) {
    opreg_call_explanation *e = malloc(sizeof *e);
    if (!e) return false;
    bool ok =
        opreg_explain_call(e, op, key, args, nargs, kwargs, nkwargs) == OPREG_OK && e->supported;
    free(e);
    return ok;
}
