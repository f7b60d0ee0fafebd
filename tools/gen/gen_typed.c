/* opreg_gen_typed: generate typed C entry points from schema text.
 *
 *   opreg_gen_typed --namespace NS --header OUT.h --source OUT.c SCHEMAS
 *
 * SCHEMAS holds one schema a line ('#' starts a comment line); a schema
 * without a namespace gets NS. For each op it writes
 *
 *   opreg_status opreg_op_<ns>_<name>[_<overload>](<returns...>, <args...>);
 *   opreg_status opreg_opcall_<ns>_<name>[_<overload>](const opreg_op *op, ...);
 *
 * The first finds the op in the process-default registry once and caches
 * the handle; the second takes a handle from any registry. Both build the
 * value array on the stack and call opreg_call_unboxed(): no checking
 * beyond what the C types guarantee. It is built from opreg's own schema
 * parser, so the schema text stays the single source of truth. */
#include "opreg/opreg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct param {
    char decl[160];  /* the C parameter(s) */
    char value[200]; /* the expression of its opreg_value */
    bool boxed;      /* passed as an opreg_value the caller builds */
};

static const char *scalar_ctype(opreg_type_kind k, const char **ctor) {
    switch (k) {
    case OPREG_TYPE_INT:
    case OPREG_TYPE_SYMINT:
    case OPREG_TYPE_LAYOUT:
    case OPREG_TYPE_MEMORY_FORMAT:
        *ctor = "opreg_int_value";
        return "int64_t";
    case OPREG_TYPE_FLOAT:
    case OPREG_TYPE_SCALAR:
        *ctor = "opreg_float_value";
        return "double";
    case OPREG_TYPE_BOOL:
    case OPREG_TYPE_SYMBOOL:
        *ctor = "opreg_bool_value";
        return "bool";
    case OPREG_TYPE_STR:
        *ctor = "opreg_str_value";
        return "const char *";
    case OPREG_TYPE_SCALAR_TYPE:
        *ctor = "opreg_dtype_value";
        return "opreg_dtype";
    case OPREG_TYPE_DEVICE:
        *ctor = "opreg_device_value";
        return "DLDevice";
    default:
        return NULL;
    }
}

static const char *list_info(opreg_type_kind k, const char **ctor) {
    switch (k) {
    case OPREG_TYPE_INT:
    case OPREG_TYPE_SYMINT:
        *ctor = "opreg_int_list_value";
        return "const int64_t *";
    case OPREG_TYPE_FLOAT:
        *ctor = "opreg_float_list_value";
        return "const double *";
    case OPREG_TYPE_BOOL:
        *ctor = "opreg_bool_list_value";
        return "const bool *";
    case OPREG_TYPE_STR:
        *ctor = "opreg_str_list_value";
        return "const opreg_str *";
    default:
        return NULL;
    }
}

/* Types a typed entry point takes as a boxed opreg_value the caller builds:
 * nested lists (`int[][]`, `int?[]`), tuples, `Scalar` and `Any`. */
static bool boxed_param(const opreg_type *t) {
    opreg_type_kind k = opreg_type_get_kind(t);
    if (k == OPREG_TYPE_TUPLE || k == OPREG_TYPE_SCALAR || k == OPREG_TYPE_ANY) return true;
    if (k != OPREG_TYPE_LIST) return false;
    const opreg_type *e = opreg_type_element(t, 0);
    opreg_type_kind ek = opreg_type_get_kind(e);
    if (ek == OPREG_TYPE_OPTIONAL) /* Tensor?[] is a tensor list; int?[] a list of values */
        return opreg_type_get_kind(opreg_type_element(e, 0)) != OPREG_TYPE_TENSOR;
    const char *ctor;
    return ek != OPREG_TYPE_TENSOR && !list_info(ek, &ctor);
}

/* One argument's C parameter and value expression; false when unsupported. */
static bool param_of(const opreg_argument *a, struct param *p) {
    const char *n = opreg_argument_name(a);
    const opreg_type *t = opreg_argument_type(a);
    bool opt = opreg_type_get_kind(t) == OPREG_TYPE_OPTIONAL;
    if (opt) t = opreg_type_element(t, 0);
    opreg_type_kind k = opreg_type_get_kind(t);
    const char *ctor = NULL, *ctype;
    if (boxed_param(t)) { /* the caller passes None for an absent optional */
        snprintf(p->decl, sizeof p->decl, "opreg_value %s", n);
        snprintf(p->value, sizeof p->value, "%s", n);
        p->boxed = true;
        return true;
    }
    if (k == OPREG_TYPE_TENSOR) {
        bool w = opreg_argument_is_write(a);
        snprintf(p->decl, sizeof p->decl, "%sDLTensor *%s", w ? "" : "const ", n);
        snprintf(p->value, sizeof p->value, "%s(DLTensor *)(uintptr_t)%s)",
                 opt ? "opreg_optional_tensor_value(" : "opreg_tensor_value(", n);
        return true;
    }
    if (k == OPREG_TYPE_LIST) {
        const opreg_type *e = opreg_type_element(t, 0);
        opreg_type_kind ek = opreg_type_get_kind(e);
        bool tensors = ek == OPREG_TYPE_TENSOR ||
                       (ek == OPREG_TYPE_OPTIONAL &&
                        opreg_type_get_kind(opreg_type_element(e, 0)) == OPREG_TYPE_TENSOR);
        if (tensors) {
            ctype = "DLTensor *const *";
            ctor = "opreg_tensor_list_value";
        } else if (!(ctype = list_info(ek, &ctor))) {
            return false;
        }
        snprintf(p->decl, sizeof p->decl, "%s%s, size_t %s_len", ctype, n, n);
        if (opt)
            snprintf(p->value, sizeof p->value, "%s ? %s(%s, %s_len) : opreg_none()", n, ctor, n,
                     n);
        else
            snprintf(p->value, sizeof p->value, "%s(%s, %s_len)", ctor, n, n);
        return true;
    }
    if (!(ctype = scalar_ctype(k, &ctor))) return false;
    if (!opt || k == OPREG_TYPE_STR) {
        snprintf(p->decl, sizeof p->decl, "%s%s%s", ctype,
                 ctype[strlen(ctype) - 1] == '*' ? "" : " ", n);
        if (opt)
            snprintf(p->value, sizeof p->value, "%s ? %s(%s) : opreg_none()", n, ctor, n);
        else
            snprintf(p->value, sizeof p->value, "%s(%s)", ctor, n);
    } else {
        snprintf(p->decl, sizeof p->decl, "const %s *%s", ctype, n);
        snprintf(p->value, sizeof p->value, "%s ? %s(*%s) : opreg_none()", n, ctor, n);
    }
    return true;
}

/* A return's C out-parameter and how to store it; false when unsupported. */
static bool return_of(const opreg_argument *r, size_t i, char *decl, size_t dcap, char *store,
                      size_t scap) {
    char name[64];
    const char *rn = opreg_argument_name(r);
    if (*rn)
        snprintf(name, sizeof name, "ret_%s", rn);
    else
        snprintf(name, sizeof name, "ret%zu", i);
    const char *ctype, *field;
    switch (opreg_type_get_kind(opreg_argument_type(r))) {
    case OPREG_TYPE_TENSOR:
        ctype = "DLTensor *";
        field = "tensor";
        break;
    case OPREG_TYPE_INT:
    case OPREG_TYPE_SYMINT:
        ctype = "int64_t ";
        field = "i";
        break;
    case OPREG_TYPE_FLOAT:
        ctype = "double ";
        field = "f";
        break;
    case OPREG_TYPE_BOOL:
        ctype = "bool ";
        field = "b";
        break;
    default:
        /* Strings, lists, tuples: the caller's, as opreg_value_pack() made them. */
        snprintf(decl, dcap, "opreg_value *%s", name);
        snprintf(store, scap, "    *%s = r[%zu];\n", name, i);
        return true;
    }
    snprintf(decl, dcap, "%s*%s", ctype, name);
    snprintf(store, scap, "    *%s = r[%zu].u.%s;\n", name, i, field);
    return true;
}

static void c_ident(char *out, size_t cap, const opreg_schema *s) {
    const char *ov = opreg_schema_overload(s);
    snprintf(out, cap, "%s_%s%s%s", opreg_schema_namespace(s), opreg_schema_name(s), *ov ? "_" : "",
             ov);
}

static int emit(FILE *h, FILE *c, const opreg_schema *s) {
    size_t na = opreg_schema_num_arguments(s), nr = opreg_schema_num_returns(s);
    char id[256], full[256], text[2048];
    c_ident(id, sizeof id, s);
    const char *ov = opreg_schema_overload(s);
    snprintf(full, sizeof full, "%s::%s%s%s", opreg_schema_namespace(s), opreg_schema_name(s),
             *ov ? "." : "", ov);
    opreg_schema_format(s, OPREG_SCHEMA_CANONICAL, text, sizeof text);
    char params[4096] = "", store[2048] = "";
    size_t pu = 0, su = 0;
    for (size_t i = 0; i < nr; i++) {
        char d[160], st[160];
        if (!return_of(opreg_schema_return(s, i), i, d, sizeof d, st, sizeof st)) {
            fprintf(h, "/* %s: skipped, a return type has no typed form */\n\n", text);
            return 0;
        }
        pu += (size_t)snprintf(params + pu, sizeof params - pu, ", %s", d);
        su += (size_t)snprintf(store + su, sizeof store - su, "%s", st);
    }
    struct param *ps = calloc(na ? na : 1, sizeof *ps);
    if (!ps) return 1;
    for (size_t i = 0; i < na; i++) {
        if (!param_of(opreg_schema_argument(s, i), &ps[i])) {
            fprintf(h, "/* %s: skipped, an argument type has no typed form */\n\n", text);
            free(ps);
            return 0;
        }
        pu += (size_t)snprintf(params + pu, sizeof params - pu, ", %s", ps[i].decl);
    }
    const char *rest = pu ? params + 2 : "void";
    fprintf(h,
            "/// `%s`, in the process-default registry (its handle is found once and cached).\n"
            "/// Returns belong to the caller: tensors (opreg_tensor_free()), and\n"
            "/// strings, lists and tuples as opreg_value (opreg_value_release()).\n"
            "opreg_status opreg_op_%s(%s);\n",
            text, id, rest);
    fprintf(h,
            "/// `%s`, through the handle @p op of any registry.\n"
            "opreg_status opreg_opcall_%s(const opreg_op *op%s);\n\n",
            text, id, params);
    fprintf(c, "static inline opreg_status call_%s(const opreg_op *op%s) {\n", id, params);
    for (size_t i = 0; i < nr; i++) { /* out-parameters are NULL on failure */
        const opreg_argument *r = opreg_schema_return(s, i);
        opreg_type_kind rk = opreg_type_get_kind(opreg_argument_type(r));
        bool boxed = rk != OPREG_TYPE_TENSOR && rk != OPREG_TYPE_INT && rk != OPREG_TYPE_SYMINT &&
                     rk != OPREG_TYPE_FLOAT && rk != OPREG_TYPE_BOOL;
        if (rk != OPREG_TYPE_TENSOR && !boxed) continue;
        const char *rn = opreg_argument_name(r);
        const char *none = boxed ? "opreg_none()" : "NULL";
        if (*rn)
            fprintf(c, "    *ret_%s = %s;\n", rn, none);
        else
            fprintf(c, "    *ret%zu = %s;\n", i, none);
    }
    if (na)
        fprintf(c, "    opreg_value a[%zu];\n", na);
    else
        fprintf(c, "    const opreg_value *a = NULL;\n");
    for (size_t i = 0; i < na; i++)
        fprintf(c, "    a[%zu] = %s;\n", i, ps[i].value);
    /* Plain tensors only: compare their devices here and index the table
     * inline (opreg_call_on_device); anything else takes the general path. */
    char fast[1024] = "", first[96] = "";
    size_t fu = 0;
    bool plain = true;
    for (size_t i = 0; i < na; i++) {
        const opreg_argument *a = opreg_schema_argument(s, i);
        opreg_type_kind k = opreg_type_get_kind(opreg_argument_type(a));
        if (k == OPREG_TYPE_OPTIONAL || k == OPREG_TYPE_LIST) {
            const opreg_type *t = opreg_argument_type(a);
            if (k == OPREG_TYPE_OPTIONAL) t = opreg_type_element(t, 0);
            opreg_type_kind ek = opreg_type_get_kind(t);
            if (ek == OPREG_TYPE_TENSOR || ek == OPREG_TYPE_LIST || ps[i].boxed) plain = false;
        } else if (k == OPREG_TYPE_TENSOR) {
            if (!*first)
                snprintf(first, sizeof first, "%s->device", opreg_argument_name(a));
            else
                fu += (size_t)snprintf(fast + fu, sizeof fast - fu,
                                       " && opreg_device_equal(d, %s->device)",
                                       opreg_argument_name(a));
        }
    }
    const char *rv = nr ? "r" : "NULL";
    if (nr) fprintf(c, "    opreg_value r[%zu];\n    opreg_status st;\n", nr);
    const char *ret = nr ? "st =" : "return";
    if (plain && !*first) {
        fprintf(c, "    DLDevice d = { kDLCPU, 0 };\n    %s opreg_call_on_device(op, d, a, %s);\n",
                ret, rv);
    } else if (plain) {
        fprintf(
            c,
            "    DLDevice d = %s;\n    if (1%s)\n        %s opreg_call_on_device(op, d, a, %s);\n"
            "    else\n        %s opreg_call_unboxed(op, a, %s);\n",
            first, fast, ret, rv, ret, rv);
    } else {
        fprintf(c, "    %s opreg_call_unboxed(op, a, %s);\n", ret, rv);
    }
    if (nr) fprintf(c, "    if (st != OPREG_OK) return st;\n%s    return OPREG_OK;\n", store);
    fprintf(c, "}\n\n");
    /* The argument list again, as a call passes it on. */
    char pass[4096] = "";
    size_t pa = 0;
    for (size_t i = 0; i < nr; i++) {
        const char *rn = opreg_argument_name(opreg_schema_return(s, i));
        if (*rn)
            pa += (size_t)snprintf(pass + pa, sizeof pass - pa, ", ret_%s", rn);
        else
            pa += (size_t)snprintf(pass + pa, sizeof pass - pa, ", ret%zu", i);
    }
    for (size_t i = 0; i < na; i++) {
        const opreg_argument *a = opreg_schema_argument(s, i);
        const char *n = opreg_argument_name(a);
        pa += (size_t)snprintf(pass + pa, sizeof pass - pa, ", %s", n);
        const opreg_type *t = opreg_argument_type(a);
        if (opreg_type_get_kind(t) == OPREG_TYPE_OPTIONAL) t = opreg_type_element(t, 0);
        if (opreg_type_get_kind(t) == OPREG_TYPE_LIST && !ps[i].boxed)
            pa += (size_t)snprintf(pass + pa, sizeof pass - pa, ", %s_len", n);
    }
    fprintf(
        c, "opreg_status opreg_opcall_%s(const opreg_op *op%s) {\n    return call_%s(op%s);\n}\n\n",
        id, params, id, pass);
    fprintf(c, "static _Atomic(const opreg_op *) cache_%s;\n\n", id);
    fprintf(c, "opreg_status opreg_op_%s(%s) {\n", id, rest);
    fprintf(c,
            "    const opreg_op *op = atomic_load_explicit(&cache_%s, memory_order_acquire);\n"
            "    if (__builtin_expect(!op, 0)) {\n        opreg_status st = resolve(&cache_%s, "
            "\"%s\", &op);\n"
            "        if (st != OPREG_OK) return st;\n    }\n",
            id, id, full);
    fprintf(c, "    return call_%s(op%s);\n}\n\n", id, pass);
    free(ps);
    return 0;
}

int main(int argc, char **argv) {
    const char *ns = NULL, *hpath = NULL, *cpath = NULL, *in = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--namespace") == 0 && i + 1 < argc)
            ns = argv[++i];
        else if (strcmp(argv[i], "--header") == 0 && i + 1 < argc)
            hpath = argv[++i];
        else if (strcmp(argv[i], "--source") == 0 && i + 1 < argc)
            cpath = argv[++i];
        else
            in = argv[i];
    }
    if (!ns || !hpath || !cpath || !in) {
        fprintf(stderr,
                "usage: opreg_gen_typed --namespace NS --header OUT.h --source OUT.c SCHEMAS\n");
        return 2;
    }
    FILE *f = fopen(in, "r"), *h = fopen(hpath, "w"), *c = fopen(cpath, "w");
    if (!f || !h || !c) {
        fprintf(stderr, "opreg_gen_typed: cannot open %s\n", !f ? in : !h ? hpath : cpath);
        return 1;
    }
    const char *base = strrchr(hpath, '/') ? strrchr(hpath, '/') + 1 : hpath;
    fprintf(h,
            "/* Generated by opreg_gen_typed from %s. Do not edit. */\n#pragma once\n\n"
            "#include \"opreg/opreg.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
            in);
    fprintf(c,
            "/* Generated by opreg_gen_typed from %s. Do not edit. */\n#include \"%s\"\n\n"
            "#include <stdatomic.h>\n\n/* Find an op in the default registry once, and cache its "
            "handle. */\n"
            "static opreg_status resolve(_Atomic(const opreg_op *) *cache, const char *name,\n"
            "                            const opreg_op **out) {\n"
            "    opreg_registry *reg = opreg_registry_default();\n"
            "    if (!reg) return OPREG_ERR_INTERNAL;\n"
            "    opreg_status st = opreg_op_find(out, reg, name);\n"
            "    if (st == OPREG_OK) atomic_store_explicit(cache, *out, memory_order_release);\n"
            "    return st;\n}\n\n",
            in, base);
    char line[8192];
    int rc = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strcspn(line, "\r\n");
        line[len] = '\0';
        const char *p = line + strspn(line, " \t");
        if (!*p || *p == '#') continue;
        const char *paren = strchr(p, '('), *sep = strstr(p, "::");
        bool has_ns = sep && (!paren || sep < paren);
        char text[8300];
        snprintf(text, sizeof text, "%s%s%s", has_ns ? "" : ns, has_ns ? "" : "::", p);
        opreg_schema *s = NULL;
        if (opreg_schema_parse(&s, text, strlen(text), 0, NULL) != OPREG_OK) {
            fprintf(stderr, "%s:%d: %s\n", in, lineno, opreg_last_error());
            rc = 1;
            continue;
        }
        rc |= emit(h, c, s);
        opreg_schema_free(s);
    }
    fprintf(h, "#ifdef __cplusplus\n}\n#endif\n");
    fclose(f);
    if (fclose(h) != 0 || fclose(c) != 0) rc = 1;
    return rc;
}
