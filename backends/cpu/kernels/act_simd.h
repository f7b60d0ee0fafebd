/* The activations on the vector layer: gated rows (out = (T)((T)act(x) * y)
 * for input rows [x | y]) and elementwise chunks (out = (T)act(x)).
 * Included once by each SIMD path's file, after simd_math.h. */
#ifndef OPREG_CPU_ACT_SIMD_H
#define OPREG_CPU_ACT_SIMD_H

AI void gated_row(int dt, int act, void *out, const void *in, int64_t d) {
    int64_t i = 0;
    for (; i + VW <= d; i += VW) {
        vf x = vload(dt, opreg__cpu_at(dt, in, i)), y = vload(dt, opreg__cpu_at(dt, in, d + i));
        vstore(dt, opreg__cpu_at_mut(dt, out, i), vmul(vround_dt(dt, vact(act, x)), y));
    }
    if (i < d) {
        vf x = vload_n(dt, opreg__cpu_at(dt, in, i), d - i);
        vf y = vload_n(dt, opreg__cpu_at(dt, in, d + i), d - i);
        vstore_n(dt, opreg__cpu_at_mut(dt, out, i), vmul(vround_dt(dt, vact(act, x)), y), d - i);
    }
}

AI void gated_rows(int dt, int act, const struct opreg__act_args *a, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++)
        gated_row(dt, act, opreg__cpu_at_mut(dt, a->out, r * a->out_stride),
                  opreg__cpu_at(dt, a->in, r * a->in_stride), a->d);
}

AI void elementwise_chunks(int dt, int act, const struct opreg__act_args *a, int64_t c0,
                           int64_t c1) {
    int64_t end = c1 * OPREG__CPU_CHUNK < a->n ? c1 * OPREG__CPU_CHUNK : a->n;
    int64_t i = c0 * OPREG__CPU_CHUNK;
    for (; i + VW <= end; i += VW)
        vstore(dt, opreg__cpu_at_mut(dt, a->out, i),
               vact(act, vload(dt, opreg__cpu_at(dt, a->in, i))));
    if (i < end)
        vstore_n(dt, opreg__cpu_at_mut(dt, a->out, i),
                 vact(act, vload_n(dt, opreg__cpu_at(dt, a->in, i), end - i)), end - i);
}

/* One instance per activation: the switch in vact() folds away. */
#define ACT_CASES(CALL_OF)                                                                         \
    switch (a->act) {                                                                              \
    case OPREG__ACT_SILU:                                                                          \
        PER_DTYPE(a->dt, CALL_OF(OPREG__ACT_SILU));                                                \
        break;                                                                                     \
    case OPREG__ACT_GELU:                                                                          \
        PER_DTYPE(a->dt, CALL_OF(OPREG__ACT_GELU));                                                \
        break;                                                                                     \
    case OPREG__ACT_GELU_TANH:                                                                     \
        PER_DTYPE(a->dt, CALL_OF(OPREG__ACT_GELU_TANH));                                           \
        break;                                                                                     \
    case OPREG__ACT_GELU_NEW:                                                                      \
        PER_DTYPE(a->dt, CALL_OF(OPREG__ACT_GELU_NEW));                                            \
        break;                                                                                     \
    case OPREG__ACT_GELU_FAST:                                                                     \
        PER_DTYPE(a->dt, CALL_OF(OPREG__ACT_GELU_FAST));                                           \
        break;                                                                                     \
    default:                                                                                       \
        PER_DTYPE(a->dt, CALL_OF(OPREG__ACT_GELU_QUICK));                                          \
        break;                                                                                     \
    }

static void gated_range(const void *args, int64_t r0, int64_t r1) {
    const struct opreg__act_args *a = args;
#define GATED(act) gated_rows(dt_, act, a, r0, r1)
    ACT_CASES(GATED)
#undef GATED
}

static void elementwise_range(const void *args, int64_t c0, int64_t c1) {
    const struct opreg__act_args *a = args;
#define ELEM(act) elementwise_chunks(dt_, act, a, c0, c1)
    ACT_CASES(ELEM)
#undef ELEM
}

#endif
