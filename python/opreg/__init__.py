"""opreg from Python: the ops of opreg's default registry, called on any
DLPack tensor (numpy, torch, ...) without a copy.

    import numpy as np, opreg
    x = np.random.rand(4, 64).astype(np.float32)
    w = np.ones(64, np.float32)
    out = np.empty_like(x)
    opreg.ops._C.rms_norm(out, x, w, 1e-6)       # writes into out

Ops are reached as ``opreg.ops.<namespace>.<name>`` and, for an overload,
``opreg.ops.<namespace>.<name>.<overload>`` (``.default`` is the op without
one). Arguments follow the op's schema: positional or by keyword, defaults
filled in, a ``Tensor!`` argument must be writable. An op that returns a
tensor gives an :class:`opreg.Tensor`, which numpy.from_dlpack() and
torch.from_dlpack() take without a copy. Every error that opreg reports is
raised as :class:`opreg.Error` (a RuntimeError) with opreg's message.
"""

from ._opreg import (  # noqa: F401  (the public names of the package)
    Error,
    Op as _Op,
    Tensor,
    explain as _explain_support,
    get_num_threads,
    is_op_supported as _is_op_supported,
    list_ops,
    load_plugin,
    mutation_check,
    opcheck,
    schema,
    set_mutation_check,
    set_num_threads,
    version,
)

__version__ = version()
__all__ = [
    "Error",
    "OpNotFoundError",
    "Tensor",
    "explain",
    "get_num_threads",
    "is_op_supported",
    "list_ops",
    "load_plugin",
    "mutation_check",
    "opcheck",
    "ops",
    "schema",
    "set_mutation_check",
    "set_num_threads",
    "version",
]


# Ops that opreg.torch registered into torch under another namespace:
# torch's full name -> opreg's.
_torch_aliases = {}


def is_op_supported(name, device=None):
    """Whether op ``name`` is defined and some available backend (or that of
    ``device``: 'cpu', 'cuda:1', a torch.device) has a kernel for it. A name
    that opreg.torch gave one of opreg's ops in torch answers for that op;
    an op that only torch defines is never opreg's."""
    return _is_op_supported(_torch_aliases.get(name, name), device)


def explain(op, *args, **kwargs):
    """Why an op would or would not run.

    ``explain(name, device=None)``: whether op ``name`` has a kernel on
    ``device`` (or on some backend), which one and where it was registered,
    or why not.

    ``explain(op, *args, **kwargs)`` with an op object (``opreg.ops._C.linear``):
    for these very arguments (as a call would take them; nothing runs and
    nothing is written), which provider of the tensors' device would run and
    why each one before it declined or is disabled, then whether the op's
    checks accept them. Returns the text; raises :class:`opreg.Error` for
    arguments that a call would refuse before any kernel (arity, types).
    """
    if isinstance(op, _Op):
        return op._explain(*args, **kwargs)
    alias = _torch_aliases.get(op)
    if alias is not None and alias != op:
        text = _explain_support(alias, *args, **kwargs)
        return "%s is opreg's %s, registered into torch: %s" % (op, alias, text)
    return _explain_support(op, *args, **kwargs)


class OpNotFoundError(Error, AttributeError):
    """An unknown op or overload reached as an attribute of opreg.ops: an
    opreg.Error (with opreg's message, and its nearest names) that is also an
    AttributeError, so hasattr() and getattr(..., default) work."""


def _not_found(exc):
    err = OpNotFoundError(str(exc))
    err.status = getattr(exc, "status", None)
    err.status_name = getattr(exc, "status_name", None)
    return err


class OpOverload(_Op):
    """One overload of an op: call it to run the op."""

    __slots__ = ()


class OpOverloadPacket(_Op):
    """An op by name (the overload without a name), with its overloads as
    attributes: ``opreg.ops._C.add`` runs ``_C::add``, ``opreg.ops._C.add.out``
    runs ``_C::add.out`` and ``.default`` is the packet's own op."""

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        if overload == "default":
            value = self
        else:
            try:
                value = OpOverload(self.name + "." + overload)
            except Error as exc:
                raise _not_found(exc) from None
        setattr(self, overload, value)  # found once: later lookups are plain attributes
        return value

    def overloads(self):
        """The overload names of this op ('default' for the one without)."""
        prefix = self.name + "."
        names = ["default"] if self.name in list_ops() else []
        return names + [n[len(prefix):] for n in list_ops() if n.startswith(prefix)]


class _Namespace:
    """``opreg.ops.<namespace>``: its ops as attributes, looked up once."""

    def __init__(self, name):
        self.__name = name

    def __getattr__(self, op):
        if op.startswith("__"):
            raise AttributeError(op)
        try:
            packet = OpOverloadPacket(self.__name + "::" + op)
        except Error as exc:
            raise _not_found(exc) from None
        setattr(self, op, packet)
        return packet

    def __dir__(self):
        prefix = self.__name + "::"
        return sorted({n[len(prefix):].split(".")[0] for n in list_ops() if n.startswith(prefix)})

    def __repr__(self):
        return "<opreg namespace %s>" % self.__name


class _Ops:
    """``opreg.ops``: the namespaces of the default registry as attributes."""

    def __getattr__(self, namespace):
        if namespace.startswith("__"):
            raise AttributeError(namespace)
        ns = _Namespace(namespace)
        setattr(self, namespace, ns)
        return ns

    def __dir__(self):
        return sorted({n.split("::")[0] for n in list_ops()})

    def __repr__(self):
        return "<opreg ops>"


ops = _Ops()
