"""`opreg bench ops --device opencl --quick`: the device-neutral ops suite
on the OpenCL plugin's device (PoCL on a CPU-only machine). The anchor is
the backend's own copy_on_device; every op the plugin has a kernel for is
measured through the registry, and the rest are listed as skipped.

Usage: test_bench_opencl.py OPREG_TOOL PLUGIN_DIR. Exits 77 when no OpenCL
device is present."""
import json
import os
import subprocess
import sys


def main():
    tool, plugin_dir = sys.argv[1], sys.argv[2]
    env = dict(os.environ, OPREG_PLUGIN_PATH=plugin_dir)
    run = subprocess.run([tool, "bench", "--json", "--quick", "--device", "opencl", "ops"],
                         env=env, capture_output=True, text=True, timeout=600)
    if run.returncode == 1 and "unavailable" in run.stderr:
        print("skip: " + run.stderr.strip())
        return 77
    print(run.stdout, end="")
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr}"
    assert run.stderr == "", f"stderr not empty: {run.stderr!r}"
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert all(r["suite"] == "ops" and r["device"] == "opencl" for r in lines), lines
    copy = lines[0]
    assert copy["case"] == "device_copy" and copy["gb_per_s"] > 0, copy
    ran = [r for r in lines[1:] if "gb_per_s" in r]
    skipped = [r["case"] for r in lines[1:] if "skipped" in r]
    # The plugin's ops (docs/plugins.md) run; none fails.
    for case in ("rms_norm_bf16", "rms_norm_f32", "fused_add_rms_norm_bf16",
                 "silu_and_mul_bf16", "rotary_embedding_bf16", "reshape_and_cache_bf16",
                 "static_scaled_int8_quant_bf16", "dynamic_scaled_int8_quant_bf16"):
        row = next((r for r in ran if r["case"] == case), None)
        assert row is not None, f"{case} did not run (skipped: {skipped})"
        assert row["gb_per_s"] > 0 and row["bytes"] > 0 and row["of_copy"] > 0, row
    small = lines[-1]
    assert small["case"] == "rms_norm_small_bf16" and small["us_per_call"] > 0, small
    print(f"ok: {len(ran)} cases measured, skipped: {skipped}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
