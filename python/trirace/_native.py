"""The shim's annotation table, found through ctypes.

libtrirace.so (the shim, in LD_PRELOAD) exports ``trirace_get_api``; it
returns a pointer to ``trirace_api_v1_t`` (include/trirace/trirace.h). This
module mirrors that struct and the tag struct, looks the symbol up once in
the process's global scope and exposes the table, or ``None`` when no shim is
loaded. Nothing here raises when the shim is absent.
"""

import ctypes
import threading

API_VERSION = 1

# Return codes of the C API.
OK = 0
NOT_LOADED = 1
ERR_INVALID = 2
ERR_UNBALANCED = 3

UNSET = -1


class Tag(ctypes.Structure):
    """trirace_tag_t; every field TRIRACE_UNSET (-1) inherits."""

    _fields_ = [
        ("layer", ctypes.c_int32),
        ("stage", ctypes.c_int32),
        ("micro_batch", ctypes.c_int32),
        ("phase", ctypes.c_int32),
        ("iteration", ctypes.c_int64),
        ("traffic_class", ctypes.c_int32),
        ("priority", ctypes.c_int32),
    ]


_PUSH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Tag))
_POP = ctypes.CFUNCTYPE(ctypes.c_int)
_SET_ROLE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
_ITERATION = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64)
_ACTIVE = ctypes.CFUNCTYPE(ctypes.c_int)
_NEW_COMM_ROLE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_int))


class ApiV1(ctypes.Structure):
    """trirace_api_v1_t. `size` says how much of it the provider filled."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("version", ctypes.c_uint32),
        ("push_tag", _PUSH),
        ("pop_tag", _POP),
        ("set_comm_role", _SET_ROLE),
        ("iteration_begin", _ITERATION),
        ("iteration_end", _ITERATION),
        ("scheduler_active", _ACTIVE),
        ("set_new_comm_role", _NEW_COMM_ROLE),
        ("dense_ahead", _ACTIVE),
    ]


class Api:
    """The provider's entry points; a missing one (older shim) is None."""

    def __init__(self, table):
        self.version = table.version
        for name, _ in ApiV1._fields_[2:]:
            field = getattr(ApiV1, name)
            filled = table.size >= field.offset + field.size
            fn = getattr(table, name) if filled else None
            setattr(self, name, fn if fn else None)


_lock = threading.Lock()
_resolved = False
_api = None


def api():
    """The shim's table as an Api, or None without a shim. Resolved once."""
    global _resolved, _api
    if _resolved:
        return _api
    with _lock:
        if not _resolved:
            _api = _lookup()
            _resolved = True
    return _api


def _lookup():
    try:
        process = ctypes.CDLL(None)
        get_api = process.trirace_get_api
    except (OSError, AttributeError):
        return None
    get_api.restype = ctypes.POINTER(ApiV1)
    get_api.argtypes = [ctypes.c_uint32]
    table = get_api(API_VERSION)
    if not table:
        return None
    return Api(table.contents)
