"""opreg's ops as PyTorch ops: ``torch.ops``, ``torch.compile`` and
``torch.library.opcheck`` see them like ops of a C++ ``TORCH_LIBRARY``.

    import torch, opreg.torch
    opreg.torch.register("_C")                  # opreg's _C namespace, into torch's _C
    torch.ops._C.rms_norm(out, x, w, 1e-6)      # eager, on torch tensors

Each op is defined in PyTorch's dispatcher with its own schema (the text
opreg parsed, which PyTorch's parser reads the same way), with a kernel for
the CPU key and, where opreg has a CUDA kernel, for the CUDA key; both call
the opreg op on the torch tensors through DLPack, without a copy. The fake
kernel that ``torch.compile`` and ``opcheck`` trace with is opreg's Meta
kernel: the fake tensors' shapes, strides and dtypes go to opreg as Meta
tensors, opreg's checks run on them (a refusal raises :class:`opreg.Error`
with opreg's message), and the returns come back as fake tensors of the
shapes opreg computed.

Where torch has its stable C ABI (``torch_library_impl``, PyTorch 2.13 and
later), the CPU kernel of an op that returns nothing is a C function of
opreg's extension instead: torch's dispatcher hands it the tensors' handles
and it calls opreg's registry directly, with no Python in between (the
``kernels`` argument of :func:`register` chooses; :func:`stable_abi` says
whether this torch has it, and why not).

torch is an optional dependency of opreg: importing this module imports it.
PyTorch 1.13 (Debian 12's) has ``torch.library.Library`` but no fake tensors:
there the Meta kernel is registered for the Meta key instead, and the
namespace must not exist yet in torch (1.13 has no library fragments).
"""

import os
import threading

import torch

import opreg
from opreg import _opreg

__all__ = [
    "Registration",
    "openmp_library",
    "register",
    "registrations",
    "share_threads",
    "shared_threads",
    "stable_abi",
    "to_torch",
]

# opreg's dtype names and torch's dtypes (those this torch has).
_DTYPE_PAIRS = (
    ("f32", "float32"),
    ("f16", "float16"),
    ("bf16", "bfloat16"),
    ("f64", "float64"),
    ("i8", "int8"),
    ("u8", "uint8"),
    ("i16", "int16"),
    ("i32", "int32"),
    ("i64", "int64"),
    ("bool", "bool"),
    ("f8_e4m3fn", "float8_e4m3fn"),
    ("f8_e5m2", "float8_e5m2"),
)
_TORCH_OF = {o: getattr(torch, t) for o, t in _DTYPE_PAIRS if hasattr(torch, t)}
_OPREG_OF = {t: o for o, t in _TORCH_OF.items()}

_SYM_INT = getattr(torch, "SymInt", None)
_SYM_FLOAT = getattr(torch, "SymFloat", None)
_HAS_FRAGMENTS = hasattr(torch.library, "register_fake") or hasattr(torch.library, "impl_abstract")
_lock = threading.Lock()
_registrations = {}  # torch namespace -> Registration
_stable = None  # (True, "") or (False, why), once asked


def stable_abi():
    """``(True, "")`` when this torch offers the stable C ABI through which
    opreg registers C kernels (``torch_library_impl`` and the tensor
    accessors, PyTorch 2.13 and later), else ``(False, why)``."""
    global _stable
    with _lock:
        if _stable is None:
            _stable = _open_stable()
        return _stable


def _open_stable():
    here = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    why = ""
    for library in (here, "libtorch_cpu.so"):
        try:
            _opreg.torch_stable_open(library)
            return (True, "")
        except opreg.Error as exc:
            why = why or str(exc)
    return (False, why)


def to_torch(value):
    """An op's return as torch values: an :class:`opreg.Tensor` becomes a
    torch tensor sharing its memory (through DLPack, no copy); tuples and
    lists are converted item by item; anything else is returned as it is."""
    if isinstance(value, opreg.Tensor):
        if value.dtype not in _TORCH_OF:
            raise opreg.Error("torch %s has no dtype for opreg's %s" % (torch.__version__, value.dtype))
        return torch.from_dlpack(value)
    if isinstance(value, tuple):
        return tuple(to_torch(v) for v in value)
    if isinstance(value, list):
        return [to_torch(v) for v in value]
    return value


def openmp_library():
    """The path of the OpenMP runtime that torch runs its intra-op threads
    on, as this process has loaded it (libgomp, libiomp5 or libomp), or None
    when torch was built without OpenMP or the runtime is not found."""
    openmp = getattr(torch.backends, "openmp", None)
    if openmp is not None and not openmp.is_available():
        return None
    found = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path).startswith(("libgomp", "libiomp5", "libomp")):
                    if path not in found:
                        found.append(path)
    except OSError:
        return None
    # torch's own copy (a wheel's torch/lib or torch.libs) before any other.
    home = os.path.dirname(os.path.dirname(os.path.abspath(torch.__file__)))
    found.sort(key=lambda p: not p.startswith(home))
    return found[0] if found else None


def share_threads(enable=True):
    """Run opreg's CPU loops on torch's intra-op OpenMP team instead of on
    opreg's own pool, so that the two never compete for the same cores
    (docs/python.md, "Threads and the interpreter lock"). The team's width
    is ``torch.get_num_threads()`` now: call again after
    ``torch.set_num_threads``, and only while no opreg op runs.
    ``share_threads(False)`` gives opreg its own pool back. Returns the
    OpenMP library's path (None when disabling); raises :class:`opreg.Error`
    when torch has no OpenMP runtime loaded."""
    global _shared
    if not enable:
        _opreg.share_openmp(None)
        _shared = None
        return None
    path = openmp_library()
    if path is None:
        raise opreg.Error("torch %s runs no OpenMP runtime that opreg could share" % torch.__version__)
    _opreg.share_openmp(path, torch.get_num_threads())
    _shared = path
    return path


def shared_threads():
    """The OpenMP library whose team opreg's CPU loops run on now (see
    :func:`share_threads`), or None while opreg runs its own pool."""
    return _shared


_shared = None


def _like(value, device):
    """A Meta kernel's return as a (fake) torch tensor on ``device``."""
    if isinstance(value, opreg.Tensor):
        return torch.empty_strided(
            value.shape, value.strides, dtype=_TORCH_OF[value.dtype], device=device
        )
    if isinstance(value, tuple):
        return tuple(_like(v, device) for v in value)
    if isinstance(value, list):
        return [_like(v, device) for v in value]
    return value


def _meta(value):
    """A torch value as opreg's Meta kernel takes it: tensors (fake, meta or
    real) become opreg Meta tensors of the same shape, strides and dtype."""
    if isinstance(value, torch.Tensor):
        dtype = _OPREG_OF.get(value.dtype)
        if dtype is None:
            raise opreg.Error("opreg has no dtype for torch's %s" % value.dtype)
        return _opreg.meta_tensor(
            tuple(int(s) for s in value.shape),
            dtype,
            tuple(int(s) for s in value.stride()),
        )
    if isinstance(value, (list, tuple)):
        return [_meta(v) for v in value]
    if _SYM_INT is not None and isinstance(value, _SYM_INT):
        return int(value)
    if _SYM_FLOAT is not None and isinstance(value, _SYM_FLOAT):
        return float(value)
    return value


def _first_device(args, kwargs):
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, torch.Tensor):
            return v.device
        if isinstance(v, (list, tuple)):
            for item in v:
                if isinstance(item, torch.Tensor):
                    return item.device
    return torch.device("meta")


def _fake_kernel(op):
    def fake(*args, **kwargs):
        device = _first_device(args, kwargs)
        out = op._meta(*[_meta(a) for a in args], **{k: _meta(v) for k, v in kwargs.items()})
        return _like(out, device)

    fake.__name__ = "opreg_fake_" + op.name.replace("::", "_").replace(".", "_")
    fake.__qualname__ = fake.__name__
    return fake


def _returning_kernel(op, types=None):
    """A kernel that hands opreg's returns to torch. ``types``: each return's
    type as opreg's schema spells it (:func:`_return_types`), for those that
    need more than to_torch(): opreg returns a ScalarType as its name and a
    Device as its text."""
    if not types or not any(t in ("ScalarType", "Device") for t in types):

        def kernel(*args, **kwargs):
            return to_torch(op(*args, **kwargs))

        return kernel

    def one(value, t):
        if t == "ScalarType" and value is not None:
            return _TORCH_OF[value]
        if t == "Device" and value is not None:
            return torch.device(value)
        return to_torch(value)

    def typed_kernel(*args, **kwargs):
        out = op(*args, **kwargs)
        if len(types) == 1:
            return one(out, types[0])
        return tuple(one(v, t) for v, t in zip(out, types))

    return typed_kernel


def _return_types(schema):
    """The type of each return of opreg's ``schema`` text, without its
    optional mark and alias: ["str[]", "ScalarType", ...]."""
    text = schema.rsplit("->", 1)[1].strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            item = text[start:i].strip()
            if item:
                items.append(item.split(" ")[0].split("(")[0].rstrip("?"))
            start = i + 1
    return items


def _cuda_kernel(op, returns):
    """A CUDA kernel that runs opreg's on torch's current stream. The binding
    reads the stream through DLPack's exchange API where torch offers it;
    for an older torch the stream is handed over here."""
    if hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        return _returning_kernel(op) if returns else op

    def kernel(*args, **kwargs):
        dev = _first_device(args, kwargs)
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        prev = _opreg.cuda_stream(index)
        _opreg.cuda_set_stream(index, torch.cuda.current_stream(index).cuda_stream)
        try:
            out = op(*args, **kwargs)
        finally:
            _opreg.cuda_set_stream(index, prev)  # the thread's own stream, as the binding does
        return to_torch(out) if returns else out

    return kernel


def _torch_overloads(qualname):
    """The overload names torch knows for ``ns::name`` ('' for the default)."""
    try:
        return {s.overload_name for s in torch._C._jit_get_schemas_for_operator(qualname)}
    except RuntimeError:
        return set()


class Registration:
    """What :func:`register` put into torch's dispatcher.

    ``namespace``: the opreg namespace; ``target``: the torch namespace;
    ``ops``: torch's full name -> opreg's full name, for every op defined;
    ``kernels``: torch's full name -> the dispatch keys given a kernel
    (``"CPU"``, ``"CUDA"``); ``c_kernels``: the torch names whose CPU kernel
    is opreg's C function (torch's stable C ABI), the others' kernels being
    Python functions; ``fake``: the torch names given a fake (or, on
    torch 1.13, a Meta) kernel; ``no_fake``: torch's full name -> why it has
    none (``torch.compile`` cannot trace such an op). The registrations last as long as the process (or until
    :meth:`close` on a torch that can remove them)."""

    def __init__(self, namespace, target, library):
        self.namespace = namespace
        self.target = target
        self.ops = {}
        self.kernels = {}
        self.c_kernels = set()
        self.fake = set()
        self.no_fake = {}
        self._library = library
        self._c_library = None  # torch's IMPL library of the C kernels

    def close(self):
        """Remove the ops from torch's dispatcher (torch 2.x only)."""
        destroy = getattr(self._library, "_destroy", None)
        if destroy is None:
            raise RuntimeError("this torch (%s) cannot remove a library" % torch.__version__)
        with _lock:
            if self._c_library is not None:
                _opreg.torch_stable_close(self._c_library)
                self._c_library = None
                self.c_kernels = set()
            destroy()
            for name in self.ops:
                opreg._torch_aliases.pop(name, None)
            _registrations.pop(self.target, None)
            self.ops = {}

    def __repr__(self):
        return "<opreg.torch.Registration %s -> torch.ops.%s: %d ops, %d with a fake kernel>" % (
            self.namespace,
            self.target,
            len(self.ops),
            len(self.fake),
        )


def registrations():
    """The registrations made so far, by torch namespace."""
    with _lock:
        return dict(_registrations)


def register(namespace="_C", target=None, ops=None, threads="torch", kernels="auto"):
    """Define the ops of opreg's ``namespace`` in torch's dispatcher, under
    ``target`` (default: the same name; pass another one when the program
    already owns that torch namespace). ``ops``: the op names to register
    (``"rms_norm"``, ``"add.out"``), default all of the namespace.
    ``threads``: ``"torch"`` (the default) runs opreg's CPU loops on torch's
    OpenMP team from now on, as :func:`share_threads` does, where torch has
    one; ``"own"`` leaves opreg on its own pool. ``kernels``: ``"auto"`` (the
    default) gives an op that returns nothing a C kernel for the CPU key where
    torch has the stable C ABI (:func:`stable_abi`), and Python kernels
    elsewhere; ``"python"`` always Python kernels; ``"c"`` raises
    :class:`opreg.Error` when torch lacks the ABI (ops that return values
    keep Python kernels either way).

    Returns a :class:`Registration`. Registering the same namespace into the
    same target again returns the first registration. Raises
    :class:`opreg.Error` naming every op that torch already defines under
    that target (nothing is registered then), or for a name that opreg does
    not have."""
    if threads not in ("torch", "own"):
        raise ValueError("register: threads must be 'torch' or 'own', not %r" % (threads,))
    if kernels not in ("auto", "c", "python"):
        raise ValueError("register: kernels must be 'auto', 'c' or 'python', not %r" % (kernels,))
    use_c = False
    if kernels != "python":
        use_c, why = stable_abi()
        if kernels == "c" and not use_c:
            raise opreg.Error("register(kernels='c'): %s" % why)
    target = target or namespace
    with _lock:
        done = _registrations.get(target)
        if done is not None:
            if done.namespace != namespace:
                raise opreg.Error(
                    "torch.ops.%s already holds opreg's %s namespace" % (target, done.namespace)
                )
            return done
        names = _select(namespace, ops)
        conflicts = [
            "%s::%s" % (target, n.split("::", 1)[1])
            for n in names
            if _split(n)[1] in _torch_overloads("%s::%s" % (target, _split(n)[0]))
        ]
        if conflicts:
            raise opreg.Error(
                "torch already defines %s; register opreg's %s into another namespace "
                "(opreg.torch.register(%r, target=...))" % (", ".join(conflicts), namespace, namespace)
            )
        try:
            library = torch.library.Library(target, "FRAGMENT" if _HAS_FRAGMENTS else "DEF")
        except RuntimeError as exc:
            raise opreg.Error(
                "torch.library could not open namespace %s (%s); pass another target" % (target, exc)
            ) from None
        reg = Registration(namespace, target, library)
        try:
            if use_c:
                reg._c_library = _opreg.torch_stable_library(target, "CPU")
            for name in names:
                _register_one(reg, library, name)
        except BaseException:
            if reg._c_library is not None:
                _opreg.torch_stable_close(reg._c_library)
            if hasattr(library, "_destroy"):
                library._destroy()
            raise
        _registrations[target] = reg
        for tname, oname in reg.ops.items():
            opreg._torch_aliases[tname] = oname
        if threads == "torch" and _shared is None and openmp_library() is not None:
            share_threads()
        return reg


def _split(full):
    """'ns::name.overload' -> ('name', 'overload'); overload '' for none."""
    local = full.split("::", 1)[1]
    name, _, overload = local.partition(".")
    return name, overload


def _select(namespace, ops):
    prefix = namespace + "::"
    have = [n for n in opreg.list_ops() if n.startswith(prefix)]
    if ops is None:
        if not have:
            raise opreg.Error("opreg has no ops in namespace %s" % namespace)
        return have
    names = []
    for op in ops:
        full = op if "::" in op else prefix + op
        if full not in have:
            raise opreg.Error("opreg has no op %s" % full)
        names.append(full)
    return names


def _register_one(reg, library, name):
    op = opreg.OpOverload(name)
    schema = opreg.schema(name)
    local = schema.split("::", 1)[1]
    qual = "%s::%s" % (reg.target, name.split("::", 1)[1])
    returns = not local.rstrip().endswith("-> ()")
    library.define(local)
    short = name.split("::", 1)[1]
    keys = []
    # An op without tensor arguments (vLLM's meta_size, dispose(int fa))
    # gives torch no device to dispatch on: its kernel serves every key.
    args_text = local[local.index("(") + 1:local.rindex(") ->")]
    cpu_key = "CPU" if "Tensor" in args_text else "CompositeExplicitAutograd"
    types = _return_types(schema) if returns else None
    if opreg.is_op_supported(name, "cpu"):
        if (
            reg._c_library is not None
            and cpu_key == "CPU"
            and _opreg.torch_stable_supports(name) is None
        ):
            _opreg.torch_stable_impl(reg._c_library, short, name)
            reg.c_kernels.add(qual)
        else:
            library.impl(short, _returning_kernel(op, types) if returns else op, cpu_key)
        keys.append(cpu_key)
    if opreg.is_op_supported(name, "cuda"):
        library.impl(short, _cuda_kernel(op, returns), "CUDA")
        keys.append("CUDA")
    reg.ops[qual] = name
    reg.kernels[qual] = tuple(keys)
    if not opreg.is_op_supported(name, "meta"):
        reg.no_fake[qual] = "opreg has no Meta kernel for %s" % name
        return
    fake = _fake_kernel(op)
    if hasattr(torch.library, "register_fake"):
        torch.library.register_fake(qual, fake, lib=library)
    elif hasattr(torch.library, "impl_abstract"):
        torch.library.impl_abstract(qual, fake, lib=library)
    else:
        # torch 1.13: a Meta kernel, and the same for the autograd key of
        # Meta tensors, which 1.13 does not fall through for new ops.
        library.impl(short, fake, "Meta")
        library.impl(short, fake, "AutogradMeta")
    reg.fake.add(qual)
