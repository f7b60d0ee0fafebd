#!/usr/bin/env python3
"""Draw the serving-size figures of docs/performance.md from the benches'
JSON lines.

    build/tools/opreg bench threads --json > threads.jsonl
    PYTHONPATH=build/python python3 tools/bench/bench_small.py --json > small_python.jsonl
    python3 tools/bench/plot_small.py threads.jsonl small_python.jsonl -o docs/img/serving.png

Any mix of files from `opreg bench threads --json`, `opreg bench small
--json` and `bench_small.py --json` may be given; each panel is one op, time
per call against tokens on log scales:
  - from the threads suite: one thread and all threads, quiet and beside a
    busy process (solid: quiet, dashed: loaded);
  - from bench_small.py: opreg from Python beside torch on the same tensors.
Needs matplotlib (Debian's python3-matplotlib).
"""

import argparse
import collections
import json
import sys


def read(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    rows.append(json.loads(line))
    return rows


def series(rows):
    """{op: {label: [(tokens, us), ...]}}"""
    out = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in rows:
        suite, case = r.get("suite"), r.get("case", "")
        if suite == "threads" and "tokens" in r:
            op = case.replace("_bf16", "")
            n = r.get("threads", "all")
            out[op]["C, 1 thread, quiet"].append((r["tokens"], r["quiet_one_us"]))
            out[op][f"C, {n} threads, quiet"].append((r["tokens"], r["quiet_all_us"]))
            out[op]["C, 1 thread, loaded"].append((r["tokens"], r["loaded_one_us"]))
            out[op][f"C, {n} threads, loaded"].append((r["tokens"], r["loaded_all_us"]))
        elif suite == "small_python" and "tokens" in r:
            out[case]["opreg from Python"].append((r["tokens"], r["opreg_us"]))
            out[case]["torch"].append((r["tokens"], r["torch_us"]))
        elif suite == "small" and "tokens" in r and r.get("us"):
            out[case]["C (bench small)"].append((r["tokens"], r["us"]))
    return out


STYLE = {
    "C, 1 thread, quiet": dict(color="tab:blue", ls="-", marker="o"),
    "C, 1 thread, loaded": dict(color="tab:blue", ls="--", marker="o", mfc="none"),
    "opreg from Python": dict(color="tab:green", ls="-", marker="^"),
    "torch": dict(color="tab:red", ls="-", marker="s"),
    "C (bench small)": dict(color="tab:purple", ls=":", marker="x"),
}


def style(label):
    if label in STYLE:
        return STYLE[label]
    loaded = label.endswith("loaded")
    return dict(color="tab:orange", ls="--" if loaded else "-", marker="D",
                mfc="none" if loaded else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="JSON-lines output of the benches")
    ap.add_argument("-o", "--output", default="serving.png", help="the PNG to write")
    ap.add_argument("--title", default="", help="a line under the figure's title")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_small.py: needs matplotlib (apt install python3-matplotlib)")
    data = series(read(args.files))
    if not data:
        sys.exit("plot_small.py: no serving-size lines in " + ", ".join(args.files))
    ops = sorted(data)
    cols = 3
    rows = (len(ops) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, op in zip(axes.flat, ops):
        for label, pts in sorted(data[op].items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **style(label))
        ax.set_title(op)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tokens")
        ax.set_ylabel("µs per call")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(ops):]:
        ax.axis("off")
    title = "opreg at serving sizes (lower is better)"
    fig.suptitle(title + ("\n" + args.title if args.title else ""))
    # room above the panels for the two lines of the title
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / fig.get_figheight()))
    fig.savefig(args.output, dpi=90)
    print("wrote", args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
