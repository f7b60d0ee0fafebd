/* The op catalogue's definitions: every schema of catalogue_schemas.c,
 * defined under `_C`. */
#include "ops/register/catalogue.h"

OPREG_LIBRARY(_C, m) {
    for (const char *const *s = opreg__catalogue_schemas; *s; s++)
        OPREG_DEF(m, *s);
}
