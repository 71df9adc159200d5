"""
.. _checkpoint-reentrant-frozen-input:

Activation checkpointing behind frozen inputs
=============================================

Activation checkpointing (:func:`torch.utils.checkpoint.checkpoint`) saves memory by
recomputing a block's activations during backward.
In its reentrant form, which is still what a call without ``use_reentrant`` runs, the block's
parameters get gradients only if one of the tensors passed to ``checkpoint`` requires grad.
Behind a frozen embedding or a frozen backbone, as in adapter and LoRA fine-tuning, none does:
the checkpointed block gets no gradient at all, the optimizer leaves it unchanged, and the only
sign is a warning that is easy to take for noise.
Under :class:`~torch.nn.parallel.DistributedDataParallel` the same setup fails instead, one way
or another.

.. admonition:: What you will learn

   * why the reentrant checkpoint cuts the gradient of the block's parameters when no input
     requires grad;
   * what a call without ``use_reentrant`` does on this release, and what it warns;
   * the fix, ``use_reentrant=False``, and the older workaround of an input that requires grad;
   * the two DDP errors of the reentrant variant.

.. admonition:: Prerequisites

   :ref:`requires-grad-propagation` (when an output requires grad);
   :ref:`freezing-layers` (``requires_grad_(False)``);
   :ref:`ddp-unused-parameters` for the DDP part.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`, :func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A frozen, pretrained embedding feeds a small trainable adapter, then a trainable head.
# To save memory the adapter is checkpointed, with the call most code uses:
# ``checkpoint(self.adapter, h)``.
# We train three steps with SGD and compare the weights before and after.
import contextlib
import datetime

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")
print("PyTorch", torch.__version__)


class AdapterModel(nn.Module):
    def __init__(self, vocab=10, dim=4, use_checkpoint=True, **checkpoint_kwargs):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim).requires_grad_(False)  # frozen, pretrained
        self.adapter = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.head = nn.Linear(dim, 1)
        self.use_checkpoint, self.checkpoint_kwargs = use_checkpoint, checkpoint_kwargs

    def forward(self, ids):
        h = self.embedding(ids)  # does not require grad
        if self.use_checkpoint:
            h = checkpoint(self.adapter, h, **self.checkpoint_kwargs)
        else:
            h = self.adapter(h)
        return self.head(h)


def train(model, steps=3):
    """Train a few SGD steps; return which parts changed, and the losses."""
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(ids).pow(2).mean()
        loss.backward()
        optimizer.step()
        losses.append(round(loss.item(), 4))
    changed = {}
    for name, p in model.named_parameters():
        part = name.split(".")[0]
        changed[part] = changed.get(part, False) or not torch.equal(p, before[name])
    return changed, losses


model = AdapterModel().to(device)  # checkpoint(self.adapter, h): use_reentrant not passed
warned = "use_reentrant parameter should be passed explicitly|None of the inputs have requires_grad"
with expect_warns(UserWarning, warned, show=False) as caught:
    changed, losses = train(model)
messages = sorted({str(w.message) for w in caught.warnings})  # each step warns again
for message in messages:
    print("UserWarning:", message)
print("changed after 3 steps:", changed, "| losses:", losses)
print("adapter gradient:", model.adapter[0].weight.grad)
assert changed == {"embedding": False, "adapter": False, "head": True}
assert model.adapter[0].weight.grad is None
assert losses[-1] < losses[0]
assert len(messages) == 2 and "None of the inputs" in messages[0]

# %%
# **The head trains, the adapter never moves: its gradient is None.**
# Nothing fails, and the loss goes down, since the head learns.
# The warnings printed above are the only sign: "None of the inputs have requires_grad=True.
# Gradients will be None", and one about ``use_reentrant`` that says nothing about gradients.
#
# Why
# ---
#
# The reentrant checkpoint is an autograd ``Function`` whose inputs are the tensors passed to
# ``checkpoint``: here only ``h``.
# It runs the block under ``no_grad`` and records one node for it; in backward, that node
# recomputes the block with grad enabled and backpropagates through it, which is when the
# block's parameters receive their gradients.
# The parameters are not inputs of the ``Function``, so its output requires grad only if an
# input does.
# With a frozen embedding, ``h`` does not, so the output of the block does not require grad,
# has no ``grad_fn``, and backward never reaches the block:

h = model.embedding(torch.tensor([1, 2], device=device))
with expect_warns(UserWarning, "None of the inputs", show=False):
    reentrant_out = checkpoint(model.adapter, h, use_reentrant=True)
plain_out = model.adapter(h)
print("without checkpoint:   requires_grad", plain_out.requires_grad)
print("reentrant checkpoint: requires_grad", reentrant_out.requires_grad, reentrant_out.grad_fn)
assert plain_out.requires_grad and not reentrant_out.requires_grad
assert reentrant_out.grad_fn is None

# %%
# **A call without use_reentrant runs the reentrant variant on this release.**
# The second warning of the symptom says so: the argument "should be passed explicitly",
# ``use_reentrant=False`` is recommended, and ``use_reentrant=True`` keeps "the current default
# behavior".
# It also announces an exception for calls without the argument from PyTorch 2.9 on, which the
# release printed at the top of this page does not raise:

with expect_warns(UserWarning, warned, show=False):
    default_out = checkpoint(model.adapter, h)
print("use_reentrant not passed: requires_grad", default_out.requires_grad)
assert not default_out.requires_grad

# %%
# The fix
# -------
#
# **Pass use_reentrant=False.**
# The non-reentrant checkpoint records the block's operations in the graph as usual and only
# replaces what they save for backward; the parameters are reached like in a model without
# checkpointing, whatever the inputs.
# Its gradients are the ones of the same model without checkpointing:

seed_everything(0)
fixed = AdapterModel(use_reentrant=False).to(device)
reference = AdapterModel(use_checkpoint=False).to(device)
reference.load_state_dict(fixed.state_dict())

ids = torch.tensor([[1, 2, 3], [4, 5, 6]], device=device)
fixed(ids).pow(2).mean().backward()
reference(ids).pow(2).mean().backward()
print("adapter gradient with use_reentrant=False:", fixed.adapter[0].weight.grad is not None)
torch.testing.assert_close(fixed.adapter[0].weight.grad, reference.adapter[0].weight.grad)
torch.testing.assert_close(fixed.head.weight.grad, reference.head.weight.grad)

changed, losses = train(AdapterModel(use_reentrant=False).to(device))
print("changed after 3 steps:", changed, "| losses:", losses)
assert changed == {"embedding": False, "adapter": True, "head": True}

# %%
# The older workaround, still found in fine-tuning libraries, keeps the reentrant variant and
# makes the block's input require grad (a forward hook on the embedding calls
# ``output.requires_grad_()``).
# It gives the adapter its gradient too, at the cost of a gradient for the embedding's output
# that nobody uses:

workaround = AdapterModel(use_reentrant=True).to(device)
workaround.load_state_dict(fixed.state_dict())
workaround.embedding.register_forward_hook(lambda module, args, output: output.requires_grad_())
workaround(ids).pow(2).mean().backward()
torch.testing.assert_close(workaround.adapter[0].weight.grad, reference.adapter[0].weight.grad)
print("reentrant, input requires grad: adapter gradient as without checkpoint")

# %%
# Under DDP: unused parameters, or a parameter "marked ready twice"
# -----------------------------------------------------------------
#
# With :class:`~torch.nn.parallel.DistributedDataParallel`, the reentrant variant fails instead
# of training silently.
# A process group of one process with the gloo backend and an in-memory store is enough to show
# it (the same setup as on :ref:`ddp-unused-parameters`).


@contextlib.contextmanager
def process_group_of_one():
    """A gloo process group with one process (rank 0), destroyed when the block ends."""
    dist.init_process_group(
        "gloo", store=dist.HashStore(), rank=0, world_size=1, timeout=datetime.timedelta(seconds=60)
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def ddp_steps(model, steps=2, **ddp_kwargs):
    ddp_model = DDP(model, **ddp_kwargs)  # on the CPU: gloo reduces CPU tensors
    ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
    for _ in range(steps):
        ddp_model(ids).pow(2).mean().backward()


# %%
# Behind the frozen embedding, the adapter's parameters get no gradient, which DDP reports as
# parameters unused in producing the loss, at the start of the second iteration:

with process_group_of_one():
    with (
        expect_raises(RuntimeError, "Expected to have finished reduction in the prior iteration"),
        expect_warns(UserWarning, "None of the inputs", show=False),
    ):
        ddp_steps(AdapterModel(use_reentrant=True))

# %%
# The error's own advice, ``find_unused_parameters=True``, combined with the workaround above
# (an input that requires grad) gives the message that checkpointing is known for under DDP:
# DDP's search for unused parameters runs after the forward, when the reentrant checkpoint has
# not yet put the adapter's parameters in the graph; it marks them ready as unused, and then
# the recomputation in backward produces their gradients and marks them ready again.

with process_group_of_one():
    with expect_raises(RuntimeError, "Expected to mark a variable ready only once"):
        with_grad_input = AdapterModel(use_reentrant=True)
        with_grad_input.embedding.register_forward_hook(lambda m, args, out: out.requires_grad_())
        ddp_steps(with_grad_input, find_unused_parameters=True)

# %%
# **With use_reentrant=False, DDP with its defaults runs, and the adapter trains**; neither the
# input workaround nor ``find_unused_parameters=True`` is needed (the flag costs a traversal of
# the graph at every iteration: :ref:`ddp-unused-parameters`).

with process_group_of_one():
    model = AdapterModel(use_reentrant=False)
    ddp_steps(model)
    print("DDP, use_reentrant=False -> adapter gradient:", model.adapter[0].weight.grad is not None)
    assert model.adapter[0].weight.grad is not None

# %%
# A real-world report
# -------------------
#
# A fairseq user wrapped the *first* block of a network in a checkpoint wrapper and found its
# parameters' gradients to be None after backward, while the next layer's were set
# (`fairseq issue 3583 <https://github.com/facebookresearch/fairseq/issues/3583>`_): the first
# block's input was the data, which does not require grad.
# In Hugging Face Transformers, gradient checkpointing with a frozen embedding (and so with the
# PEFT methods) failed, and trained only once the reporter unfroze the first parameter by hand
# (`transformers issue 23170 <https://github.com/huggingface/transformers/issues/23170>`_);
# the workaround of an input that requires grad then met the "marked ready twice" error under
# distributed training (`PEFT issue 313 <https://github.com/huggingface/peft/issues/313>`_),
# and ``use_reentrant=False`` is the answer given in a later thread
# (`Accelerate issue 389 <https://github.com/huggingface/accelerate/issues/389>`_).
#
# Detectors
# ---------
#
# The static checker's rule ``TP115`` (see :doc:`/detectors`) finds a call of
# :func:`torch.utils.checkpoint.checkpoint` or ``checkpoint_sequential`` without
# ``use_reentrant=`` in your own code, whatever name it is imported under: such a call runs the
# reentrant variant of this page. It is on by default: in model code such a call relies on the
# default; in a test where the variant does not matter, a ``noqa`` comment naming ``TP115`` on
# the line silences it.
#
# Takeaway
# --------
#
# **Always pass use_reentrant=False to checkpoint: the reentrant variant gives a checkpointed
# block no gradient when none of its inputs requires grad, and fails under DDP with unused
# parameters.**
# Treat "None of the inputs have requires_grad=True" as an error: after one step, check that the
# checkpointed block's parameters have a gradient.
