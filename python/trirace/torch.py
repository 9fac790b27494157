"""PyTorch helpers: layer tags without touching the training loop, and comm roles.

    import trirace.torch
    tagger = trirace.torch.auto_tag(model, stage=2)        # once, before training
    ddp = DistributedDataParallel(model, process_group=dp_group)
    ddp.register_comm_hook(tagger, trirace.torch.ddp_comm_hook)   # optional
    trirace.torch.set_role(dp_group, "data_parallel")      # before the group's first collective

auto_tag: the "layers" are the modules that own parameters directly (Linear,
LayerNorm, Embedding, ...), numbered 0, 1, ... in the order of their first
forward call (execution order, so 0 is the front of the model). A forward
pre-hook tags the layer's forward with (layer, stage, phase=forward); a hook
on the layer's output gradient tags what follows on that thread with
(layer, stage, phase=backward) until the next layer's backward begins, and a
callback queued on the autograd engine removes the tag when backward ends.
So the gradient all-reduce that DDP issues from its autograd hook carries
the layer whose gradients became ready.

ddp_comm_hook (with the handle auto_tag returned as its state) tags each
bucket with the front-most layer among its parameters, phase backward, class
DENSE, and then all-reduces it exactly as DDP's default hook does (divide
by the group size, sum).

Everything here is a no-op when the TriRace shim is not loaded, apart from
the hooks' bookkeeping; results never change.
"""

import threading

import torch
import torch.distributed as dist

import trirace

__all__ = ["AutoTag", "auto_tag", "ddp_comm_hook", "set_role"]


class AutoTag:
    """The handle auto_tag returns: the layer numbering, and .remove()."""

    def __init__(self, module, stage, process_group):
        self.stage = stage
        self.process_group = process_group
        self._layers = {}  # module -> index, in first-forward order
        self._param_layer = {}  # id(parameter) -> index
        self._handles = []
        self._local = threading.local()
        for sub in module.modules():
            if any(True for _ in sub.parameters(recurse=False)):
                self._handles.append(sub.register_forward_pre_hook(self._before_forward))
                self._handles.append(sub.register_forward_hook(self._after_forward))

    def remove(self):
        """Removes the hooks; the numbering stays readable."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def layer_of(self, module_or_parameter):
        """The layer index of a layer module or of one of its parameters (None before its first forward)."""
        if isinstance(module_or_parameter, torch.nn.Module):
            return self._layers.get(module_or_parameter)
        return self._param_layer.get(id(module_or_parameter))

    @property
    def num_layers(self):
        return len(self._layers)

    def _index(self, module):
        index = self._layers.get(module)
        if index is None:
            index = len(self._layers)
            self._layers[module] = index
            for p in module.parameters(recurse=False):
                self._param_layer[id(p)] = index
        return index

    def _before_forward(self, module, inputs):
        index = self._index(module)
        stack = getattr(self._local, "forward", None)
        if stack is None:
            stack = self._local.forward = []
        stack.append(trirace.push_tag(layer=index, stage=self.stage, phase="forward") == 0)

    def _after_forward(self, module, inputs, output):
        stack = getattr(self._local, "forward", None)
        if stack and stack.pop():
            trirace.pop_tag()
        if torch.is_grad_enabled():
            index = self._layers[module]
            for tensor in _tensors(output):
                if tensor.requires_grad:
                    tensor.register_hook(lambda grad, i=index: self._enter_backward(i))

    def _enter_backward(self, index):
        # Runs on the thread that executes this part of backward.
        if getattr(self._local, "backward", False):
            trirace.pop_tag()
        else:
            torch.autograd.Variable._execution_engine.queue_callback(self._leave_backward)
        self._local.backward = trirace.push_tag(layer=index, stage=self.stage, phase="backward") == 0
        return None

    def _leave_backward(self):
        if getattr(self._local, "backward", False):
            trirace.pop_tag()
        self._local.backward = False


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def auto_tag(module, stage=None, process_group=None):
    """Tags the forward and backward of each layer of `module`; returns an AutoTag.

    stage: the pipeline stage this module is (None: not tagged).
    process_group: the group ddp_comm_hook all-reduces on (None: DDP's default group).
    """
    if not isinstance(module, torch.nn.Module):
        raise TypeError("trirace.torch.auto_tag needs a torch.nn.Module, got %s" % type(module).__name__)
    return AutoTag(module, stage, process_group)


def ddp_comm_hook(state, bucket):
    """A DDP communication hook: DDP's all-reduce, tagged with the bucket's layers.

    state: the AutoTag from auto_tag (or None: the bucket is tagged DENSE/backward only).
    """
    group = getattr(state, "process_group", None)
    size = group.size() if group is not None else dist.get_world_size()
    layers = []
    if state is not None:
        for p in bucket.parameters():
            index = state.layer_of(p)
            if index is not None:
                layers.append(index)
    tensor = bucket.buffer()
    tensor.div_(size)
    with trirace.tag(layer=min(layers) if layers else None, stage=getattr(state, "stage", None),
                     phase="backward", traffic_class="dense"):
        work = dist.all_reduce(tensor, group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def set_role(process_group, role):
    """Declares the TriRace role of a torch process group's communicator(s).

    role: "data_parallel", "pipeline", "tensor" or "expert". process_group None
    is the default group. Returns the C API's code (0 OK, 1 no shim loaded).

    hostccl groups: the group's communicator, at any time. Other backends: the
    backend's communicator where torch exposes it (ProcessGroupNCCL's
    _comm_ptr, torch 2.2 and later, once the group has run a collective);
    otherwise RuntimeError, since the shim cannot tell which NCCL communicator
    belongs to the group.
    """
    if role not in trirace.ROLES or role == "unknown":
        raise ValueError("trirace.torch.set_role: role=%r is not accepted (one of data_parallel, pipeline, "
                         "tensor, expert)" % (role,))
    group = process_group if process_group is not None else dist.distributed_c10d._get_default_group()
    setter = getattr(group, "set_trirace_role", None)
    if setter is not None:
        return setter(role)
    if not trirace.loaded():
        return 1
    for candidate in _backends(group):
        comm_ptr = getattr(candidate, "_comm_ptr", None)
        if comm_ptr is not None:
            address = comm_ptr()
            if address:
                return trirace.set_comm_role(address, role)
    raise RuntimeError("trirace.torch.set_role: cannot find the NCCL communicator of this %s process group "
                       "(torch %s exposes none, or the group has not run a collective yet); name it at creation "
                       "instead: `with trirace.comm_role(%r):` around the group's first collective (or around "
                       "new_group with eager init), or rely on the role TriRace infers"
                       % (type(group).__name__, torch.__version__, role))


def _backends(group):
    yield group
    get = getattr(group, "_get_backend", None)
    if get is not None:
        for device in ("cuda", "cpu"):
            try:
                yield get(torch.device(device))
            except Exception:  # no backend for that device
                continue
