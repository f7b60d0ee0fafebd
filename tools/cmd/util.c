/* Helpers the subcommands share: JSON strings and op names. */
#include "tools/cmd/util.h"

#include <string.h>

/* The length of the UTF-8 sequence at @p s (at most @p n bytes), or 0 when
 * it is not well formed (overlong forms, surrogates and code points past
 * U+10FFFF are not). */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n) return 0;
    unsigned cp = c & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

void tool_json_strn(FILE *f, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            fprintf(f, "\\%c", c);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            size_t n = utf8_len(p + i, len - i);
            if (n == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(p + i, 1, n, f);
                i += n;
            }
        }
    }
    fputc('"', f);
}

void tool_json_str(FILE *f, const char *s) {
    if (s)
        tool_json_strn(f, s, strlen(s));
    else
        fputs("null", f);
}

const char *tool_op_name(const opreg_registry *reg, const char *name, char *buf, size_t cap) {
    if (!reg || strstr(name, "::")) return name;
    const char *found = NULL;
    size_t n = opreg_registry_num_ops(reg);
    for (size_t i = 0; i < n; i++) {
        const opreg_op *op = opreg_registry_op(reg, i);
        if (!opreg_op_is_defined(op)) continue;
        const char *full = opreg_op_name(op), *sep = strstr(full, "::");
        if (!sep || strcmp(sep + 2, name) != 0) continue;
        if (found) return name; /* ambiguous */
        found = full;
    }
    if (!found || strlen(found) >= cap) return name;
    memcpy(buf, found, strlen(found) + 1);
    return buf;
}
