/// @file opreg.h
/// @brief Everything public in opreg, in one include.
#ifndef OPREG_OPREG_H
#define OPREG_OPREG_H

#include "opreg/common.h"
#include "opreg/schema.h"

#endif
