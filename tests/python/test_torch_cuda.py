"""opreg's CUDA kernels called from PyTorch on a GPU: a call on torch's CUDA
tensors runs on torch's current stream (through opreg.ops and through
torch.ops after opreg.torch.register), so it is ordered after the torch work
that produced its inputs; the thread's own opreg stream comes back after the
call; a vLLM-shaped block on CUDA gives the CPU's results; every op of the
catalogue with a CUDA kernel passes torch.library.opcheck on CUDA inputs;
and torch.compile(fullgraph=True) of the block on CUDA gives the eager
results. Skips (77) without torch, without a CUDA device, or when this build
of opreg has no CUDA backend."""

import sys
import time

try:
    import torch
except ImportError:
    print("skip: torch is not installed for", sys.executable)
    sys.exit(77)

import opreg
import opreg.torch
from torch_common import block_args, check, finish, run, skip, vllm_block  # noqa: E402

if not torch.cuda.is_available():
    print("skip: torch %s sees no CUDA device" % torch.__version__)
    sys.exit(77)
if not opreg.is_op_supported("_C::rms_norm", "cuda"):
    print("skip: opreg's CUDA key is not available here:", opreg.explain("_C::rms_norm", "cuda"))
    sys.exit(77)

HAS_EXCHANGE = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
HAS_OPCHECK = hasattr(torch.library, "opcheck")

reg = opreg.torch.register("_C")
DEV = torch.device("cuda", 0)
NAMES = [n for n in opreg.list_ops() if n.startswith("_C::") and opreg.is_op_supported(n, "cuda")]


def rms_norm_ref(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def slow_producer(stream, dst, src):
    """Queue on `stream` a wait of about 50 ms, then dst.copy_(src): a kernel
    queued on another stream runs before the copy and reads the old dst."""
    with torch.cuda.stream(stream):
        torch.cuda._sleep(100_000_000)
        dst.copy_(src)


# ---- streams -------------------------------------------------------------------


def stream_ordering(call, label):
    tokens, hidden = 64, 4096
    src = torch.randn(tokens, hidden, device=DEV)
    w = torch.rand(hidden, device=DEV) + 0.5
    want = rms_norm_ref(src, w, 1e-6)
    for _ in range(3):
        s = torch.cuda.Stream()
        x = torch.zeros(tokens, hidden, device=DEV)
        out = torch.full((tokens, hidden), float("nan"), device=DEV)
        torch.cuda.synchronize()
        before = opreg._opreg.cuda_stream(0)
        slow_producer(s, x, src)
        with torch.cuda.stream(s):
            call(out, x, w)
        check(opreg._opreg.cuda_stream(0) == before, "%s: the thread's opreg stream comes back" % label)
        s.synchronize()
        ok = torch.allclose(out, want, rtol=1e-4, atol=1e-5)
        check(ok, "%s: the kernel ran after torch's work on torch's current stream "
              "(max err %.3g)" % (label, (out - want).abs().max().item()))
        if not ok:
            return


def t_stream_opreg_ops():
    stream_ordering(lambda o, x, w: opreg.ops._C.rms_norm(o, x, w, 1e-6), "opreg.ops")


def t_stream_torch_ops():
    stream_ordering(lambda o, x, w: torch.ops._C.rms_norm(o, x, w, 1e-6), "torch.ops")


def t_default_stream():
    # On torch's default stream (no `with`), the call follows the work queued there.
    src = torch.randn(8, 256, device=DEV)
    w = torch.ones(256, device=DEV)
    x = torch.zeros(8, 256, device=DEV)
    out = torch.empty_like(x)
    torch.cuda._sleep(50_000_000)
    x.copy_(src)
    torch.ops._C.rms_norm(out, x, w, 1e-6)
    torch.cuda.synchronize()
    check(torch.allclose(out, rms_norm_ref(src, w, 1e-6), rtol=1e-4, atol=1e-5),
          "default stream: the call follows torch's queued work")


# ---- a vLLM-shaped block on CUDA against the CPU ------------------------------------


def t_block_cuda_vs_cpu():
    cpu_args, nh, hs = block_args("cpu")
    gpu_args, _, _ = block_args(DEV)
    want = vllm_block(*cpu_args, nh, hs)
    got = vllm_block(*gpu_args, nh, hs)
    torch.cuda.synchronize()
    for i, (w, g) in enumerate(zip(want, got)):
        check(g.device.type == "cuda", "block output %d stays on the GPU" % i)
        err = (w - g.cpu()).abs().max().item()
        check(torch.allclose(w, g.cpu(), rtol=1e-4, atol=1e-4), "block output %d: CUDA = CPU (max err %.3g)" % (i, err))


def t_compile_cuda():
    if not hasattr(torch, "compile"):
        skip("torch.compile", "torch %s has no torch.compile" % torch.__version__)
        return
    args, nh, hs = block_args(DEV)
    eager = vllm_block(*[a.clone() for a in args], nh, hs)
    compiled = torch.compile(vllm_block, fullgraph=True)  # a graph break raises here
    got = compiled(*[a.clone() for a in args], nh, hs)
    torch.cuda.synchronize()
    for i, (e, c) in enumerate(zip(eager, got)):
        check(torch.allclose(e, c, rtol=1e-5, atol=1e-5), "compiled output %d on CUDA equals eager" % i)


# ---- opcheck on CUDA inputs -----------------------------------------------------------


HOST_ARGS = {("_C::swap_blocks", "block_mapping")}
FP8_WRITERS = {"_C::static_scaled_fp8_quant", "_C::dynamic_scaled_fp8_quant"}


def to_cuda(v):
    if isinstance(v, torch.Tensor):
        return v.to(DEV)
    if isinstance(v, list):
        return [to_cuda(x) for x in v]
    return v


def t_opcheck_cuda():
    if not HAS_OPCHECK:
        skip("opcheck", "torch %s has no torch.library.opcheck" % torch.__version__)
        return
    tests = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
    for name in NAMES:
        raw = opreg._opreg.example_inputs(name, seed=11)
        op = getattr(torch.ops._C, name.split("::", 1)[1]).default
        # swap_blocks' mapping is read on the host, whatever the caches' device.
        args = tuple(opreg.torch.to_torch(v) if (name, a.name) in HOST_ARGS else to_cuda(opreg.torch.to_torch(v))
                     for a, v in zip(op._schema.arguments, raw))
        # test_schema compares written arguments with torch's allclose, which
        # has no fp8 on CUDA either; those ops' other checks still run.
        utils = tuple(t for t in tests if not (t == "test_schema" and name in FP8_WRITERS))
        try:
            result = torch.library.opcheck(op, args, test_utils=utils)
            check(all(v == "SUCCESS" for v in result.values()), "opcheck %s on CUDA: %s" % (name, result))
        except Exception as e:  # noqa: BLE001
            check(False, "opcheck %s on CUDA: %s" % (name, str(e).splitlines()[0]))


# ---- cost of a small call -------------------------------------------------------------


def t_cost():
    x = torch.randn(1, 64, device=DEV)
    w = torch.ones(64, device=DEV)
    out = torch.empty_like(x)
    calls = {
        "opreg.ops._C.rms_norm": lambda: opreg.ops._C.rms_norm(out, x, w, 1e-6),
        "torch.ops._C.rms_norm": lambda: torch.ops._C.rms_norm(out, x, w, 1e-6),
        "torch.add (a native op)": lambda: torch.add(x, x, out=out),
    }
    for label, fn in calls.items():
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(2000):
                fn()
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t) / 2000)
        print("cost %-26s %.2f us a call (1x64 f32, best of 5 x 2000)" % (label, best * 1e6))


run("stream: opreg.ops on torch's current stream", t_stream_opreg_ops)
run("stream: torch.ops on torch's current stream", t_stream_torch_ops)
run("stream: torch's default stream", t_default_stream)
run("vLLM block: CUDA against CPU", t_block_cuda_vs_cpu)
run("opcheck on CUDA inputs (%d ops)" % len(NAMES), t_opcheck_cuda)
run("torch.compile(fullgraph=True) on CUDA", t_compile_cuda)
run("cost of a small call", t_cost)

finish()
