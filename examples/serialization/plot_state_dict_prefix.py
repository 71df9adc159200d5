"""
.. _state-dict-prefix:

``module.`` and ``_orig_mod.``: prefixed state dict keys
========================================================

A model trained inside :class:`~torch.nn.DataParallel`, ``DistributedDataParallel`` or
``torch.compile`` saves a state dict whose keys all start with ``module.`` or ``_orig_mod.``.
Loading it into the plain model fails with a long list of missing and unexpected keys.
The quick way out, ``strict=False``, makes the error go away and loads nothing at all: the model
keeps its random initial weights, and nothing else complains.

.. admonition:: What you will learn

   * where the prefixes come from: a wrapper keeps your model as a submodule, and a state dict
     names every tensor by its path from the module it was called on;
   * what :meth:`~torch.nn.Module.load_state_dict` returns with ``strict=False``, and why a load
     that matched no key is silent;
   * how to save checkpoints without a prefix, and how to strip one from an existing file with
     ``consume_prefix_in_state_dict_if_present``.

.. admonition:: Prerequisites

   :ref:`torch-load-weights-only` (saving state dicts and loading them with ``map_location``).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`,
:mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# A small classifier is trained inside :class:`~torch.nn.DataParallel`, the usual way to spread a
# batch over several GPUs in one process (on a machine without a GPU it wraps the model and runs
# it unchanged).
# The training script saves the wrapper's state dict, and an evaluation script loads it into the
# plain model.
# The files of this page go to a temporary directory.
import inspect
import tempfile
from pathlib import Path

import torch
from torch import nn

from torch_pitfalls import (
    PitfallWarning,
    expect_raises,
    expect_warns,
    get_device,
    guards,
    seed_everything,
)

seed_everything(0)
device = get_device()
print(f"device: {device}")

workdir = tempfile.TemporaryDirectory()
folder = Path(workdir.name)


def make_model():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)


trained = make_model()
parallel = nn.DataParallel(trained)
optimizer = torch.optim.SGD(parallel.parameters(), lr=0.1)
inputs = torch.randn(64, 8, device=device)
labels = (inputs @ torch.randn(8, 3, device=device)).argmax(dim=1)  # a rule the model can learn
for _ in range(100):
    optimizer.zero_grad()
    nn.functional.cross_entropy(parallel(inputs), labels).backward()
    optimizer.step()

torch.save(parallel.state_dict(), folder / "parallel.pt")
state = torch.load(folder / "parallel.pt", map_location=device)
print("keys in the file:", list(state))
assert list(state) == ["module.0.weight", "module.0.bias", "module.2.weight", "module.2.bias"]

evaluated = make_model()
with expect_raises(RuntimeError, r'Missing key\(s\) in state_dict: "0.weight"'):
    evaluated.load_state_dict(state)

# %%
# Every key is missing and every key is unexpected: the names differ by ``module.`` only.
# A common reaction is ``strict=False``, which no longer raises.
# It returns the keys it could not match, and **with strict=False, a load that matches no key at
# all is not an error**:

initial = {name: tensor.clone() for name, tensor in evaluated.state_dict().items()}
result = evaluated.load_state_dict(state, strict=False)
print("missing keys:   ", result.missing_keys)
print("unexpected keys:", result.unexpected_keys)
untouched = all(torch.equal(initial[name], t) for name, t in evaluated.state_dict().items())
print("the evaluated model still has its random initial weights:", untouched)
assert len(result.missing_keys) == len(result.unexpected_keys) == 4 and untouched

# %%
# The evaluation then runs a model that was never trained, and reports its poor accuracy instead
# of an error:


def accuracy(model):
    with torch.no_grad():
        return (model(inputs).argmax(dim=1) == labels).float().mean().item()


trained_accuracy, evaluated_accuracy = accuracy(trained), accuracy(evaluated)
print(f"accuracy of the trained model: {trained_accuracy:.3f}")
print(f"accuracy after the strict=False load: {evaluated_accuracy:.3f}")
assert trained_accuracy > evaluated_accuracy + 0.3

# %%
# Why
# ---
#
# :meth:`~torch.nn.Module.state_dict` names each parameter and buffer by the path of attribute
# names that leads to it from the module it is called on: ``0.weight`` is the weight of
# submodule ``0`` of the :class:`~torch.nn.Sequential`.
# **A wrapper keeps your model as a submodule, so every path gains the wrapper's attribute name
# as its first part.**
# :class:`~torch.nn.DataParallel` (and ``DistributedDataParallel``, which does the same across
# processes) stores the model as ``module``; the wrapper shares its parameters, it copies nothing:

print("parallel.module is trained:", parallel.module is trained)
print("same weight tensor:", parallel.module[0].weight is trained[0].weight)
assert parallel.module is trained
assert dict(parallel.named_children()) == {"module": trained}
ddp_init = inspect.getsource(nn.parallel.DistributedDataParallel.__init__)
assert "self.module = module" in ddp_init  # DDP keeps the model under the same name

# %%
# ``torch.compile`` returns an ``OptimizedModule`` that stores the model as ``_orig_mod`` (the
# ``eager`` backend keeps this page fast).
# Building the wrapper compiles nothing yet, so its state dict is available at once.
# The wrappers nest: a compiled :class:`~torch.nn.DataParallel` or ``DistributedDataParallel``
# model saves keys that start with ``_orig_mod.module.``.

compiled = torch.compile(trained, backend="eager")
compiled_state = compiled.state_dict()
print(type(compiled).__name__, "keys:", list(compiled_state))
nested_key = next(iter(torch.compile(parallel, backend="eager").state_dict()))
print("first key of a compiled DataParallel model:", nested_key)
assert compiled._orig_mod is trained
assert list(compiled_state) == [f"_orig_mod.{key}" for key in trained.state_dict()]
assert nested_key == "_orig_mod.module.0.weight"
torch._dynamo.reset()  # leave no compiled state behind for the pages that run after this one

# %%
# The mismatch works in the other direction too: a plain state dict does not load into a wrapper.

with expect_raises(RuntimeError, r'Missing key\(s\) in state_dict: "module.0.weight"', show=False):
    parallel.load_state_dict(trained.state_dict())
print("a plain state dict does not load into the DataParallel wrapper either")

# %%
# The fix
# -------
#
# **Save the state dict of the model inside the wrapper**: ``parallel.module.state_dict()``,
# ``compiled._orig_mod.state_dict()``, or simply ``trained.state_dict()`` when your code still
# holds the unwrapped model, since the wrapper shares its parameters.
# The file then loads into the plain model, strictly, and into a wrapper through its ``module``:

torch.save(parallel.module.state_dict(), folder / "plain.pt")
plain_state = torch.load(folder / "plain.pt", map_location=device)
print("keys in the file:", list(plain_state))
restored = make_model()
print("load_state_dict:", restored.load_state_dict(plain_state))
restored_accuracy = accuracy(restored)
print(f"accuracy of the restored model: {restored_accuracy:.3f}")
assert list(plain_state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
assert restored_accuracy == trained_accuracy

# %%
# A file that already has the prefix does not need the training run again.
# ``torch.nn.modules.utils.consume_prefix_in_state_dict_if_present`` removes a prefix from every
# key that starts with it, in place (the state dict's metadata included), and leaves the other
# keys alone, so calling it on a file without the prefix does nothing:

from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

consume_prefix_in_state_dict_if_present(state, "module.")
print("keys after stripping 'module.':", list(state))
assert all(not key.startswith("module") for key in state._metadata)  # the metadata too
stripped = make_model()
print("load_state_dict:", stripped.load_state_dict(state))
assert list(state) == list(plain_state) and accuracy(stripped) == trained_accuracy

consume_prefix_in_state_dict_if_present(compiled_state, "_orig_mod.")
consume_prefix_in_state_dict_if_present(plain_state, "module.")  # no prefix: nothing happens
print("keys after stripping '_orig_mod.':", list(compiled_state))
assert list(compiled_state) == list(plain_state) == ["0.weight", "0.bias", "2.weight", "2.bias"]

# %%
# **Load strictly.**
# ``strict=False`` is for a deliberate partial load, such as a pretrained backbone under a new
# head; then check what it returns, and fail when a key you expected did not match:

finetuned = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 5)).to(device)
backbone = {key: value for key, value in plain_state.items() if key.startswith("0.")}
partial = finetuned.load_state_dict(backbone, strict=False)
print("missing (the new head):", partial.missing_keys, "| unexpected:", partial.unexpected_keys)
assert not partial.unexpected_keys and all(key.startswith("2.") for key in partial.missing_keys)

# %%
# Detectors
# ---------
#
# The runtime guard ``TP015`` (see :doc:`/detectors`) finds this pitfall in your own code: a
# :meth:`~torch.nn.Module.load_state_dict` with ``strict=False`` that leaves a key missing whose
# unexpected counterpart differs from it only by ``module.`` or ``_orig_mod.``.
# A deliberate partial load, such as the backbone above, leaves keys missing too, but none that
# a prefix explains, and is not flagged.
# Under :mod:`torch_pitfalls.guards`, the ``strict=False`` load of this page's prefixed file warns;
# the load of the repaired file and the partial load are silent:

prefixed = torch.load(folder / "parallel.pt", map_location=device)
with guards(language="en") as wrong, expect_warns(PitfallWarning, "^TP015 "):
    make_model().load_state_dict(prefixed, strict=False)
with guards(language="en") as fixed:
    make_model().load_state_dict(plain_state)
    nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 5)).load_state_dict(
        backbone, strict=False
    )
print("found in the wrong code:", wrong.ids, "  in the fixes:", fixed.ids)
assert wrong.ids == ["TP015"] and fixed.ids == []

# %%
# A real-world report
# -------------------
#
# In `karpathy/nanoGPT issue #325 <https://github.com/karpathy/nanoGPT/issues/325>`_, a user of a
# training script built like nanoGPT could not resume training from their own checkpoints: the
# script saved the state dict of the compiled model, so every key carried ``_orig_mod.``, and
# loading it into the freshly built model failed.
# The advice they found was to save the uncompiled model's state dict; a year later another user
# hit the same error and stripped the prefix from the keys by hand.
# The ``module.`` prefix of :class:`~torch.nn.DataParallel` is older:
# in `pytorch/pytorch issue #3805 <https://github.com/pytorch/pytorch/issues/3805>`_ (2017), the
# maintainers explained that they had considered hiding it and kept it, so that the wrapper
# behaves like any other module.
#
# Takeaway
# --------
#
# **Save the unwrapped model's state dict (model.module, model._orig_mod, or the model you
# wrapped), and load with strict=True: strict=False turns a complete key mismatch into a model
# that silently keeps its random weights.**
# To repair a file with prefixed keys, use ``consume_prefix_in_state_dict_if_present``.
# See also :ref:`resume-training` for what else a checkpoint must hold, and
# :ref:`register-buffer` for what a state dict contains besides parameters.

workdir.cleanup()
