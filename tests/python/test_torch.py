"""Every float op of opreg's catalogue, called on torch tensors through
DLPack, against the same computation written with plain torch ops here.
Skips (77) when torch is absent."""

import math
import os
import sys

try:
    import torch
except ImportError:
    print("skip: torch is not installed for", sys.executable)
    sys.exit(77)

import opreg

C = opreg.ops._C
torch.manual_seed(0)
failures = []
TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)}
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def same(got, want, what, dtype=torch.float32, scale=1.0):
    rtol, atol = TOL[dtype]
    got, want = got.double(), want.double()
    ok = got.shape == want.shape and torch.allclose(got, want, rtol=rtol, atol=atol * scale)
    if not ok:
        err = (got - want).abs().max().item() if got.shape == want.shape else "shape"
        what = "%s: max error %s (shapes %s, %s)" % (what, err, tuple(got.shape), tuple(want.shape))
    check(ok, what)
    return ok


def rnd(*shape, dtype=torch.float32, lo=-1.0, hi=1.0):
    return (torch.rand(*shape, dtype=torch.float32) * (hi - lo) + lo).to(dtype)


def run(name, fn):
    try:
        fn()
        print("ok  ", name)
    except Exception as e:  # noqa: BLE001
        failures.append(name)
        print("FAIL:", name, type(e).__name__, e)


print("torch", torch.__version__, "python", sys.version.split()[0])
ops_seen = set()


def op(name):
    ops_seen.add("_C::" + name)
    return getattr(C, name)


# ---- norms ------------------------------------------------------------------


def t_rms_norm():
    for dt in DTYPES:
        x, w = rnd(7, 96, dtype=dt), rnd(96, dtype=dt, lo=0.5, hi=1.5)
        out = torch.empty_like(x)
        op("rms_norm")(out, x, w, 1e-6)
        xf = x.float()
        want = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(dt) * w
        same(out, want, "rms_norm %s" % dt, dt)
        out2 = torch.zeros_like(x)
        op("rms_norm")(out=out2, input=x, weight=w, epsilon=1e-6)
        check(torch.equal(out, out2), "rms_norm by keywords")


def t_fused_add_rms_norm():
    for dt in DTYPES:
        x, r, w = rnd(5, 64, dtype=dt), rnd(5, 64, dtype=dt), rnd(64, dtype=dt, lo=0.5, hi=1.5)
        z = (x.float() + r.float()).to(dt)
        zf = z.float()
        want = (zf * torch.rsqrt(zf.pow(2).mean(-1, keepdim=True) + 1e-5)).to(dt) * w
        op("fused_add_rms_norm")(x, r, w, 1e-5)
        same(r, z, "fused_add_rms_norm residual %s" % dt, dt)
        same(x, want, "fused_add_rms_norm %s" % dt, dt)


# ---- activations --------------------------------------------------------------

GATED = {
    "silu_and_mul": lambda x: torch.nn.functional.silu(x),
    "gelu_and_mul": lambda x: torch.nn.functional.gelu(x),
    "gelu_tanh_and_mul": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
}
ELEMENTWISE = {
    "gelu_new": lambda x: 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x.pow(3)))),
    "gelu_fast": lambda x: 0.5 * x * (1 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))),
    "gelu_quick": lambda x: x * torch.sigmoid(1.702 * x),
}


def t_activations():
    for dt in DTYPES:
        for name, f in GATED.items():
            x = rnd(6, 2 * 40, dtype=dt, lo=-3, hi=3)
            out = torch.empty(6, 40, dtype=dt)
            op(name)(out, x)
            xf = x.float()
            same(out, (f(xf[:, :40]).to(dt).float() * xf[:, 40:]), "%s %s" % (name, dt), dt, 3)
        for name, f in ELEMENTWISE.items():
            x = rnd(6, 50, dtype=dt, lo=-3, hi=3)
            out = torch.empty_like(x)
            op(name)(out, x)
            same(out, f(x.float()), "%s %s" % (name, dt), dt, 3)


# ---- rotary -------------------------------------------------------------------


def rope_ref(pos, q, k, hs, cache, neox, rot):
    half = rot // 2
    out = []
    for t in (q.clone().float(), k.clone().float()):
        T = t.shape[0]
        th = t.view(T, -1, hs)
        cs = cache[pos].float()  # [T, rot]
        cos, sin = cs[:, :half].unsqueeze(1), cs[:, half:].unsqueeze(1)
        if neox:
            x, y = th[..., :half].clone(), th[..., half:rot].clone()
            th[..., :half] = x * cos - y * sin
            th[..., half:rot] = y * cos + x * sin
        else:
            x, y = th[..., 0:rot:2].clone(), th[..., 1:rot:2].clone()
            th[..., 0:rot:2] = x * cos - y * sin
            th[..., 1:rot:2] = y * cos + x * sin
        out.append(th.view(T, -1))
    return out


def rope_cache(maxp, rot):
    inv = 1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))
    f = torch.outer(torch.arange(maxp).float(), inv)
    return torch.cat([f.cos(), f.sin()], -1)


def t_rotary():
    for dt in DTYPES:
        for neox in (True, False):
            T, nh, nkv, hs, rot, maxp = 5, 4, 2, 32, 16, 64
            pos = torch.randint(0, maxp, (T,), dtype=torch.int64)
            q, k = rnd(T, nh * hs, dtype=dt), rnd(T, nkv * hs, dtype=dt)
            cache = rope_cache(maxp, rot).to(dt)
            wq, wk = rope_ref(pos, q, k, hs, cache, neox, rot)
            op("rotary_embedding")(pos, q, k, hs, cache, neox)
            same(q, wq, "rotary query %s neox=%s" % (dt, neox), dt, 2)
            same(k, wk, "rotary key %s neox=%s" % (dt, neox), dt, 2)
            # batched: row = offsets[t] + positions[t], the cache holding two tables
            q, k = rnd(T, nh * hs, dtype=dt), rnd(T, nkv * hs, dtype=dt)
            cache2 = torch.cat([cache, rope_cache(maxp, rot).mul(0.5).to(dt)])
            offs = torch.randint(0, 2, (T,), dtype=torch.int64) * maxp
            wq, wk = rope_ref(pos + offs, q, k, hs, cache2, neox, rot)
            op("batched_rotary_embedding")(pos, q, k, hs, cache2, neox, rot, offs)
            same(q, wq, "batched rotary query %s" % dt, dt, 2)
            same(k, wk, "batched rotary key %s" % dt, dt, 2)


# ---- KV cache -------------------------------------------------------------------


def t_reshape_and_cache():
    for dt in DTYPES:
        T, H, D, nblk, bs = 6, 2, 16, 4, 4
        x = 16 // torch.tensor([], dtype=dt).element_size()
        key, value = rnd(T, H, D, dtype=dt), rnd(T, H, D, dtype=dt)
        kc = torch.zeros(nblk, H, D // x, bs, x, dtype=dt)
        vc = torch.zeros(nblk, H, D, bs, dtype=dt)
        slots = torch.randperm(nblk * bs)[:T].to(torch.int64)
        slots[2] = -1  # padding: skipped
        wk, wv = kc.clone(), vc.clone()
        for t in range(T):
            s = int(slots[t])
            if s < 0:
                continue
            b, o = divmod(s, bs)
            for d in range(D):
                wk[b, :, d // x, o, d % x] = key[t, :, d]
                wv[b, :, d, o] = value[t, :, d]
        op("reshape_and_cache")(key, value, kc, vc, slots, "auto", 1.0)
        check(torch.equal(kc, wk) and torch.equal(vc, wv), "reshape_and_cache %s" % dt)
        kf, vf = torch.zeros(nblk, bs, H, D, dtype=dt), torch.zeros(nblk, bs, H, D, dtype=dt)
        wkf, wvf = kf.clone(), vf.clone()
        for t in range(T):
            s = int(slots[t])
            if s >= 0:
                wkf[s // bs, s % bs], wvf[s // bs, s % bs] = key[t], value[t]
        op("reshape_and_cache_flash")(key, value, kf, vf, slots, "auto")
        check(torch.equal(kf, wkf) and torch.equal(vf, wvf), "reshape_and_cache_flash %s" % dt)


def t_copy_swap_blocks():
    for dt in DTYPES:
        kcs = [rnd(5, 3, 8, dtype=dt) for _ in range(2)]
        vcs = [rnd(5, 3, 8, dtype=dt) for _ in range(2)]
        mapping = torch.tensor([[0, 3], [2, 4]], dtype=torch.int64)
        wk = [t.clone() for t in kcs]
        wv = [t.clone() for t in vcs]
        for s, d in mapping.tolist():
            for t in wk + wv:
                t[d] = t[s]
        op("copy_blocks")(kcs, vcs, mapping)
        check(all(torch.equal(a, b) for a, b in zip(kcs + vcs, wk + wv)), "copy_blocks %s" % dt)
        src, dst = rnd(4, 3, 8, dtype=dt), rnd(4, 3, 8, dtype=dt)
        m = torch.tensor([[1, 0], [3, 2]], dtype=torch.int64)
        want = dst.clone()
        want[0], want[2] = src[1], src[3]
        op("swap_blocks")(src, dst, m)
        check(torch.equal(dst, want), "swap_blocks %s" % dt)


# ---- quantisation -------------------------------------------------------------


def t_int8_quant():
    for dt in DTYPES:
        x = rnd(4, 33, dtype=dt, lo=-2, hi=2)
        scale = torch.tensor([0.0123], dtype=torch.float32)
        out = torch.empty(4, 33, dtype=torch.int8)
        op("static_scaled_int8_quant")(out, x, scale)
        want = torch.round(x.float() / scale).clamp(-128, 127).to(torch.int8)
        check((out.int() - want.int()).abs().max().item() <= 1, "static int8 %s" % dt)
        check((out == want).float().mean().item() > 0.97, "static int8 mostly exact %s" % dt)
        out = torch.empty(4, 33, dtype=torch.int8)
        sc = torch.empty(4, 1, dtype=torch.float32)
        op("dynamic_scaled_int8_quant")(out, x, sc)
        amax = x.float().abs().amax(-1, keepdim=True)
        same(sc, amax / 127, "dynamic int8 scales %s" % dt)
        want = torch.round(x.float() * (127 / amax)).clamp(-128, 127).to(torch.int8)
        check((out.int() - want.int()).abs().max().item() <= 1, "dynamic int8 %s" % dt)


def t_fp8_quant():
    if not hasattr(torch, "float8_e4m3fn"):
        print("     (fp8 quantisation: this torch has no float8 dtype; checked by the C tests)")
        ops_seen.update({"_C::static_scaled_fp8_quant", "_C::dynamic_scaled_fp8_quant"})
        return
    x = rnd(4, 32, lo=-3, hi=3)
    scale = torch.tensor([0.02], dtype=torch.float32)
    out = torch.empty(4, 32, dtype=torch.float8_e4m3fn)
    op("static_scaled_fp8_quant")(out, x, scale)
    want = (x * (1 / scale)).clamp(-448, 448).to(torch.float8_e4m3fn)
    check(torch.equal(out.float(), want.float()), "static fp8")
    sc = torch.zeros(1, dtype=torch.float32)
    op("dynamic_scaled_fp8_quant")(out, x, sc)
    same(sc, x.abs().max().reshape(1) / 448, "dynamic fp8 scale")


# ---- MoE ------------------------------------------------------------------------


def t_topk_softmax():
    for dt in DTYPES:
        T, E, K = 6, 8, 2
        g = rnd(T, E, dtype=dt, lo=-2, hi=2)
        wts = torch.empty(T, K, dtype=torch.float32)
        idx = torch.empty(T, K, dtype=torch.int32)
        tok = torch.empty(T, K, dtype=torch.int32)
        op("topk_softmax")(wts, idx, tok, g)
        p = torch.softmax(g.float(), -1)
        wv, wi = torch.topk(p, K, -1)
        same(wts, wv, "topk_softmax weights %s" % dt)
        check(torch.equal(idx.long(), wi), "topk_softmax indices %s" % dt)
        want_tok = (torch.arange(K).unsqueeze(0) * T + torch.arange(T).unsqueeze(1)).int()
        check(torch.equal(tok, want_tok), "topk_softmax token_expert_indices")


def t_moe_align():
    topk = torch.tensor([[2, 3, 0], [1, 2, 0], [1, 3, 0], [1, 2, 3]], dtype=torch.int32)
    cap = 12 + 4 * 3
    sorted_ids = torch.full((cap,), 12, dtype=torch.int32)
    eids = torch.zeros(cap // 4, dtype=torch.int32)
    npad = torch.zeros(1, dtype=torch.int32)
    op("moe_align_block_size")(topk, 4, 4, sorted_ids, eids, npad)
    check(npad.tolist() == [16] and sorted_ids[:16].tolist() ==
          [2, 5, 8, 12, 3, 6, 9, 12, 0, 4, 10, 12, 1, 7, 11, 12], "moe_align_block_size")


# ---- attention ------------------------------------------------------------------


def t_paged_attention():
    for dt in DTYPES:
        S, Hq, Hkv, D, bs, nblk = 3, 4, 2, 16, 4, 12
        x = 16 // torch.tensor([], dtype=dt).element_size()
        q = rnd(S, Hq, D, dtype=dt)
        kc = rnd(nblk, Hkv, D // x, bs, x, dtype=dt)
        vc = rnd(nblk, Hkv, D, bs, dtype=dt)
        lens = torch.tensor([5, 1, 9], dtype=torch.int32)
        maxb = 3
        bt = torch.randperm(nblk)[: S * maxb].reshape(S, maxb).to(torch.int32)
        scale = 1 / math.sqrt(D)
        alibi = torch.tensor([0.0, -0.1, 0.2, -0.3], dtype=torch.float32)
        for slopes in (None, alibi):
            out = torch.empty_like(q)
            op("paged_attention_v1")(out, q, kc, vc, Hkv, scale, bt, lens, bs, 9, slopes, "auto",
                                     1.0, 0, 0, 0, 64, 0)
            want = torch.empty(S, Hq, D, dtype=torch.float64)
            for s in range(S):
                L = int(lens[s])
                for h in range(Hq):
                    kh = h // (Hq // Hkv)
                    ks, vs = [], []
                    for j in range(L):
                        b, o = int(bt[s, j // bs]), j % bs
                        ks.append(kc[b, kh, :, o, :].reshape(D))
                        vs.append(vc[b, kh, :, o])
                    K_, V_ = torch.stack(ks).double(), torch.stack(vs).double()
                    logit = scale * (K_ @ q[s, h].double())
                    if slopes is not None:
                        logit += slopes[h].double() * (torch.arange(L).double() - L + 1)
                    want[s, h] = torch.softmax(logit, 0) @ V_
            same(out, want, "paged_attention_v1 %s alibi=%s" % (dt, slopes is not None), dt, 2)


# ---- GEMMs ------------------------------------------------------------------------


def t_cutlass_scaled_mm():
    M, K, N = 5, 32, 6
    a = torch.randint(-20, 20, (M, K), dtype=torch.int8)
    bt = torch.randint(-20, 20, (N, K), dtype=torch.int8)
    b = bt.t()  # [K, N], column-major, as the op wants
    sa = torch.rand(M, 1, dtype=torch.float32) * 0.1
    sb = torch.rand(1, N, dtype=torch.float32) * 0.1
    for dt in (torch.float32, torch.bfloat16):  # the CPU kernel writes f32 and bf16
        bias = rnd(N, dtype=dt)
        acc = a.double() @ b.double()
        want = sa.double() * acc * sb.double()
        out = torch.empty(M, N, dtype=dt)
        op("cutlass_scaled_mm")(out, a, b, sa, sb, None)
        same(out, want, "cutlass_scaled_mm %s" % dt, dt, 8)
        out = torch.empty(M, N, dtype=dt)
        op("cutlass_scaled_mm")(out, a, b, sa.mean().reshape(1), sb, bias)
        same(out, sa.mean().double() * acc * sb.double() + bias.double(), "cutlass_scaled_mm bias",
             dt, 8)


def t_linear():
    # f32 and bf16 run on oneDNN; f16 on the portable kernel (docs/ops.md)
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        x, w, b = rnd(4, 48, dtype=dt), rnd(10, 48, dtype=dt), rnd(10, dtype=dt)
        y = op("linear")(x, w, b)
        got = torch.from_dlpack(y)
        check(got.dtype == dt and got.shape == (4, 10), "linear result %s %s" % (got.dtype, got.shape))
        same(got, x.double() @ w.double().t() + b.double(), "linear %s" % dt, dt, 4)
        y2 = op("linear")(x, w)
        same(torch.from_dlpack(y2), x.double() @ w.double().t(), "linear without bias %s" % dt, dt, 4)
        del y  # torch's tensor keeps the memory
        same(got, x.double() @ w.double().t() + b.double(), "linear after the owner went", dt, 4)


def t_errors():
    x = torch.randn(3, 8)
    out = torch.empty(3, 8)
    try:
        C.rms_norm(out, x, torch.randn(7), 1e-6)
        check(False, "a mismatched weight is refused")
    except opreg.Error as e:
        check("weight" in str(e) and e.status_name == "OPREG_ERR_SHAPE", "weight error: %s" % e)
    # A tensor that requires grad is lent to the kernel, as torch's own C++
    # ops read one (through the exchange API on torch 2.10 and later, through
    # torch._C._to_dlpack before); opreg records nothing for autograd.
    C.rms_norm(out, x.requires_grad_(), torch.ones(8), 1e-6)
    check(torch.isfinite(out).all(), "an input that requires grad")
    check(opreg.is_op_supported("_C::rms_norm", torch.device("cpu")), "a torch.device")


# ---- how torch tensors are read ---------------------------------------------

OPREG_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                torch.float32, torch.float64, torch.bool, torch.bfloat16) + tuple(
    getattr(torch, n) for n in ("float8_e5m2", "float8_e4m3fn") if hasattr(torch, n))


def info_or_error(t):
    try:
        return opreg._opreg.tensor_info(t)
    except opreg.Error as e:
        return "error: %s" % str(e).split("\n")[0]


def t_reading():
    """Plain torch tensors are read directly once the first few tensors
    read both ways agreed: through torch's C accessors where torch has the
    exchange API (2.10 and later), from the TensorImpl's fields on torch
    1.13. Every tensor must then be described as the path it replaces
    describes it (the exchange API, or torch._C._to_dlpack), and as torch
    itself does."""
    _opreg = opreg._opreg
    state = _opreg.torch_direct()
    exchange = hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
    known = exchange or torch.__version__.startswith("1.13.")
    check(state == ("on" if known else "unavailable"),
          "torch %s: the direct path is %s" % (torch.__version__, state))
    base = torch.arange(4 * 6 * 5, dtype=torch.float32)
    layouts = {
        "contiguous": lambda dt: torch.zeros(4, 6, dtype=dt),
        "transposed": lambda dt: torch.zeros(6, 4, dtype=dt).t(),
        "offset": lambda dt: torch.zeros(40, dtype=dt)[3:].view(37)[2:29].view(3, 9),
        "expanded": lambda dt: torch.zeros(1, 5, dtype=dt).expand(3, 5),
        "size-1 dims": lambda dt: torch.zeros(5, 1, 4, dtype=dt).transpose(0, 1)[:, :, 1:2],
        "empty": lambda dt: torch.zeros(0, 5, dtype=dt),
        "0-dim": lambda dt: torch.zeros((), dtype=dt),
        "6 dims": lambda dt: torch.zeros((2, 3, 1, 2, 1, 2), dtype=dt).transpose(1, 5),
        "9 dims": lambda dt: torch.zeros((2,) * 9, dtype=dt),
        "Parameter": lambda dt: torch.nn.Parameter(torch.zeros(2, 3, dtype=dt), requires_grad=False),
        "view of a view": lambda dt: base.to(dt).view(4, 6, 5)[1:, ::2, 3],
    }
    for dt in OPREG_DTYPES:
        if dt == torch.bool and not exchange:
            continue  # torch 1.x's DLPack export has no bool
        for lname, make in layouts.items():
            t = make(dt)
            what = "%s %s" % (lname, dt)
            got = info_or_error(t)
            check(not isinstance(got, str), "%s refused: %s" % (what, got))
            if isinstance(got, str):
                continue
            data, shape, strides = got[0], got[1], got[2]
            check(shape == tuple(t.shape), "%s: shape %s" % (what, shape))
            check(t.numel() == 0 or data == t.data_ptr(), "%s: data" % what)
            # torch 1.13's DLPack export sets the stride of a dim of size 0 or 1 to 1
            check(all(a == b for a, b, n in zip(strides, t.stride(), t.shape) if n > 1),
                  "%s: strides %s, torch says %s" % (what, strides, t.stride()))
            if state == "on":
                _opreg.torch_direct(False)
                theirs = info_or_error(t)
                _opreg.torch_direct(True)
                check(theirs == got, "%s: read directly %s, through the exchange API %s"
                      % (what, got, theirs))
    # Switching the path on again checks it again.
    if state == "on":
        _opreg.torch_direct(False)
        check(_opreg.torch_direct() == "off", "switched off")
        _opreg.torch_direct(True)
        for _ in range(8):
            _opreg.tensor_info(torch.zeros(2))
        check(_opreg.torch_direct() == "on", "on again after the checks: %s" % _opreg.torch_direct())
    # What the direct path cannot describe goes through the exchange API (or
    # torch._C._to_dlpack), which reads it or refuses it with its own
    # reason, path on or off: other TensorImpl classes (sparse, quantized,
    # mkldnn), other devices and dtypes, and tensors of other dispatch key
    # sets (inference mode, a negated view), which the fields' path checks
    # once more before it reads them alone.
    odd = {"sparse": lambda: torch.zeros(3, 3).to_sparse(),
           "meta": lambda: torch.empty(3, 3, device="meta"),
           "complex": lambda: torch.zeros(3, dtype=torch.complex64),
           "bool": lambda: torch.zeros(3, dtype=torch.bool),
           "quantized": lambda: torch.quantize_per_tensor(torch.ones(3), 0.5, 0, torch.qint8),
           "mkldnn": lambda: torch.ones(3).to_mkldnn(),
           "negated view": lambda: torch._neg_view(torch.arange(4.0)),
           "requires grad": lambda: torch.ones(2, 3, requires_grad=True)}
    with torch.inference_mode():
        made = torch.arange(6.0).view(2, 3)[:, 1:]
    odd["inference mode"] = lambda: made
    for oname, make in odd.items():
        try:
            t = make()
        except RuntimeError as e:  # a build of torch without mkldnn
            print("  (%s: %s)" % (oname, str(e).splitlines()[0]))
            continue
        # A new kind is checked on its first read, then read alone.
        first, second = info_or_error(t), info_or_error(t)
        _opreg.torch_direct(False)
        off = info_or_error(t)
        _opreg.torch_direct(True)
        for _ in range(8):
            _opreg.tensor_info(torch.zeros(2))
        check(first == off and second == off,
              "%s: %s, then %s with the direct path, %s without" % (oname, first, second, off))
    check(_opreg.torch_direct() == state, "still %s after the odd tensors" % state)
    # Nothing about a tensor is remembered: changes in place are seen.
    x, w, out = torch.randn(2, 8), torch.ones(8), torch.empty(2, 8)
    C.rms_norm(out, x, w, 1e-6)
    out.resize_(4, 8)
    x.resize_(4, 8).normal_()
    C.rms_norm(out, x, w, 1e-6)
    same(out, x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6), "after resize_")
    xt = torch.randn(8, 3)
    xt.t_()
    check(opreg._opreg.tensor_info(xt)[2] == (1, 3), "after t_()")
    check(opreg._opreg.tensor_info(xt)[1] == (3, 8), "shape after t_()")

    class Sub(torch.Tensor):
        pass

    s = torch.randn(3, 8).as_subclass(Sub)
    C.rms_norm(out[:3], s, w, 1e-6)
    plain = torch.Tensor(s)
    same(out[:3], plain * torch.rsqrt(plain.pow(2).mean(-1, keepdim=True) + 1e-6), "a subclass")


for name, fn in list(globals().items()):
    if name.startswith("t_") and callable(fn):
        run(name[2:], fn)

float_ops = {n for n in opreg.list_ops() if n.startswith("_C::")}
missing = sorted(float_ops - ops_seen)
check(not missing, "ops of the catalogue not cross-checked: %s" % missing)
if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
