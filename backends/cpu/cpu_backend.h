/* The CPU backend's table, linked into the registry's built-in key list
 * (registry/keys.c is the one place that names built-in backends). */
#ifndef OPREG_BACKENDS_CPU_BACKEND_H
#define OPREG_BACKENDS_CPU_BACKEND_H

#include "opreg/backend.h"

extern const opreg_backend opreg__cpu_backend;
extern const opreg_backend opreg__reference_backend;

#endif
