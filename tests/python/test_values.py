"""Lists of strings, nested lists, tuples, `Any` and handles through the
Python binding, both ways, on the ops of the values test plugin (its path in
OPREG_VALUES_PLUGIN): vLLM's seed-era `_C_custom_ar`, PyTorch 2.15's
`_c10d_functional` on a group of one rank, and `values_test::echo`, which
returns every argument it is given. Also what the binding refuses, naming
the item."""

import gc
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dlpack_buffer as dl  # noqa: E402
import opreg  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def raises(fn, exc_type, contains=()):
    try:
        fn()
    except exc_type as e:
        for c in contains:
            check(c in str(e), "message %r lacks %r" % (str(e), c))
        return e
    except Exception as e:  # noqa: BLE001
        check(False, "expected %s, got %s: %s" % (exc_type.__name__, type(e).__name__, e))
        return None
    check(False, "expected %s, nothing raised" % exc_type.__name__)
    return None


plugin = os.environ.get("OPREG_VALUES_PLUGIN")
if not plugin or not os.path.exists(plugin):
    print("skip: OPREG_VALUES_PLUGIN does not name the values test plugin")
    sys.exit(77)
opreg.load_plugin(plugin)
ops = opreg.ops

# ---- echo: every value back -------------------------------------------------------

handle_bytes = b"\x00\x01ipc\xff"  # an IPC handle: not UTF-8, NUL inside
args = (
    ["h0", handle_bytes, ""],            # str[]
    [[0, 4096], [], [8192]],             # int[][]
    [0.5, -2.0],                         # float[]
    [True, False],                       # bool[]
    [3, None, -1],                       # int?[]
    2.5,                                 # Scalar
    (["a", "b"], 11),                    # (str[], int)
    0x7FFF12345678,                      # int (a handle)
    "name",                              # str
    [1, [2, "three"], None],             # Any
    "bf16",                              # ScalarType
    "cpu",                               # Device
)
got = ops.values_test.echo(*args)
check(isinstance(got, tuple) and len(got) == 13, "echo returns 13 values: %r" % (got,))
check(got[0] == ["h0", handle_bytes, ""], "str[] back, raw bytes as bytes: %r" % (got[0],))
check(got[1] == [[0, 4096], [], [8192]], "int[][] back: %r" % (got[1],))
check(got[2] == [0.5, -2.0] and got[3] == [True, False], "float[] and bool[] back")
check(got[4] == [3, None, -1], "int?[] back: %r" % (got[4],))
check(got[5] == 2.5 and isinstance(got[5], float), "Scalar back")
check(got[6] == (["a", "b"], 11), "a tuple comes back as a tuple: %r" % (got[6],))
check(got[7] == 0x7FFF12345678, "the handle back")
check(got[8] == "name" and got[12] == "", "str back, and the default")
check(got[9] == [1, [2, "three"], None], "Any back: %r" % (got[9],))
check(got[10] == "bf16" and got[11] == "cpu", "ScalarType and Device back: %r %r" % got[10:12])
# Tuples are accepted for lists, lists for tuples; bytes for str.
got = ops.values_test.echo(("x",), ((1,),), (), (), (), 7, [("q",), 0], 0, b"raw", (1, 2),
                           "f32", "meta")
check(got[0] == ["x"] and got[1] == [[1]] and got[5] == 7 and isinstance(got[5], int),
      "tuples for lists; an int Scalar stays int")
check(got[6] == (["q"], 0) and got[8] == "raw" and got[9] == (1, 2), "tuple and Any(tuple) back")

# ---- refusals, naming the item -------------------------------------------------------


def echo_with(i, value):
    a = list(args)
    a[i] = value
    return lambda: ops.values_test.echo(*a)


raises(echo_with(1, [[0, 1], [2, "x"]]), opreg.Error,
       ["argument 'ii' (position 1) item [1][1] expected a value of type int but got str"])
raises(echo_with(1, [[0], 5]), opreg.Error, ["item [1] expected a value of type int[] but got int"])
raises(echo_with(0, ["ok", 3]), opreg.Error, ["argument 's' (position 0) item [1]", "got int"])
raises(echo_with(0, "abc"), opreg.Error, ["expected a value of type str[] but got str"])
raises(echo_with(4, [1, "2"]), opreg.Error, ["item [1] expected a value of type int? but got str"])
raises(echo_with(6, (["a"],)), opreg.Error, ["expected a value of type (str[], int) but got tuple"])
raises(echo_with(6, (["a"], "b")), opreg.Error, ["item [1] expected a value of type int but got str"])
raises(echo_with(1, [[1 << 70]]), opreg.Error, ["item [0][0]", "out of range for type int"])
deep = []
for _ in range(40):
    deep = [deep]
raises(echo_with(9, deep), opreg.Error, ["nest deeper than 32"])

# ---- Tensor[] and Tensor?[] returns ---------------------------------------------------

a = dl.Buffer([1.0, 2.0, 3.0], (3,))
b = dl.Buffer([7.0, 8.0], (2,))
xs, ys = ops.values_test.echo_tensors([a, b], [None, b])
check(isinstance(xs, list) and len(xs) == 2 and all(isinstance(t, opreg.Tensor) for t in xs),
      "Tensor[] comes back as a list of opreg.Tensor: %r" % (xs,))
check(ys[0] is None and isinstance(ys[1], opreg.Tensor) and ys[1].shape == (2,),
      "Tensor?[] keeps its None: %r" % (ys,))

# ---- _C_custom_ar, as vLLM's first TORCH_LIBRARY ops used it -----------------------

ar = ops._C_custom_ar
check(ar.meta_size() > 0, "meta_size returns an int")
meta, rank_data = dl.Buffer([0.0] * 4, (4,)), dl.Buffer([0.0] * 4, (4,))
fa = ar.init_custom_ar(meta, rank_data, ["h0", handle_bytes], [0, 64], 1, True)
check(isinstance(fa, int) and fa != 0, "init_custom_ar returns the state's handle")
raises(lambda: ar.init_custom_ar(meta, rank_data, ["h0"], [0, 64], 0, True), opreg.Error,
       ["handles and offsets differ in length"])
inp, out = dl.Buffer([1.0, 2.0, 3.0, 4.0], (4,)), dl.Buffer([0.0] * 4, (4,))
check(ar.should_custom_ar(inp, 1 << 20, 2, False) is True, "16 bytes on two ranks: custom")
check(ar.should_custom_ar(inp, 8, 2, False) is False, "above max_size: not custom")
ar.all_reduce_reg(fa, inp, out)
check(out.tolist() == [1.0, 2.0, 3.0, 4.0], "all_reduce_reg over one rank copies")
ar.register_buffer(fa, inp, ["b0", "b1"], [16, 32])
check(ar.get_graph_buffer_ipc_meta(fa) == (["b0", "b1"], [16, 32]),
      "get_graph_buffer_ipc_meta returns (str[], int[]) as a tuple")
ar.register_graph_buffers(fa, ["g0", handle_bytes], [[0, 8], [16]])
state = ops.values_test.custom_ar_state(fa)
check(state == (["h0", handle_bytes], [0, 64], 1, True, ["g0", handle_bytes], [[0, 8], [16]]),
      "every value init_custom_ar and register_graph_buffers got: %r" % (state,))
raises(lambda: ar.register_graph_buffers(fa, ["g0"], [[0], [1]]), opreg.Error,
       ["one offset list per handle"])
ar.dispose(fa)
raises(lambda: ar.dispose(0), opreg.Error, ["fa is 0"])

# ---- _c10d_functional on a group of one rank ------------------------------------------

c10d = ops._c10d_functional
x = dl.Buffer([2.0, 3.0], (2,))
y = c10d.all_reduce(x, "sum", "test_world")
check(isinstance(y, opreg.Tensor) and y.shape == (2,), "all_reduce returns a tensor")
ys = c10d.all_reduce_coalesced([x, x], "avg", "test_world")
check(isinstance(ys, list) and len(ys) == 2, "all_reduce_coalesced returns a list")
o = dl.Buffer([0.0, 0.0], (2,))
c10d.all_gather_into_tensor_out(x, 1, "test_world", out=o)
check(o.tolist() == [2.0, 3.0], "all_gather_into_tensor_out fills out")
c10d.all_to_all_single(x, [2], [2], "test_world")
check(len(c10d.batch_p2p_ops(["isend"], [0], [0], [x], "test_world")) == 1, "batch_p2p_ops")
check(isinstance(c10d.wait_tensor(x), opreg.Tensor), "wait_tensor")
raises(lambda: c10d.all_reduce(x, "sum", "world8"), opreg.Error, ["no group named 'world8'"])
raises(lambda: c10d.broadcast(x, 1, "test_world"), opreg.Error, ["peer rank must be 0"])
raises(lambda: c10d.all_reduce(x, "median", "test_world"), opreg.Error, ["reduce_op"])

del y, ys, xs
gc.collect()
check(dl.live_exports() == 0, "every export was released (%d live)" % dl.live_exports())

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("all passed")
