"""A torch.distributed backend, "hostccl", over hostccl's NCCL API on CPUs.

Importing this module registers the backend:

    import trirace.hostccl
    dist.init_process_group(backend="hostccl")   # torchrun / env:// rendezvous

Each process group (the default one and every ``new_group``) gets its own
NCCL communicator, created at once through hostccl's libnccl.so.2 (found as
trirace._nccl documents), with the ncclUniqueId passed through the c10d Store
that torch hands the backend, and its own hostccl stream. Every operation is
asynchronous as on a GPU: the call enqueues the NCCL call(s) on the stream
and returns a Work whose future completes from the stream
(hostcclLaunchHostFunc) once the data is there, so DDP overlaps its
gradient all-reduce with backward exactly as with ProcessGroupNCCL. Because
the NCCL calls are made through the process's global scope, a preloaded
TriRace shim sees each of them (``trirace run -- python3 train.py``).

Supported: allreduce (+ coalesced), broadcast, reduce, allgather (+ the flat
``_allgather_base``), reduce_scatter (+ ``_reduce_scatter_base``), alltoall,
alltoall_base, gather, scatter, barrier, send, recv, and batch_isend_irecv
(coalesced into one NCCL group). Tensors must be dense, contiguous CPU
tensors of a dtype NCCL has; anything else raises an error naming the op
and what it got.

Failure: an NCCL error on the stream (a peer that died, say) or an op
pending longer than the group's timeout (init_process_group's ``timeout``)
fails every pending Work of the group with a RuntimeError naming the op, the
rank and the cause; the communicator is aborted and later calls on the group
raise the same error at once. Nothing waits forever.

Profiling: under torch.profiler every op is one event named as the gloo and
NCCL groups name theirs, with this backend's prefix (``hostccl:all_reduce``,
``hostccl:all_gather``, ``hostccl:send`` ...), from the call until the op
completes on the stream.

Thread safety: the ops of one group may be called from any thread (DDP calls
all-reduce from the autograd thread); calls on one group are serialised, as
NCCL requires of a communicator. Completion callbacks run on hostccl's
stream thread and take the GIL briefly.
"""

import atexit
import collections
import ctypes
import datetime
import sys
import threading
import time
import weakref

import torch
import torch.distributed as dist

from trirace import _completion, _nccl

BACKEND_NAME = "hostccl"

# torch.profiler's event name of each op: ProcessGroupGloo's and
# ProcessGroupNCCL's words after the backend's prefix.
_PROFILE_NAMES = {
    "allreduce": "all_reduce",
    "allreduce_coalesced": "all_reduce_coalesced",
    "allgather": "all_gather",
    "alltoall": "all_to_all",
    "alltoall_base": "all_to_all",
}

_DTYPES = {
    torch.int8: _nccl.INT8,
    torch.uint8: _nccl.UINT8,
    torch.int32: _nccl.INT32,
    torch.int64: _nccl.INT64,
    torch.float16: _nccl.FLOAT16,
    torch.float32: _nccl.FLOAT32,
    torch.float64: _nccl.FLOAT64,
    torch.bfloat16: _nccl.BFLOAT16,
}
# bool moves as bytes; reducing it (sum of bools) would not be torch's semantics.
_MOVE_ONLY_DTYPES = {torch.bool: _nccl.UINT8}

_REDUCE_OPS = (
    ("SUM", _nccl.SUM),
    ("PRODUCT", _nccl.PROD),
    ("MIN", _nccl.MIN),
    ("MAX", _nccl.MAX),
    ("AVG", _nccl.AVG),
)


def _dtype_names(table):
    return ", ".join(sorted(str(t).replace("torch.", "") for t in table))


def _check_tensor(op, tensor, reduces):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError("hostccl: %s needs torch.Tensor arguments, got %s" % (op, type(tensor).__name__))
    if tensor.device.type != "cpu":
        raise ValueError("hostccl: %s needs CPU tensors, got one on %s (hostccl runs on host memory; use the "
                         "nccl backend for CUDA tensors)" % (op, tensor.device))
    if tensor.layout != torch.strided:
        raise ValueError("hostccl: %s needs dense tensors, got layout %s" % (op, tensor.layout))
    if not tensor.is_contiguous():
        raise ValueError("hostccl: %s needs contiguous tensors (call .contiguous() first)" % op)
    dtype = _DTYPES.get(tensor.dtype)
    if dtype is None and not reduces:
        dtype = _MOVE_ONLY_DTYPES.get(tensor.dtype)
    if dtype is None:
        accepted = _DTYPES if reduces else dict(_DTYPES, **{str(k): v for k, v in _MOVE_ONLY_DTYPES.items()})
        raise TypeError("hostccl: %s does not support dtype %s (NCCL has: %s)"
                        % (op, str(tensor.dtype).replace("torch.", ""), _dtype_names(accepted)))
    return dtype


def _reduce_op(op, reduce_op):
    for name, value in _REDUCE_OPS:
        if reduce_op == getattr(dist.ReduceOp, name):
            return value
    name = next((n for n in ("BAND", "BOR", "BXOR", "PREMUL_SUM") if reduce_op == getattr(dist.ReduceOp, n, None)),
                str(reduce_op))
    raise ValueError("hostccl: %s does not support reduce op %s (accepted: %s)"
                     % (op, name, ", ".join(n for n, _ in _REDUCE_OPS)))


def _one(op, tensors):
    if len(tensors) != 1:
        raise ValueError("hostccl: %s takes exactly one tensor per process, got %d" % (op, len(tensors)))
    return tensors[0]


def _ptr(tensor):
    return ctypes.c_void_p(tensor.data_ptr())


_live_groups = weakref.WeakSet()


class ProcessGroupHostccl(dist.ProcessGroup):
    """One torch process group on one hostccl communicator and stream."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        self._lib = _nccl.library()
        self._timeout_s = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
        self._comm = ctypes.c_void_p()
        self._stream = ctypes.c_void_p()
        self._comm_lock = threading.RLock()
        self._state_lock = threading.Lock()
        self._pending = collections.OrderedDict()
        self._coalesced = None
        self._failure = None
        self._aborted = False
        self._closed = False
        self._wake = threading.Event()

        unique_id = _nccl.UniqueId()
        key = "hostccl/unique_id"
        if rank == 0:
            self._lib.check("ncclGetUniqueId", self._lib.ncclGetUniqueId(ctypes.byref(unique_id)))
            store.set(key, bytes(unique_id))
        else:
            data = store.get(key)
            ctypes.memmove(ctypes.addressof(unique_id), bytes(data), _nccl.UNIQUE_ID_BYTES)
        self._lib.check("ncclCommInitRank (rank %d of %d)" % (rank, size),
                        self._lib.ncclCommInitRank(ctypes.byref(self._comm), size, unique_id, rank))
        self._lib.check("hostcclStreamCreate", self._lib.hostcclStreamCreate(ctypes.byref(self._stream)))
        self._watchdog = threading.Thread(target=self._watch, name="hostccl-watchdog", daemon=True)
        self._watchdog.start()
        _live_groups.add(self)

    # ---- identity -------------------------------------------------------
    def getBackendName(self):
        return BACKEND_NAME

    def _get_backend_name(self):
        return BACKEND_NAME

    def comm_address(self):
        """The ncclComm_t of this group, as an int (for trirace.set_comm_role)."""
        return self._comm.value

    def set_trirace_role(self, role):
        """Declares this group's comm role to the TriRace shim (see trirace.set_comm_role)."""
        import trirace
        return trirace.set_comm_role(self._comm.value, role)

    # ---- the enqueue path ---------------------------------------------------
    def _enqueue(self, op, keep, result, calls, post=None):
        """Runs `calls` (the NCCL calls of one op) and returns its Work."""
        if not torch.autograd._profiler_enabled():
            return self._enqueue_op(op, keep, result, calls, post)
        # One profiler event from the call to the op's completion, as gloo's and NCCL's groups record.
        with torch.autograd.profiler.record_function("%s:%s" % (BACKEND_NAME, _PROFILE_NAMES.get(op, op))) as event:
            work = self._enqueue_op(op, keep, result, calls, post)
            event._call_end_callbacks_on_future(work.get_future())
        return work

    def _enqueue_op(self, op, keep, result, calls, post):
        with self._comm_lock:
            self._raise_if_failed(op)
            try:
                calls()
            except _nccl.NcclError as error:
                # The same words as a failure found later on the stream.
                raise RuntimeError(self._describe(op, error)) from None
            pending = _completion.Pending(op, keep, result, post)
            callback_id = _completion.next_id()
            with self._state_lock:
                self._pending[callback_id] = pending
            if self._coalesced is not None:
                self._coalesced.append((callback_id, pending))
            else:
                self._launch_host_func(callback_id, pending)
        return _completion.Work(pending.future)

    def _nccl(self, what, result):
        self._lib.check(what, result, self._comm)

    def _launch_host_func(self, callback_id, pending):
        _completion.register(callback_id, self, pending)
        result = self._lib.hostcclLaunchHostFunc(self._stream, _completion.ON_STREAM_DONE,
                                                 ctypes.c_void_p(callback_id))
        if result != _nccl.SUCCESS:
            _completion.unregister(callback_id)
            self._fail("hostcclLaunchHostFunc for %s failed: %s" % (pending.op, self._lib.error_text(result)))

    def _finish(self, callback_id, pending):
        with self._state_lock:
            self._pending.pop(callback_id, None)
            if pending.done:
                return
            pending.done = True
        state = ctypes.c_int(_nccl.SUCCESS)
        self._lib.ncclCommGetAsyncError(self._comm, ctypes.byref(state))
        if state.value not in (_nccl.SUCCESS, _nccl.IN_PROGRESS):
            error = RuntimeError(self._describe(pending.op, self._lib.error_text(state.value, self._comm)))
            pending.future.set_exception(error)
            self._fail(str(error))
            return
        try:
            if pending.post is not None:
                pending.post()
        except Exception as error:  # the copy-out of an all-gather, say
            pending.future.set_exception(error)
            return
        pending.keep = None
        pending.future.set_result(pending.result)

    # ---- failure --------------------------------------------------------------
    def _describe(self, op, cause):
        return "hostccl: %s on rank %d of %d failed: %s" % (op, self.rank(), self.size(), cause)

    def _raise_if_failed(self, op):
        if self._failure is not None:
            raise RuntimeError("hostccl: %s refused: the group failed earlier (%s)" % (op, self._failure))
        if self._closed:
            raise RuntimeError("hostccl: %s refused: the group was shut down" % op)

    def _fail(self, reason):
        with self._state_lock:
            if self._failure is None:
                self._failure = reason
            pending = list(self._pending.values())
            self._pending.clear()
            for item in pending:
                item.done = True
        for item in pending:
            item.future.set_exception(RuntimeError(self._describe(item.op, reason)))
        self._wake.set()

    def _watch(self):
        # Turns a peer's death or a stuck op into errors, and aborts the comm
        # from this thread (never from the stream's).
        while not self._closed:
            self._wake.wait(0.1)
            self._wake.clear()
            if self._failure is not None:
                if not self._aborted:
                    self._aborted = True
                    self._lib.ncclCommAbort(self._comm)
                continue
            with self._state_lock:
                oldest = next(iter(self._pending.values()), None)
            if oldest is None:
                continue
            state = ctypes.c_int(_nccl.SUCCESS)
            self._lib.ncclCommGetAsyncError(self._comm, ctypes.byref(state))
            if state.value not in (_nccl.SUCCESS, _nccl.IN_PROGRESS):
                self._fail(self._lib.error_text(state.value, self._comm))
            elif time.monotonic() - oldest.started > self._timeout_s:
                self._fail("%s did not complete within the group's timeout of %.1f s (a peer may be gone or "
                           "the ranks may disagree on the ops' order or sizes)" % (oldest.op, self._timeout_s))

    def shutdown(self):
        """Waits for pending work (aborting if the group failed) and frees the comm and stream."""
        if self._closed:
            return
        if self._failure is None and self._pending:
            self._lib.hostcclStreamSynchronize(self._stream)
        failed = self._failure is not None
        self._closed = True
        self._wake.set()
        self._watchdog.join(timeout=5)
        if failed:
            if not self._aborted:
                self._aborted = True
                self._lib.ncclCommAbort(self._comm)
        else:
            self._lib.ncclCommDestroy(self._comm)
        self._lib.hostcclStreamSynchronize(self._stream)
        self._lib.hostcclStreamDestroy(self._stream)

    # ---- collectives ------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        op = "allreduce"
        tensor = _one(op, tensors)
        dtype = _check_tensor(op, tensor, reduces=True)
        red = _reduce_op(op, opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        return self._enqueue(op, tensors, tensors, lambda: self._nccl(op, self._lib.ncclAllReduce(
            _ptr(tensor), _ptr(tensor), tensor.numel(), dtype, red, self._comm, self._stream)))

    def allreduce_coalesced(self, tensors, opts=None):
        op = "allreduce_coalesced"
        red = _reduce_op(op, opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        dtypes = [_check_tensor(op, t, reduces=True) for t in tensors]

        def calls():
            self._group(op, [lambda t=t, d=d: self._lib.ncclAllReduce(
                _ptr(t), _ptr(t), t.numel(), d, red, self._comm, self._stream) for t, d in zip(tensors, dtypes)])
        return self._enqueue(op, tensors, tensors, calls)

    def broadcast(self, tensors, opts):
        op = "broadcast"
        tensor = _one(op, tensors)
        dtype = _check_tensor(op, tensor, reduces=False)
        root = self._peer(op, "root", opts.rootRank)
        return self._enqueue(op, tensors, tensors, lambda: self._nccl(op, self._lib.ncclBroadcast(
            _ptr(tensor), _ptr(tensor), tensor.numel(), dtype, root, self._comm, self._stream)))

    def reduce(self, tensors, opts):
        op = "reduce"
        tensor = _one(op, tensors)
        dtype = _check_tensor(op, tensor, reduces=True)
        red = _reduce_op(op, opts.reduceOp)
        root = self._peer(op, "root", opts.rootRank)
        return self._enqueue(op, tensors, tensors, lambda: self._nccl(op, self._lib.ncclReduce(
            _ptr(tensor), _ptr(tensor), tensor.numel(), dtype, red, root, self._comm, self._stream)))

    def _allgather_base(self, output, input, opts=None):
        op = "allgather"
        dtype = _check_tensor(op, input, reduces=False)
        _check_tensor(op, output, reduces=False)
        self._same_dtype(op, [input, output])
        if output.numel() != input.numel() * self.size():
            raise ValueError("hostccl: %s: the output has %d elements, expected %d (world size %d x input %d)"
                             % (op, output.numel(), input.numel() * self.size(), self.size(), input.numel()))
        return self._enqueue(op, [output, input], [output], lambda: self._nccl(op, self._lib.ncclAllGather(
            _ptr(input), _ptr(output), input.numel(), dtype, self._comm, self._stream)))

    def allgather(self, output_lists, inputs, opts=None):
        op = "allgather"
        tensor = _one(op, inputs)
        outputs = _one(op, output_lists)
        dtype = _check_tensor(op, tensor, reduces=False)
        self._per_rank(op, "output", outputs, tensor)
        flat = torch.empty(tensor.numel() * self.size(), dtype=tensor.dtype)

        def copy_out():
            for rank, out in enumerate(outputs):
                out.copy_(flat[rank * tensor.numel():(rank + 1) * tensor.numel()].view_as(out))
        return self._enqueue(op, [flat, tensor, outputs], output_lists, lambda: self._nccl(op, self._lib.ncclAllGather(
            _ptr(tensor), _ptr(flat), tensor.numel(), dtype, self._comm, self._stream)), post=copy_out)

    def _reduce_scatter_base(self, output, input, opts=None):
        op = "reduce_scatter"
        dtype = _check_tensor(op, output, reduces=True)
        _check_tensor(op, input, reduces=True)
        self._same_dtype(op, [input, output])
        red = _reduce_op(op, opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        if input.numel() != output.numel() * self.size():
            raise ValueError("hostccl: %s: the input has %d elements, expected %d (world size %d x output %d)"
                             % (op, input.numel(), output.numel() * self.size(), self.size(), output.numel()))
        return self._enqueue(op, [output, input], [output], lambda: self._nccl(op, self._lib.ncclReduceScatter(
            _ptr(input), _ptr(output), output.numel(), dtype, red, self._comm, self._stream)))

    def reduce_scatter(self, outputs, input_lists, opts=None):
        op = "reduce_scatter"
        output = _one(op, outputs)
        inputs = _one(op, input_lists)
        dtype = _check_tensor(op, output, reduces=True)
        self._per_rank(op, "input", inputs, output)
        red = _reduce_op(op, opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        flat = torch.cat([t.reshape(-1) for t in inputs])
        return self._enqueue(op, [output, flat], outputs, lambda: self._nccl(op, self._lib.ncclReduceScatter(
            _ptr(flat), _ptr(output), output.numel(), dtype, red, self._comm, self._stream)))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        op = "alltoall_base"
        dtype = _check_tensor(op, input, reduces=False)
        _check_tensor(op, output, reduces=False)
        self._same_dtype(op, [input, output])
        send = self._row_splits(op, "input", input, input_split_sizes)
        recv = self._row_splits(op, "output", output, output_split_sizes)
        calls = []
        for peer in range(self.size()):
            calls.append(self._send(input, dtype, peer, *send[peer]))
            calls.append(self._recv(output, dtype, peer, *recv[peer]))
        return self._enqueue(op, [output, input], [output], lambda: self._group(op, calls))

    def alltoall(self, outputs, inputs, opts=None):
        op = "alltoall"
        self._per_rank(op, "input", inputs, None)
        self._per_rank(op, "output", outputs, None)
        self._same_dtype(op, list(inputs) + list(outputs))
        calls = []
        for peer in range(self.size()):
            dtype = _check_tensor(op, inputs[peer], reduces=False)
            calls.append(self._send(inputs[peer], dtype, peer))
            calls.append(self._recv(outputs[peer], dtype, peer))
        return self._enqueue(op, [outputs, inputs], outputs, lambda: self._group(op, calls))

    def gather(self, output_lists, inputs, opts):
        return self._rooted("gather", inputs, output_lists, opts, toward_root=True)

    def scatter(self, outputs, input_lists, opts):
        return self._rooted("scatter", outputs, input_lists, opts, toward_root=False)

    def _rooted(self, op, mine, root_lists, opts, toward_root):
        # gather: every rank sends its tensor to the root, which receives one per rank;
        # scatter: the other way round.
        tensor = _one(op, mine)
        dtype = _check_tensor(op, tensor, reduces=False)
        root = self._peer(op, "root", opts.rootRank)
        at_root = _one(op, root_lists) if self.rank() == root else []
        if self.rank() == root:
            self._per_rank(op, "output" if toward_root else "input", at_root, tensor)
        own = self._send if toward_root else self._recv
        theirs = self._recv if toward_root else self._send
        calls = [own(tensor, dtype, root)] + [theirs(t, dtype, peer) for peer, t in enumerate(at_root)]
        return self._enqueue(op, [at_root, tensor], root_lists if toward_root else mine,
                             lambda: self._group(op, calls))

    def barrier(self, opts=None):
        op = "barrier"
        token = torch.zeros(1, dtype=torch.int32)
        return self._enqueue(op, [token], [token], lambda: self._nccl(op, self._lib.ncclAllReduce(
            _ptr(token), _ptr(token), 1, _nccl.INT32, _nccl.SUM, self._comm, self._stream)))

    def send(self, tensors, dst, tag=0):
        op = "send"
        tensor = _one(op, tensors)
        dtype = _check_tensor(op, tensor, reduces=False)
        send = self._send(tensor, dtype, self._peer(op, "dst", dst))
        return self._enqueue(op, tensors, tensors, lambda: self._nccl(op, send()))

    def recv(self, tensors, src, tag=0):
        op = "recv"
        tensor = _one(op, tensors)
        dtype = _check_tensor(op, tensor, reduces=False)
        recv = self._recv(tensor, dtype, self._peer(op, "src", src))
        return self._enqueue(op, tensors, tensors, lambda: self._nccl(op, recv()))

    def recv_anysource(self, tensors, tag=0):
        raise RuntimeError("hostccl: recv from any source is not supported (NCCL has no such receive); "
                           "name the source rank")

    # batch_isend_irecv: the isend/irecv between these two calls form one NCCL group.
    def _start_coalescing(self, *args):
        self._comm_lock.acquire()
        if self._coalesced is not None:
            self._comm_lock.release()
            raise RuntimeError("hostccl: coalescing is already active on this group")
        self._coalesced = []
        self._lib.ncclGroupStart()

    def _end_coalescing(self, *args):
        try:
            batch, self._coalesced = self._coalesced or [], None
            result = self._lib.ncclGroupEnd()
            if result != _nccl.SUCCESS:
                self._fail("ncclGroupEnd of a batch of %d point-to-point ops failed: %s"
                           % (len(batch), self._lib.error_text(result, self._comm)))
                return
            for callback_id, pending in batch:
                self._launch_host_func(callback_id, pending)
        finally:
            self._comm_lock.release()

    # ---- helpers ----------------------------------------------------------------------
    def _group(self, op, calls):
        self._nccl(op, self._lib.ncclGroupStart())
        results = [call() for call in calls]
        end = self._lib.ncclGroupEnd()
        for result in results:
            self._nccl(op, result)
        self._nccl(op, end)

    def _send(self, tensor, dtype, peer, offset=0, count=None):
        """The ncclSend of elements [offset, offset + count) of `tensor` (all of it by default)."""
        address = ctypes.c_void_p(tensor.data_ptr() + offset * tensor.element_size())
        n = tensor.numel() if count is None else count
        return lambda: self._lib.ncclSend(address, n, dtype, peer, self._comm, self._stream)

    def _recv(self, tensor, dtype, peer, offset=0, count=None):
        address = ctypes.c_void_p(tensor.data_ptr() + offset * tensor.element_size())
        n = tensor.numel() if count is None else count
        return lambda: self._lib.ncclRecv(address, n, dtype, peer, self._comm, self._stream)

    def _peer(self, op, what, rank):
        if not 0 <= rank < self.size():
            raise ValueError("hostccl: %s: %s rank %d is not in the group (size %d)" % (op, what, rank, self.size()))
        return rank

    def _same_dtype(self, op, tensors):
        kinds = {t.dtype for t in tensors}
        if len(kinds) > 1:
            raise TypeError("hostccl: %s needs one dtype for all its tensors, got %s"
                            % (op, ", ".join(sorted(str(k) for k in kinds))))

    def _per_rank(self, op, what, tensors, like):
        if len(tensors) != self.size():
            raise ValueError("hostccl: %s needs one %s tensor per rank (%d), got %d"
                             % (op, what, self.size(), len(tensors)))
        for t in tensors:
            _check_tensor(op, t, reduces=False)
            if like is not None and (t.numel() != like.numel() or t.dtype != like.dtype):
                raise ValueError("hostccl: %s: every %s tensor must match the local one (%d x %s), got %d x %s"
                                 % (op, what, like.numel(), like.dtype, t.numel(), t.dtype))

    def _row_splits(self, op, what, tensor, splits):
        rows = tensor.size(0) if tensor.dim() > 0 else tensor.numel()
        per_row = tensor.numel() // rows if rows else 0
        if not splits:
            if rows % self.size() != 0:
                raise ValueError("hostccl: %s: the %s's %d rows do not split evenly over %d ranks"
                                 % (op, what, rows, self.size()))
            splits = [rows // self.size()] * self.size()
        if len(splits) != self.size() or sum(splits) != rows or min(splits) < 0:
            raise ValueError("hostccl: %s: %s split sizes %s must be %d non-negative counts summing to %d rows"
                             % (op, what, list(splits), self.size(), rows))
        out, offset = [], 0
        for count in splits:
            out.append((offset * per_row, count * per_row))
            offset += count
        return out


def _create(store, rank, size, timeout):
    return ProcessGroupHostccl(store, rank, size, timeout)


def _shutdown_all():
    for group in list(_live_groups):
        try:
            group.shutdown()
        except Exception as error:  # exit must go on
            print("hostccl: shutting a group down at exit failed: %s" % error, file=sys.stderr)


def _register():
    if not hasattr(dist.Backend, BACKEND_NAME.upper()):
        dist.Backend.register_backend(BACKEND_NAME, _create)
    atexit.register(_shutdown_all)


_register()
