/* opreg supported NAME [--device D] [--explain] [--json]: exit 0 when op
 * NAME of the default registry is supported (on device D, or on some backend
 * other than Meta), 1 when not. --explain prints which kernel would run, or
 * why none would. */
#include "opreg/opreg.h"
#include "tools/cmd/commands.h"
#include "opreg/inputs.h"
#include "tools/cmd/util.h"

#include <string.h>

static void help(void) {
    printf("usage: opreg supported NAME [--device D] [--explain] [--json]\n"
           "       opreg supported NAME [--device D] [--dtype T] [--shape k=v,...] [--json]\n\n"
           "Says whether op NAME (ns::name, or name alone when one namespace has it) of\n"
           "the default registry would run on device D (cpu, cuda, cuda:1, meta, or a\n"
           "plugin's device), or, without --device, on some available backend other than\n"
           "Meta. --explain prints one line: the kernel that would run (its key, whether\n"
           "direct, composite or fallback, and where it was registered) or why none would\n"
           "(no such op, with the nearest names; no kernel for the key, with the keys\n"
           "that have one; backend unavailable, and why). --json prints one object:\n"
           "{\"name\":...,\"device\":\"cpu\"|null,\"supported\":true,\"reason\":\"ok\"|\n"
           "\"no_such_op\"|\"no_kernel\"|\"backend_unavailable\"|\"no_backend\",\n"
           "\"key\":\"CPU\"|null,\"kernel\":\"direct\"|\"composite\"|\"fallback\"|null,\n"
           "\"message\":...}.\n\n"
           "With --dtype or --shape, the question is about one call: arguments are built\n"
           "as `opreg run` builds them (Meta tensors would do: only their dtypes, shapes\n"
           "and strides are read), and the answer names the provider of the device's key\n"
           "that would run them and why each one before it declined or is disabled, then\n"
           "whether the op's checks accept them. --json adds \"provider\" (or null) and\n"
           "\"providers\":[{\"name\",\"verdict\":\"runs\"|\"declined\"|\"disabled\"|\n"
           "\"not reached\",\"reason\",\"where\"}].\n\n"
           "exit codes: 0 supported, 1 not supported, 2 usage error\n");
}

static const char *reason_name(opreg_support_reason r) {
    switch (r) {
    case OPREG_SUPPORT_OK:
        return "ok";
    case OPREG_SUPPORT_NO_SUCH_OP:
        return "no_such_op";
    case OPREG_SUPPORT_NO_KERNEL:
        return "no_kernel";
    case OPREG_SUPPORT_BACKEND_UNAVAILABLE:
        return "backend_unavailable";
    case OPREG_SUPPORT_NO_BACKEND:
        return "no_backend";
    }
    return "unknown";
}

static const char *kind_name(opreg_kernel_kind k) {
    switch (k) {
    case OPREG_KERNEL_DIRECT:
        return "direct";
    case OPREG_KERNEL_COMPOSITE:
        return "composite";
    case OPREG_KERNEL_FALLBACK:
        return "fallback";
    case OPREG_KERNEL_NONE:
        break;
    }
    return NULL;
}

static void print_json(const char *name, const char *dev, const opreg_support_info *info) {
    printf("{\"name\":");
    tool_json_str(stdout, name);
    printf(",\"device\":");
    tool_json_str(stdout, dev);
    printf(",\"supported\":%s,\"reason\":\"%s\",\"key\":", info->supported ? "true" : "false",
           reason_name(info->reason));
    tool_json_str(stdout, info->key == OPREG_KEY_NONE ? NULL : opreg_key_name(info->key));
    printf(",\"kernel\":");
    tool_json_str(stdout, kind_name(info->kind));
    printf(",\"message\":");
    tool_json_str(stdout, info->message);
    printf("}\n");
}

static void print_call_json(const char *name, const char *dev, const opreg_call_explanation *x) {
    printf("{\"name\":");
    tool_json_str(stdout, name);
    printf(",\"device\":");
    tool_json_str(stdout, dev);
    printf(",\"supported\":%s,\"key\":", x->supported ? "true" : "false");
    tool_json_str(stdout, x->key == OPREG_KEY_NONE ? NULL : opreg_key_name(x->key));
    printf(",\"provider\":");
    tool_json_str(stdout, x->chosen >= 0 ? x->providers[x->chosen].name : NULL);
    printf(",\"providers\":[");
    for (size_t i = 0; i < x->nproviders; i++) {
        const opreg_provider_info *p = &x->providers[i];
        printf("%s{\"name\":", i ? "," : "");
        tool_json_str(stdout, p->name);
        printf(",\"verdict\":\"%s\",\"reason\":", opreg_provider_verdict_name(p->verdict));
        tool_json_str(stdout, p->reason);
        printf(",\"where\":");
        tool_json_str(stdout, p->where);
        printf("}");
    }
    printf("],\"message\":");
    tool_json_str(stdout, x->message);
    printf("}\n");
}

/* NAME with --dtype/--shape: build one call's arguments on the CPU and ask
 * which provider of the device's key would take them. */
static int for_arguments(opreg_registry *reg, const char *full, const char *dev,
                         const DLDevice *device, const char *dtype_text, const char *shape_text,
                         bool json) {
    const opreg_op *op;
    if (opreg_op_find(&op, reg, full) != OPREG_OK) {
        fprintf(stderr, "opreg supported: %s\n", opreg_last_error());
        return 1;
    }
    int dtype = -1;
    if (dtype_text) {
        opreg_dtype dt;
        if (opreg_dtype_from_name(&dt, dtype_text) != OPREG_OK) {
            fprintf(stderr, "opreg supported: %s\n", opreg_last_error());
            return 2;
        }
        dtype = (int)dt;
    }
    char err[512];
    opreg_sizes shape;
    if (opreg_sizes_parse(&shape, shape_text ? shape_text : "", err, sizeof err) != 0) {
        fprintf(stderr, "opreg supported: %s\n", err);
        return 2;
    }
    opreg_dispatch_key key = OPREG_KEY_CPU;
    if (device) {
        key = opreg_key_of_device(*device);
        if (key == OPREG_KEY_NONE) {
            fprintf(stderr, "opreg supported: no backend handles device '%s'\n", dev);
            return 1;
        }
    }
    opreg_inputs *in = NULL;
    opreg_status st = opreg_inputs_build(&in, op, dtype, &shape, 1, err, sizeof err);
    if (st != OPREG_OK) {
        fprintf(stderr, "opreg supported: %s\n", err);
        return st == OPREG_ERR_INVALID_ARGUMENT ? 2 : 1;
    }
    static opreg_call_explanation x;
    st = opreg_explain_call(&x, op, key, opreg_inputs_args(in), opreg_inputs_nargs(in), NULL, 0);
    opreg_inputs_free(in);
    if (st != OPREG_OK) {
        fprintf(stderr, "opreg supported: %s\n", opreg_last_error());
        return 1;
    }
    if (json)
        print_call_json(full, dev, &x);
    else
        printf("%s\n", x.message);
    return x.supported ? 0 : 1;
}

int cmd_supported(int argc, char **argv) {
    if (tool_wants_help(argc, argv)) {
        help();
        return 0;
    }
    const char *name = NULL, *dev = NULL, *dtype_text = NULL, *shape_text = NULL;
    bool explain = false, json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--explain") == 0)
            explain = true;
        else if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            dev = argv[++i];
        else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc)
            dtype_text = argv[++i];
        else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc)
            shape_text = argv[++i];
        else if (!name && argv[i][0] != '-')
            name = argv[i];
        else {
            fprintf(stderr, "opreg supported: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!name) {
        fprintf(stderr, "opreg supported: missing NAME\n");
        return 2;
    }
    /* The default registry first: its plugins bring their devices' names. */
    opreg_registry *reg = opreg_registry_default();
    DLDevice device;
    if (dev && opreg_device_parse(&device, dev) != OPREG_OK) {
        fprintf(stderr, "opreg supported: %s\n", opreg_last_error());
        return 2;
    }
    if (!reg) {
        fprintf(stderr, "opreg supported: %s\n", opreg_last_error());
        return 1;
    }
    char buf[256];
    const char *full = tool_op_name(reg, name, buf, sizeof buf);
    if (dtype_text || shape_text)
        return for_arguments(reg, full, dev, dev ? &device : NULL, dtype_text, shape_text, json);
    opreg_support_info info;
    if (opreg_explain_support(&info, reg, full, dev ? &device : NULL) != OPREG_OK) {
        fprintf(stderr, "opreg supported: %s\n", opreg_last_error());
        return 1;
    }
    if (json)
        print_json(full, dev, &info);
    else if (explain)
        printf("%s\n", info.message);
    return info.supported ? 0 : 1;
}
