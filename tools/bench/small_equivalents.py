"""PyTorch-written equivalents of the catalogue's ops that bench_small.py
does not write out by hand, on the inputs `opreg run` builds
(opreg._opreg.example_inputs), at the sizes of `opreg bench small`.

Each equivalent takes the op's arguments as torch tensors (sharing memory
with opreg's) and does what a PyTorch program without opreg would: the
quantisations and topk_softmax return new tensors, the cache, rotary and
attention ops write into the tensors they are given. Before a case is
timed, both sides run once on copies of the inputs and their results are
compared, so a figure is never of a torch version that computes something
else.
"""

import torch
import torch.nn.functional as F

import opreg
from opreg import _opreg

FP8_MAX = 448.0

# (case, op, shape format, sizes, what the size counts); the shapes are the
# ones bench_small.c gives `opreg bench small`.
TOKENS = (1, 16, 256)
CASES = [
    ("gelu_fast", "gelu_fast", "tokens=%d,hidden=4096", TOKENS, "tokens"),
    ("rotary_embedding", "rotary_embedding",
     "tokens=%d,heads=32,kv_heads=8,head_size=128,max_pos=4096", TOKENS, "tokens"),
    ("batched_rotary_embedding", "batched_rotary_embedding",
     "tokens=%d,heads=32,kv_heads=8,head_size=128,max_pos=4096", TOKENS, "tokens"),
    ("dynamic_scaled_int8_quant", "dynamic_scaled_int8_quant", "tokens=%d,hidden=4096", TOKENS,
     "tokens"),
    ("static_scaled_fp8_quant", "static_scaled_fp8_quant", "tokens=%d,hidden=4096", TOKENS,
     "tokens"),
    ("dynamic_scaled_fp8_quant", "dynamic_scaled_fp8_quant", "tokens=%d,hidden=4096", TOKENS,
     "tokens"),
    ("reshape_and_cache", "reshape_and_cache",
     "tokens=%d,kv_heads=8,head_size=128,blocks=512,block_size=16", TOKENS, "tokens"),
    ("reshape_and_cache_flash", "reshape_and_cache_flash",
     "tokens=%d,kv_heads=8,head_size=128,blocks=512,block_size=16", TOKENS, "tokens"),
    ("topk_softmax", "topk_softmax", "tokens=%d,experts=64,topk=8", TOKENS, "tokens"),
    ("moe_align_block_size", "moe_align_block_size",
     "tokens=%d,topk=8,experts=64,block_size=16", TOKENS, "tokens"),
    ("cutlass_scaled_mm_int8", "cutlass_scaled_mm",
     "tokens=%d,hidden=4096,out_features=4096,per_token=1,per_channel=1", TOKENS, "tokens"),
    ("copy_blocks", "copy_blocks",
     "layers=2,pairs=%d,kv_heads=8,head_size=128,blocks=512,block_size=16", (1, 16, 64), "pairs"),
    ("swap_blocks", "swap_blocks", "pairs=%d,kv_heads=8,head_size=128,blocks=512,block_size=16",
     (1, 16, 64), "pairs"),
    ("paged_attention_v1_len128", "paged_attention_v1",
     "seqs=%d,heads=32,kv_heads=8,head_size=128,max_seq_len=128,block_size=16", (1, 4, 16),
     "seqs"),
    ("paged_attention_v1_len2048", "paged_attention_v1",
     "seqs=%d,heads=32,kv_heads=8,head_size=128,max_seq_len=2048,block_size=16", (1, 4, 16),
     "seqs"),
]


# ---- the equivalents ----------------------------------------------------------


def gelu_fast(out, x):
    return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))


def _rope(q, k, head_size, cs, neox):
    """Rotate q and k in place by the rows `cs` of the cos/sin cache."""
    rot = cs.shape[-1]
    cos, sin = cs.chunk(2, dim=-1)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    for t in (q, k):
        r = t.view(t.shape[0], -1, head_size)[..., :rot]
        if neox:
            x1, x2 = r[..., :rot // 2], r[..., rot // 2:]
            r.copy_(torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1))
        else:
            x1, x2 = r[..., 0::2], r[..., 1::2]
            r.copy_(torch.stack((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).flatten(-2))


def rotary_embedding(positions, q, k, head_size, cache, neox):
    _rope(q, k, head_size, cache[positions], neox)


def batched_rotary_embedding(positions, q, k, head_size, cache, neox, rot_dim, offsets):
    _rope(q, k, head_size, cache[positions + offsets][..., :rot_dim], neox)


def dynamic_scaled_int8_quant(out, x, scale):
    s = x.float().abs().amax(dim=-1, keepdim=True) / 127.0
    return torch.round(x.float() / s).clamp(-128, 127).to(torch.int8), s


def static_scaled_fp8_quant(out, x, scale):
    return (x.float() / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


def dynamic_scaled_fp8_quant(out, x, scale):
    s = (x.float().abs().amax() / FP8_MAX).reshape(1)
    return (x.float() / s).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn), s


def reshape_and_cache(key, value, key_cache, value_cache, slots, kv_dtype, kv_scale):
    keep = slots >= 0  # slot -1: a padding token, not cached
    key, value, slots = key[keep], value[keep], slots[keep]
    t, heads, head_size = key.shape[0], key_cache.shape[1], value_cache.shape[2]
    block_size, x = key_cache.shape[3], key_cache.shape[4]
    block, offset = slots // block_size, slots % block_size
    key_cache[block, :, :, offset, :] = key.reshape(t, heads, head_size // x, x)
    value_cache[block, :, :, offset] = value.reshape(t, heads, head_size)


def reshape_and_cache_flash(key, value, key_cache, value_cache, slots, kv_dtype):
    keep = slots >= 0
    key, value, slots = key[keep], value[keep], slots[keep]
    heads, head_size = key_cache.shape[2], key_cache.shape[3]
    key_cache.view(-1, heads, head_size).index_copy_(0, slots, key.reshape(-1, heads, head_size))
    value_cache.view(-1, heads, head_size).index_copy_(0, slots,
                                                       value.reshape(-1, heads, head_size))


def topk_softmax(weights, indices, token_expert_indices, gating):
    w, i = torch.softmax(gating.float(), dim=-1).topk(weights.shape[-1], dim=-1)
    return w, i.to(torch.int32)


def moe_align_block_size(topk_ids, num_experts, block_size, sorted_ids, expert_ids, post_pad):
    flat = topk_ids.flatten().long()
    n = flat.numel()
    counts = torch.bincount(flat, minlength=num_experts)
    padded = (counts + block_size - 1) // block_size * block_size
    ends = torch.cumsum(padded, 0)
    first = torch.cumsum(counts, 0) - counts
    order = torch.argsort(flat, stable=True)
    expert = flat[order]
    pos = ends[expert] - padded[expert] + torch.arange(n) - first[expert]
    sorted_ids.fill_(n)
    sorted_ids[pos] = order.to(sorted_ids.dtype)
    blocks = torch.repeat_interleave(torch.arange(num_experts, dtype=expert_ids.dtype),
                                     padded // block_size)
    expert_ids[:blocks.numel()] = blocks
    post_pad.fill_(int(ends[-1]))


def cutlass_scaled_mm(out, a, b, a_scales, b_scales, bias):
    acc = torch._int_mm(a, b) if hasattr(torch, "_int_mm") else a.float() @ b.float()
    r = acc.float() * a_scales.view(-1, 1) * b_scales.view(1, -1)
    if bias is not None:
        r = r + bias.float()
    return r.to(out.dtype)


def copy_blocks(key_caches, value_caches, mapping):
    src, dst = mapping[:, 0], mapping[:, 1]
    for c in list(key_caches) + list(value_caches):
        c[dst] = c[src]


def swap_blocks(src, dst, mapping):
    dst[mapping[:, 1]] = src[mapping[:, 0]]


def _attend(q, k, v, scale):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, scale=scale)
    return torch.softmax((q.float() @ k.float().transpose(-1, -2)) * scale, dim=-1).to(v.dtype) @ v


def paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, scale, block_tables,
                       seq_lens, block_size, max_seq_len, alibi, kv_dtype, kv_scale, *rest,
                       lens=None):
    """One scaled_dot_product_attention per sequence over its gathered blocks
    (the way PyTorch code without a paged kernel does it)."""
    heads, head_size = query.shape[1], query.shape[2]
    group = heads // num_kv_heads
    for s, n in enumerate(lens):
        nb = (n + block_size - 1) // block_size
        blocks = block_tables[s, :nb].long()
        k = key_cache[blocks].permute(1, 0, 3, 2, 4).reshape(num_kv_heads, nb * block_size,
                                                             head_size)[:, :n]
        v = value_cache[blocks].permute(1, 0, 3, 2).reshape(num_kv_heads, nb * block_size,
                                                            head_size)[:, :n]
        q = query[s].view(num_kv_heads, group, head_size)
        out[s].view(num_kv_heads, group, head_size).copy_(_attend(q, k, v, scale))


# ---- cases ----------------------------------------------------------------------


def _torch(v):
    if isinstance(v, opreg.Tensor):
        return torch.from_dlpack(v)
    if isinstance(v, list):
        return [_torch(x) for x in v]
    return v


def _clone(args):
    return [a.clone() if isinstance(a, torch.Tensor) else
            [x.clone() for x in a] if isinstance(a, list) else a for a in args]


def _close(got, want, what):
    """None, or why `got` (torch's) differs from `want` (opreg's)."""
    if got.shape != want.shape:
        return "%s: shape %s, opreg %s" % (what, tuple(got.shape), tuple(want.shape))
    if got.dtype in (torch.int8, torch.int32, torch.int64):
        d = (got.long() - want.long()).abs().max().item() if got.numel() else 0
        return None if d <= (1 if got.dtype == torch.int8 else 0) else "%s: off by %d" % (what, d)
    g, w = got.double(), want.double()
    rtol = 0.13 if got.dtype == getattr(torch, "float8_e4m3fn", None) else 2e-2
    bad = (g - w).abs() > 2e-2 * max(1.0, w.abs().max().item()) + rtol * w.abs()
    return "%s: %d values differ" % (what, int(bad.sum())) if bad.any() else None


def _check(name, op, fn, args, kw, written):
    mine, theirs = _clone(args), _clone(args)
    op(*mine)
    got = fn(*theirs, **kw)
    if name == "moe_align_block_size":
        return _check_moe(mine, theirs)
    if name == "topk_softmax":
        # bf16 gating values tie often: equal weights may come with either
        # expert, so the experts are compared by their gating values.
        gating = args[3].float()
        got = (got[0], gating.gather(1, got[1].long()))
        mine = [mine[0], gating.gather(1, mine[1].long())]
        written = [0, 1]
    if got is not None:
        got = got if isinstance(got, tuple) else (got,)
        pairs = zip(got, (mine[i] for i in written))
    else:
        pairs = ((theirs[i], mine[i]) for i in written)
    for k, (g, w) in enumerate(pairs):
        for gg, ww in zip(g if isinstance(g, list) else [g], w if isinstance(w, list) else [w]):
            why = _close(gg, ww, "%s output %d" % (name, k))
            if why:
                return why
    return None


def _check_moe(mine, theirs):
    """The padded count and the expert of each block must agree; the token
    ids of one expert's blocks may come in another order."""
    n_pad = int(mine[5][0])
    if n_pad != int(theirs[5][0]):
        return "moe_align_block_size: %d padded tokens, opreg %d" % (int(theirs[5][0]), n_pad)
    bs = mine[2]
    if not torch.equal(mine[4][:n_pad // bs], theirs[4][:n_pad // bs]):
        return "moe_align_block_size: expert ids differ"
    a, b = mine[3][:n_pad].view(-1, bs), theirs[3][:n_pad].view(-1, bs)
    if not torch.equal(a.sort(dim=1).values, b.sort(dim=1).values):
        return "moe_align_block_size: token ids differ"
    return None


def catalogue_cases(wanted):
    """(name, size, unit, opreg call, torch call) for every case of CASES
    that `wanted` (a set of names; empty: all) asks for; (name, size, unit,
    None, why) for one this torch cannot run. Raises AssertionError when a
    torch equivalent disagrees with opreg."""
    for name, op_name, fmt, sizes, unit in CASES:
        if wanted and name not in wanted:
            continue
        op = getattr(opreg.ops._C, op_name)
        fn = globals()[op_name]
        dtype = "i32" if op_name == "moe_align_block_size" else "bf16"
        written = _written(op_name)
        for size in sizes:
            raw = _opreg.example_inputs("_C::" + op_name, dtype=dtype, shape=fmt % size)
            try:
                args = [_torch(v) for v in raw]
                # the sequence lengths as Python ints, as PyTorch code has them
                kw = {"lens": args[7].tolist()} if op_name == "paged_attention_v1" else {}
                why = _check(name, op, fn, args, kw, written)
            except (AttributeError, RuntimeError, TypeError) as e:
                # what this torch lacks (float8, scaled_dot_product_attention, ...)
                yield name, size, unit, None, "%s: %s" % (type(e).__name__, e)
                continue
            if why:
                raise AssertionError(why)
            yield (name, size, unit, (lambda op=op, a=args: op(*a)),
                   (lambda fn=fn, a=args, kw=kw: fn(*a, **kw)))


def _written(op_name):
    """Positions of the op's written (Tensor!) arguments: its schema read by
    torch's own parser."""
    schema = torch._C.parse_schema(_opreg.schema("_C::" + op_name))
    return [i for i, arg in enumerate(schema.arguments)
            if arg.alias_info is not None and arg.alias_info.is_write]
