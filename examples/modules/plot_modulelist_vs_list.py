"""
.. _modulelist-vs-list:

Layers in a Python list are invisible to the module
===================================================

A model that builds a variable number of layers often keeps them in a Python list.
On the CPU the code runs, the forward pass uses every layer, and the loss even goes down a little
(on a GPU, the first forward pass fails).
But a :class:`~torch.nn.Module` only knows the submodules and parameters assigned to it
directly: layers inside a plain ``list`` or ``dict`` are missing from
:meth:`~torch.nn.Module.parameters`, so the optimizer never trains them; they are not moved by
:meth:`~torch.nn.Module.to`, not saved by :meth:`~torch.nn.Module.state_dict`, and not switched by
:meth:`~torch.nn.Module.eval`.

.. admonition:: What you will learn

   * what a plain list of layers loses: parameters, training, ``.to()``, ``state_dict()``,
     ``eval()`` and freezing;
   * how :class:`~torch.nn.Module` registers submodules when you assign them;
   * the fix: :class:`~torch.nn.ModuleList`, :class:`~torch.nn.ModuleDict` and
     :class:`~torch.nn.ParameterList`.

.. admonition:: Prerequisites

   Building a model from :class:`torch.nn.Module` subclasses;
   :ref:`backward-step-zero-grad` (what an optimizer step updates).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# A stack of ``depth`` hidden layers followed by a head.
# The hidden layers live in a Python list, because their number is a constructor argument.
import copy

import torch
from torch import nn

from torch_pitfalls import (
    PitfallWarning,
    cuda_section,
    expect_raises,
    expect_warns,
    get_device,
    guards,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")


class ListTower(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = [nn.Linear(width, width) for _ in range(depth)]  # a plain list
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return self.head(x)


model = ListTower(width=4, depth=3).to(device)
print(model)
tensor_count = len(list(model.parameters()))
print("parameter tensors:", tensor_count, "| state_dict keys:", list(model.state_dict()))
assert tensor_count == 2
assert list(model.state_dict()) == ["head.weight", "head.bias"]

# %%
# **The model reports two parameter tensors, those of the head: the three hidden layers and
# their six tensors are missing.**
# The printed model, the state dict (and so every checkpoint) and the optimizer all see only the
# head.
#
# On a GPU, the first symptom is an error: ``model.to(device)`` moved the head but left the hidden
# layers on the CPU, so the first forward pass raises "Expected all tensors to be on the same
# device".
# Moving the listed layers by hand lets the forward pass run, and the rest of the page runs the
# same on every device.
# On a build without a GPU, the output below is the recorded CUDA run, or a sentence saying that
# this part did not run.

with cuda_section(device, "the first forward pass on a GPU") as live:
    if live:
        print(
            "head on", model.head.weight.device, "| hidden layers on", model.blocks[0].weight.device
        )
        assert model.blocks[0].weight.device.type == "cpu"
        with expect_raises(RuntimeError, "Expected all tensors to be on the same device"):
            model(torch.ones(2, 4, device=device))
        for block in model.blocks:  # by hand, since model.to(device) does not reach them
            block.to(device)

# %%
# We train it for 50 steps on a regression task and compare every weight with its initial value.

x = torch.randn(64, 4, device=device)
y = x.sum(dim=1, keepdim=True)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
block_weights_before = [block.weight.detach().clone() for block in model.blocks]
head_weight_before = model.head.weight.detach().clone()
first_loss = nn.functional.mse_loss(model(x), y).item()
for _ in range(50):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
blocks_trained = [
    not torch.equal(block.weight, before)
    for block, before in zip(model.blocks, block_weights_before, strict=True)
]
head_trained = not torch.equal(model.head.weight, head_weight_before)
print(f"loss: {first_loss:.4f} -> {loss.item():.4f}")
print("hidden layers changed by training:", blocks_trained, "| head changed:", head_trained)
assert blocks_trained == [False, False, False] and head_trained
assert loss.item() < first_loss

# %%
# The loss goes down, so nothing looks broken, but only the head learns.
# The hidden layers *do* receive gradients (autograd follows the computation, not the
# module's bookkeeping), yet no optimizer step ever reads them:

grads_filled = [block.weight.grad is not None for block in model.blocks]
print("hidden layers have a .grad:", grads_filled)
assert all(grads_filled)

# %%
# When *every* layer is in a list, the mistake at least shows up at once: the model has no
# parameters at all, and the optimizer refuses it.


class ListOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 4), nn.Linear(4, 1)]


with expect_raises(ValueError, "empty parameter list"):
    torch.optim.SGD(ListOnly().parameters(), lr=0.1)

# %%
# The module methods that walk the submodules skip the list too.
# :meth:`~torch.nn.Module.to` moves the head and leaves the hidden layers where they were (we use
# the ``meta`` device, which every build has, as the target),
# :meth:`~torch.nn.Module.eval` never reaches a :class:`~torch.nn.Dropout` kept in a list, and
# ``requires_grad_(False)``, the usual way to freeze a model (see :ref:`freezing-layers`),
# leaves the listed layers trainable.

moved = ListTower(width=4, depth=3).to("meta")
print("head on", moved.head.weight.device, "| hidden layers on", moved.blocks[0].weight.device)
assert moved.head.weight.device.type == "meta" and moved.blocks[0].weight.device.type == "cpu"


class ListDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = [nn.Linear(4, 4), nn.Dropout(0.5)]


evaluated = ListDropout().eval()
print("model.training:", evaluated.training, "| Dropout in the list:", evaluated.steps[1].training)
assert not evaluated.training and evaluated.steps[1].training

frozen = ListTower(width=4, depth=3).requires_grad_(False)
still_trainable = [name for name, p in frozen.named_parameters() if p.requires_grad]
listed_trainable = all(p.requires_grad for block in frozen.blocks for p in block.parameters())
print("trainable after requires_grad_(False):", still_trainable)
print("hidden layers still trainable:", listed_trainable)
assert still_trainable == [] and listed_trainable

# %%
# Why
# ---
#
# **A module registers a submodule or a parameter only when you assign it directly as an
# attribute.**
# ``self.head = nn.Linear(...)`` goes through ``Module.__setattr__``, which
# sees a :class:`~torch.nn.Module` and records it under the name ``head``.
# ``self.blocks = [...]`` assigns a ``list``: an ordinary Python attribute, which the module does
# not look into.
# Every method that works on "the whole model" — :meth:`~torch.nn.Module.parameters`,
# :meth:`~torch.nn.Module.state_dict`, :meth:`~torch.nn.Module.to`,
# :meth:`~torch.nn.Module.train`, :meth:`~torch.nn.Module.requires_grad_`,
# :meth:`~torch.nn.Module.zero_grad` — follows only what was registered.
# :meth:`~torch.nn.Module.named_children` lists it:

children = [name for name, _ in model.named_children()]
print("registered children:", children)
print("type of model.blocks:", type(model.blocks).__name__)
assert children == ["head"] and isinstance(model.blocks, list)

# %%
# The fix
# -------
#
# **Keep submodules in nn.ModuleList (or nn.ModuleDict), never in a plain list or dict.**
# :class:`~torch.nn.ModuleList` behaves like a list — indexing, iteration, ``append`` — and is
# itself a module, so its items are registered under the names ``blocks.0``, ``blocks.1``, …
# The only change is one line of the constructor.


class ModuleListTower(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])  # the fix
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        for block in self.blocks:
            x = torch.relu(block(x))
        return self.head(x)


seed_everything(0)
fixed = ModuleListTower(width=4, depth=3).to(device)
fixed_tensor_count = len(list(fixed.parameters()))
fixed_keys = list(fixed.state_dict())
print("parameter tensors:", fixed_tensor_count)
print("state_dict keys:", fixed_keys)
assert fixed_tensor_count == 8
assert fixed_keys[:2] == ["blocks.0.weight", "blocks.0.bias"] and len(fixed_keys) == 8

optimizer = torch.optim.SGD(fixed.parameters(), lr=0.05)
fixed_before = [block.weight.detach().clone() for block in fixed.blocks]
for _ in range(50):
    optimizer.zero_grad()
    fixed_loss = nn.functional.mse_loss(fixed(x), y)
    fixed_loss.backward()
    optimizer.step()
fixed_blocks_trained = [
    not torch.equal(block.weight, before)
    for block, before in zip(fixed.blocks, fixed_before, strict=True)
]
print("hidden layers changed by training:", fixed_blocks_trained)
assert fixed_blocks_trained == [True, True, True]

# %%
# A :class:`~torch.nn.ModuleList` has no ``forward`` of its own: iterate over it, as above.
# To apply the layers one after the other, :class:`~torch.nn.Sequential` does both jobs, it
# registers them and it calls them in order.

with expect_raises(NotImplementedError, 'missing the required "forward" function'):
    fixed.blocks(x)

# %%
# The same holds for the other containers.
# A ``dict`` of layers needs :class:`~torch.nn.ModuleDict`, and bare :class:`~torch.nn.Parameter`
# objects in a list need :class:`~torch.nn.ParameterList` (or :class:`~torch.nn.ParameterDict`).


class Heads(nn.Module):
    def __init__(self, registered):
        super().__init__()
        heads = {"age": nn.Linear(4, 1), "label": nn.Linear(4, 3)}
        scales = [nn.Parameter(torch.ones(1)) for _ in range(2)]
        self.heads = nn.ModuleDict(heads) if registered else heads
        self.scales = nn.ParameterList(scales) if registered else scales


counts = {
    kind: len(list(Heads(registered).parameters()))
    for kind, registered in (("plain dict and list", False), ("ModuleDict and ParameterList", True))
}
print("parameter tensors:", counts)
assert counts == {"plain dict and list": 0, "ModuleDict and ParameterList": 6}

# %%
# One block, n times: ``nn.ModuleList([block] * n)``
# --------------------------------------------------
#
# A :class:`~torch.nn.ModuleList` registers what it is given.
# ``[block] * n``, and just as well ``[nn.Linear(4, 4)] * n`` whose constructor runs once, is a
# Python list of ``n`` references to **one** module object: the model has one layer, applied
# ``n`` times, with its weights shared.
# Nothing looks wrong: the blocks print exactly like the three separate layers of the fixed tower,
# and its state dict has a key for every index.


class RepeatedTower(ModuleListTower):
    def __init__(self, width, depth):
        super().__init__(width, depth)
        self.blocks = nn.ModuleList([nn.Linear(width, width)] * depth)  # one block, depth times


repeated = RepeatedTower(width=4, depth=3).to(device)
print(repeated.blocks)
prints_alike = repr(repeated.blocks) == repr(fixed.blocks)
repeated_keys = list(repeated.state_dict())
print("printed like the fixed tower's blocks:", prints_alike)
print("state_dict keys:", repeated_keys)
assert prints_alike
assert repeated_keys == fixed_keys

# %%
# **Every block is the same object, and the model counts its weights once.**
# :meth:`~torch.nn.Module.parameters` skips a tensor it has already returned, so the optimizer
# sees four parameter tensors, not eight, and a third of the hidden parameters:

is_first_block = [block is repeated.blocks[0] for block in repeated.blocks]
repeated_tensors = list(repeated.parameters())
repeated_count = sum(p.numel() for p in repeated_tensors)
fixed_count = sum(p.numel() for p in fixed.parameters())
print("each block is blocks[0]:", is_first_block)
print(f"parameter tensors: {len(repeated_tensors)} | parameters: {repeated_count} ", end="")
print(f"(three separate blocks: {fixed_count})")
assert is_first_block == [True, True, True]
assert len(repeated_tensors) == 4 and (repeated_count, fixed_count) == (25, 65)

# %%
# Loading a checkpoint of the three-layer model succeeds, with every key matched, because the keys
# are the same.
# But the three pairs of weights are copied into one pair of tensors, one after the other: the
# last one wins, and the model computes something other than the one that was saved.

load_result = repeated.load_state_dict(fixed.state_dict())
print("load_state_dict:", load_result)
holds_last_layer = torch.equal(repeated.blocks[0].weight, fixed.blocks[2].weight)
holds_first_layer = torch.equal(repeated.blocks[0].weight, fixed.blocks[0].weight)
with torch.no_grad():
    same_output = torch.allclose(repeated(x), fixed(x))
print("blocks[0] holds the saved blocks.2:", holds_last_layer, "| blocks.0:", holds_first_layer)
print("same prediction as the saved model:", same_output)
assert not load_result.missing_keys and not load_result.unexpected_keys
assert holds_last_layer and not holds_first_layer and not same_output

# %%
# **Build each layer separately: a comprehension,**
# ``nn.ModuleList([nn.Linear(w, w) for _ in range(n)])`` **(the fix above), or, to repeat a block
# that is already built,** ``[copy.deepcopy(block) for _ in range(n)]``.
# This is what :class:`~torch.nn.TransformerEncoder` does with the layer it is given: its copies
# start from the same values but are separate tensors, trained separately.
# Sharing a layer on purpose is legitimate (an RNN cell, tied embeddings), but then write it as
# one attribute applied in a loop, so that the code says so.

template = nn.Linear(4, 4)
copies = nn.ModuleList([copy.deepcopy(template) for _ in range(3)])
copies_distinct = len({id(block) for block in copies}) == 3
copies_equal = all(torch.equal(block.weight, template.weight) for block in copies)
print("deep copies: separate objects", copies_distinct, "| same initial values", copies_equal)
print("parameter tensors:", len(list(copies.parameters())))
assert copies_distinct and copies_equal and len(list(copies.parameters())) == 6

# %%
# The same slip was reported in the VQ-VAE example of Zalando Research: its residual stack
# filled a :class:`~torch.nn.ModuleList` with one residual block multiplied by the number of
# layers (`pytorch-vq-vae issue 2 <https://github.com/zalandoresearch/pytorch-vq-vae/issues/2>`_).
# The reporter asked whether the weight sharing was intended; the maintainer answered that it
# was a bug, to be fixed with a block built for each layer.

# %%
# A real-world report: a merge layer with missing variables
# ---------------------------------------------------------
#
# In the text-generation toolkit texar-pytorch, the layer that merges the outputs of several
# sub-layers kept those sub-layers in a Python list
# (`texar-pytorch issue 72 <https://github.com/asyml/texar-pytorch/issues/72>`_, labelled a
# high-priority bug).
# Their trainable variables were therefore missing from the merge layer, and an optimizer built
# from a model's parameters would have skipped them; the report proposed
# :class:`~torch.nn.ModuleList` as the fix.
# A quick test finds this class of bug in any model: count the parameters the module reports
# and compare with the layers you meant to build.


def count(module):
    return sum(p.numel() for p in module.parameters())


expected = 3 * count(nn.Linear(4, 4)) + count(nn.Linear(4, 1))  # three blocks and the head
reported = {
    "list": count(model),
    "ModuleList": count(fixed),
}
print("expected parameters:", expected, "| reported:", reported)
assert reported == {"list": 5, "ModuleList": expected}

# %%
# Detectors
# ---------
#
# The static checker's rule ``TP105`` (see :doc:`/detectors`) finds this pitfall in your own code:
# in a class derived from :class:`~torch.nn.Module`, an attribute assigned a list, tuple or dict
# of layers, or a list that the class fills with ``append``.
# It leaves the list alone when the class registers it another way, such as
# ``nn.Sequential(*self.blocks)`` or ``add_module``.
# Run on the page's wrong constructor and on its fix, it flags the first only:

from torch_pitfalls.lint import check_source

wrong_code = """
from torch import nn

class ListTower(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = [nn.Linear(width, width) for _ in range(depth)]
"""
fixed_code = """
from torch import nn

class ModuleListTower(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
"""
static = {
    name: check_source(code, path=f"{name}.py", language="en")
    for name, code in (("wrong", wrong_code), ("fixed", fixed_code))
}
for finding in static["wrong"]:
    print(finding)
print("findings in the fix:", static["fixed"])
assert [f.rule for f in static["wrong"]] == ["TP105"] and static["fixed"] == []

# %%
# The runtime guard ``TP019`` detects the other mistake, one block repeated, as the code runs:
# an ``nn.ModuleList`` or ``nn.Sequential`` that holds the same module object (one with
# parameters) more than once, looked at when the model is first called.
# In the source, the opt-in rule ``TP111`` of the static checker (``--enable TP111``) finds the
# usual way to write it, one module instance repeated with ``[block] * n``; it is opt-in because
# that form is also how some models share weights on purpose.

with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP019 "):
        RepeatedTower(width=4, depth=3).to(device)(x)
with guards(language="en") as fixed:
    ModuleListTower(width=4, depth=3).to(device)(x)
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP019"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# **A module sees only what is assigned to it directly: layers in a Python list or dict are
# neither trained, moved, saved, switched to eval() nor frozen.**
# Use :class:`~torch.nn.ModuleList`, :class:`~torch.nn.ModuleDict`,
# :class:`~torch.nn.ParameterList` or :class:`~torch.nn.Sequential`, and check
# ``sum(p.numel() for p in model.parameters())`` against the model you meant to build.
