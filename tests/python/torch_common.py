"""What the PyTorch tests share (test_torch_library.py on the CPU,
test_torch_cuda.py on a GPU): the checks' bookkeeping, and the vLLM-shaped
block (rms_norm, linear, rotary_embedding, fused_add_rms_norm, silu_and_mul
through torch.ops._C) with its seeded arguments on any device. Imported from
the tests' own folder; imports torch, so only a test that has it imports
this."""

import sys
import time

import torch

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(name, fn):
    t = time.time()
    try:
        fn()
        print("ok   %s (%.1f s)" % (name, time.time() - t))
    except Exception as e:  # noqa: BLE001
        failures.append(name)
        print("FAIL:", name, type(e).__name__, e)


def skip(name, why):
    print("skip %s: %s" % (name, why))


def finish():
    """Exit 1 listing the failures, else 0."""
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("all passed")
    sys.exit(0)


def vllm_block(x, residual, positions, cos_sin, w1, wqkv, w2, wup, wdown, nh, hs):
    C = torch.ops._C
    h = torch.empty_like(x)
    C.rms_norm(h, x, w1, 1e-6)
    qkv = C.linear(h, wqkv)
    q = qkv[:, : nh * hs].contiguous()
    k = qkv[:, nh * hs :].contiguous()
    C.rotary_embedding(positions, q, k, hs, cos_sin, True)
    o = q + k
    C.fused_add_rms_norm(o, residual, w2, 1e-6)
    up = C.linear(o, wup)
    act = torch.empty(up.shape[0], up.shape[1] // 2, dtype=up.dtype, device=up.device)
    C.silu_and_mul(act, up)
    return C.linear(act, wdown), residual


def block_args(device="cpu", tokens=5):
    """The block's arguments (the same values on every device) and its
    head count and head size."""
    hidden, nh, hs = 64, 2, 16
    g = torch.Generator().manual_seed(1)

    def r(*s, scale=1.0):
        return (torch.randn(*s, generator=g) * scale).to(device)

    args = [r(tokens, hidden), r(tokens, nh * hs), torch.arange(tokens, device=device), r(128, hs),
            r(hidden).abs() + 0.5, r(2 * nh * hs, hidden, scale=0.1), r(nh * hs).abs() + 0.5,
            r(2 * hidden, nh * hs, scale=0.1), r(hidden, hidden, scale=0.1)]
    return args, nh, hs
