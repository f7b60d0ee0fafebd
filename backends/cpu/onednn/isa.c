/* Which instruction set oneDNN runs on, and whether the CPU has AMX. The
 * issue wants bf16 and int8 GEMMs on AMX where the CPU has it; these two
 * queries let a test tell "not used" from "not there". */
#include "backends/cpu/onednn/onednn_internal.h"

#include <oneapi/dnnl/dnnl_debug.h>

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

size_t opreg__onednn_isa(char *buf, size_t cap) {
    /* dnnl_cpu_isa2str() gives the enumerator's name, "cpu_isa_avx2". */
    const char *name = dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa());
    const char *prefix = "cpu_isa_";
    int len;
    if (!name) name = "unknown";
    if (strncmp(name, prefix, strlen(prefix)) == 0) name += strlen(prefix);
    len = snprintf(buf, cap, "%s", name);
    return len < 0 ? 0 : (size_t)len;
}

#if defined(__x86_64__) || defined(__i386__)
/* XCR0, the state components the OS saves: AMX needs bits 17 (XTILECFG) and
 * 18 (XTILEDATA). xgetbv is only valid when CPUID says OSXSAVE. */
static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

bool opreg__onednn_has_amx(void) {
    unsigned a, b, c, d;
    const unsigned amx_bf16 = 1u << 22, amx_tile = 1u << 24;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false; /* OSXSAVE */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if ((d & (amx_bf16 | amx_tile)) != (amx_bf16 | amx_tile)) return false;
    return (read_xcr0() & (3ull << 17)) == (3ull << 17);
}
#else
bool opreg__onednn_has_amx(void) {
    return false;
}
#endif
