"""How the hostccl backend's ops complete: their futures, their Work, and
the host-function callback that hostccl's stream thread runs.

An op enqueues its NCCL calls, then hostcclLaunchHostFunc(stream,
ON_STREAM_DONE, id): when the stream reaches it, the data is there and the
owner's _finish(id, pending) completes the op's future. Ids map to (owner,
Pending) here, so nothing but an integer crosses into C.

Thread safety: register / unregister / the callback may run on any thread.
"""

import collections
import itertools
import threading
import time
import traceback

import torch
import torch.distributed as dist

from trirace import _nccl


class Pending:
    """One enqueued op: what to keep alive, what its future returns."""

    __slots__ = ("op", "future", "keep", "result", "post", "started", "done")

    def __init__(self, op, keep, result, post):
        self.op = op
        self.future = torch.futures.Future()
        self.keep = keep
        self.result = result
        self.post = post
        self.started = time.monotonic()
        self.done = False


# Works handed out lately. A C++ caller (DDP) waits on a Work right after it
# gets it or keeps only its future; 4096 covers any such window.
_recent_works = collections.deque(maxlen=4096)


def _value_of(future):
    return future.value()


class Work(getattr(dist, "_Work", None) or torch._C._distributed_c10d.Work):
    """A Work over the op's future. wait() raises the op's error (torch 1.13's
    work-from-future swallows it)."""

    def __init__(self, future):
        super().__init__()
        # The op's own future fails through set_exception, which torch 1.13
        # stores as a Python value that C++ consumers (DDP's reducer) would
        # read as tensors and crash on. A then() child carries the failure as
        # a real error, which they raise.
        self._future = future.then(_value_of)
        # torch routes C++ calls (DDP's wait, getFuture) to these overrides only
        # while this Python object lives, and C++ holds the Work, not it: keep
        # the recent ones alive (see _recent_works).
        _recent_works.append(self)

    def wait(self, timeout=None):
        self._future.wait()
        return True

    def get_future(self):
        return self._future

    def is_completed(self):
        return self._future.done()

    def is_success(self):
        return self._future.done() and self.exception() is None

    def exception(self):
        try:
            self._future.value()
        except Exception as error:
            return error
        return None

    def result(self):
        return self._future.wait()

    def synchronize(self):
        return None


_lock = threading.Lock()
_owners = {}  # callback id -> (owner, Pending)
_ids = itertools.count(1)


def next_id():
    """A fresh callback id (never 0: a NULL user_data)."""
    return next(_ids)


def register(callback_id, owner, pending):
    with _lock:
        _owners[callback_id] = (owner, pending)


def unregister(callback_id):
    with _lock:
        _owners.pop(callback_id, None)


def _on_stream_done(user_data):
    # Runs on hostccl's stream thread; an exception must not escape into C.
    try:
        with _lock:
            entry = _owners.pop(user_data, None)
        if entry is not None:
            entry[0]._finish(user_data, entry[1])
    except BaseException:  # noqa: B036 - nothing may unwind into hostccl
        traceback.print_exc()


ON_STREAM_DONE = _nccl.HOST_FUNC(_on_stream_done)
