"""ctypes binding to the NCCL API of hostccl's libnccl.so.2.

The library is found in this order (the first that exists wins):
  1. TRIRACE_HOSTCCL_LIBRARY: the path of hostccl's libnccl.so.2;
  2. TRIRACE_BUILD_DIR (the build tree scripts/build.sh uses): <dir>/hostccl/lib/;
  3. next to this package in a build tree: <source>/build/hostccl/lib/, or in
     an install prefix: <prefix>/lib/hostccl/ (the package installed under
     <prefix>/lib/python3/dist-packages or .../pythonX.Y/site-packages);
  4. next to a `trirace` command on PATH: <bin>/../hostccl/lib/ (build tree)
     or <bin>/../lib/hostccl/ (install prefix).
It is loaded RTLD_GLOBAL and every nccl* entry point is resolved in the
process's global scope, so that a preloaded TriRace shim sees every call,
exactly as for a program linked with -lnccl. hostccl* entry points are
resolved in the library itself. A library without hostcclStreamCreate is
not hostccl (a real NCCL already loaded under the same soname, say) and is
refused.

Thread safety: Library() loads once per process; the functions are plain
ctypes calls (they release the GIL).
"""

import ctypes
import os
import shutil
import threading

ENV_LIBRARY = "TRIRACE_HOSTCCL_LIBRARY"

# ncclResult_t
SUCCESS = 0
IN_PROGRESS = 7

# ncclRedOp_t
SUM, PROD, MAX, MIN, AVG = 0, 1, 2, 3, 4

# ncclDataType_t
INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16 = range(10)

UNIQUE_ID_BYTES = 128


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * UNIQUE_ID_BYTES)]


HOST_FUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class NcclError(RuntimeError):
    """A failed NCCL call: `result` is the ncclResult_t."""

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


def candidate_paths():
    """Where Library() looks, in order (see the module docstring)."""
    here = os.path.dirname(os.path.abspath(__file__))
    paths = []
    build = os.environ.get("TRIRACE_BUILD_DIR", "")
    if build:
        paths.append(os.path.join(build, "hostccl", "lib", "libnccl.so.2"))
    source = os.path.normpath(os.path.join(here, "..", ".."))
    paths.append(os.path.join(source, "build", "hostccl", "lib", "libnccl.so.2"))
    # <prefix>/lib/python3/dist-packages/trirace or <prefix>/lib/pythonX.Y/site-packages/trirace
    lib = os.path.normpath(os.path.join(here, "..", "..", ".."))
    paths.append(os.path.join(lib, "hostccl", "libnccl.so.2"))
    tool = shutil.which("trirace")
    if tool:
        bin_dir = os.path.dirname(os.path.realpath(tool))
        paths.append(os.path.normpath(os.path.join(bin_dir, "..", "hostccl", "lib", "libnccl.so.2")))
        paths.append(os.path.normpath(os.path.join(bin_dir, "..", "lib", "hostccl", "libnccl.so.2")))
    return paths


def find_library():
    configured = os.environ.get(ENV_LIBRARY, "")
    if configured:
        if not os.path.isfile(configured):
            raise FileNotFoundError("%s=%r: no such file; expected the path of hostccl's libnccl.so.2 "
                                    "(<build>/hostccl/lib/libnccl.so.2)" % (ENV_LIBRARY, configured))
        return configured
    tried = candidate_paths()
    for path in tried:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError("hostccl's libnccl.so.2 not found; set %s to its path. Tried: %s"
                            % (ENV_LIBRARY, ", ".join(tried)))


class Library:
    """hostccl's NCCL and stream API as ctypes functions."""

    def __init__(self, path):
        self.path = path
        self.handle = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        try:
            self.handle.hostcclStreamCreate
        except AttributeError:
            raise RuntimeError("%s is not hostccl's libnccl.so.2 (no hostcclStreamCreate); a real NCCL may "
                               "already be loaded in this process under the same soname" % path) from None
        process = ctypes.CDLL(None)
        p, i, sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t

        def nccl(name, *argtypes):
            fn = getattr(process, name)
            fn.restype = ctypes.c_int
            fn.argtypes = list(argtypes)
            setattr(self, name, fn)

        def host(name, *argtypes):
            fn = getattr(self.handle, name)
            fn.restype = ctypes.c_int
            fn.argtypes = list(argtypes)
            setattr(self, name, fn)

        nccl("ncclGetVersion", ctypes.POINTER(i))
        nccl("ncclGetUniqueId", ctypes.POINTER(UniqueId))
        nccl("ncclCommInitRank", ctypes.POINTER(p), i, UniqueId, i)
        nccl("ncclCommDestroy", p)
        nccl("ncclCommAbort", p)
        nccl("ncclCommGetAsyncError", p, ctypes.POINTER(i))
        nccl("ncclAllReduce", p, p, sz, i, i, p, p)
        nccl("ncclBroadcast", p, p, sz, i, i, p, p)
        nccl("ncclReduce", p, p, sz, i, i, i, p, p)
        nccl("ncclAllGather", p, p, sz, i, p, p)
        nccl("ncclReduceScatter", p, p, sz, i, i, p, p)
        nccl("ncclSend", p, sz, i, i, p, p)
        nccl("ncclRecv", p, sz, i, i, p, p)
        nccl("ncclGroupStart")
        nccl("ncclGroupEnd")
        self.ncclGetErrorString = process.ncclGetErrorString
        self.ncclGetErrorString.restype = ctypes.c_char_p
        self.ncclGetErrorString.argtypes = [i]
        self.ncclGetLastError = process.ncclGetLastError
        self.ncclGetLastError.restype = ctypes.c_char_p
        self.ncclGetLastError.argtypes = [p]
        host("hostcclStreamCreate", ctypes.POINTER(p))
        host("hostcclStreamDestroy", p)
        host("hostcclStreamSynchronize", p)
        host("hostcclLaunchHostFunc", p, HOST_FUNC, p)

    def error_text(self, result, comm=None):
        text = self.ncclGetErrorString(result)
        detail = self.ncclGetLastError(comm) if comm else None
        out = text.decode(errors="replace") if text else "ncclResult_t %d" % result
        if detail:
            out += ": " + detail.decode(errors="replace")
        return out

    def check(self, what, result, comm=None):
        if result != SUCCESS:
            raise NcclError("hostccl: %s failed: %s" % (what, self.error_text(result, comm)), result)


_lock = threading.Lock()
_library = None


def library():
    """The process's Library, loaded on first use."""
    global _library
    with _lock:
        if _library is None:
            _library = Library(find_library())
        return _library
