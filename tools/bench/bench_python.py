#!/usr/bin/env python3
"""Cost of one call of opreg.ops._C.rms_norm from Python on small numpy
tensors, beside a trivial Python function call, in one run.

    PYTHONPATH=build/python python3 tools/bench/bench_python.py [--json] [--rounds N] [--calls N]

(`opreg bench python` runs this script with the build's package, which holds
the benchmark's own pieces beside the binding: the module opreg._bench and
the plugin _bench_null_op.so, python/bench.) Every case
runs the same loop, `for _ in range(n): f(out, x, w, eps)`; the cost of the
empty loop is measured too and taken off, so the figures are per call. The
cases run interleaved, several rounds, and the best round of each is kept:
on a shared machine the best is the least disturbed.

cases:
  trivial_function   a Python function with the same four arguments, doing nothing
  rms_norm           opreg.ops._C.rms_norm held in a local (the call itself)
  rms_norm_lookup    opreg.ops._C.rms_norm written out at each call (3 attribute loads more)
  rms_norm_keyword   the call with epsilon= by keyword
  null_op            an op with rms_norm's schema whose kernel does nothing
                     (_opreg_bench::rms_norm, from the plugin _bench_null_op.so):
                     the binding and the dispatcher alone
  rms_norm_in_c      the same op and tensors called from C in a loop, the arguments
                     converted once (opreg._bench.time_c): what the op itself costs in C
  null_op_in_c       the same for the op that does nothing
  binding_overhead   null_op - null_op_in_c: what the Python binding adds to a call
  rms_norm_torch     the call on torch tensors, when torch is there: read through
                     libtorch's C accessors where torch has them and they check out
                     (docs/python.md), else through DLPack's C exchange API (torch 2.10
                     and later); on torch 1.13, from the TensorImpl's fields where they
                     check out, else through torch._C._to_dlpack
  rms_norm_torch_exchange  the same with the accessors switched off, where torch has the
                     exchange API: what reading torch's tensors directly saves
  rms_norm_torch_dlpack    the same on torch 1.13 with the fields' path switched off
  torch_ops_opreg    torch.ops.opreg_bench.rms_norm: opreg's op registered into torch's
                     dispatcher by opreg.torch, called on the same torch tensors; its
                     CPU kernel is opreg's C function where torch has the stable C ABI
                     (2.13 and later), else a Python function
  torch_ops_opreg_py the same op registered with kernels="python" (a Python kernel),
                     where torch has the stable C ABI: what the C kernel saves
  torch_ops_cpp      torch.ops.opreg_bench_cpp.rms_norm: the anchor, the same loop written
                     as a C++ TORCH_LIBRARY op, built here with torch.utils.cpp_extension
                     (skipped, with the reason, when it cannot be built; for Debian's
                     torch 1.13 it needs the packages libtorch-dev and pybind11-dev)
  torch_native       a plain torch op on the same tensors: torch.nn.functional.rms_norm
                     where torch has it, else torch.mul(x, w, out=out)

For torch 2.15 from PyPI: OPREG_PYTHON=$(bash tools/torch-env.sh) opreg bench python.
"""

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

import opreg

try:
    from opreg import _bench
except ImportError:
    sys.exit("bench_python.py: opreg._bench is missing: run it with the build tree's package "
             "(PYTHONPATH=build/python)")

NULL_OP = "_opreg_bench::rms_norm"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--tokens", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=64)
    args = ap.parse_args()

    shape = (args.tokens, args.hidden)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    w = np.ones(args.hidden, np.float32)
    out = np.empty_like(x)
    eps = 1e-6
    rms_norm = opreg.ops._C.rms_norm

    def trivial(o, i, wt, e):
        pass

    def loop_empty(n):
        t = time.perf_counter_ns()
        for _ in range(n):
            pass
        return time.perf_counter_ns() - t

    def loop_call(f):
        return timed_loop(f, out, x, w, eps)

    def loop_lookup(n):
        t = time.perf_counter_ns()
        for _ in range(n):
            opreg.ops._C.rms_norm(out, x, w, eps)
        return time.perf_counter_ns() - t

    def loop_keyword(n):
        t = time.perf_counter_ns()
        for _ in range(n):
            rms_norm(out, x, w, epsilon=eps)
        return time.perf_counter_ns() - t

    # The null op, in the binding's registry and in opreg._bench's own.
    plugin = os.path.join(os.path.dirname(_bench.__file__), "_bench_null_op.so")
    opreg.load_plugin(plugin)
    _bench.load_plugin(plugin)
    null = opreg._opreg.Op(NULL_OP)

    def in_c(name):
        return lambda n: _bench.time_c(name, n, out, x, w, eps) * n

    cases = [("trivial_function", loop_call(trivial)), ("rms_norm", loop_call(rms_norm)),
             ("rms_norm_lookup", loop_lookup), ("rms_norm_keyword", loop_keyword),
             ("null_op", loop_call(null)), ("rms_norm_in_c", in_c(rms_norm.name)),
             ("null_op_in_c", in_c(NULL_OP))]
    torch_info = torch_cases(cases, x, w, out, eps)

    n = args.calls
    best = {name: float("inf") for name, _ in cases}
    best_loop = float("inf")
    for r in range(args.rounds):
        best_loop = min(best_loop, loop_empty(n) / n)
        for name, fn in cases:
            calls = n if not name.startswith(("torch", "rms_norm_torch")) else max(n // 4, 1)
            best[name] = min(best[name], fn(calls) / calls)
        if sys.stderr.isatty():
            sys.stderr.write("\rround %d/%d" % (r + 1, args.rounds))
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")

    per_call = {}
    for name, _ in cases:
        per_call[name] = best[name] if name.endswith("_in_c") else best[name] - best_loop
    per_call["binding_overhead"] = per_call["null_op"] - per_call["null_op_in_c"]
    order = ["trivial_function", "rms_norm", "rms_norm_lookup", "rms_norm_keyword", "null_op",
             "rms_norm_in_c", "null_op_in_c", "binding_overhead", "rms_norm_torch",
             "rms_norm_torch_exchange", "rms_norm_torch_dlpack",
             "torch_ops_opreg", "torch_ops_opreg_py", "torch_ops_cpp", "torch_native"]
    info = "python %s, numpy %s, shape %s f32, %d rounds of %d calls, empty loop %.1f ns" % (
        platform.python_version(), np.__version__, "x".join(map(str, shape)), args.rounds, n,
        best_loop)
    if not args.json:
        print("python binding:", info)
        if torch_info:
            print("torch:", torch_info)
    for name in order:
        if name not in per_call:
            continue
        ns = per_call[name]
        ratio = ns / per_call["trivial_function"]
        if args.json:
            print(json.dumps({"suite": "python", "case": name, "ns_per_call": round(ns, 1),
                              "x_trivial_function": round(ratio, 2),
                              "python": platform.python_version(),
                              "shape": list(shape)}, separators=(",", ":")))
        else:
            print("  %-23s %8.1f ns/call  (%.2fx a trivial function call)" % (name, ns, ratio))
    if not args.json:
        print("target: rms_norm <= 300 ns/call")
        if "rms_norm_torch" in per_call:
            print("target: rms_norm_torch <= 300 ns/call with torch 2.15, else <= torch_ops_cpp")
        for a, b in (("rms_norm_torch", "torch_ops_cpp"), ("torch_ops_opreg", "torch_ops_cpp"),
                     ("torch_ops_opreg_py", "torch_ops_cpp"), ("rms_norm_torch", "rms_norm"),
                     ("rms_norm_torch", "rms_norm_torch_exchange"),
                     ("rms_norm_torch", "rms_norm_torch_dlpack")):
            if a in per_call and b in per_call:
                print("  %s / %s = %.2f" % (a, b, per_call[a] / per_call[b]))
    return 0


CPP_ANCHOR = r"""
#include <torch/library.h>
#include <cmath>

// The anchor: rms_norm as a plain C++ op of a TORCH_LIBRARY, f32 only.
void anchor_rms_norm(at::Tensor& out, const at::Tensor& input, const at::Tensor& weight,
                     double epsilon) {
    const int64_t hidden = input.size(-1), rows = input.numel() / hidden;
    const float* x = input.data_ptr<float>();
    const float* w = weight.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; r++) {
        float ss = 0.f;
        for (int64_t i = 0; i < hidden; i++) ss += x[r * hidden + i] * x[r * hidden + i];
        const float inv = 1.f / std::sqrt(ss / hidden + (float)epsilon);
        for (int64_t i = 0; i < hidden; i++) o[r * hidden + i] = x[r * hidden + i] * inv * w[i];
    }
}

TORCH_LIBRARY(opreg_bench_cpp, m) {
    m.def("rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()");
    m.impl("rms_norm", c10::DispatchKey::CPU, &anchor_rms_norm);
}
"""


def timed_loop(f, *a):
    """run(n): the nanoseconds of n calls f(*a) in a plain for loop."""
    def run(n):
        t = time.perf_counter_ns()
        for _ in range(n):
            f(*a)
        return time.perf_counter_ns() - t
    return run


def torch_cases(cases, x, w, out, eps):
    """Add the torch cases to `cases`; a line saying what this torch offers,
    or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    tx, tw, tout = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(out)
    from opreg import _opreg
    rms_norm = opreg.ops._C.rms_norm

    def loop(f):
        return timed_loop(f, tout, tx, tw, eps)

    cases.append(("rms_norm_torch", loop(rms_norm)))
    rms_norm(tout, tx, tw, eps)  # the first torch tensors settle how they are read
    for _ in range(8):
        rms_norm(tout, tx, tw, eps)
    direct = _opreg.torch_direct()
    exchange = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
    notes = ["torch %s" % torch.__version__,
             ("libtorch's accessors" if exchange else "TensorImpl fields")
             if direct == "on" else
             "exchange API" if exchange else "no exchange API (_to_dlpack)"]
    if direct == "on":
        # The same call with the direct path off: through the exchange API,
        # or torch's DLPack export where torch has no exchange API.
        def slow_path(n):
            _opreg.torch_direct(False)
            try:
                return loop(rms_norm)(n)
            finally:
                _opreg.torch_direct(True)
        cases.append(("rms_norm_torch_exchange" if exchange else "rms_norm_torch_dlpack",
                      slow_path))
    import opreg.torch as ot
    reg = ot.register("_C", target="opreg_bench", ops=["rms_norm"])
    cases.append(("torch_ops_opreg", loop(torch.ops.opreg_bench.rms_norm)))
    if reg.c_kernels:
        ot.register("_C", target="opreg_bench_py", ops=["rms_norm"], kernels="python")
        cases.append(("torch_ops_opreg_py", loop(torch.ops.opreg_bench_py.rms_norm)))
        notes.append("torch_ops_opreg: C kernel (stable ABI)")
    else:
        notes.append("torch_ops_opreg: Python kernel (%s)" % ot.stable_abi()[1])
    try:
        from torch.utils.cpp_extension import load_inline
        t = time.time()
        load_inline("opreg_bench_cpp", cpp_sources=[CPP_ANCHOR], functions=None,
                    is_python_module=False, verbose=False, extra_cflags=["-O2"])
        check = torch.empty_like(tout)
        torch.ops.opreg_bench_cpp.rms_norm(check, tx, tw, eps)
        rms_norm(tout, tx, tw, eps)
        if not torch.allclose(check, tout, rtol=1e-5, atol=1e-6):
            raise RuntimeError("the C++ anchor disagrees with opreg's rms_norm")
        cases.append(("torch_ops_cpp", loop(torch.ops.opreg_bench_cpp.rms_norm)))
        notes.append("C++ anchor built in %.0f s" % (time.time() - t))
    except Exception as e:  # noqa: BLE001  (no compiler, no headers: say so)
        notes.append("no C++ anchor (%s)" % str(e).splitlines()[0][:120])
    functional = getattr(torch.nn.functional, "rms_norm", None)
    if functional is not None:
        shape = (x.shape[-1],)
        cases.append(("torch_native", lambda n: _loop_native(n, functional, tx, shape, tw, eps)))
        notes.append("torch_native = F.rms_norm")
    else:
        cases.append(("torch_native", lambda n: _loop_mul(n, torch.mul, tx, tw, tout)))
        notes.append("torch_native = torch.mul(out=)")
    return ", ".join(notes)


def _loop_native(n, f, x, shape, w, eps):
    t = time.perf_counter_ns()
    for _ in range(n):
        f(x, shape, w, eps)
    return time.perf_counter_ns() - t


def _loop_mul(n, f, x, w, out):
    t = time.perf_counter_ns()
    for _ in range(n):
        f(x, w, out=out)
    return time.perf_counter_ns() - t


if __name__ == "__main__":
    sys.exit(main())
