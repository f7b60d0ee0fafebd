/* The Meta backend's table: tensors with a shape and a dtype and no data. */
#ifndef OPREG_BACKENDS_META_BACKEND_H
#define OPREG_BACKENDS_META_BACKEND_H

#include "opreg/backend.h"

extern const opreg_backend opreg__meta_backend;

#endif
