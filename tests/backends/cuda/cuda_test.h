/* Helpers of the CUDA tests: whether a device is here (else the test exits
 * 77), and device copies through the public API. */
#ifndef OPREG_TESTS_CUDA_TEST_H
#define OPREG_TESTS_CUDA_TEST_H

#include "opreg/opreg.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>

/* Exit 77 unless the CUDA backend is built and a device is present. */
static inline void cuda_test_require_device(void) {
    char why[256];
    if (!opreg_key_is_available(OPREG_KEY_CUDA, why, sizeof why)) {
        printf("skipped: the CUDA backend is unavailable: %s\n", why);
        exit(TEST_SKIP_CODE);
    }
}

#endif
