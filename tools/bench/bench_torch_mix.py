#!/usr/bin/env python3
"""opreg calls between torch ops: rms_norm on torch tensors, timed alone and
right after each of a few torch ops (and after a numpy pass over as many
bytes, which disturbs the cache as much but runs no torch thread), at one
opreg thread and at all of them.

    OPREG_PYTHON=$(bash tools/torch-env.sh)   # torch 2.15 from PyPI
    PYTHONPATH=build/python $OPREG_PYTHON tools/bench/bench_torch_mix.py [--json]

Each figure is the median of --calls calls (the torch op runs before each
call, untimed). The ratio to `alone` is what the serving-size target
bounds (1.2); the numpy passes show what the cache alone costs, and the
last column compares each width with one thread after the same op. Each width runs twice: on opreg's own pool, and with its loops
on torch's OpenMP team (opreg.torch.share_threads), where torch has one.
"""

import argparse
import json
import time

import numpy as np
import torch

import opreg
import opreg.torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=4096)
    args = ap.parse_args()

    x = torch.randn(args.tokens, args.hidden)
    w = torch.ones(args.hidden)
    out = torch.empty_like(x)
    a, b = torch.randn(256, 1024), torch.randn(1024, 256)
    big = torch.randn(1024, 1024)
    big_out = torch.empty_like(big)
    junk = np.zeros(3 << 18, np.float32)  # 3 MiB, what torch.mm touches
    junk_in, junk_out = np.zeros(1 << 20, np.float32), np.zeros(1 << 20, np.float32)
    before = {
        "alone": lambda: None,
        "numpy_3MiB": lambda: np.add(junk, 1.0, out=junk),
        "numpy_8MiB": lambda: np.add(junk_in, 1.0, out=junk_out),  # as torch.add's
        "torch.add_4MiB": lambda: torch.add(big, 1.0, out=big_out),
        "torch.mm_256x1024x256": lambda: torch.mm(a, b),
    }
    if hasattr(torch.nn.functional, "rms_norm"):
        before["F.rms_norm_1024x1024"] = lambda: torch.nn.functional.rms_norm(
            big, (1024,), None, 1e-6
        )
    op = opreg.ops._C.rms_norm

    def median_us(first):
        times = []
        for _ in range(args.calls):
            first()
            t = time.perf_counter()
            op(out, x, w, 1e-6)
            times.append(time.perf_counter() - t)
        times.sort()
        return times[len(times) // 2] * 1e6

    widths = sorted({1, opreg.get_num_threads()})
    pools = ["own"]
    if opreg.torch.openmp_library() is not None:
        pools.append("torch")
    if not args.json:
        print("rms_norm %dx%d f32, torch %s (%d threads), median of %d calls" % (
            args.tokens, args.hidden, torch.__version__, torch.get_num_threads(), args.calls))
        if "torch" not in pools:
            print("  (torch runs no OpenMP runtime: opreg's own pool only)")
    for n in widths:
        for pool in pools:
            if n == 1 and pool == "torch":
                continue  # one thread runs on the caller either way
            opreg.set_num_threads(n)
            if pool == "torch":
                torch.set_num_threads(n)
                opreg.torch.share_threads()
            got = {k: median_us(f) for k, f in before.items()}
            if pool == "torch":
                opreg.torch.share_threads(False)
            if n == 1:
                one = got
            for k, us in got.items():
                ratio, gain = us / got["alone"], one[k] / us
                if args.json:
                    print(json.dumps({"suite": "torch_mix", "opreg_threads": n, "pool": pool,
                                      "before": k, "us": round(us, 1),
                                      "x_alone": round(ratio, 2),
                                      "speedup_vs_1": round(gain, 2)},
                                     separators=(",", ":")))
                else:
                    print("  threads %d on %-5s pool, after %-22s %8.1f us  (%.2fx alone, "
                          "%.2fx faster than 1 thread)" % (n, pool, k, us, ratio, gain))
    opreg.set_num_threads(0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
