"""The Python binding on one interpreter: import, the queries, errors, and
ops on DLPack tensors (numpy where the interpreter has it, and always the
tests' own ctypes producer), in place and with a returned tensor."""

import gc
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dlpack_buffer as dl  # noqa: E402
import opreg  # noqa: E402

try:
    import numpy as np
except ImportError:
    np = None

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def raises(fn, exc_type, contains=(), status=None):
    try:
        fn()
    except exc_type as e:
        text = str(e)
        for c in contains:
            check(c in text, "message %r lacks %r" % (text, c))
        if status is not None:
            check(getattr(e, "status_name", None) == status,
                  "status %r, expected %r (%s)" % (getattr(e, "status_name", None), status, text))
        return e
    except Exception as e:  # noqa: BLE001
        check(False, "expected %s, got %s: %s" % (exc_type.__name__, type(e).__name__, e))
        return None
    check(False, "expected %s, nothing raised" % exc_type.__name__)
    return None


def close(a, b, tol=1e-5):
    return len(a) == len(b) and all(abs(x - y) <= tol * (1 + abs(y)) for x, y in zip(a, b))


def rms_norm_ref(x, w, rows, h, eps):
    out = []
    for r in range(rows):
        row = x[r * h:(r + 1) * h]
        inv = 1.0 / math.sqrt(sum(v * v for v in row) / h + eps)
        out += [v * inv * wi for v, wi in zip(row, w)]
    return out


print("python", sys.version.split()[0], "numpy", np.__version__ if np else "absent")

# ---- the module -------------------------------------------------------------
ext = opreg._opreg.__file__
check(ext.endswith("_opreg.abi3.so"), "the extension is the abi3 binary: " + ext)
check(opreg.__version__ == opreg.version() and opreg.__version__.count(".") == 2, "version")

names = opreg.list_ops()
check("_C::rms_norm" in names and "_C::linear" in names, "list_ops has the catalogue")
check(all(isinstance(n, str) and "::" in n for n in names), "list_ops gives full names")
check(opreg.schema("_C::rms_norm") ==
      "_C::rms_norm(Tensor(a!) out, Tensor input, Tensor weight, float epsilon) -> ()"
      or opreg.schema("_C::rms_norm").startswith("_C::rms_norm(Tensor! out"),
      "schema: " + opreg.schema("_C::rms_norm"))
check(opreg.schema("_C::linear") == "_C::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
      "schema of linear: " + opreg.schema("_C::linear"))
check("rms_norm" in opreg.schema("_C::rms_norm", torch=True), "schema torch=True")
raises(lambda: opreg.schema("_C::rms_nrm"), opreg.Error, ["did you mean", "_C::rms_norm"],
       "OPREG_ERR_NOT_FOUND")

# The CPU kernels' thread pool, as opreg_set_num_threads() in C.
width = opreg.get_num_threads()
check(isinstance(width, int) and width >= 1, "get_num_threads: %r" % width)
opreg.set_num_threads(1)
check(opreg.get_num_threads() == 1, "set_num_threads(1)")
opreg.set_num_threads(0)
check(opreg.get_num_threads() == width, "set_num_threads(0) restores the default")
raises(lambda: opreg.set_num_threads(-3), opreg.Error, ["-3 threads; give 1 to 256"],
       "OPREG_ERR_INVALID_ARGUMENT")
raises(lambda: opreg.set_num_threads("2"), TypeError)

check(opreg.is_op_supported("_C::rms_norm") is True, "is_op_supported")
check(opreg.is_op_supported("_C::rms_norm", "cpu") is True, "is_op_supported on cpu")
check(opreg.is_op_supported("_C::rms_norm", device="cpu") is True, "device by keyword")
check(opreg.is_op_supported("_C::nope") is False, "unknown op is not supported")
check(opreg.is_op_supported("_C::nope", "cpu") is False, "unknown op on cpu")
raises(lambda: opreg.is_op_supported("_C::rms_norm", "tpu"), opreg.Error, ["tpu"])
text = opreg.explain("_C::rms_norm", "cpu")
check("supported" in text and "CPU" in text, "explain: " + text)
text = opreg.explain("_C::nope", "cpu")
check("_C::nope" in text, "explain of an unknown op: " + text)
check(isinstance(opreg.explain("_C::rms_norm"), str), "explain without a device")
raises(lambda: opreg.load_plugin("/nonexistent/libplugin.so"), opreg.Error,
       ["/nonexistent/libplugin.so"])
# The build tree's OpenCL plugin, when it was built: loads once, then is refused.
_plugin = os.path.join(os.path.dirname(opreg.__file__), "..", "..", "plugins", "opreg_opencl.so")
if os.path.exists(_plugin) and "opencl" not in opreg.explain("_C::rms_norm", "cpu").lower():
    try:
        name = opreg.load_plugin(_plugin)
        check(name == "opencl", "load_plugin returns the plugin's name: %r" % name)
        raises(lambda: opreg.load_plugin(_plugin), opreg.Error, ["opencl"])
    except opreg.Error as e:  # no OpenCL platform here: refused with a reason
        check("opencl" in str(e).lower() or "OpenCL" in str(e), "load_plugin refusal: %s" % e)

# ---- attribute access -------------------------------------------------------
op = opreg.ops._C.rms_norm
check(op is opreg.ops._C.rms_norm, "an op is looked up once")
check(op.name == "_C::rms_norm" and op.overload == "", "op name")
check(op.default is op, ".default is the op itself")
check("rms_norm" in dir(opreg.ops._C) and "_C" in dir(opreg.ops), "dir()")
check(op.overloads() == ["default"], "overloads: %r" % (op.overloads(),))
check(op.schema == opreg.schema("_C::rms_norm"), "op.schema")
e = raises(lambda: opreg.ops._C.rms_nrm, opreg.Error, ["did you mean: _C::rms_norm"],
           "OPREG_ERR_NOT_FOUND")
check(isinstance(e, AttributeError), "an unknown op is an AttributeError too")
check(not hasattr(opreg.ops._C, "nope"), "hasattr of an unknown op")
raises(lambda: op.out, AttributeError, ["_C::rms_norm.out"])
check(isinstance(opreg.Error("x"), RuntimeError), "opreg.Error is a RuntimeError")
raises(lambda: opreg.Tensor(), TypeError)

# ---- ops on the tests' own DLPack producer ----------------------------------
rows, h = 3, 8
xs = [math.sin(i) for i in range(rows * h)]
ws = [0.5 + 0.1 * i for i in range(h)]
x = dl.Buffer(xs, (rows, h))
w = dl.Buffer(ws, (h,))
out = dl.Buffer([0.0] * (rows * h), (rows, h))
want = rms_norm_ref(x.tolist(), w.tolist(), rows, h, 1e-6)
check(op(out, x, w, 1e-6) is None, "an op without returns gives None")
check(close(out.tolist(), want), "rms_norm wrote into the caller's buffer")
check(dl.live_exports() == 0, "every export was released (%d live)" % dl.live_exports())

# keywords, in any order and mixed with positions
for call in (lambda o: op(out=o, input=x, weight=w, epsilon=1e-6),
             lambda o: op(o, x, epsilon=1e-6, weight=w),
             lambda o: opreg.ops._C.rms_norm.default(o, x, w, epsilon=1e-6)):
    o = dl.Buffer([0.0] * (rows * h), (rows, h))
    call(o)
    check(close(o.tolist(), want), "rms_norm with keywords")

# The mutation sanitizer of the default registry: a kernel that writes only
# its output passes in both modes; an unknown mode is refused.
initial = opreg.mutation_check()
check(initial in ("off", "report", "fail"), "mutation_check() gives a mode: %r" % initial)
for mode in ("report", "fail", "off"):
    opreg.set_mutation_check(mode)
    check(opreg.mutation_check() == mode, "mutation_check() gives " + mode)
    o = dl.Buffer([0.0] * (rows * h), (rows, h))
    op(o, x, w, 1e-6)
    check(close(o.tolist(), want), "rms_norm with the sanitizer " + mode)
raises(lambda: opreg.set_mutation_check("loud"), ValueError, ["'loud'"])
opreg.set_mutation_check(initial)
raises(lambda: op(out, x, w), opreg.Error, ["missing argument 'epsilon'"])
raises(lambda: op(out, x, w, eps=1e-6), opreg.Error, ["unexpected keyword argument 'eps'"])
raises(lambda: op(out, x, w, 1e-6, epsilon=1e-6), opreg.Error, ["multiple values", "epsilon"])
raises(lambda: op(out, x, w, 1e-6, 5), opreg.Error, ["takes 4"])
raises(lambda: op(out, x, w, "1e-6"), opreg.Error,
       ["argument 'epsilon' (position 3) expected a value of type float but got str"],
       "OPREG_ERR_TYPE_MISMATCH")
raises(lambda: op(out, 1.0, w, 1e-6), opreg.Error,
       ["argument 'input' (position 1) expected a value of type Tensor", "float"],
       "OPREG_ERR_TYPE_MISMATCH")
bad = dl.Buffer([0.0] * (rows * (h + 1)), (rows, h + 1))
raises(lambda: op(bad, x, w, 1e-6), opreg.Error, ["_C::rms_norm"], "OPREG_ERR_SHAPE")
check(op(out, x, w, 1) is None, "an int for a float argument")

# Tensor! must be writable: a read-only export (DLPack 1.0 flag) is refused for
# `out` and accepted for `input`; an old producer refuses read-only itself.
ro = dl.Buffer(xs, (rows, h), readonly=True, versioned=True)
raises(lambda: op(ro, x, w, 1e-6), opreg.Error, ["'out'", "read-only"], "OPREG_ERR_INVALID_ARGUMENT")
check(ro.tolist() == x.tolist(), "a refused read-only output is untouched")
o = dl.Buffer([0.0] * (rows * h), (rows, h))
op(o, ro, w, 1e-6)
check(close(o.tolist(), want), "a read-only input is fine")
ro_old = dl.Buffer(xs, (rows, h), readonly=True)
raises(lambda: op(out, ro_old, w, 1e-6), opreg.Error, ["'input'", "DLPack", "read-only"])
old = dl.OldBuffer(xs, (rows, h))
o = dl.Buffer([0.0] * (rows * h), (rows, h))
for _ in range(3):  # the refusal of max_version is remembered for the type
    op(o, old, w, 1e-6)
check(close(o.tolist(), want), "a producer from before DLPack 1.0")
check(dl.live_exports() == 0, "exports released after errors (%d live)" % dl.live_exports())

# returned tensors: opreg.Tensor, exported through DLPack both ways
wl = dl.Buffer([0.01 * i for i in range(4 * h)], (4, h))
bias = dl.Buffer([1.0, 2.0, 3.0, 4.0], (4,))
y = opreg.ops._C.linear(x, wl)
check(isinstance(y, opreg.Tensor), "linear returns an opreg.Tensor")
check(y.shape == (rows, 4) and y.dtype == "f32" and y.device == "cpu" and y.ndim == 2,
      "returned tensor: %r" % (y,))
check(y.__dlpack_device__() == (1, 0), "__dlpack_device__")
ref = [sum(xs[r * h + k] * wl.tolist()[j * h + k] for k in range(h)) for r in range(rows)
       for j in range(4)]
shape, vals, name = dl.consume(y)
check(shape == (rows, 4) and close(vals, ref, 1e-4) and name == "dltensor", "linear's result")
shape, vals, name = dl.consume(y, versioned=True)
check(close(vals, ref, 1e-4) and name == "dltensor_versioned", "versioned export")
yb = opreg.ops._C.linear(x, wl, bias=bias)
_, vals, _ = dl.consume(yb)
check(close(vals, [v + [1.0, 2.0, 3.0, 4.0][i % 4] for i, v in enumerate(ref)], 1e-4),
      "linear with a keyword bias")
yn = opreg.ops._C.linear(x, wl, None)
check(close(dl.consume(yn)[1], ref, 1e-4), "an explicit None for Tensor?")
# an opreg.Tensor goes back into an op
o2 = dl.Buffer([0.0] * (rows * 4), (rows, 4))
opreg.ops._C.gelu_quick(o2, y)
gq = [v / (1 + math.exp(-1.702 * v)) for v in ref]
check(close(o2.tolist(), gq, 1e-4), "an opreg.Tensor as an input")
cap = y.__dlpack__()
del y, cap  # an unconsumed capsule frees itself
gc.collect()
raises(lambda: opreg.ops._C.linear(x, wl).__dlpack__(max_version=5), TypeError)

# int, bool and str arguments, and tensor lists
if True:
    T, K, E, BS = 4, 3, 4, 4
    topk = dl.Buffer([2, 3, 0, 1, 2, 0, 1, 3, 0, 1, 2, 3], (T, K), code=dl.kDLInt, bits=32)
    cap_ = T * K + E * (BS - 1)
    sorted_ids = dl.Buffer([T * K] * cap_, (cap_,), code=dl.kDLInt, bits=32)
    expert_ids = dl.Buffer([0] * (cap_ // BS), (cap_ // BS,), code=dl.kDLInt, bits=32)
    post_pad = dl.Buffer([0], (1,), code=dl.kDLInt, bits=32)
    opreg.ops._C.moe_align_block_size(topk, E, BS, sorted_ids, expert_ids, post_pad)
    check(post_pad.tolist() == [16], "moe_align_block_size: %r" % post_pad.tolist())
    check(sorted_ids.tolist()[:16] == [2, 5, 8, 12, 3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12],
          "moe sorted ids: %r" % sorted_ids.tolist())
    raises(lambda: opreg.ops._C.moe_align_block_size(topk, 1.5, BS, sorted_ids, expert_ids,
                                                     post_pad), opreg.Error,
           ["argument 'num_experts' (position 1) expected a value of type int but got float"])
    raises(lambda: opreg.ops._C.moe_align_block_size(topk, 2 ** 70, BS, sorted_ids, expert_ids,
                                                     post_pad), opreg.Error, ["out of range"])

    # copy_blocks(Tensor[]! key_caches, Tensor[]! value_caches, Tensor block_mapping)
    nb, bs = 3, 4
    kc = [dl.Buffer([float(i + 100 * L) for i in range(nb * bs)], (nb, bs)) for L in range(2)]
    vc = [dl.Buffer([float(-i - 100 * L) for i in range(nb * bs)], (nb, bs)) for L in range(2)]
    mapping = dl.Buffer([0, 2], (1, 2), code=dl.kDLInt, bits=64)
    opreg.ops._C.copy_blocks(kc, tuple(vc), mapping)
    check(kc[1].tolist()[2 * bs:] == kc[1].tolist()[:bs], "copy_blocks copied block 0 to 2")
    check(vc[0].tolist()[2 * bs:] == vc[0].tolist()[:bs], "copy_blocks on value caches")
    raises(lambda: opreg.ops._C.copy_blocks(kc[0], vc, mapping), opreg.Error,
           ["'key_caches'", "Tensor"], "OPREG_ERR_TYPE_MISMATCH")
    raises(lambda: opreg.ops._C.copy_blocks([kc[0], 3], vc, mapping), opreg.Error,
           ["item 1"], "OPREG_ERR_TYPE_MISMATCH")
    rok = [dl.Buffer(kc[0].tolist(), (nb, bs), readonly=True, versioned=True), kc[1]]
    raises(lambda: opreg.ops._C.copy_blocks(rok, vc, mapping), opreg.Error, ["read-only"])
    check(dl.live_exports() == 0, "list exports released (%d live)" % dl.live_exports())

    # rotary_embedding(positions, query!, key!, int head_size, cos_sin_cache, bool is_neox)
    pos = dl.Buffer([1], (1,), code=dl.kDLInt, bits=64)
    q = dl.Buffer([1.0, 2.0], (1, 2))
    k = dl.Buffer([3.0, 4.0], (1, 2))
    c, s = math.cos(0.5), math.sin(0.5)
    csc = dl.Buffer([1.0, 0.0, c, s], (2, 2))
    opreg.ops._C.rotary_embedding(pos, q, k, 2, csc, True)
    check(close(q.tolist(), [1 * c - 2 * s, 2 * c + 1 * s]), "rotary: %r" % q.tolist())
    raises(lambda: opreg.ops._C.rotary_embedding(pos, q, k, 2, csc, 1), opreg.Error,
           ["'is_neox'", "bool", "int"])

    # reshape_and_cache_flash(key, value, key_cache!, value_cache!, slot_mapping, str kv_cache_dtype)
    kk = dl.Buffer([1.0, 2.0], (1, 1, 2))
    vv = dl.Buffer([3.0, 4.0], (1, 1, 2))
    kcache = dl.Buffer([0.0] * 8, (2, 2, 1, 2))
    vcache = dl.Buffer([0.0] * 8, (2, 2, 1, 2))
    slots = dl.Buffer([3], (1,), code=dl.kDLInt, bits=64)
    opreg.ops._C.reshape_and_cache_flash(kk, vv, kcache, vcache, slots, "auto")
    check(kcache.tolist()[6:] == [1.0, 2.0] and vcache.tolist()[6:] == [3.0, 4.0],
          "reshape_and_cache_flash: %r" % kcache.tolist())
    raises(lambda: opreg.ops._C.reshape_and_cache_flash(kk, vv, kcache, vcache, slots, "fp7"),
           opreg.Error, ["fp7"])

# ---- numpy ----------------------------------------------------------------------
if np is not None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 64)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, 64).astype(np.float32)

    def ref_np(x, w, eps=1e-6):
        x64 = x.astype(np.float64)
        return (x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps) * w).astype(np.float32)

    out = np.zeros_like(x)
    before = out.ctypes.data
    op(out, x, w, 1e-6)
    check(out.ctypes.data == before, "numpy: no new buffer")
    check(np.allclose(out, ref_np(x, w), rtol=1e-5, atol=1e-6), "numpy: rms_norm in place")
    # a view of a bigger array: the op writes into the caller's memory
    big = np.zeros((7, 64), np.float32)
    op(big[1:6], x, w, 1e-6)
    check(np.allclose(big[1:6], ref_np(x, w), rtol=1e-5, atol=1e-6) and not big[0].any()
          and not big[6].any(), "numpy: writes through a view into the caller's array")
    # reshaped, and a different dtype, between calls of the same op
    x2 = x.reshape(10, 32)
    out2 = np.zeros_like(x2)
    op(out2, x2, w[:32].copy(), 1e-6)
    check(np.allclose(out2, ref_np(x2, w[:32]), rtol=1e-5, atol=1e-6), "numpy: another shape")
    x64 = x.astype(np.float64)
    raises(lambda: op(np.zeros_like(x64), x64, w.astype(np.float64), 1e-6), opreg.Error,
           ["_C::rms_norm"], "OPREG_ERR_SHAPE")
    out.fill(0)
    op(out, x, w, np.float32(1e-6))
    check(np.allclose(out, ref_np(x, w), rtol=1e-5, atol=1e-6), "numpy scalar for a float")
    # read-only numpy arrays: refused for Tensor!, fine for inputs
    ro = x.copy()
    ro.flags.writeable = False
    raises(lambda: op(ro, x, w, 1e-6), opreg.Error, ["'out'", "read-only"])
    out.fill(0)
    op(out, ro, w, 1e-6)
    check(np.allclose(out, ref_np(x, w), rtol=1e-5, atol=1e-6), "numpy: read-only input")
    # a subclass goes through __dlpack__; so does a non-contiguous view
    class Sub(np.ndarray):
        pass
    out.fill(0)
    op(out.view(Sub), x.view(Sub), w, 1e-6)
    check(np.allclose(out, ref_np(x, w), rtol=1e-5, atol=1e-6), "numpy subclass")
    strided = np.zeros((5, 128), np.float32)[:, ::2]
    try:
        op(strided, x, w, 1e-6)
        check(np.allclose(strided, ref_np(x, w), rtol=1e-5, atol=1e-6), "strided output")
    except opreg.Error as exc:
        check("out" in str(exc), "a strided output is refused by name: %s" % exc)
    # linear: the result comes back through numpy.from_dlpack without a copy
    if hasattr(np, "from_dlpack"):
        wl = rng.standard_normal((16, 64)).astype(np.float32)
        b = rng.standard_normal(16).astype(np.float32)
        y = opreg.ops._C.linear(x, wl, b)
        a = np.from_dlpack(y)
        check(a.shape == (5, 16) and a.dtype == np.float32, "from_dlpack shape/dtype")
        check(np.allclose(a, x @ wl.T + b, rtol=1e-4, atol=1e-4), "linear through numpy")
        a2 = np.from_dlpack(y)
        check(a2.ctypes.data == a.ctypes.data, "two numpy views share the opreg.Tensor's memory")
        # an opreg.Tensor is writable: an op's output lands where numpy sees it
        opreg.ops._C.gelu_quick(y, x @ wl.T)
        ref = x @ wl.T
        check(np.allclose(a, ref / (1 + np.exp(-1.702 * ref)), rtol=1e-4, atol=1e-4),
              "an op wrote into an opreg.Tensor, seen through numpy")
        before = a.copy()
        del y, a2
        gc.collect()
        check(np.array_equal(a, before), "the memory lives as long as a view")
        a = np.array(a)
        # gelu_quick into a numpy array from an opreg.Tensor and a numpy array
        o = np.zeros((5, 16), np.float32)
        opreg.ops._C.gelu_quick(o, a)
        check(np.allclose(o, a / (1 + np.exp(-1.702 * a)), rtol=1e-5, atol=1e-5), "gelu_quick")
    # many calls, fast path and general path: nothing is kept
    for _ in range(2000):
        op(out, x, w, 1e-6)
        op(out.view(Sub), x, w, 1e-6)
    check(sys.getrefcount(x) <= 3 and sys.getrefcount(out) <= 3, "no references kept")
    # large calls let other threads run (the lock is released): each thread's
    # results stay its own
    import threading
    big_x = [rng.standard_normal((64, 1024)).astype(np.float32) for _ in range(3)]
    big_w = np.ones(1024, np.float32)
    results = [None] * 3

    def worker(i):
        o = np.zeros_like(big_x[i])
        for _ in range(20):
            op(o, big_x[i], big_w, 1e-6)
        results[i] = o

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(all(np.allclose(results[i], ref_np(big_x[i], big_w), rtol=1e-5, atol=1e-6)
              for i in range(3)), "calls from three threads")
    # int arrays and numpy ints
    T, K, E, BS = 4, 3, 4, 4
    topk = np.array([[2, 3, 0], [1, 2, 0], [1, 3, 0], [1, 2, 3]], np.int32)
    sorted_ids = np.full(T * K + E * (BS - 1), T * K, np.int32)
    expert_ids = np.zeros((T * K + E * (BS - 1)) // BS, np.int32)
    post_pad = np.zeros(1, np.int32)
    opreg.ops._C.moe_align_block_size(topk, np.int64(E), BS, sorted_ids, expert_ids, post_pad)
    check(int(post_pad[0]) == 16 and list(expert_ids[:4]) == [0, 1, 2, 3], "moe with numpy")

if np is not None:
    # explain(op, *args): the provider these arguments select, and why.
    x = np.ones((2, 64), np.float32)
    w = np.ones(64, np.float32)
    out = np.full((2, 64), 7.0, np.float32)
    text = opreg.explain(opreg.ops._C.rms_norm, out, x, w, 1e-6)
    check(text.startswith("_C::rms_norm on CPU: provider '") and "portable" in text,
          "explain a call: " + text)
    check(bool((out == 7.0).all()), "explaining writes nothing")
    # 64 rows: past the few-row gemv provider, and oneDNN takes no f16.
    x64 = np.ones((64, 64), np.float16)
    text = opreg.explain(opreg.ops._C.linear, x64, np.ones((8, 64), np.float16))
    check("gemv" in text and "declined: M=64 rows: past the gemv bound" in text
          and "declined: oneDNN takes f32 and bf16" in text
          and "provider 'portable' runs" in text, "explain linear f16: " + text)
    text = opreg.explain(opreg.ops._C.linear, x.astype(np.float16), np.ones((8, 64), np.float16))
    check("provider 'gemv' runs" in text, "explain linear f16, 2 rows: " + text)
    text = opreg.explain(opreg.ops._C.rms_norm, out, np.ones((2, 32), np.float32), w, 1e-6)
    check("not supported" in text and "checks refuse these arguments" in text,
          "explain a call the checks refuse: " + text)
    raises(lambda: opreg.explain(opreg.ops._C.rms_norm, out), opreg.Error, ["missing argument"])
    check("supported" in opreg.explain("_C::rms_norm", "cpu"), "explain by name still works")

# opreg.opcheck: the same engine as `opreg check`, its report as dicts.
report = opreg.opcheck("rms_norm", checks="mutation,backends", dtypes="f32", keys="cpu")
check([(r["op"], r["key"], r["check"]) for r in report]
      == [("_C::rms_norm", "CPU", "mutation"), ("_C::rms_norm", "CPU", "backends")],
      "opcheck: one item per asked check on the asked key: %r" % report)
check(all(r["result"] == "passed" and r["message"] == "" for r in report),
      "opcheck rms_norm on CPU passes: %r" % report)
report = opreg.opcheck("_C::silu_and_mul", raise_on_failure=False)
check({r["check"] for r in report} == {"mutation", "schema", "meta", "backends", "refusals",
                                       "threads", "edges"}, "opcheck runs every check by default")
check(all(r["result"] in ("passed", "not applicable") for r in report),
      "opcheck silu_and_mul: %r" % [r for r in report if r["result"] not in ("passed", "not applicable")])
raises(lambda: opreg.opcheck("rms_norm", keys="TPU"), ValueError, ["unknown key 'TPU'"])
raises(lambda: opreg.opcheck("rms_norm", dtypes="f32,f99"), ValueError, ["unknown dtype 'f99'"])
raises(lambda: opreg.opcheck("rms_norm", checks="loud"), ValueError, ["unknown check 'loud'"])
raises(lambda: opreg.opcheck("rms_norm", sizes="tokens="), opreg.Error, ["bad value"])
raises(lambda: opreg.opcheck("nosuch::*"), opreg.Error, ["nosuch::*"])

gc.collect()
check(dl.live_exports() == 0, "no export left at the end (%d live)" % dl.live_exports())
if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
