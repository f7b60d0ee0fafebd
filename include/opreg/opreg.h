/// @file opreg.h
/// @brief Everything public in opreg, in one include.
#ifndef OPREG_OPREG_H
#define OPREG_OPREG_H

#include "opreg/common.h"
#include "opreg/schema.h"
#include "opreg/tensor.h"
#include "opreg/value.h"
#include "opreg/backend.h"
#include "opreg/registry.h"
#include "opreg/dispatch.h"
#include "opreg/cuda.h"
#include "opreg/plugin.h"
#include "opreg/provider.h"
#include "opreg/mutation.h"
#include "opreg/threads.h"
#include "opreg/collective.h"
#include "opreg/inputs.h"
#include "opreg/opcheck.h"

#endif
