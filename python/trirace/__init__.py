"""TriRace's annotation API for Python.

The functions here mirror include/trirace/trirace.h. They reach the TriRace
shim (libtrirace.so) when it is in the process, which is what
``trirace run -- python3 train.py`` arranges through LD_PRELOAD. Without the
shim every call is a cheap no-op and ``loaded()`` is False, so a training
script can keep its annotations everywhere.

    import trirace
    with trirace.tag(layer=3, phase="backward", traffic_class="dense"):
        dist.all_reduce(grad)

Tags form a stack per thread (the innermost scope's set fields win); an op
takes the tag of the thread that calls NCCL, so tag from the thread that
issues the collective (DDP issues gradient all-reduces from the autograd
thread: ``trirace.torch.auto_tag`` handles that).

Submodules: ``trirace.torch`` (auto_tag, ddp_comm_hook, set_role) and
``trirace.hostccl`` (a torch.distributed backend over hostccl's NCCL on CPUs).
"""

import contextlib
import ctypes

from trirace import _native

__all__ = [
    "PHASES", "CLASSES", "ROLES", "loaded", "version", "scheduler_active",
    "push_tag", "pop_tag", "tag", "set_comm_role", "set_new_comm_role", "comm_role",
    "iteration_begin", "iteration_end", "iteration",
]

PHASES = {"forward": 0, "backward": 1, "optimizer": 2}
CLASSES = {"auto": 0, "p2p": 1, "sparse": 2, "dense": 3}
ROLES = {"unknown": 0, "data_parallel": 1, "pipeline": 2, "tensor": 3, "expert": 4}


def loaded():
    """True when the TriRace shim is in this process."""
    return _native.api() is not None


def version():
    """The shim's annotation API version, or 0 without a shim."""
    api = _native.api()
    return api.version if api is not None else 0


def scheduler_active():
    """True when the shim gates launches (TRIRACE_MODE=schedule, and running)."""
    api = _native.api()
    if api is None or api.scheduler_active is None:
        return False
    return bool(api.scheduler_active())


def _choice(what, value, accepted):
    if value is None:
        return _native.UNSET
    if isinstance(value, str):
        if value in accepted:
            return accepted[value]
    elif isinstance(value, int) and not isinstance(value, bool) and value in accepted.values():
        return value
    raise ValueError("trirace: %s=%r is not accepted (one of %s)" % (what, value, ", ".join(sorted(accepted))))


def _number(what, value, bits=32):
    if value is None:
        return _native.UNSET
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("trirace: %s=%r must be an int or None" % (what, value))
    low = 0 if what != "priority" else -(1 << (bits - 1)) + 1
    if not low <= value < (1 << (bits - 1)):
        raise ValueError("trirace: %s=%r is out of range [%d, %d]" % (what, value, low, (1 << (bits - 1)) - 1))
    return value


def make_tag(layer=None, stage=None, microbatch=None, iteration=None, phase=None, traffic_class=None,
             priority=None):
    """A trirace_tag_t from keyword values; None fields inherit. Validates."""
    return _native.Tag(
        layer=_number("layer", layer),
        stage=_number("stage", stage),
        micro_batch=_number("microbatch", microbatch),
        phase=_choice("phase", phase, PHASES),
        iteration=_number("iteration", iteration, bits=64),
        traffic_class=_choice("traffic_class", traffic_class, CLASSES),
        priority=_number("priority", priority),
    )


def _call(entry, *args):
    """The shim's `entry` called with args, or NOT_LOADED without it (or an older shim)."""
    api = _native.api()
    fn = getattr(api, entry, None) if api is not None else None
    return _native.NOT_LOADED if fn is None else fn(*args)


def push_tag(**fields):
    """Pushes a tag on this thread's stack. Returns the C API's code (0 = OK, 1 = no shim)."""
    return _call("push_tag", make_tag(**fields))


def pop_tag():
    """Pops this thread's innermost tag. Returns the C API's code (3 = nothing to pop)."""
    return _call("pop_tag")


@contextlib.contextmanager
def tag(layer=None, stage=None, microbatch=None, iteration=None, phase=None, traffic_class=None, priority=None):
    """A scope whose NCCL calls (from this thread) carry the given fields."""
    tag_value = make_tag(layer, stage, microbatch, iteration, phase, traffic_class, priority)
    api = _native.api()
    if api is None or api.push_tag is None:
        yield
        return
    pushed = api.push_tag(tag_value) == _native.OK
    try:
        yield
    finally:
        if pushed:
            api.pop_tag()


def set_comm_role(comm, role):
    """Declares the role of an ncclComm_t (an int address or ctypes pointer).

    role: "data_parallel", "pipeline", "tensor", "expert" (or "unknown").
    Returns the C API's code; 2 means the shim does not know the comm.
    """
    value = _choice("role", role, ROLES)
    if value == _native.UNSET:
        raise ValueError("trirace: role=None is not accepted (one of %s)" % ", ".join(sorted(ROLES)))
    address = comm.value if hasattr(comm, "value") else comm
    if not address:
        raise ValueError("trirace: set_comm_role needs a communicator, got %r" % (comm,))
    return _call("set_comm_role", ctypes.c_void_p(address), value)


def set_new_comm_role(role):
    """Gives `role` to every NCCL communicator this thread creates from now on.

    role: "data_parallel", "pipeline", "tensor", "expert", or "unknown" (stop).
    Returns the role it replaces (a name), or None without a shim (or with a
    shim too old for it). Prefer the scope: ``with trirace.comm_role(...)``.
    """
    value = _choice("role", role, ROLES)
    if value == _native.UNSET:
        raise ValueError("trirace: role=None is not accepted (one of %s)" % ", ".join(sorted(ROLES)))
    api = _native.api()
    if api is None or api.set_new_comm_role is None:
        return None
    previous = ctypes.c_int(0)
    if api.set_new_comm_role(value, ctypes.byref(previous)) != _native.OK:
        raise ValueError("trirace: the shim refused role %r" % (role,))
    return next((name for name, v in ROLES.items() if v == previous.value), "unknown")


@contextlib.contextmanager
def comm_role(role):
    """A scope whose new communicators (created by this thread) get `role`.

    PyTorch creates a process group's NCCL communicator lazily, at the
    group's first collective, on the calling thread; hostccl's groups create
    theirs in new_group. So either of these names the comm at creation, which
    also lets TriRace set its NCCL traffic class (TRIRACE_COMM_TRAFFIC_CLASS):

        with trirace.comm_role("pipeline"):
            pp_group = dist.new_group(ranks)          # hostccl, or NCCL with eager init
        with trirace.comm_role("data_parallel"):
            dist.all_reduce(warmup, group=dp_group)   # NCCL: the group's first collective
    """
    previous = set_new_comm_role(role)
    try:
        yield
    finally:
        if previous is not None:
            set_new_comm_role(previous)


def iteration_begin(number):
    """Marks the start of training step `number` (ops without an iteration tag take it)."""
    return _call("iteration_begin", _number("iteration", number, bits=64))


def iteration_end(number):
    """Marks the end of training step `number`."""
    return _call("iteration_end", _number("iteration", number, bits=64))


@contextlib.contextmanager
def iteration(number):
    """iteration_begin(number) ... iteration_end(number) as a scope."""
    iteration_begin(number)
    try:
        yield
    finally:
        iteration_end(number)
