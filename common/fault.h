/* Allocation-failure injection for tests, in the manner of SQLite's
 * SQLITE_TESTCTRL_FAULT_INSTALL: with the build option OPREG_FAULT_INJECTION,
 * every heap allocation the library makes goes through one counter, which
 * can make the Nth allocation from now fail. Without the option none of this
 * exists and the library calls the C allocator directly.
 *
 * Not installed; tests include it directly. Including it does not redirect
 * the includer's own allocations (common/internal.h does that, for the
 * library's files only), so a test's buffers are never counted or failed. */
#ifndef OPREG_COMMON_FAULT_H
#define OPREG_COMMON_FAULT_H

#ifdef OPREG_FAULT_INJECTION

#include <stdbool.h>
#include <stddef.h>

/* Make the @p n-th allocation from now fail (1: the next one), and with
 * @p persistent every allocation after it too. n == 0 disarms. Resets the
 * count of allocations and whether a failure happened. */
void opreg__fi_arm(unsigned long n, bool persistent);
/* Stop failing. Returns how many allocations were still to go before the
 * armed failure (0 when it happened or nothing was armed). */
unsigned long opreg__fi_disarm(void);
/* While paused, allocations are neither counted nor failed (a test's own
 * set-up between the steps it counts). */
void opreg__fi_pause(bool paused);
/* Allocations made (failed ones included) since the last arm. */
unsigned long opreg__fi_count(void);
/* Whether an allocation has been failed since the last arm. */
bool opreg__fi_failed(void);
/* Call @p fn with the call site (a return address) of each allocation, as it
 * is made, with its number since the last arm (1 for the first); NULL
 * stops. For a test that wants to fail each distinct site at least once. */
void opreg__fi_trace(void (*fn)(void *user, const void *site, unsigned long index), void *user);

/* The allocator entry points common/internal.h sends the library's calls to. */
void *opreg__fi_malloc(size_t size);
void *opreg__fi_calloc(size_t n, size_t size);
void *opreg__fi_realloc(void *ptr, size_t size);
void *opreg__fi_aligned_alloc(size_t align, size_t size);
char *opreg__fi_strdup(const char *s);
char *opreg__fi_strndup(const char *s, size_t n);

#endif
#endif
