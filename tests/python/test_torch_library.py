"""opreg's ops registered into PyTorch's dispatcher (opreg.torch): every op of
the catalogue through torch.ops against the same op called on opreg
directly, the fake (Meta) kernels, the names opreg answers for, conflicts,
and, on torch 2.x, torch.compile(fullgraph=True) of a vLLM-shaped block and
torch.library.opcheck of every op. Runs on Debian's torch 1.13 (which has
no fake tensors, compile or opcheck: those parts say so and are skipped) and
on PyTorch 2.15 from PyPI. Skips (77) when torch is absent."""

import os
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

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
HAS_FAKE = hasattr(torch.library, "register_fake")
HAS_OPCHECK = hasattr(torch.library, "opcheck")
HAS_EXCHANGE = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")

print("torch", torch.__version__, "python", sys.version.split()[0], "exchange API", HAS_EXCHANGE)
reg = opreg.torch.register("_C")
# The catalogue (`_C`); the `dist` collectives need a process group.
NAMES = [n for n in opreg.list_ops() if n.startswith("_C::")]


def short(name):
    return name.split("::", 1)[1]


def inputs(name, **kw):
    return [opreg.torch.to_torch(v) for v in opreg._opreg.example_inputs(name, **kw)]


def torch_has_dtypes(name):
    """Whether this torch has every dtype of the op's example inputs (1.13
    has no fp8)."""
    def ok(v):
        if isinstance(v, list):
            return all(ok(x) for x in v)
        return not isinstance(v, opreg.Tensor) or v.dtype in opreg.torch._TORCH_OF

    return all(ok(v) for v in opreg._opreg.example_inputs(name))


def clone(args):
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a.clone())
        elif isinstance(a, list):
            out.append([t.clone() if isinstance(t, torch.Tensor) else t for t in a])
        else:
            out.append(a)
    return out


def same_bytes(a, b):
    """Bitwise equality that also holds for fp8 (viewed as bytes)."""
    if isinstance(a, list):
        return len(a) == len(b) and all(same_bytes(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return a.shape == b.shape and torch.equal(
            a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8)
        )
    return a == b


# ---- the registration itself -------------------------------------------------


def t_registration():
    check(len(reg.ops) == len(NAMES), "every op registered (%d of %d)" % (len(reg.ops), len(NAMES)))
    for name in NAMES:
        qual = "_C::" + short(name)
        check(reg.ops.get(qual) == name, "%s maps to %s" % (qual, name))
        check("CPU" in reg.kernels.get(qual, ()), "%s has a CPU kernel" % qual)
        check(qual in reg.fake, "%s has a fake kernel" % qual)
        # torch reads the schema opreg parsed, argument for argument.
        schema = getattr(torch.ops._C, short(name)).default._schema
        check(
            [a.name for a in schema.arguments] == [a.name for a in _opreg_args(name)],
            "%s: torch's schema has opreg's arguments" % qual,
        )
    check(opreg.torch.register("_C") is reg, "registering again returns the first registration")
    check(opreg.torch.registrations()["_C"] is reg, "registrations() lists it")


def _opreg_args(name):
    class A:
        def __init__(self, n):
            self.name = n

    text = opreg.schema(name)
    inner = text[text.index("(") + 1 : text.rindex(") ->")]
    depth, cur, parts = 0, "", []
    for ch in inner:
        depth += ch in "([" and 1 or (ch in ")]" and -1 or 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [A(p.split("=")[0].split()[-1]) for p in parts if p.strip() != "*"]


# ---- eager: torch.ops against opreg directly --------------------------------


def t_eager_every_op():
    for name in NAMES:
        if not torch_has_dtypes(name):
            skip(name, "torch %s lacks a dtype of its inputs" % torch.__version__)
            continue
        args = inputs(name, seed=7)
        a, b = clone(args), clone(args)
        r1 = getattr(opreg.ops._C, short(name))(*a)
        r2 = getattr(torch.ops._C, short(name))(*b)
        check(same_bytes(a, b), "%s: torch.ops wrote what opreg wrote" % name)
        if r1 is not None:
            check(isinstance(r2, torch.Tensor), "%s returns a torch tensor" % name)
            check(same_bytes(opreg.torch.to_torch(r1), r2), "%s: same return" % name)


def t_eager_rms_norm_reference():
    x = torch.randn(5, 96)
    w = torch.rand(96) + 0.5
    out = torch.empty_like(x)
    torch.ops._C.rms_norm(out, x, w, 1e-6)
    want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    check(torch.allclose(out, want, rtol=1e-5, atol=1e-5), "rms_norm through torch.ops is right")
    try:
        torch.ops._C.rms_norm(out, x, torch.ones(95), 1e-6)
        check(False, "a bad weight is refused")
    except RuntimeError as e:  # opreg.Error is a RuntimeError
        check("expected size 96 in dim 0, got 95" in str(e), "opreg's message reaches torch: %s" % e)


def t_share_threads():
    lib = opreg.torch.openmp_library()
    if lib is None:
        skip("torch's OpenMP team", "torch %s runs no OpenMP runtime" % torch.__version__)
        return
    check(opreg.torch.shared_threads() == lib, "register() put opreg on torch's team (%s)" % lib)
    check(opreg.torch.share_threads(False) is None, "share_threads(False) returns None")
    check(opreg.torch.shared_threads() is None, "opreg runs its own pool again")
    x = torch.randn(2048, 4096)  # 64 MiB moved: the kernel splits its rows
    w = torch.rand(4096) + 0.5
    gate = torch.randn(512, 2 * 4096)
    own_norm, own_act = torch.empty_like(x), torch.empty(512, 4096)
    torch.ops._C.rms_norm(own_norm, x, w, 1e-6)
    torch.ops._C.silu_and_mul(own_act, gate)
    own_width, torch_width = opreg.get_num_threads(), torch.get_num_threads()
    for width in sorted({1, 2, torch_width}):
        torch.set_num_threads(width)
        check(opreg.torch.share_threads() == lib, "share_threads names %s" % lib)
        check(opreg.get_num_threads() == width,
              "opreg is %d wide on torch's team of %d" % (opreg.get_num_threads(), width))
        norm, act = torch.empty_like(x), torch.empty(512, 4096)
        torch.ops._C.rms_norm(norm, x, w, 1e-6)
        opreg.ops._C.silu_and_mul(act, gate)  # opreg's own call path too
        check(torch.equal(norm, own_norm), "rms_norm on torch's team of %d" % width)
        check(torch.equal(act, own_act), "silu_and_mul on torch's team of %d" % width)
    torch.set_num_threads(torch_width)
    check(opreg.torch.share_threads(False) is None, "share_threads(False) returns None")
    check(opreg.get_num_threads() == own_width, "opreg's own pool is back")
    torch.ops._C.rms_norm(norm, x, w, 1e-6)
    check(torch.equal(norm, own_norm), "rms_norm on opreg's pool again")
    libc = next((line.split()[-1] for line in open("/proc/self/maps")
                 if os.path.basename(line.split()[-1]).startswith("libc.so")), None)
    for path, threads, want in (("/nonexistent/libgomp.so.1", 2, "is not loaded in this process"),
                                (libc, 2, "is not an OpenMP runtime"),
                                (lib, 0, "threads must be 1 to")):
        if path is None:
            continue
        try:
            opreg._opreg.share_openmp(path, threads)
            check(False, "share_openmp(%s, %d) is refused" % (path, threads))
        except ValueError as e:
            check(want in str(e), "share_openmp(%s, %d): %s" % (path, threads, e))
    check(opreg.get_num_threads() == own_width, "a refusal leaves opreg's pool in place")


def t_linear_returns():
    x, w, b = torch.randn(3, 16), torch.randn(8, 16), torch.randn(8)
    y = torch.ops._C.linear(x, w, b)
    check(isinstance(y, torch.Tensor) and y.shape == (3, 8), "linear returns a (3, 8) tensor")
    check(torch.allclose(y, x @ w.t() + b, rtol=1e-4, atol=1e-4), "linear is right")
    y2 = torch.ops._C.linear(x, w)
    check(torch.allclose(y2, x @ w.t(), rtol=1e-4, atol=1e-4), "linear's default bias")


# ---- fake and Meta kernels --------------------------------------------------


def t_fake_kernels():
    if HAS_FAKE:
        from torch._subclasses.fake_tensor import FakeTensorMode

        mode = FakeTensorMode()
        to_fake = mode.from_tensor
    else:

        def to_fake(t):
            return t.to("meta")

        mode = None
    for name in NAMES:
        if not torch_has_dtypes(name):
            skip(name, "torch %s lacks a dtype of its inputs" % torch.__version__)
            continue
        args = inputs(name, seed=3)
        fargs = [
            to_fake(a)
            if isinstance(a, torch.Tensor)
            else [to_fake(t) for t in a]
            if isinstance(a, list)
            else a
            for a in args
        ]
        op = getattr(torch.ops._C, short(name))
        if mode is not None:
            with mode:
                r = op(*fargs)
        else:
            r = op(*fargs)
        if name == "_C::linear":
            check(tuple(r.shape) == (args[0].shape[0], args[1].shape[0]), "fake linear's shape")
            check(r.dtype == args[0].dtype, "fake linear's dtype")
        else:
            check(r is None, "%s returns nothing" % name)
    # The fake kernel refuses what opreg's Meta kernel refuses, with its message.
    x, w = torch.randn(4, 64), torch.ones(63)
    fx, fw, fo = to_fake(x), to_fake(w), to_fake(torch.empty(4, 64))
    try:
        if mode is not None:
            with mode:
                torch.ops._C.rms_norm(fo, fx, fw, 1e-6)
        else:
            torch.ops._C.rms_norm(fo, fx, fw, 1e-6)
        check(False, "the fake kernel refuses a bad weight")
    except RuntimeError as e:
        check(
            "_C::rms_norm: argument 'weight': expected size 64 in dim 0, got 63" in str(e),
            "the fake kernel gives opreg's message: %s" % e,
        )
    # Strides reach the Meta kernel: a transposed output is refused as opreg refuses it.
    out = opreg.ops._C.linear._meta(
        opreg._opreg.meta_tensor((4, 64), "f32"), opreg._opreg.meta_tensor((32, 64), "f32")
    )
    check(out.shape == (4, 32) and out.strides == (32, 1), "Meta linear's shape and strides")


# ---- the names opreg answers for --------------------------------------------


def t_names():
    other = opreg.torch.register("_C", target="opreg_alias", ops=["rms_norm", "linear"])
    check(sorted(other.ops) == ["opreg_alias::linear", "opreg_alias::rms_norm"], "a subset, renamed")
    check(opreg.is_op_supported("opreg_alias::rms_norm"), "opreg answers for its op under torch's name")
    check(opreg.is_op_supported("opreg_alias::rms_norm", "cpu"), "... on the CPU")
    text = opreg.explain("opreg_alias::rms_norm")
    check("opreg's _C::rms_norm" in text, "explain names opreg's op: %s" % text)
    x = torch.randn(2, 8)
    out = torch.empty_like(x)
    torch.ops.opreg_alias.rms_norm(out, x, torch.ones(8), 1e-6)
    # An op that only torch defines is never opreg's.
    lib = torch.library.Library("opreg_test_torch_only", "DEF")
    lib.define("mine(Tensor x) -> Tensor")
    check(not opreg.is_op_supported("opreg_test_torch_only::mine"), "a torch-only op is not opreg's")
    check("opreg_alias::silu_and_mul" not in other.ops, "ops left out are not registered")
    check(not opreg.is_op_supported("opreg_alias::silu_and_mul"), "nor answered for")
    text = opreg.explain("opreg_test_torch_only::mine")
    check("Could not find schema for opreg_test_torch_only::mine" in text,
          "explain says opreg lacks a torch-only op: %s" % text)
    globals()["_keep"] = lib


def t_conflicts():
    lib = torch.library.Library("opreg_conflict", "DEF")
    lib.define("rms_norm(Tensor x) -> Tensor")
    try:
        opreg.torch.register("_C", target="opreg_conflict")
        check(False, "a name torch already has is refused")
    except opreg.Error as e:
        check("opreg_conflict::rms_norm" in str(e), "the conflict is named: %s" % e)
    check("opreg_conflict" not in opreg.torch.registrations(), "nothing registered on conflict")
    check(not _defined("opreg_conflict::silu_and_mul"), "no op of the namespace was defined")
    try:
        opreg.torch.register("_C", target="opreg_bad", ops=["no_such_op"])
        check(False, "an unknown op is refused")
    except opreg.Error as e:
        check("_C::no_such_op" in str(e), "the unknown op is named: %s" % e)
    try:
        opreg.torch.register("no_such_namespace")
        check(False, "an empty namespace is refused")
    except opreg.Error as e:
        check("no_such_namespace" in str(e), "the namespace is named: %s" % e)
    try:
        opreg.torch.register("_C", target="opreg_threads", threads="both")
        check(False, "threads='both' is refused")
    except ValueError as e:
        check("'torch' or 'own'" in str(e), "the choices are named: %s" % e)
    check("opreg_threads" not in opreg.torch.registrations(), "nothing registered on a bad threads")
    globals()["_keep2"] = lib


def _defined(qual):
    try:
        return bool(torch._C._jit_get_schemas_for_operator(qual))
    except RuntimeError:
        return False


# ---- DLPack's exchange API ---------------------------------------------------


def t_exchange_tensors():
    if not HAS_EXCHANGE:
        skip("exchange API tensors", "torch %s has no __dlpack_c_exchange_api__" % torch.__version__)
        return
    gelu = opreg.ops._C.gelu_new
    rms = opreg.ops._C.rms_norm
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        base = torch.randn(6, 80).to(dt)
        view = base[:, :40]  # rows 80 apart: the strides must come through
        w = (torch.rand(40) + 0.5).to(dt)
        got, want = torch.empty(6, 40, dtype=dt), torch.empty(6, 40, dtype=dt)
        rms(got, view, w, 1e-6)
        rms(want, view.contiguous(), w, 1e-6)
        check(torch.equal(got, want), "a row-strided %s input through the exchange API" % dt)
        try:
            rms(torch.empty(6, 80, dtype=dt)[:, ::2], view, w, 1e-6)
            check(False, "a column-strided output is refused")
        except opreg.Error as e:
            check("must be contiguous (stride 2 in dim 1" in str(e), "its strides reached opreg: %s" % e)
    p = torch.nn.Parameter(torch.ones(8), requires_grad=False)
    x = torch.randn(3, 8)
    out = torch.empty_like(x)
    opreg.ops._C.rms_norm(out, x, p, 1e-6)  # a subclass of torch.Tensor
    check(torch.isfinite(out).all(), "a Parameter through the exchange API")
    # fp8 and int8 dtypes arrive as opreg's.
    x = torch.randn(4, 32)
    q8, s = torch.empty(4, 32, dtype=torch.float8_e4m3fn), torch.tensor([0.05])
    opreg.ops._C.static_scaled_fp8_quant(q8, x, s)
    check(torch.allclose(q8.float(), (x / 0.05).clamp(-448, 448).to(torch.float8_e4m3fn).float()),
          "fp8 through the exchange API")
    # More dimensions than the binding keeps inline (8) take the managed path.
    big = torch.randn(*([1] * 8 + [16]))
    out = torch.empty_like(big)
    try:
        gelu(out, big)
        want = torch.empty_like(big)
        gelu(want.view(16), big.view(16))
        check(torch.equal(out, want), "a 9-dimensional tensor through the exchange API")
    except opreg.Error as e:
        check("dim" in str(e) or "rank" in str(e), "a 9-d refusal is opreg's own: %s" % e)


# ---- torch.compile and opcheck ---------------------------------------------


def t_compile():
    if not hasattr(torch, "compile"):
        skip("torch.compile", "torch %s has no torch.compile" % torch.__version__)
        return
    tokens = 5
    args, nh, hs = block_args("cpu", tokens)
    eager = vllm_block(*clone(args), nh, hs)
    compiled = torch.compile(vllm_block, fullgraph=True)  # a graph break raises here
    got = compiled(*clone(args), nh, hs)
    for i, (e, c) in enumerate(zip(eager, got)):
        check(torch.allclose(e, c, rtol=1e-5, atol=1e-5), "compiled output %d equals eager" % i)
    # Another token count: the same graph again, or one recompilation, never a break.
    args2 = [a[:3] if a.dim() and a.shape[0] == tokens else a for a in args]
    eager2 = vllm_block(*clone(args2), nh, hs)
    got2 = compiled(*clone(args2), nh, hs)
    check(all(torch.allclose(e, c, rtol=1e-5, atol=1e-5) for e, c in zip(eager2, got2)),
          "compiled output at 3 tokens equals eager")


# test_schema compares a mutated argument's bytes with torch.allclose, which
# torch's CPU build lacks for fp8: for ops that write fp8 it is left out and
# the same property (exactly the `Tensor!` arguments change) is checked here.
FP8_WRITERS = {"_C::static_scaled_fp8_quant", "_C::dynamic_scaled_fp8_quant"}


def t_opcheck():
    if not HAS_OPCHECK:
        skip("opcheck", "torch %s has no torch.library.opcheck" % torch.__version__)
        return
    tests = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
    for name in NAMES:
        args = tuple(inputs(name, seed=11))
        op = getattr(torch.ops._C, short(name)).default
        utils = tuple(t for t in tests if not (t == "test_schema" and name in FP8_WRITERS))
        try:
            result = torch.library.opcheck(op, args, test_utils=utils)
            check(all(v == "SUCCESS" for v in result.values()), "opcheck %s: %s" % (name, result))
        except Exception as e:  # noqa: BLE001
            check(False, "opcheck %s: %s" % (name, str(e).splitlines()[0]))
        if name in FP8_WRITERS:
            before = clone(list(args))
            after = clone(list(args))
            op(*after)
            schema = op._schema
            for i, a in enumerate(schema.arguments):
                writes = a.alias_info is not None and a.alias_info.is_write
                if isinstance(before[i], torch.Tensor) and not writes:
                    check(same_bytes(before[i], after[i]), "%s leaves %s alone" % (name, a.name))


def t_collective_values():
    path = os.environ.get("OPREG_VALUES_PLUGIN")
    if not path or not os.path.exists(path):
        skip("collective values", "OPREG_VALUES_PLUGIN does not name the values test plugin")
        return
    opreg.load_plugin(path)
    # torch has _c10d_functional of its own: opreg's go under other names.
    ar = opreg.torch.register("_C_custom_ar", target="opreg_custom_ar")
    opreg.torch.register("_c10d_functional", target="opreg_c10d")
    opreg.torch.register("values_test", target="opreg_values")
    check(ar.kernels["opreg_custom_ar::meta_size"] == ("CompositeExplicitAutograd",),
          "an op without tensor arguments serves every key: %r" % (ar.kernels,))
    ops = torch.ops.opreg_custom_ar
    check(ops.meta_size() > 0, "meta_size through torch.ops")
    fa = ops.init_custom_ar(torch.zeros(4), torch.zeros(4), ["h0", "h1"], [0, 64], 1, True)
    ops.register_buffer(fa, torch.zeros(4), ["b0", "b1"], [16, 32])
    check(ops.get_graph_buffer_ipc_meta(fa) == (["b0", "b1"], [16, 32]),
          "(str[], int[]) back through torch.ops")
    ops.register_graph_buffers(fa, ["g0", "g1"], [[0, 8], [16]])
    state = torch.ops.opreg_values.custom_ar_state(fa)
    check(state == (["h0", "h1"], [0, 64], 1, True, ["g0", "g1"], [[0, 8], [16]]),
          "int[][] and str[] reach the kernel through torch: %r" % (state,))
    ops.dispose(fa)
    x = torch.arange(4.0)
    y = torch.ops.opreg_c10d.all_reduce(x, "sum", "test_world")
    check(isinstance(y, torch.Tensor) and torch.equal(y, x), "all_reduce returns a torch tensor")
    ys = torch.ops.opreg_c10d.all_reduce_coalesced([x, x], "avg", "test_world")
    check(isinstance(ys, list) and all(isinstance(t, torch.Tensor) for t in ys),
          "Tensor[] returns are torch tensors")
    got = torch.ops.opreg_values.echo(["a"], [[1, 2], []], [0.5], [True], [1, None], 3,
                                      (["q"], 2), 7, "n", "any", torch.bfloat16,
                                      torch.device("cpu"))
    check(got[:10] == (["a"], [[1, 2], []], [0.5], [True], [1, None], 3, (["q"], 2), 7, "n", "any"),
          "every value back through torch.ops: %r" % (got,))
    check(got[11] == torch.device("cpu"), "a Device return is a torch.device: %r" % (got[11],))
    xs, opt = torch.ops.opreg_values.echo_tensors([torch.ones(2)], [None, torch.zeros(1)])
    check(opt[0] is None and torch.equal(xs[0], torch.ones(2)), "Tensor?[] returns keep None")


def _version():
    return tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def t_stable_c_kernels():
    ok, why = opreg.torch.stable_abi()
    check(ok == (_version() >= (2, 13)), "torch %s: stable ABI %s (%s)" % (torch.__version__, ok, why))
    returning = {q for q, n in reg.ops.items() if not opreg.schema(n).rstrip().endswith("-> ()")}
    if not ok:
        check("has no" in why or "not loaded" in why, "the reason names what is missing: %s" % why)
        check(reg.c_kernels == set(), "no C kernel without the ABI")
        try:
            opreg.torch.register("_C", target="opreg_c_only", ops=["rms_norm"], kernels="c")
            check(False, "kernels='c' is refused without the ABI")
        except opreg.Error as e:
            check("kernels='c'" in str(e), "the refusal says why: %s" % e)
        return
    check(reg.c_kernels == set(reg.ops) - returning,
          "every op that returns nothing has a C kernel: %s" % sorted(set(reg.ops) - reg.c_kernels))
    try:
        opreg.torch.register("_C", target="opreg_bad_kernels", kernels="cpp")
        check(False, "kernels='cpp' is refused")
    except ValueError as e:
        check("'auto', 'c' or 'python'" in str(e), "the choices are named: %s" % e)
    # Python kernels on request, beside the C ones: the same bytes.
    py = opreg.torch.register("_C", target="opreg_py_kernels", kernels="python")
    check(py.c_kernels == set(), "kernels='python' registers no C kernel")
    for name in ("_C::copy_blocks", "_C::reshape_and_cache", "_C::cutlass_scaled_mm"):
        args = inputs(name, seed=3)
        a, b = clone(args), clone(args)
        getattr(torch.ops._C, short(name))(*a)
        getattr(torch.ops.opreg_py_kernels, short(name))(*b)
        check(same_bytes(a, b), "%s: the C kernel wrote what the Python kernel wrote" % name)
    # The C kernel owns what torch hands it and releases all of it, on
    # success and on a refusal: each tensor's reference count is back where
    # it was (a leaked handle would hold one more).
    x, w, out = torch.randn(3, 32), torch.rand(32) + 0.5, torch.empty(3, 32)
    caches = [torch.zeros(4, 2, 8) for _ in range(2)]
    mapping = torch.tensor([[0, 1]], dtype=torch.int64)
    mm = inputs("_C::cutlass_scaled_mm", shape="bias=1")
    held = (x, w, out, caches[0], caches[1], mapping) + tuple(
        t for t in mm if isinstance(t, torch.Tensor))
    before = [t._use_count() for t in held]
    for i in range(200):
        torch.ops._C.rms_norm(out, x, w, 1e-6)
        torch.ops._C.copy_blocks(caches, caches, mapping)
        torch.ops._C.cutlass_scaled_mm(*mm)
        try:
            torch.ops._C.rms_norm(out, x, torch.rand(31), 1e-6)
        except RuntimeError as e:
            if i == 0:
                check("expected size 32 in dim 0, got 31" in str(e), "the C kernel's refusal: %s" % e)
    after = [t._use_count() for t in held]
    check(before == after, "no tensor handle is leaked by the C kernel: %s -> %s" % (before, after))
    # Closing a registration removes its C kernels from torch.
    tmp = opreg.torch.register("_C", target="opreg_c_close", ops=["rms_norm"], kernels="c")
    check(tmp.c_kernels == {"opreg_c_close::rms_norm"}, "kernels='c': %s" % tmp.c_kernels)
    x = torch.randn(2, 16)
    y = torch.empty_like(x)
    torch.ops.opreg_c_close.rms_norm(y, x, torch.ones(16), 1e-6)
    tmp.close()
    try:
        torch.ops.opreg_c_close.rms_norm(y, x, torch.ones(16), 1e-6)
        check(False, "a closed registration's op is gone")
    except (RuntimeError, AttributeError):
        pass
    # The cost of a call through torch.ops (1x64 rms_norm), C kernel beside
    # Python kernel: printed, not asserted (opreg bench python measures).
    x1, w1, o1 = torch.randn(1, 64), torch.rand(64), torch.empty(1, 64)

    def cost(f):
        for _ in range(200):
            f(o1, x1, w1, 1e-6)
        t0 = time.perf_counter()
        for _ in range(2000):
            f(o1, x1, w1, 1e-6)
        return (time.perf_counter() - t0) / 2000 * 1e6

    print("     1x64 rms_norm through torch.ops: C kernel %.2f us, Python kernel %.2f us"
          % (cost(torch.ops._C.rms_norm), cost(torch.ops.opreg_py_kernels.rms_norm)))


run("the registration", t_registration)
run("C kernels through torch's stable ABI", t_stable_c_kernels)
run("every op through torch.ops equals opreg's own call", t_eager_every_op)
run("rms_norm through torch.ops, and a refusal", t_eager_rms_norm_reference)
run("linear returns torch tensors", t_linear_returns)
run("opreg's loops on torch's OpenMP team", t_share_threads)
run("fake (or Meta) kernels of every op", t_fake_kernels)
run("names: aliases, torch-only ops", t_names)
run("conflicts and bad requests", t_conflicts)
run("tensors through DLPack's exchange API", t_exchange_tensors)
run("torch.compile(fullgraph=True) of a vLLM block", t_compile)
run("torch.library.opcheck of every op", t_opcheck)
run("lists, tuples and handles of collective ops through torch.ops", t_collective_values)

finish()
