/* An op's argument plan as the binding holds it: the registry's own plan of
 * each argument (opreg_op_arg_plan(), the same one opreg_call_boxed()
 * checks against), read once per definition of the op, and the argument's
 * name as an interned str, which is what Python-side keywords are compared
 * with. */
#include "python/src/binding.h"

void opreg__py_plan_clear(opreg__py_plan *plan) {
    for (uint32_t i = 0; plan->args && i < plan->nargs; i++)
        Py_XDECREF(plan->args[i].pyname);
    PyMem_Free(plan->args);
    plan->args = NULL;
    plan->nargs = plan->nreturns = 0;
    plan->schema = NULL;
}

/* Read every argument of definition `s`. 1 when the op was defined again
 * while reading (another thread), so that the arguments came from two
 * definitions; -1 with an exception set. */
static int read_args(opreg__py_plan *plan, const opreg_schema *s) {
    size_t n = opreg_schema_num_arguments(s);
    opreg__py_arg *args = PyMem_Calloc(n ? n : 1, sizeof *args);
    if (!args) {
        PyErr_NoMemory();
        return -1;
    }
    plan->args = args;
    for (size_t i = 0; i < n; i++) {
        opreg__py_arg *a = &args[i];
        a->p.struct_size = sizeof a->p;
        if (opreg_op_arg_plan(&a->p, plan->op, i) != OPREG_OK || a->p.schema != s) return 1;
        a->pyname = PyUnicode_InternFromString(a->p.name);
        if (!a->pyname) return -1;
        plan->nargs = (uint32_t)i + 1; /* what opreg__py_plan_clear() releases */
    }
    plan->nreturns = (uint32_t)opreg_schema_num_returns(s);
    plan->schema = s;
    return 0;
}

int opreg__py_plan_read(opreg__py_plan *plan, const opreg_schema *s) {
    for (;;) {
        opreg__py_plan_clear(plan);
        if (!s) return 0;
        int rc = read_args(plan, s);
        if (rc <= 0) {
            if (rc < 0) opreg__py_plan_clear(plan);
            return rc;
        }
        s = opreg_op_schema(plan->op); /* the definition that replaced it */
    }
}
