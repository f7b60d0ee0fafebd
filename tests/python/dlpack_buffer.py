"""A minimal DLPack producer and consumer written with ctypes, so the tests
run on interpreters without numpy, and can count exports and deleter calls.

Buffer(values, shape, code=2, bits=32) holds its own memory (float32 by
default) and exports it through __dlpack__: DLPack 1.0 (versioned, with the
read-only flag) when the consumer asks with max_version >= (1, 0) and the
buffer was made with versioned=True, otherwise the unversioned 0.x protocol
(refused, like numpy 1.x, when the buffer is read-only). Buffer.live counts
exports whose deleter has not run yet.
"""

import ctypes

kDLCPU = 1
kDLInt = 0
kDLFloat = 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


FLAG_READ_ONLY = 1

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]

# The raw capsule API, for the capsule destructor (called with a borrowed PyObject *).
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

_exports = {}  # address of a managed struct -> (struct, owner)


@DELETER
def _delete(address):
    _exports.pop(address, None)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # A capsule nobody consumed: its managed tensor is freed here.
    for name in (b"dltensor", b"dltensor_versioned"):
        if _raw_is_valid(capsule, name):
            _exports.pop(_raw_get_pointer(capsule, name), None)
            return


def live_exports():
    return len(_exports)


class Buffer:
    """A tensor of its own memory that exports DLPack."""

    _ctypes = {(kDLFloat, 32): ctypes.c_float, (kDLFloat, 64): ctypes.c_double,
               (kDLInt, 32): ctypes.c_int32, (kDLInt, 64): ctypes.c_int64,
               (kDLInt, 8): ctypes.c_int8}

    def __init__(self, values, shape, code=kDLFloat, bits=32, readonly=False, versioned=False):
        n = 1
        for s in shape:
            n *= s
        values = list(values)
        assert len(values) == n, (len(values), n)
        self.ctype = self._ctypes[(code, bits)]
        self.mem = (self.ctype * max(n, 1))(*values)
        self.shape = tuple(shape)
        self.code, self.bits = code, bits
        self.readonly, self.versioned = readonly, versioned
        self._shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        strides, acc = [], 1
        for s in reversed(shape):
            strides.insert(0, acc)
            acc *= s
        self._strides = (ctypes.c_int64 * max(len(shape), 1))(*strides)

    def tolist(self):
        n = 1
        for s in self.shape:
            n *= s
        return list(self.mem[:n])

    def _dltensor(self):
        t = DLTensor()
        t.data = ctypes.cast(self.mem, ctypes.c_void_p)
        t.device = DLDevice(kDLCPU, 0)
        t.ndim = len(self.shape)
        t.dtype = DLDataType(self.code, self.bits, 1)
        t.shape = self._shape
        t.strides = self._strides
        t.byte_offset = 0
        return t

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if self.versioned and max_version is not None and max_version[0] >= 1:
            m = DLManagedTensorVersioned()
            m.version = DLPackVersion(1, 0)
            m.deleter = _delete
            m.flags = FLAG_READ_ONLY if self.readonly else 0
            m.dl_tensor = self._dltensor()
            name = b"dltensor_versioned"
        else:
            if self.readonly:
                raise BufferError("a read-only buffer cannot be exported without DLPack 1.0")
            m = DLManagedTensor()
            m.deleter = _delete
            m.dl_tensor = self._dltensor()
            name = b"dltensor"
        address = ctypes.addressof(m)
        _exports[address] = (m, self)
        return _api.PyCapsule_New(address, name, ctypes.cast(_capsule_destructor, ctypes.c_void_p))

    def __dlpack_device__(self):
        return (kDLCPU, 0)


class OldBuffer(Buffer):
    """A producer from before DLPack 1.0: __dlpack__ takes only `stream`."""

    def __dlpack__(self, stream=None):  # noqa: D105 (the old signature on purpose)
        return Buffer.__dlpack__(self, stream)


def consume(obj, versioned=False):
    """Read a DLPack exporter's float32 or int values, as a consumer would
    (the capsule renamed, the deleter called): (shape, values, capsule name)."""
    cap = obj.__dlpack__(max_version=(1, 0)) if versioned else obj.__dlpack__()
    name = _api.PyCapsule_GetName(cap)
    ptr = _api.PyCapsule_GetPointer(cap, name)
    if name == b"dltensor_versioned":
        m = DLManagedTensorVersioned.from_address(ptr)
    else:
        m = DLManagedTensor.from_address(ptr)
    t = m.dl_tensor
    shape = tuple(t.shape[i] for i in range(t.ndim))
    n = 1
    for s in shape:
        n *= s
    ctype = Buffer._ctypes[(t.dtype.code, t.dtype.bits)]
    values = list((ctype * max(n, 1)).from_address(t.data + t.byte_offset)[:n])
    _api.PyCapsule_SetName(cap, b"used_" + name)
    m.deleter(ptr)
    return shape, values, name.decode()
