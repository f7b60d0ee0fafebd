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
  rms_norm_torch     the call on torch tensors (general DLPack path), when torch is there
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
        def run(n):
            t = time.perf_counter_ns()
            for _ in range(n):
                f(out, x, w, eps)
            return time.perf_counter_ns() - t
        return run

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
    try:
        import torch
        tx, tw, tout = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(out)

        def loop_torch(n):
            t = time.perf_counter_ns()
            for _ in range(n):
                rms_norm(tout, tx, tw, eps)
            return time.perf_counter_ns() - t
        cases.append(("rms_norm_torch", loop_torch))
    except ImportError:
        pass

    n = args.calls
    best = {name: float("inf") for name, _ in cases}
    best_loop = float("inf")
    for r in range(args.rounds):
        best_loop = min(best_loop, loop_empty(n) / n)
        for name, fn in cases:
            calls = n if name != "rms_norm_torch" else max(n // 10, 1)
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
             "rms_norm_in_c", "null_op_in_c", "binding_overhead", "rms_norm_torch"]
    info = "python %s, numpy %s, shape %s f32, %d rounds of %d calls, empty loop %.1f ns" % (
        platform.python_version(), np.__version__, "x".join(map(str, shape)), args.rounds, n,
        best_loop)
    if not args.json:
        print("python binding:", info)
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
            print("  %-18s %8.1f ns/call  (%.2fx a trivial function call)" % (name, ns, ratio))
    if not args.json:
        print("target: rms_norm <= 300 ns/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
