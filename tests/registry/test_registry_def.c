/* def: schema text in, ops out; and every way a def is refused. */
#include "reg_helpers.h"

#define RMS "rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()"

TEST(def_fills_namespace) {
    opreg_registry *reg;
    opreg_library *lib;
    const opreg_op *op;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "a.c", 1));
    CHECK_OK(opreg_library_def(&op, lib, RMS));
    CHECK_EQ_STR(opreg_op_name(op), "_C::rms_norm");
    CHECK(opreg_op_is_defined(op));
    CHECK_EQ_STR(opreg_schema_namespace(opreg_op_schema(op)), "_C");
    const opreg_op *found;
    CHECK_OK(opreg_op_find(&found, reg, "_C::rms_norm"));
    CHECK(found == op);
    /* An explicit namespace that matches is fine, and overloads are separate ops. */
    CHECK_OK(opreg_library_def(&op, lib,
                               "_C::add.out(Tensor a, Tensor b, *, Tensor(a!) out) -> Tensor(a!)"));
    CHECK_EQ_STR(opreg_op_name(op), "_C::add.out");
    CHECK_OK(opreg_library_def(NULL, lib, "add(Tensor a, Tensor b) -> Tensor"));
    CHECK_OK(opreg_op_find(&found, reg, "_C::add"));
    CHECK(found != op);
    opreg_library_close(lib);
    opreg_registry_destroy(reg);
}

/* What the schema lexer skips before the name may come first in a def
 * without a namespace, as m.def() takes it: blank lines, indentation,
 * comments and line continuations. The op gets the library's namespace and
 * its schema prints as if the text had none of them. */
TEST(def_leading_blank_lines_and_comments) {
    static const char *const texts[] = {
        "\n  foo(Tensor x) -> Tensor",
        "# the foo op\nbar(Tensor x) -> Tensor",
        "\n\n    # indented comment\n    baz(Tensor x, int n=1) -> Tensor",
        "\\\nqux(Tensor x) -> Tensor",
        "\t quux.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
    };
    static const char *const names[] = { "_C::foo", "_C::bar", "_C::baz", "_C::qux",
                                         "_C::quux.out" };
    opreg_registry *reg;
    opreg_library *lib;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "a.c", 1));
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const opreg_op *op = NULL;
        char text[256];
        CHECK_OK(opreg_library_def(&op, lib, texts[i]));
        if (!op) return;
        CHECK_EQ_STR(opreg_op_name(op), names[i]);
        CHECK_EQ_STR(opreg_schema_namespace(opreg_op_schema(op)), "_C");
        opreg_schema_format(opreg_op_schema(op), OPREG_SCHEMA_CANONICAL, text, sizeof text);
        CHECK(strncmp(text, names[i], strlen(names[i])) == 0);
    }
    /* A comment before a name that is qualified elsewhere is still checked. */
    CHECK_EQ_INT(opreg_library_def(NULL, lib, "# c\nother::f(Tensor x) -> Tensor"),
                 OPREG_ERR_NAMESPACE_MISMATCH);
    opreg_library_close(lib);
    opreg_registry_destroy(reg);
}

TEST(def_namespace_mismatch) {
    opreg_registry *reg;
    opreg_library *lib;
    const opreg_op *op = (const opreg_op *)1;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "lib.c", 7));
    CHECK_STATUS(opreg_library_def(&op, lib, "other::foo(Tensor x) -> Tensor"),
                 OPREG_ERR_NAMESPACE_MISMATCH);
    CHECK(op == NULL);
    CHECK_CONTAINS(opreg_last_error(),
                   "Explicitly provided namespace (other) in schema string does not match "
                   "namespace of enclosing OPREG_LIBRARY block (_C)");
    CHECK_CONTAINS(opreg_last_error(), "lib.c:7");
    CHECK_EQ_INT(opreg_library_status(lib), OPREG_ERR_NAMESPACE_MISMATCH);
    CHECK_EQ_INT(opreg_registry_num_ops(reg), 0);
    opreg_library_close(lib);
    opreg_registry_destroy(reg);
}

TEST(def_duplicate_names_both_places) {
    opreg_registry *reg;
    opreg_library *a, *b;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&a, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "first.c", 10));
    CHECK_OK(opreg_library_def(NULL, a, RMS));
    CHECK_STATUS(opreg_library_def(NULL, a, "rms_norm(Tensor x) -> Tensor"),
                 OPREG_ERR_ALREADY_DEFINED);
    CHECK_CONTAINS(
        opreg_last_error(),
        "Tried to register an operator (_C::rms_norm(Tensor! out, Tensor input, Tensor weight, "
        "float epsilon) -> ()) with the same name and overload name multiple times");
    CHECK_CONTAINS(opreg_last_error(), "Duplicate registration: first.c:10");
    CHECK_CONTAINS(opreg_last_error(), "Original registration: first.c:10");
    /* With the def() calls' own places, those are named. */
    CHECK_OK(opreg_library_def_at(NULL, a, "gelu(Tensor! out, Tensor x) -> ()", "ops.c", 31));
    CHECK_STATUS(opreg_library_def_at(NULL, a, "gelu(Tensor x) -> Tensor", "more_ops.c", 7),
                 OPREG_ERR_ALREADY_DEFINED);
    CHECK_CONTAINS(opreg_last_error(),
                   "Duplicate registration: more_ops.c:7. Original registration: ops.c:31");
    /* A second DEF library for the namespace is refused, naming both places. */
    CHECK_STATUS(
        opreg_library_create(&b, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "second.c", 20),
        OPREG_ERR_ALREADY_DEFINED);
    CHECK(b == NULL);
    CHECK_CONTAINS(opreg_last_error(),
                   "Only a single OPREG_LIBRARY can be used to register the namespace _C");
    CHECK_CONTAINS(opreg_last_error(), "first.c:10");
    CHECK_CONTAINS(opreg_last_error(), "second.c:20");
    /* After close, the namespace and the name are free again. */
    opreg_library_close(a);
    CHECK_OK(
        opreg_library_create(&b, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "second.c", 20));
    CHECK_OK(opreg_library_def(NULL, b, "rms_norm(Tensor x) -> Tensor"));
    opreg_library_close(b);
    opreg_registry_destroy(reg);
}

TEST(def_illegal_overload_and_syntax) {
    opreg_registry *reg;
    opreg_library *lib;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "x.c", 3));
    CHECK_STATUS(opreg_library_def(NULL, lib, "foo.default(Tensor x) -> Tensor"),
                 OPREG_ERR_SCHEMA_INVALID);
    CHECK_CONTAINS(opreg_last_error(), "default is not a legal overload name for aten operators");
    CHECK_STATUS(opreg_library_def(NULL, lib, "foo.__bar(Tensor x) -> Tensor"),
                 OPREG_ERR_SCHEMA_INVALID);
    CHECK_CONTAINS(opreg_last_error(), "__bar is not a legal overload name");
    CHECK_STATUS(opreg_library_def(NULL, lib, "foo(Tensor x -> Tensor"), OPREG_ERR_SCHEMA_SYNTAX);
    CHECK_CONTAINS(opreg_last_error(),
                   "(Error occurred while processing OPREG_LIBRARY block at x.c:3)");
    CHECK_EQ_INT(opreg_library_status(lib), OPREG_ERR_SCHEMA_INVALID); /* the first error is kept */
    opreg_library_close(lib);
    opreg_registry_destroy(reg);
}

TEST(def_type_variables_only_in_aten_and_prim) {
    opreg_registry *reg;
    opreg_library *c, *aten;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&c, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "c.c", 1));
    CHECK(opreg_library_def(NULL, c, "pick(t[] xs, int i) -> t") != OPREG_OK);
    CHECK_CONTAINS(opreg_last_error(), "unknown type specifier");
    CHECK_OK(opreg_library_create(&aten, reg, OPREG_LIBRARY_DEF, "aten", OPREG_KEY_NONE, "a.c", 1));
    const opreg_op *op;
    CHECK_OK(opreg_library_def(&op, aten, "pick(t[] xs, int i) -> t"));
    CHECK(opreg_schema_has_type_variables(opreg_op_schema(op)));
    opreg_library_close(c);
    opreg_library_close(aten);
    opreg_registry_destroy(reg);
}

TEST(def_refused_in_impl_library_and_bad_arguments) {
    opreg_registry *reg;
    opreg_library *lib;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_IMPL, "_C", OPREG_KEY_CPU, "impl.c", 5));
    CHECK_STATUS(opreg_library_def(NULL, lib, RMS), OPREG_ERR_UNSUPPORTED);
    CHECK_CONTAINS(opreg_last_error(),
                   "Cannot define an operator inside of a OPREG_LIBRARY_IMPL block");
    CHECK_STATUS(opreg_library_def(NULL, NULL, RMS), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "lib is NULL");
    CHECK_STATUS(opreg_library_def(NULL, lib, NULL), OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "schema is NULL");
    opreg_library_close(lib);
    opreg_library *bad = (opreg_library *)1;
    CHECK_STATUS(
        opreg_library_create(&bad, reg, OPREG_LIBRARY_DEF, "no-dash", OPREG_KEY_NONE, NULL, 0),
        OPREG_ERR_INVALID_ARGUMENT);
    CHECK(bad == NULL);
    CHECK_CONTAINS(opreg_last_error(), "namespace 'no-dash' is not an identifier");
    CHECK_STATUS(opreg_library_create(&bad, reg, OPREG_LIBRARY_DEF, "ok", 999, NULL, 0),
                 OPREG_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(opreg_last_error(), "default_key 999");
    opreg_library_close(NULL);
    opreg_registry_destroy(NULL);
    opreg_registry_destroy(reg);
}

TEST(def_too_many_arguments) {
    opreg_registry *reg;
    opreg_library *lib;
    CHECK_OK(opreg_registry_create(&reg));
    CHECK_OK(opreg_library_create(&lib, reg, OPREG_LIBRARY_DEF, "_C", OPREG_KEY_NONE, "x.c", 1));
    char text[2048] = "big(";
    for (int i = 0; i < 65; i++)
        sprintf(text + strlen(text), "%sint a%d", i ? ", " : "", i);
    strcat(text, ") -> ()");
    CHECK_STATUS(opreg_library_def(NULL, lib, text), OPREG_ERR_UNSUPPORTED);
    CHECK_CONTAINS(opreg_last_error(), "65 arguments; opreg allows at most 64");
    opreg_library_close(lib);
    opreg_registry_destroy(reg);
}

int main(void) {
    RUN(def_fills_namespace);
    RUN(def_leading_blank_lines_and_comments);
    RUN(def_namespace_mismatch);
    RUN(def_duplicate_names_both_places);
    RUN(def_illegal_overload_and_syntax);
    RUN(def_type_variables_only_in_aten_and_prim);
    RUN(def_refused_in_impl_library_and_bad_arguments);
    RUN(def_too_many_arguments);
    return test_summary();
}
