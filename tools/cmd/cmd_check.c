/* opreg check [PATTERN] [--checks LIST] [--dtype T,...] [--shape k=v,...]
 * [--key K,...] [--seed S] [--all] [--json]: opcheck (opreg/opcheck.h) on one
 * op, a namespace or everything registered, plugins included. */
#define _POSIX_C_SOURCE 200809L
#include "opreg/opreg.h"
#include "tools/cmd/commands.h"
#include "tools/cmd/util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void help(void) {
    printf("usage: opreg check [PATTERN] [--checks LIST] [--dtype T,...] [--shape k=v,...]\n"
           "                  [--key K,...] [--seed S] [--all] [--json]\n\n"
           "Checks the contract of every op matching PATTERN (\"_C::rms_norm\", \"rms_norm\",\n"
           "\"_C::*\", or \"*\", the default: every op registered, plugins' included) on\n"
           "generated inputs, on every key that has a kernel for it:\n"
           "  mutation  inputs not marked ! stay byte-identical; guard zones untouched\n"
           "  schema    arguments marked ! that the kernel never writes (a warning)\n"
           "  meta      Meta accepts exactly what the kernel accepts; same output shapes\n"
           "  backends  results agree with the Reference key (and each other) within\n"
           "            the dtype's tolerance\n"
           "  refusals  invalid inputs are refused with a message and change nothing\n"
           "  threads   two calls at once give the bytes of a call alone\n"
           "  edges     0 tokens, size 1, odd sizes: the checks above there too\n"
           "Prints what did not pass (--all: every result), then a summary.\n\n"
           "--checks  a comma-separated subset of the checks above\n"
           "--dtype   dtypes to try (default: every dtype the op's generator takes)\n"
           "--shape   sizes for every op that reads them, e.g. tokens=3,hidden=17\n"
           "--key     keys to check, e.g. CPU,Reference (default: every key with a kernel)\n"
           "--seed    seed of the generated inputs (default 1)\n"
           "--json    one JSON array: an object per op, key and check\n\n"
           "exit codes: 0 every check passed (warnings and not applicable allowed),\n"
           "1 a check failed, 2 usage error or nothing matches PATTERN\n");
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cmd_check(int argc, char **argv) {
    opreg_opcheck_options o = { .struct_size = sizeof o, .seed = 1 };
    const char *pattern = "*";
    bool json = false, all = false;
    char namebuf[256];
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = !strcmp(a, "--checks") || !strcmp(a, "--dtype") || !strcmp(a, "--shape") ||
                     !strcmp(a, "--key") || !strcmp(a, "--seed");
        if (takes && !v) {
            fprintf(stderr, "opreg check: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--all")) {
            all = true;
        } else if (!strcmp(a, "--checks") || !strcmp(a, "--dtype") || !strcmp(a, "--key")) {
            opreg_status ps = a[2] == 'c'   ? opreg_check_kinds_parse(&o.checks, v)
                              : a[2] == 'd' ? opreg_check_dtypes_parse(&o.dtypes, v)
                                            : opreg_check_keys_parse(&o.keys, v);
            if (ps != OPREG_OK) {
                fprintf(stderr, "opreg check: %s\n", opreg_last_error());
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--shape")) {
            o.sizes = v;
            i++;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            o.seed = strtoull(v, &end, 10);
            if (*end || !*v) {
                fprintf(stderr, "opreg check: bad --seed '%s'\n", v);
                return 2;
            }
            i++;
        } else if (a[0] == '-') {
            fprintf(stderr, "opreg check: unknown option %s (see --help)\n", a);
            return 2;
        } else {
            pattern = a;
        }
    }
    if (!strchr(pattern, ':') && strcmp(pattern, "*"))
        pattern = tool_op_name(opreg_registry_default(), pattern, namebuf, sizeof namebuf);

    opreg_check_report *r = NULL;
    double t0 = now_s();
    opreg_status st = opreg_opcheck(NULL, pattern, &o, &r);
    double secs = now_s() - t0;
    if (st != OPREG_OK) {
        fprintf(stderr, "opreg check: %s\n", opreg_last_error());
        return 2;
    }
    size_t failed = opreg_check_report_tally(r, OPREG_CHECK_FAILED);
    if (json) {
        char *text = opreg_check_report_json(r);
        if (!text) {
            fprintf(stderr, "opreg check: out of memory\n");
            opreg_check_report_free(r);
            return 2;
        }
        fputs(text, stdout);
        opreg_string_free(text);
    } else {
        size_t ops = 0;
        const char *last = "";
        for (size_t i = 0; i < opreg_check_report_count(r); i++) {
            const opreg_check_item *it = opreg_check_report_item(r, i);
            if (strcmp(it->op, last)) ops++;
            last = it->op;
            if (!all &&
                (it->result == OPREG_CHECK_PASSED || it->result == OPREG_CHECK_NOT_APPLICABLE))
                continue;
            printf("%-14s %-30s %-10s %-8s %s\n", opreg_check_result_name(it->result), it->op,
                   it->key, opreg_check_kind_name(it->check), it->message);
        }
        printf("opcheck: %zu ops, %zu results: %zu passed, %zu warnings, %zu failed, %zu not "
               "applicable (%.1f s)\n",
               ops, opreg_check_report_count(r), opreg_check_report_tally(r, OPREG_CHECK_PASSED),
               opreg_check_report_tally(r, OPREG_CHECK_WARNING), failed,
               opreg_check_report_tally(r, OPREG_CHECK_NOT_APPLICABLE), secs);
    }
    opreg_check_report_free(r);
    return failed ? 1 : 0;
}
