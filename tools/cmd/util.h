/* Helpers the subcommands share: JSON strings and op names. */
#ifndef OPREG_TOOLS_UTIL_H
#define OPREG_TOOLS_UTIL_H

#include "opreg/opreg.h"

#include <stddef.h>
#include <stdio.h>

/* Write @p s (@p len bytes) to @p f as a JSON string, quotes included:
 * control characters escaped, and bytes that are not UTF-8 written as
 * U+FFFD, so that the output is valid JSON whatever the input. */
void tool_json_strn(FILE *f, const char *s, size_t len);
/* tool_json_strn() of a NUL-terminated string; NULL prints null. */
void tool_json_str(FILE *f, const char *s);

/* The name to look up for @p name: @p name itself when it has a namespace
 * or names no op, else the one defined op "ns::NAME" of @p reg (several
 * namespaces: @p name unchanged, and the lookup's message lists them). The
 * result is @p name or @p buf. */
const char *tool_op_name(const opreg_registry *reg, const char *name, char *buf, size_t cap);

#endif
