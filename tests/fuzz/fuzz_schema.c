/* libFuzzer target for the schema parser. Every input is parsed in both
 * modes; whatever parses must print canonically, parse back equal (with the
 * same hash), print the same canonical text again, and print in PyTorch's
 * form without trouble. Any failure aborts, which libFuzzer reports. */
#include "opreg/opreg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *text, size_t len, unsigned flags) {
    opreg_schema *s = NULL;
    opreg_schema_error err;
    opreg_status st = opreg_schema_parse(&s, text, len, flags, &err);
    if (st != OPREG_OK) {
        if (s != NULL || err.column == 0 || err.line == 0 || err.offset > len) abort();
        return;
    }
    char *canon = opreg_schema_to_string(s, OPREG_SCHEMA_CANONICAL);
    char *torch = opreg_schema_to_string(s, OPREG_SCHEMA_TORCH);
    if (!canon || !torch) abort();
    opreg_schema *again = NULL;
    /* The canonical form always parses, even in strict mode when type
     * variables came from the aten:: exception: keep the flags. */
    if (opreg_schema_parse(&again, canon, strlen(canon), flags | OPREG_SCHEMA_ALLOW_TYPEVARS,
                           &err) != OPREG_OK) {
        fprintf(stderr, "canonical form does not parse: %s\n  %s\n", canon, err.message);
        abort();
    }
    if (!opreg_schema_equal(s, again) || opreg_schema_hash(s) != opreg_schema_hash(again)) {
        fprintf(stderr, "canonical form parses to another schema: %s\n", canon);
        abort();
    }
    char *canon2 = opreg_schema_to_string(again, OPREG_SCHEMA_CANONICAL);
    if (!canon2 || strcmp(canon, canon2) != 0) {
        fprintf(stderr, "canonical form is not stable:\n  %s\n  %s\n", canon, canon2);
        abort();
    }
    opreg_string_free(canon2);
    opreg_string_free(canon);
    opreg_string_free(torch);
    opreg_schema_free(again);
    opreg_schema_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* Exactly `size` bytes, so that ASan catches any read past the end. */
    char *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    check(copy, size, OPREG_SCHEMA_STRICT);
    check(copy, size, OPREG_SCHEMA_ALLOW_TYPEVARS);
    free(copy);
    return 0;
}
