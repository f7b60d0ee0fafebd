/* The tables of the CPU and Reference keys, attached by builtins/builtins.c
 * (the one place that names the built-in backends). */
#ifndef OPREG_BACKENDS_CPU_BACKEND_H
#define OPREG_BACKENDS_CPU_BACKEND_H

#include "opreg/backend.h"

extern const opreg_backend opreg__cpu_backend;
extern const opreg_backend opreg__reference_backend;

#endif
