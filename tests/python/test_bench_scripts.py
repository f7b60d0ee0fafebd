"""The Python benchmarks run end to end (tools/bench/bench_python.py and
bench_small.py, with a few calls: no figure is asserted, only that every
case runs and reports), under the interpreter this test is given. Where
torch has the exchange API and its C accessors, bench_python.py must time
both ways of reading torch tensors; bench_small.py must honour --pool and
--ops. Skips (77) without torch."""

import json
import math
import os
import subprocess
import sys

try:
    import torch
except ImportError:
    print("skip: torch is not installed for", sys.executable)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "tools", "bench")
failures = []


def check(cond, what):
    print("ok  " if cond else "FAIL:", what)
    if not cond:
        failures.append(what)


def run(script, *args):
    p = subprocess.run([sys.executable, os.path.join(BENCH, script), "--json"] + list(args),
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
    check(p.returncode == 0, "%s %s exits 0" % (script, " ".join(args)))
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


lines = run("bench_python.py", "--rounds", "1", "--calls", "2000")
cases = {d["case"]: d for d in lines}
# A figure, not its size: most cases report their time less an empty
# loop's, and with one round on a busy machine that difference can come
# out at or below zero.
for name in ("trivial_function", "rms_norm", "null_op", "rms_norm_in_c", "rms_norm_torch",
             "torch_ops_opreg", "torch_native"):
    check(name in cases and math.isfinite(cases[name]["ns_per_call"]),
          "bench_python: case %s" % name)
exchange = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
check("rms_norm_torch_exchange" in cases if exchange else "rms_norm_torch_dlpack" in cases,
      "bench_python: torch %s: the direct path is timed beside the one it replaces"
      % torch.__version__)

for pool in ("torch", "own"):
    lines = run("bench_small.py", "--rounds", "1", "--tokens", "1", "--ops",
                "rms_norm,linear,topk_softmax,reshape_and_cache,paged_attention_v1_len128",
                "--pool", pool)
    setup = [d for d in lines if d["case"] == "setup"]
    rows = [d for d in lines if d["case"] != "setup"]
    check(len(setup) == 1, "bench_small --pool %s: a setup line" % pool)
    if setup and pool == "own":
        check(setup[0]["opreg_pool"] == "opreg's own pool", "bench_small: --pool own")
    # The written-out cases and the catalogue's (checked against opreg's
    # results first); paged attention counts sequences, every size of it.
    got = sorted((d["case"], d.get("tokens", d.get("seqs"))) for d in rows)
    want = sorted([("linear", 1), ("rms_norm", 1), ("topk_softmax", 1), ("reshape_and_cache", 1)]
                  + [("paged_attention_v1_len128", n) for n in (1, 4, 16)])
    check(got == want, "bench_small --pool %s: the cases asked for (%s)" % (pool, got))
    check(all(d["opreg_us"] > 0 and d["torch_us"] > 0 for d in rows),
          "bench_small --pool %s: times" % pool)

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
