"""``TP021``: an evaluation ``DistributedSampler`` that repeats samples to pad the dataset.

.. rubric:: What it does

Warns when a DataLoader iterates a ``torch.utils.data.distributed.DistributedSampler`` made
with ``shuffle=False`` (as for evaluation) and ``drop_last=False`` (the default) over a dataset
whose length is not a multiple of ``num_replicas``: the sampler pads its index list with
repeated samples so that every process gets the same number. The guards take the calls of
``DistributedSampler.__iter__`` and read the sampler's attributes; reported at the line that
iterates the DataLoader, once per place. A sampler read directly (``list(sampler)``, to mask the
padding as the page does) and a shuffling sampler (training) are not reported, nor a subclass
with its own ``__iter__``.

.. rubric:: Why is this bad?

The repeated samples are evaluated and counted twice: a metric summed over the processes
covers more samples than the validation set has, and changes with the number of processes.

.. rubric:: Example

.. code-block:: python

    sampler = DistributedSampler(val_set, shuffle=False)  # len(val_set) % world_size != 0
    for x, y in DataLoader(val_set, batch_size=64, sampler=sampler):
        correct += (model(x).argmax(1) == y).sum()

.. rubric:: Use instead

.. code-block:: python

    sampler = UnpaddedSampler(val_set, world_size, rank)  # range(rank, len(val_set), world_size)
    for x, y in DataLoader(val_set, batch_size=64, sampler=sampler):
        correct += (model(x).argmax(1) == y).sum()
"""

from __future__ import annotations

import sys
from pathlib import Path

from torch_pitfalls.rules import Call, _rule

RULE = _rule(
    "TP021",
    "guard",
    "distributed-eval-padding",
    "evaluation sampler pads with repeated samples",
    "评估用的采样器用重复样本补齐",
    "a DataLoader iterates a DistributedSampler with shuffle=False and drop_last=False over a "
    "dataset whose length is not a multiple of num_replicas: it pads with repeated samples, "
    "counted twice in an evaluation metric; give each rank its own indices without padding",
    "DataLoader 遍历的 DistributedSampler 设置了 shuffle=False 和 drop_last=False，而数据集长度"
    "不是 num_replicas 的整数倍：它用重复样本补齐，评估指标会把这些样本算两次；应给每个进程"
    "分配不补齐的样本索引",
    on=(Call("torch.utils.data.distributed.DistributedSampler.__iter__"),),
)

_PITFALLS = str(Path(__file__).resolve().parents[1])  # the guards' and the rules' frames


def check(guards, func, args, kwargs) -> None:
    """Before a DistributedSampler is iterated: no shuffling, padding, a DataLoader reading it."""
    sampler = args[0] if args else kwargs.get("self")
    if getattr(sampler, "shuffle", True) or getattr(sampler, "drop_last", True):
        return
    replicas = sampler.num_replicas
    if len(sampler.dataset) % replicas == 0:
        return
    data = str(Path(sys.modules["torch"].utils.data.__file__).resolve().parent)
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PITFALLS):
        frame = frame.f_back
    if frame is not None and frame.f_code.co_filename.startswith(data):
        guards.flag(RULE.id)
