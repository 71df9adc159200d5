"""The registry of PyTorch's messages (src/torch_pitfalls/messages.py): every entry matches a
message that PyTorch really raises or warns (each is produced here), and every message that a page
asserts with expect_raises or expect_warns has an entry."""

from __future__ import annotations

import ast
import functools
import io
import multiprocessing
import multiprocessing.spawn
import os
import re
import sys
import tempfile
import types
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import messages, rules, run_isolated, run_ranks

from .conftest import EXAMPLES, example_path

CUDA = torch.cuda.is_available()
ACCELERATOR = torch.accelerator.current_accelerator() is not None


def _inplace_after(make):
    x = torch.randn(4, requires_grad=True)
    out = make(x)
    out.mul_(2)
    out.sum().backward()


def _saved_input_changed(shape):
    saved = torch.randn(shape)
    loss = (torch.randn(shape, requires_grad=True) * saved).sum()
    saved.add_(1)
    loss.backward()


def _anomaly_inplace():
    x = torch.randn(4, requires_grad=True)
    with torch.autograd.set_detect_anomaly(True):
        gate = x.sigmoid()
        gate.mul_(2)
        gate.sum().backward()


def _nan_gradient():
    x = torch.tensor([-1.0, 0.0, 4.0], requires_grad=True)
    with torch.autograd.detect_anomaly():
        torch.where(x > 0, x.sqrt(), torch.zeros_like(x)).sum().backward()


def _nan_log_gradient():
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    with torch.autograd.detect_anomaly():
        torch.where(x > 0, x.log(), torch.zeros_like(x)).sum().backward()


def _inference(use):
    with torch.inference_mode():
        t = torch.ones(2)
    use(t)


def _backward_twice():
    y = torch.randn(4, requires_grad=True).exp().sum()
    y.backward()
    y.backward()


def _load(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    torch.load(buffer)


class _Payload:
    def __reduce__(self):
        return (print, ("payload",))


def _load_numpy_scalar_allowlisted():
    # the scalar and np.dtype allowlisted: the next refusal names NumPy's dtype class (NumPy 1.25+)
    buffer = io.BytesIO()
    torch.save(np.float64(0.5), buffer)
    buffer.seek(0)
    core = getattr(np, "_core", None) or np.core
    with torch.serialization.safe_globals([core.multiarray.scalar, np.dtype]):
        torch.load(buffer)


def _load_model_of_a_missing_module():
    # a whole model whose class lives in a module that the loading process cannot import
    module = types.ModuleType("mynet")
    exec("from torch import nn\n\nclass Net(nn.Linear):\n    pass\n", module.__dict__)
    sys.modules["mynet"] = module
    try:
        buffer = io.BytesIO()
        torch.save(module.Net(2, 2), buffer)
    finally:
        del sys.modules["mynet"]
    buffer.seek(0)
    torch.load(buffer, weights_only=False)


def _adam_after_double():
    model = nn.Linear(2, 2)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    model.double()
    model(torch.ones(1, 2, dtype=torch.float64)).sum().backward()
    optimizer.step()


def _clip_exhausted():
    model = nn.Linear(2, 2)
    params = model.parameters()
    list(params)
    nn.utils.clip_grad_norm_(params, 1.0)


def _scheduler(total_steps=None):
    w = torch.ones(1, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=1.0)
    if total_steps is None:
        torch.optim.lr_scheduler.StepLR(optimizer, 1).step()
        return
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, 1.0, total_steps=total_steps)
    for _ in range(total_steps + 1):
        optimizer.step()
        scheduler.step()


def _scheduler_resumed_without_optimizer_state():
    optimizer = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, last_epoch=3)


def _unscale_twice():
    w = torch.ones(2, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=1.0)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(w.sum()).backward()
    scaler.unscale_(optimizer)
    scaler.unscale_(optimizer)


def _unscale_half():
    w = torch.ones(2, dtype=torch.float16, requires_grad=True)
    optimizer = torch.optim.SGD([w], lr=1.0)
    scaler = torch.amp.GradScaler("cpu")
    scaler.scale(w.float().sum()).backward()
    scaler.unscale_(optimizer)


class _Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        return iter(range(4))

    def __len__(self):
        return 2


def _stream_too_long():
    loader = torch.utils.data.DataLoader(_Stream(), batch_size=None)
    len(loader)
    list(loader)


def _ddp_unused_parameter():
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 2), nn.Linear(4, 2)

        def forward(self, x):
            return self.a(x)

    with tempfile.TemporaryDirectory() as folder:
        store = f"file://{folder}/store"
        dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
        try:
            model = DistributedDataParallel(TwoHeads())
            model(torch.randn(3, 4)).sum().backward()
            model(torch.randn(3, 4))
        finally:
            dist.destroy_process_group()


def _syncbn_on_cpu():
    import torch.distributed as dist

    with tempfile.TemporaryDirectory() as folder:
        store = f"file://{folder}/store"
        dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
        try:
            nn.SyncBatchNorm(2)(torch.randn(4, 2))  # training mode, in a process group
        finally:
            dist.destroy_process_group()


def _missing_rank(rank, world_size):
    import datetime
    import time

    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=1)
    group = dist.new_group(timeout=timeout)
    if rank == 0:
        dist.monitored_barrier(group=group, timeout=timeout)  # rank 1 never comes
    else:
        time.sleep(1.5)


def _peer_gave_up(rank, world_size):
    import datetime

    import torch.distributed as dist

    # rank 0 gives up first (the shorter timeout) and closes its connections; rank 1, still
    # waiting, fails with "Connection closed by peer", which is what run_ranks raises (rank 0
    # returns)
    group = dist.new_group(timeout=datetime.timedelta(seconds=1 if rank == 0 else 20))
    dist.barrier()
    try:
        if rank == 0:
            dist.barrier(group=group)  # rank 1 never comes
        dist.all_reduce(torch.ones(1), group=group)
    except RuntimeError:
        if rank != 0:
            raise
    finally:
        dist.barrier()  # the default group: rank 0 exits after rank 1 has failed


def _mismatched_collectives(rank, world_size):
    import datetime

    import torch.distributed as dist

    dist.set_debug_level(dist.DebugLevel.DETAIL)
    group = dist.new_group(timeout=datetime.timedelta(seconds=30))
    if rank == 0:
        dist.barrier(group=group)
    dist.all_reduce(torch.ones(1), group=group)


def _legacy_backward_hook():
    block = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    block.register_backward_hook(lambda *args: None)
    block(torch.ones(1, 2, requires_grad=True)).sum().backward()


def _full_hook_without_input_grad():
    layer = nn.Linear(2, 1)
    layer.register_full_backward_hook(lambda *args: None)
    layer(torch.ones(1, 2)).sum().backward()


def _both_hook_kinds():
    layer = nn.Linear(2, 1)
    layer.register_backward_hook(lambda *args: None).remove()
    layer.register_full_backward_hook(lambda *args: None)


def _checkpoint_ready_twice():
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.checkpoint import checkpoint

    class Checkpointed(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Linear(4, 4)

        def forward(self, x):
            return checkpoint(self.block, x, use_reentrant=True)

    with tempfile.TemporaryDirectory() as folder:
        store = f"file://{folder}/store"
        dist.init_process_group("gloo", init_method=store, rank=0, world_size=1)
        try:
            model = DistributedDataParallel(Checkpointed(), find_unused_parameters=True)
            model(torch.randn(3, 4, requires_grad=True)).sum().backward()
        finally:
            dist.destroy_process_group()


def _expanded_write():
    batch = torch.zeros(1, 3).expand(4, 3)
    batch += 1


def _deterministic(warn_only):
    torch.use_deterministic_algorithms(True, warn_only=warn_only)
    try:  # put_ without accumulation has no deterministic implementation, on any device
        torch.zeros(4).put_(torch.tensor([0, 0]), torch.tensor([1.0, 2.0]))
    finally:
        torch.use_deterministic_algorithms(False)


def _cudagraph_output_overwritten():
    net = nn.Linear(4, 3).cuda().eval()
    compiled = torch.compile(net, mode="reduce-overhead")
    with torch.no_grad():
        outputs = [compiled(batch) for batch in torch.randn(4, 8, 4, device="cuda")]
        torch.cat(outputs)


def _unsafe_autocast():
    with torch.autocast("cuda"):
        nn.BCELoss()(torch.rand(3, device="cuda"), torch.rand(3, device="cuda"))


def _meshgrid_without_indexing():
    warn_always = torch.is_warn_always_enabled()
    torch.set_warn_always(True)  # a C++ warning issued once per process otherwise
    try:
        torch.meshgrid(torch.arange(2), torch.arange(3))
    finally:
        torch.set_warn_always(warn_always)


def _start_while_bootstrapping():
    # what a "spawn" worker is while it runs the main module (spawn-main-guard): a process that
    # is still starting, which multiprocessing checks before it prepares a new process
    process = multiprocessing.current_process()
    process._inheriting = True
    try:
        multiprocessing.spawn.get_preparation_data("worker")
    finally:
        del process._inheriting


def _worker_exits():
    loader = torch.utils.data.DataLoader(
        range(4),
        num_workers=1,
        timeout=60,
        multiprocessing_context="fork",  # the worker_init_fn below is a lambda
        worker_init_fn=lambda worker_id: os._exit(1),
    )
    next(iter(loader))


def _export_batch_of_one(dynamic: bool):
    """export-static-batch: a program exported with a batch of 1, called on a batch of 2
    (``dynamic=False``), or the batch dimension declared dynamic with a named Dim."""
    example = (torch.randn(1, 3),)
    if dynamic:
        batch = torch.export.Dim("batch")
        torch.export.export(nn.Linear(3, 2), example, dynamic_shapes={"input": {0: batch}})
    else:
        torch.export.export(nn.Linear(3, 2), example).module()(torch.randn(2, 3))


def _trace_branch(check: bool):
    """jit-trace-control-flow: trace an ``if`` on a tensor's value (a TracerWarning), and with
    ``check`` an example that takes the other branch in check_inputs (a TracingCheckError)."""

    def scale(x):
        return x / 255 if x.max() > 1 else x

    others = [(torch.full((2,), 255.0),)] if check else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if check:
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.jit.trace(scale, torch.zeros(2), check_inputs=others)


def _script_function():
    """jit-trace-control-flow: torch.jit.script, deprecated in favour of torch.compile/export."""

    def double(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    torch.jit.script(double)


def _compile_print_fullgraph():
    """compile-graph-breaks: print inside a function compiled with fullgraph=True."""

    def step(x):
        print("x:", tuple(x.shape))
        return x.sum()

    torch._dynamo.reset()
    try:
        torch.compile(step, backend="eager", fullgraph=True)(torch.ones(2))
    finally:
        torch._dynamo.reset()


def _manual_step_out_of_place():
    w = torch.ones(2, requires_grad=True)
    for _ in range(2):  # the first step makes w a non-leaf: the second finds w.grad None
        w.sum().backward()
        w = w - 0.1 * w.grad


PRODUCERS = [
    _script_function,
    lambda: nn.Linear(2, 2).weight.grad.zero_(),
    # autograd
    lambda: torch.ones(2, requires_grad=True).add_(1),
    lambda: torch.optim.SGD([torch.ones(2, requires_grad=True) * 2], lr=1.0),
    lambda: _inplace_after(torch.sigmoid),
    lambda: _inplace_after(torch.exp),
    lambda: _saved_input_changed((4,)),
    lambda: _saved_input_changed((8, 6)),
    _anomaly_inplace,
    _backward_twice,
    lambda: torch.ones(2).sum().backward(),
    lambda: _inference(lambda t: t._version),
    lambda: _inference(lambda t: torch.ones(2, requires_grad=True).mul(t)),
    lambda: _inference(lambda t: t.add_(1)),
    lambda: torch.autograd.Variable(torch.ones(2), volatile=True),
    lambda: (torch.ones(2, requires_grad=True) * 2).grad,
    lambda: torch.ones(2).retain_grad(),
    _manual_step_out_of_place,
    _nan_gradient,
    _nan_log_gradient,
    _legacy_backward_hook,
    _full_hook_without_input_grad,
    _both_hook_kinds,
    lambda: torch.utils.checkpoint.checkpoint(nn.Linear(2, 2), torch.ones(1, 2)),
    # devices and serialization
    lambda: torch.ones(2, requires_grad=True).numpy(),
    lambda: _load(nn.Linear(2, 2)),
    lambda: _load(_Payload()),
    lambda: _load(np.float64(0.5)),
    _load_numpy_scalar_allowlisted,
    _load_model_of_a_missing_module,
    lambda: torch.ones(2, device="meta") + torch.ones(2),
    lambda: torch.ones(4).item(),
    lambda: torch.ones(4).mean().data[0],
    lambda: float(torch.ones(4)),
    lambda: nn.DataParallel(nn.Sequential(nn.Linear(2, 2))).load_state_dict(
        nn.Sequential(nn.Linear(2, 2)).state_dict()
    ),
    lambda: nn.Sequential(nn.Linear(2, 2)).load_state_dict(
        nn.DataParallel(nn.Sequential(nn.Linear(2, 2))).state_dict()
    ),
    lambda: _missing_buffer(),
    lambda: torch.set_rng_state(torch.ones(2)),
    # losses
    lambda: F.cross_entropy(torch.randn(3, 2), torch.zeros(3, dtype=torch.int32)),
    lambda: F.cross_entropy(torch.randn(3, 2), torch.tensor([0, 1, 5])),
    lambda: F.cross_entropy(torch.randn(2, 7, 10), torch.zeros(2, 7, dtype=torch.long)),
    lambda: F.cross_entropy(torch.randn(14, 10), torch.zeros(2, 7, dtype=torch.long)),
    lambda: F.mse_loss(torch.ones(4, 1), torch.ones(4)),
    lambda: F.mse_loss(torch.tensor(1.0), torch.ones(4)),
    lambda: nn.BCELoss()(torch.tensor([2.0]), torch.ones(1)),
    lambda: nn.SoftMarginLoss()(torch.randn(4, 3), torch.rand(4, 3, requires_grad=True)),
    lambda: F.kl_div(torch.randn(3, 2).log_softmax(1), torch.rand(3, 2)),
    lambda: F.ctc_loss(
        torch.randn(12, 2, 3).log_softmax(2),
        torch.ones(2, 2, dtype=torch.long),
        torch.tensor([48, 12]),
        torch.tensor([2, 2]),
    ),
    lambda: F.ctc_loss(
        torch.randn(2, 4, 3).log_softmax(2),
        torch.ones(2, 2, dtype=torch.long),
        torch.tensor([4, 4]),
        torch.tensor([2, 2]),
    ),
    # modules
    lambda: nn.BatchNorm1d(3)(torch.randn(1, 3)),
    lambda: nn.utils.rnn.pack_padded_sequence(torch.randn(3, 2, 1), torch.tensor([1, 3])),
    lambda: nn.utils.rnn.pack_padded_sequence(
        torch.randn(3, 2, 1), torch.tensor([3, 1], device="meta")
    ),
    lambda: nn.RNN(4, 4, num_layers=2, batch_first=True)(
        torch.randn(3, 5, 4), torch.randn(3, 2, 4)
    ),
    lambda: nn.LSTM(4, 4, num_layers=2, batch_first=True)(
        torch.randn(3, 5, 4), (torch.randn(3, 2, 4), torch.randn(3, 2, 4))
    ),
    lambda: nn.Module()(),
    lambda: nn.Conv1d(3, 4, 3)(torch.randn(8, 20, 3)),
    lambda: nn.BatchNorm1d(3)(torch.randn(8, 20, 3)),
    lambda: nn.BatchNorm1d(20).eval()(torch.randn(8, 24, 3)),
    lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), num_layers=1),
    lambda: nn.MultiheadAttention(8, 2)(
        x := torch.randn(2, 5, 8), x, x, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool)
    ),
    # optimizers
    lambda: _scheduler(),
    lambda: _scheduler(total_steps=2),
    lambda: torch.optim.SGD([], lr=1.0),
    _clip_exhausted,
    lambda: torch.optim.SGD(
        [{"params": [w := torch.ones(1, requires_grad=True)]}, {"params": [w]}]
    ),
    _adam_after_double,
    _unscale_twice,
    _scheduler_resumed_without_optimizer_state,
    _unscale_half,
    # tensors
    lambda: torch.randn(2, 3).t().view(6),
    lambda: F.interpolate(torch.randn(3, 8, 8), size=(16, 16)),
    lambda: F.interpolate(torch.randn(3, 8, 8), scale_factor=2, mode="bilinear"),
    lambda: F.interpolate(torch.randn(8, 8), scale_factor=2),
    lambda: F.upsample(torch.randn(1, 1, 4), scale_factor=2),
    lambda: F.affine_grid(torch.eye(2, 3).unsqueeze(0), (1, 1, 2, 2)),
    _expanded_write,
    lambda: torch.zeros(4, 1).add_(torch.ones(4, 2)),  # generic: no entry (GENERIC)
    lambda: torch.zeros(3).expand(2, 3).masked_fill_(torch.ones(2, 3, dtype=torch.bool), 1),
    lambda: F.softmax(torch.randn(2, 3)),
    lambda: F.log_softmax(torch.randn(2, 3)),
    lambda: torch.softmax(torch.randn(2, 3)),
    lambda: torch.randn(3).index_select(0, torch.tensor([0.0])),
    lambda: torch.randn(3).index_select(0, torch.tensor([[0]])),
    lambda: torch.randn(3).index_select(0, torch.tensor([5])),
    lambda: torch.randn(3, 5).index_select(1, torch.tensor([7])),
    lambda: torch.randn(3)[torch.tensor([5])],
    lambda: torch.randn(3).gather(0, torch.tensor([5])),
    lambda: torch.Tensor([1, 2], dtype=torch.float64),
    lambda: torch.Tensor(2.5),
    lambda: torch.Tensor(3, device="cuda"),
    lambda: torch.tensor(torch.ones(2)),
    _meshgrid_without_indexing,
    lambda: torch.zeros(4, 3) + torch.zeros(3, 4),
    lambda: F.pad(torch.zeros(1, 1, 8, 3), (4, 4, 0, 0), mode="reflect"),
    lambda: nn.Linear(4, 2)(torch.zeros(2, 3, 6)),
    lambda: torch.zeros(3).argmax(dim=1),
    lambda: torch.cat([torch.zeros(2, 3), torch.zeros(3)]),
    lambda: F.mse_loss(torch.tensor(1.0), torch.ones(1)),
    lambda: F.binary_cross_entropy_with_logits(torch.tensor(0.0), torch.ones(1)),
    lambda: F.cross_entropy(torch.randn(16, 10), torch.zeros(4, dtype=torch.long)),
    lambda: nn.Linear(8, 10)(torch.randn(4, 32)),
    # numerics, data, performance, distributed
    lambda: nn.Linear(2, 2)(torch.ones(1, 2, dtype=torch.float64)),
    lambda: nn.Conv1d(1, 1, 1)(torch.ones(1, 1, 2, dtype=torch.float64)),
    lambda: nn.LSTM(2, 1)(torch.ones(1, 1, 2, dtype=torch.float64)),
    lambda: torch.bmm(torch.ones(1, 1, 2), torch.ones(1, 2, 1, dtype=torch.float64)),
    # autocast-outputs-dtype: a bfloat16 output of an autocast region outside it
    lambda: nn.Linear(2, 2)(torch.ones(1, 2, dtype=torch.bfloat16)),
    lambda: torch.ones(2, dtype=torch.bfloat16).numpy(),
    lambda: torch.ones(1, 3).std(dim=0),
    # float64-creep's message on 2.11 and older (mse_loss); huber_loss still gives it in 2.13
    lambda: F.huber_loss(
        torch.ones(2, requires_grad=True), torch.zeros(2, dtype=torch.float64)
    ).backward(),
    _stream_too_long,
    lambda: torch.ones(2).pin_memory(),
    lambda: next(
        iter(torch.utils.data.DataLoader(torch.arange(8.0), batch_size=4, pin_memory=True))
    ),
    _ddp_unused_parameter,
    _syncbn_on_cpu,
    # ddp-rank-divergent-collectives: a timeout (with the rank that did not arrive), the peer of
    # a rank that timed out, a mismatch
    lambda: run_ranks(_missing_rank, 2, timeout=60),
    lambda: run_ranks(_peer_gave_up, 2, timeout=60),
    lambda: run_ranks(_mismatched_collectives, 2, timeout=60),
    _checkpoint_ready_twice,
    lambda: _deterministic(warn_only=False),
    lambda: _deterministic(warn_only=True),
    lambda: torch.utils.data.DistributedSampler(range(4)),
    _start_while_bootstrapping,
    _worker_exits,
    lambda: torch.utils.data.DataLoader(
        range(4), sampler=torch.utils.data.SequentialSampler(range(4)), shuffle=True
    ),
    # compilation and export
    lambda: _export_batch_of_one(dynamic=False),
    lambda: _export_batch_of_one(dynamic=True),
    lambda: _trace_branch(check=False),
    lambda: _trace_branch(check=True),
    _compile_print_fullgraph,
]
"""Code that makes PyTorch raise or warn the messages of the pages (CPU; CUDA ones below)."""

CUDA_PRODUCERS = [
    lambda: torch.ones(2, device="cuda").numpy(),
    lambda: torch.ones(2, device="cuda") + torch.ones(2),
    _unsafe_autocast,
    _cudagraph_output_overwritten,
]

#: CUDA errors that leave the process's CUDA context unusable: made in a child process, whose
#: last line (``Class: message``) is what PyTorch raised there.
CUDA_CHILD_PRODUCERS = [
    "import torch; x = torch.ones(3, device='cuda'); print(x[torch.tensor([5], device='cuda')])",
    # a forked DataLoader worker that uses CUDA after the main process did (cuda-in-forked-workers)
    "import torch; from torch.utils.data import DataLoader; torch.ones(1, device='cuda'); "
    "list(DataLoader(range(2), num_workers=1, multiprocessing_context='fork', timeout=60, "
    "collate_fn=lambda batch: torch.tensor(batch, device='cuda')))",
]


def _run_child(code: str) -> list[tuple[str, str]]:
    category, _, message = run_isolated(code).last_error_line().partition(": ")
    return [(category.rsplit(".", 1)[-1], message)] if message else []


NEEDS_CUDA = {
    r"CUDA error: device-side assert triggered",
    r"can't convert cuda.*numpy",
    r"Expected all tensors to be on the same device",
    r"unsafe to autocast",
    r"Cannot re-initialize CUDA in forked subprocess",
    r"accessing tensor output of CUDAGraphs that has been overwritten by a subsequent run",
}
"""Entries (and page assertions matched by them) that only a CUDA device can produce."""

NEEDS_NO_ACCELERATOR = {
    r"Cannot access accelerator device when none is available",
    r"'pin_memory' argument is set as true but no accelerator is found",
}
"""Entries that only a machine without an accelerator produces."""

PAGE_NEEDS_CUDA = {
    "can't convert cuda",
    "Expected all tensors to be on the same device",
    "unsafe to autocast",
    "Cannot re-initialize CUDA in forked subprocess",
    "overwritten by a subsequent run",  # compile-cudagraph-overwritten: CUDAGraph Trees only
}
PAGE_NEEDS_NO_ACCELERATOR = {
    "Cannot access accelerator device when none is available"
    "|Found no NVIDIA driver on your system|CUDA driver version is insufficient",
    "no accelerator is found",
}

UNTIL = {entry.pattern: entry.until for entry in messages.MESSAGES if entry.until}
"""Entries (and page assertions with the same pattern) that only releases up to the one named
(their record's ``until``) produce: the pages assert them on those releases (``nox -s
releases``), not on the one tested."""
MINOR = tuple(int(part) for part in torch.__version__.split(".")[:2])


def _gone(pattern: str) -> bool:
    return pattern in UNTIL and tuple(int(p) for p in UNTIL[pattern].split(".")) < MINOR


NOT_PYTORCHS = {
    r"indices must be in \[0, 3\) for dim 0, got 0\.\.5": "the page's own checked helper",
    "Error detected in SqrtBackward0": "anomaly mode's header before any backward error",
    "Error detected in SigmoidBackward0": "anomaly mode's header before any backward error",
    "Error detected in LogBackward0": "anomaly mode's header before any backward error",
    "'float' object is not iterable": "Python's own error, from list.extend of a float",
}
"""Messages a page asserts that are not PyTorch's (or that precede another one), and why."""


def _missing_buffer():
    class Positions(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("positions", torch.zeros(2))

    Positions().load_state_dict({})


def _run(producer) -> list[tuple[str, str]]:
    """The (class name, message) of the error and of each warning that ``producer`` gives."""
    got = []
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        try:
            producer()
        except Exception as error:
            got.append((type(error).__name__, str(error)))
    got += [(w.category.__name__, str(w.message)) for w in shown]
    return got


@functools.cache
def produced() -> tuple[tuple[str, str], ...]:
    torch.manual_seed(0)
    out = []
    for producer in PRODUCERS + (CUDA_PRODUCERS if CUDA else []):
        out += _run(producer)
    for code in CUDA_CHILD_PRODUCERS if CUDA else []:
        out += _run_child(code)
    return tuple(out)


def _skipped(pattern: str) -> bool:
    return (
        (not CUDA and pattern in NEEDS_CUDA)
        or (ACCELERATOR and pattern in NEEDS_NO_ACCELERATOR)
        or _gone(pattern)
    )


@pytest.mark.parametrize("entry", messages.MESSAGES, ids=lambda e: e.pattern[:40])
def test_each_entry_matches_a_message_pytorch_produces(entry):
    if _gone(entry.pattern):
        pytest.skip(f"only PyTorch {UNTIL[entry.pattern]} and older produces it")
    if _skipped(entry.pattern):
        pytest.skip("needs CUDA" if entry.pattern in NEEDS_CUDA else "needs no accelerator")
    matching = [text for category, text in produced() if entry.matches(category, text)]
    assert matching, f"PyTorch {torch.__version__} produced nothing that {entry} matches"
    kinds = {c for c, t in produced() if entry.matches(c, t)}
    assert all(("Warning" in c) == (entry.kind == "warning") for c in kinds)


def test_each_entry_points_to_a_page_and_is_well_formed():
    for entry in messages.MESSAGES:
        assert example_path(entry.slug).is_file(), entry
        assert entry.url(language="zh_CN") == rules.page_url(entry.slug, language="zh_CN")
        if entry.rule:
            assert rules.rule(entry.rule).kind == "note" or entry.rule == "TP006"
            assert rules.rule(entry.rule).slug == entry.slug
    assert set(messages.NOTE) == set(rules.LANGUAGES)
    with pytest.raises(ValueError, match="kind"):
        messages.find("RuntimeError", "x", kind="lint")


def _page_assertions() -> list[tuple[str, str, tuple[str, ...], str]]:
    """(page, function, class names, pattern) of every expect_raises/expect_warns whose pattern is
    a string literal, read from the source of the examples."""
    found = []
    for path in sorted(EXAMPLES.glob("*/plot_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or len(node.args) < 2:
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name not in ("expect_raises", "expect_warns"):
                continue
            kind, pattern = node.args[:2]
            if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)):
                continue  # a pattern computed on the page: its message is produced above anyway
            kinds = kind.elts if isinstance(kind, ast.Tuple) else [kind]
            names = tuple(getattr(k, "id", getattr(k, "attr", "")) for k in kinds)
            if "PitfallWarning" in names:
                continue
            found.append((path.name, name, names, pattern.value))
    return found


def test_the_examples_assert_many_messages():
    assert len(_page_assertions()) > 80


@pytest.mark.parametrize("page, function, names, pattern", _page_assertions())
def test_each_message_a_page_asserts_has_an_entry(page, function, names, pattern):
    if pattern in NOT_PYTORCHS:
        return
    candidates = [
        (category, text)
        for category, text in produced()
        if (category in names or (function == "expect_warns" and "Warning" in category))
        and re.search(pattern, text)
    ]
    if candidates and all(messages.generic(c, t) for c, t in candidates):
        return  # an entry would send every such error to one page (messages.GENERIC)
    covered = [(c, t) for c, t in candidates if messages.find(c, t) is not None]
    if not covered and not CUDA and pattern in PAGE_NEEDS_CUDA:
        pytest.skip("needs CUDA")
    if not covered and ACCELERATOR and pattern in PAGE_NEEDS_NO_ACCELERATOR:
        pytest.skip("needs a machine without an accelerator")
    if not covered and _gone(pattern):
        pytest.skip(f"only PyTorch {UNTIL[pattern]} and older produces it")
    assert covered, (page, pattern, candidates)


def test_registry_imports_no_torch():
    import subprocess
    import sys

    code = "import sys, torch_pitfalls.messages; assert 'torch' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_not_pytorchs_covers_the_page_helpers_messages():
    # the docs' error index leaves out the messages of messages.NOT_PYTORCH (a page's own helper)
    assert messages.not_pytorchs("IndexError", "indices must be in [0, 3) for dim 0, got 0..5")
    assert not messages.not_pytorchs("IndexError", "Target 1 is out of bounds.")
    assert not messages.not_pytorchs("RuntimeError", "indices must be in [0, 3) for dim 0, got")
