/* A small test harness: each test file is one CTest executable.
 *
 *   TEST(name) { CHECK_EQ_INT(1, 1); }
 *   int main(void) { RUN(name); return test_summary(); }
 *
 * Assertions print both values and the location, count the failure and
 * return from the test function. test_summary() prints "N passed, N failed"
 * and returns the exit code. TEST_SKIP_CODE (77) is CTest's skip code. */
#ifndef OPREG_TEST_H
#define OPREG_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_SKIP_CODE 77

static int test_passed_count;
static int test_failed_count;
static int test_current_failed;

#define TEST(name) static void name(void)

#define RUN(name)                                                                                  \
    do {                                                                                           \
        test_current_failed = 0;                                                                   \
        name();                                                                                    \
        if (test_current_failed) {                                                                 \
            test_failed_count++;                                                                   \
            fprintf(stderr, "FAIL %s\n", #name);                                                   \
        } else {                                                                                   \
            test_passed_count++;                                                                   \
        }                                                                                          \
    } while (0)

#define TEST_FAIL_AT(...)                                                                          \
    do {                                                                                           \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                            \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        test_current_failed = 1;                                                                   \
    } while (0)

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            TEST_FAIL_AT("CHECK(%s) failed", #cond);                                               \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long test_a_ = (long long)(a), test_b_ = (long long)(b);                              \
        if (test_a_ != test_b_) {                                                                  \
            TEST_FAIL_AT("%s == %s: %lld != %lld", #a, #b, test_a_, test_b_);                      \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
    do {                                                                                           \
        const char *test_a_ = (a), *test_b_ = (b);                                                 \
        if (!test_a_ || !test_b_ || strcmp(test_a_, test_b_) != 0) {                               \
            TEST_FAIL_AT("%s == %s:\n  \"%s\"\n  \"%s\"", #a, #b, test_a_ ? test_a_ : "(null)",    \
                         test_b_ ? test_b_ : "(null)");                                            \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                                \
    do {                                                                                           \
        const char *test_h_ = (hay), *test_n_ = (needle);                                          \
        if (!test_h_ || !strstr(test_h_, test_n_)) {                                               \
            TEST_FAIL_AT("%s contains %s:\n  \"%s\"\n  lacks \"%s\"", #hay, #needle,               \
                         test_h_ ? test_h_ : "(null)", test_n_);                                   \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static inline int test_summary(void) {
    printf("%d passed, %d failed\n", test_passed_count, test_failed_count);
    return test_failed_count ? 1 : 0;
}

#endif
