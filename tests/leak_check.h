/* A leak check a test can run at a moment of its choosing: under
 * AddressSanitizer, LeakSanitizer's recoverable check (it prints what leaked
 * and the test goes on); elsewhere it finds nothing. */
#ifndef OPREG_TESTS_LEAK_CHECK_H
#define OPREG_TESTS_LEAK_CHECK_H

#include <stdbool.h>

#if defined(__SANITIZE_ADDRESS__)
#define OPREG_TEST_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OPREG_TEST_HAVE_LSAN 1
#endif
#endif
#ifdef OPREG_TEST_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* True when memory unreachable now was found (and reported on stderr). */
static inline bool leaks_found(void) {
#ifdef OPREG_TEST_HAVE_LSAN
    return __lsan_do_recoverable_leak_check() != 0;
#else
    return false;
#endif
}

#endif
