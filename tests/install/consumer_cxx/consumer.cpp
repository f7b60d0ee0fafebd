// The installed headers from C++: look an op up, ask where it runs.
#include <opreg/opreg.h>

#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
    if (argc != 2 || std::strcmp(opreg_version(), argv[1]) != 0) {
        std::fprintf(stderr, "opreg_version() is %s\n", opreg_version());
        return 1;
    }
    opreg_registry *reg = opreg_registry_default();
    const opreg_op *op = nullptr;
    if (!reg || opreg_op_find(&op, reg, "_C::rms_norm") != OPREG_OK) {
        std::fprintf(stderr, "%s\n", opreg_last_error());
        return 1;
    }
    opreg_support_info info;
    DLDevice cpu = { kDLCPU, 0 };
    if (opreg_explain_support(&info, reg, "_C::rms_norm", &cpu) != OPREG_OK || !info.supported) {
        std::fprintf(stderr, "not supported: %s\n", info.message);
        return 1;
    }
    std::printf("C++: %s\n", info.message);
    return 0;
}
