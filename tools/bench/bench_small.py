#!/usr/bin/env python3
"""opreg's ops from Python at serving sizes, beside torch's own ops and
PyTorch-written equivalents, on the same torch tensors, in one run.

    PYTHONPATH=build/python python3 tools/bench/bench_small.py [--json] [--rounds N]

For each op and size (1, 16 and 256 tokens of hidden 4096, bf16), the
opreg call (`opreg.ops._C.NAME(out, x, ...)` on torch tensors, through
DLPack) and the torch version run in alternating batches of about 20 ms;
each figure is the median per call over the rounds. torch's version
allocates its result, as PyTorch code does. Both use their own threads
(torch's intra-op pool; opreg's loops on that same OpenMP team, as
opreg.torch.register() arranges, or with --pool own on opreg's own pool)
at their defaults, in one process.
The ratio printed is torch's time over opreg's: above 1, opreg is faster.
Those nine ops are written out here; the rest of the catalogue comes from
small_equivalents.py (PyTorch-written equivalents on `opreg run`'s
inputs, checked against opreg's results before they are timed).
"""

import argparse
import json
import math
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit("bench_small.py: needs torch")

import opreg
import small_equivalents

EPS = 1e-6
HIDDEN = 4096
# A decode step reads each layer's weights once, and the same layer's
# again only a token later: the linear case cycles through this many
# weights (256 MiB of bf16 at 4096 x 4096, more than any CPU's last level
# cache), both sides alike. With one weight called over and over, a 32 MiB
# L3 keeps a varying part of it between calls, and the case times that
# cache's replacement more than either kernel (docs/performance.md).
LAYERS = 8


def rms_torch(x, w):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, EPS)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


def fused_add_torch(x, res, w):
    res.add_(x)
    x.copy_(rms_torch(res, w))


def gated(act):
    def f(x):
        d = x.shape[-1] // 2
        return act(x[..., :d]) * x[..., d:]
    return f


def gelu_new_torch(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def gelu_quick_torch(x):
    return x * torch.sigmoid(1.702 * x)


def int8_quant_torch(x, scale):
    return torch.clamp(torch.round(x.float() / scale), -128, 127).to(torch.int8)


def cases(tokens):
    """(name, opreg call, torch call) for one size; fresh tensors."""
    g = torch.Generator().manual_seed(tokens)
    bf = torch.bfloat16

    def rnd(*shape):
        return torch.randn(*shape, generator=g).to(bf)

    ops = opreg.ops._C
    x, w, out = rnd(tokens, HIDDEN), rnd(HIDDEN), torch.empty(tokens, HIDDEN, dtype=bf)
    res = rnd(tokens, HIDDEN)
    xg, og = rnd(tokens, 2 * HIDDEN), torch.empty(tokens, HIDDEN, dtype=bf)
    layers = []

    def layer():
        # the weights in turn; made at the first call (the warm-up), so a
        # run whose --ops leaves linear out makes none
        if not layers:
            layers.extend(rnd(HIDDEN, HIDDEN) * 0.02 for _ in range(LAYERS))
        layers.append(layers.pop(0))
        return layers[-1]

    bl = rnd(HIDDEN)
    q8, scale = torch.empty(tokens, HIDDEN, dtype=torch.int8), torch.tensor([0.05])
    yield "rms_norm", lambda: ops.rms_norm(out, x, w, EPS), lambda: rms_torch(x, w)
    yield ("fused_add_rms_norm", lambda: ops.fused_add_rms_norm(x, res, w, EPS),
           lambda: fused_add_torch(x, res, w))
    yield "silu_and_mul", lambda: ops.silu_and_mul(og, xg), lambda: gated(F.silu)(xg)
    yield "gelu_and_mul", lambda: ops.gelu_and_mul(og, xg), lambda: gated(F.gelu)(xg)
    yield ("gelu_tanh_and_mul", lambda: ops.gelu_tanh_and_mul(og, xg),
           lambda: gated(lambda t: F.gelu(t, approximate="tanh"))(xg))
    yield "gelu_new", lambda: ops.gelu_new(out, x), lambda: gelu_new_torch(x)
    yield "gelu_quick", lambda: ops.gelu_quick(out, x), lambda: gelu_quick_torch(x)
    yield ("static_scaled_int8_quant", lambda: ops.static_scaled_int8_quant(q8, x, scale),
           lambda: int8_quant_torch(x, 0.05))
    yield ("linear", lambda: ops.linear(x, layer(), bl),
           lambda: F.linear(x, layer(), bl))


def per_call(f, n):
    t = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t) / n


def measure(a, b, rounds):
    a(), b()  # warm: pages, primitives, both pools
    one = min(per_call(a, 3), per_call(b, 3))
    n = max(1, min(20000, int(0.02 / max(one, 1e-7))))
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(per_call(a, n))
        tb.append(per_call(b, n))
    return statistics.median(ta), statistics.median(tb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--tokens", default="1,16,256", help="comma-separated token counts")
    ap.add_argument("--pool", choices=("torch", "own"), default="torch",
                    help="where opreg's loops run: on torch's OpenMP team (the default of "
                         "opreg.torch.register, opreg.torch.share_threads) or on opreg's own pool")
    ap.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    args = ap.parse_args()
    pool = "opreg's own pool"
    if args.pool == "torch":
        import opreg.torch as ot
        try:
            ot.share_threads()
            pool = "torch's OpenMP team"
        except opreg.Error as e:
            print("small_python: opreg keeps its own pool (%s)" % e, file=sys.stderr)
    wanted = set(filter(None, args.ops.split(",")))
    head = {"suite": "small_python", "case": "setup", "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(), "opreg_threads": opreg.get_num_threads(),
            "torch_native_rms_norm": hasattr(F, "rms_norm"), "opreg_pool": pool}
    if args.json:
        print(json.dumps(head))
    else:
        print(f"small_python torch {torch.__version__} on {head['torch_threads']} threads, "
              f"opreg on {head['opreg_threads']} ({pool}); "
              f"median of {args.rounds} alternating rounds; ratio = torch / opreg")
    token_counts = [int(t) for t in args.tokens.split(",")]

    def all_cases():
        for tokens in token_counts:
            for name, a, b in cases(tokens):
                if not wanted or name in wanted:
                    yield name, tokens, "tokens", a, b
        # The rest of the catalogue, on `opreg run`'s inputs (its token
        # counts are bench small's; the cache and attention ops count pairs
        # and sequences).
        for name, size, unit, a, b in small_equivalents.catalogue_cases(wanted):
            if unit != "tokens" or size in token_counts:
                yield name, size, unit, a, b

    slower = 0
    for name, size, unit, a, b in all_cases():
        if a is None:
            print(f"small_python {name} {size}: skipped ({b})", file=sys.stderr)
            continue
        try:
            to, tt = measure(a, b, args.rounds)
        except Exception as e:  # an op or dtype this torch lacks
            print(f"small_python {name} {size}: skipped ({e})", file=sys.stderr)
            continue
        slower += tt < to
        if args.json:
            print(json.dumps({"suite": "small_python", "case": name, unit: size,
                              "opreg_us": round(to * 1e6, 3), "torch_us": round(tt * 1e6, 3),
                              "torch_over_opreg": round(tt / to, 2)}))
        else:
            print(f"small_python {name:26s} {size:4d} {unit:6s}  opreg {to * 1e6:9.2f} us  "
                  f"torch {tt * 1e6:9.2f} us  ratio {tt / to:5.2f}"
                  f"{'' if tt >= to else '  (torch faster)'}")
        sys.stdout.flush()
    if not args.json:
        print(f"small_python: torch faster in {slower} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
