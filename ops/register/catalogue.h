/* Registration of the op catalogue: the `_C` definitions and the kernels of
 * each backend. The default registry runs the init functions declared here
 * (builtins/builtins.c lists them); a program with its own registry calls
 * them itself. Not installed. */
#ifndef OPREG_OPS_REGISTER_CATALOGUE_H
#define OPREG_OPS_REGISTER_CATALOGUE_H

#include "common/internal.h"
#include "opreg/opreg.h"

/* The catalogue's schemas, NULL-terminated, in definition order. */
extern const char *const opreg__catalogue_schemas[];
/* The input generator of each op (catalogue_inputs.c), ended by a NULL
 * name, declared with the definitions (opreg/inputs.h). */
extern const opreg_generator opreg__catalogue_generators[];

/* OPREG_LIBRARY(_C): defines every op of the catalogue. */
OPREG_DECLARE_LIBRARY(_C);
/* The reference kernels, under the Reference key. */
OPREG_DECLARE_LIBRARY_IMPL(_C, REFERENCE);
/* The Meta kernels: the ops' checks, and the shape of linear's result. */
OPREG_DECLARE_LIBRARY_IMPL(_C, META);
/* The CPU kernels: the fast kernels of backends/cpu after the checks. */
OPREG_DECLARE_LIBRARY_IMPL(_C, CPU);

/* Unpacking a kernel's boxed arguments, by position in the schema. */
#define OPREG__ARG_T(n) ((const opreg_tensor *)args[n].u.tensor)
#define OPREG__ARG_OPT_T(n)                                                                        \
    (args[n].kind == OPREG_VALUE_TENSOR ? (const opreg_tensor *)args[n].u.tensor : NULL)
#define OPREG__ARG_I(n)      (args[n].u.i)
#define OPREG__ARG_F(n)      (args[n].u.f)
#define OPREG__ARG_B(n)      (args[n].u.b)
#define OPREG__ARG_S(n)      (args[n].u.s.ptr)
#define OPREG__ARG_TL(n)     ((const opreg_tensor *const *)args[n].u.tensors.items)
#define OPREG__ARG_TL_LEN(n) (args[n].u.tensors.len)

/* A kernel that calls `expr` (a function of `args`) and ignores the rest. */
#define OPREG__KERNEL(name, expr)                                                                  \
    static opreg_status name(void *context, const opreg_op *op, const opreg_value *args,           \
                             opreg_value *rets) {                                                  \
        (void)context;                                                                             \
        (void)op;                                                                                  \
        (void)rets;                                                                                \
        return expr;                                                                               \
    }

/* The argument lists of the catalogue's ops, OPREG__ARGS_<op>, and the
 * table of the ops that return nothing, OPREG__CATALOGUE_OPS(X) with
 * X(op, (arguments)), are generated from the schemas into the build folder:
 * include "catalogue_args.h" (ops/register/gen_args.c writes it). One table
 * serves the Meta, Reference, CPU and CUDA registrations. */

/* Kernels that call a function of the table with the op's arguments:
 * OPREG__TABLE_KERNEL(prefix, function_prefix, op, arguments). */
#define OPREG__TABLE_KERNEL(prefix, fn, op, arglist) OPREG__KERNEL(prefix##_##op, fn##op arglist)
/* The same, for a file that registers only some of the table's kernels. */
#define OPREG__TABLE_KERNEL_SOME(prefix, fn, op, arglist)                                          \
    __attribute__((unused)) OPREG__KERNEL(prefix##_##op, fn##op arglist)

/* The data checks of the ops whose kernels read index tensors in host
 * memory (CPU, Reference): what the slots, block tables, positions or
 * mappings hold against the sizes the op's check accepted. Each runs after
 * the op's check and the host-memory check of its first tensor, on the op's
 * values (data_checks.c maps them to opreg__check_<op>_data()); swap_blocks'
 * also wants dst in host memory. */
opreg_status opreg__data_check_rotary_embedding(const opreg_value *args);
opreg_status opreg__data_check_batched_rotary_embedding(const opreg_value *args);
opreg_status opreg__data_check_reshape_and_cache(const opreg_value *args);
opreg_status opreg__data_check_reshape_and_cache_flash(const opreg_value *args);
opreg_status opreg__data_check_copy_blocks(const opreg_value *args);
opreg_status opreg__data_check_swap_blocks(const opreg_value *args);
opreg_status opreg__data_check_moe_align_block_size(const opreg_value *args);
opreg_status opreg__data_check_paged_attention_v1(const opreg_value *args);

/* linear's kernel into a new result. */
typedef opreg_status (*opreg__linear_fn)(const opreg_tensor *out, const opreg_tensor *input,
                                         const opreg_tensor *weight, const opreg_tensor *bias);

/* linear: check the arguments, allocate the result on @p device (the
 * check gives its shape), run @p kernel into it (NULL: none, for Meta) and
 * hand it to the caller through rets[0]. */
opreg_status opreg__linear_into_new(opreg_value *rets, const opreg_value *args, DLDevice device,
                                    opreg__linear_fn kernel);

/* The same for arguments the caller has checked already (the CPU key
 * checks once, before its providers): the result has input's leading
 * dims, then weight's rows, in input's dtype. */
opreg_status opreg__linear_checked_into_new(opreg_value *rets, const opreg_value *args,
                                            DLDevice device, opreg__linear_fn kernel);

#endif
