"""
.. _torch-load-weights-only:

``torch.load`` and ``weights_only``
===================================

A checkpoint that loaded fine for years now fails in :func:`torch.load` with an
``UnpicklingError`` about an "unsupported global".
Nothing is wrong with the file: since PyTorch 2.6, :func:`torch.load` by default only rebuilds
tensors, state dicts and plain containers, and refuses any other Python object in the file,
because unpickling an arbitrary object can run arbitrary code.

.. admonition:: What you will learn

   * what ``weights_only=True``, today's default, accepts and what it refuses;
   * why loading a pickle can execute code, and when ``weights_only=False`` is acceptable;
   * how to save checkpoints that load with the default, and how to allow your own classes.

.. admonition:: Prerequisites

   :ref:`device-agnostic-code` (``map_location`` puts the loaded tensors on your device).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# Older tutorials saved the whole model with :func:`torch.save`.
# Loading that file back with today's defaults fails.
# The files of this page go to a temporary directory; nothing is downloaded.
import pickle
import re
import tempfile
from pathlib import Path

import torch
from torch import nn

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

workdir = tempfile.TemporaryDirectory()
folder = Path(workdir.name)
model = nn.Linear(4, 2).to(device)
torch.save(model, folder / "whole_model.pt")

if torch.__version__ >= "2.6":
    with expect_raises(pickle.UnpicklingError, "Unsupported global", show=False) as caught:
        torch.load(folder / "whole_model.pt")
    message = re.sub(r"\x1b\[[0-9;]*m", "", caught.message)  # drop the terminal's bold markers
    print(f"{type(caught.exception).__name__}: {message}")
    assert "GLOBAL torch.nn.modules.linear.Linear" in message
else:  # PyTorch 2.5 and older: it loads, with a warning, see "Changed in PyTorch 2.6" below
    with expect_warns(FutureWarning, "You are using `torch\\.load` with `weights_only=False`"):
        whole_model = torch.load(folder / "whole_model.pt")
    print("loaded:", whole_model)
    assert isinstance(whole_model, nn.Linear)

# %%
# The message names the class it refused, :class:`~torch.nn.Linear`, and offers two ways out;
# the first one is the dangerous one.
#
# Changed in PyTorch 2.6
# ----------------------
#
# Until PyTorch 2.5, :func:`torch.load` defaulted to ``weights_only=False`` and unpickled anything;
# 2.4 and 2.5 loaded the whole model above with a ``FutureWarning`` announcing the change.
# `PyTorch 2.6 <https://github.com/pytorch/pytorch/releases/tag/v2.6.0>`_ changed the default to
# ``weights_only=True`` (`pull request #137602 <https://github.com/pytorch/pytorch/pull/137602>`_).
# The installed PyTorch says so in the message itself:

if torch.__version__ >= "2.6":
    found = re.search(r"In PyTorch (\d+\.\d+), we changed the default value", message)
    changed_in = found.group(1)
    print(f"torch {torch.__version__}: the default of weights_only changed in PyTorch {changed_in}")
    assert changed_in == "2.6"

# %%
# Why
# ---
#
# :func:`torch.load` reads a :mod:`pickle` stream, and unpickling may call any function that
# the file names, with arguments that the file chooses.
# An object's ``__reduce__`` method decides what the file asks for.
# This harmless one asks for :func:`print`; a malicious file would ask for :func:`os.system`.


class Payload:
    def __reduce__(self):
        return print, ("This line was printed by the file while it was being loaded.",)


torch.save(Payload(), folder / "payload.pt")

# %%
# ``weights_only=True`` rebuilds only an allowlist of types (tensors, storages, dtypes, devices,
# ``dict``, ``OrderedDict``, lists, tuples, numbers, strings, ...) and refuses every other
# global the file names, so the payload never runs:

with expect_raises(
    pickle.UnpicklingError, "Unsupported global: GLOBAL (builtins\\.)?print", show=False
) as caught:
    torch.load(folder / "payload.pt", weights_only=True)
print("refused:", re.search(r"Unsupported global: GLOBAL \S+", caught.message).group(0))

# %%
# Changed in PyTorch 2.7: ``GLOBAL print``
# ----------------------------------------
#
# PyTorch 2.6 and older named a built-in with its module (``GLOBAL builtins.print``) and
# suggested allowlisting a class by its bare name (``add_safe_globals([Linear])``).
# `PyTorch 2.7 <https://github.com/pytorch/pytorch/releases/tag/v2.7.0>`_ names built-ins as Python
# code does (``GLOBAL print``) and suggests the class's full path
# (``add_safe_globals([torch.nn.modules.linear.Linear])``)
# (`pull request #146815 <https://github.com/pytorch/pytorch/pull/146815>`_, for
# `issue #146886 <https://github.com/pytorch/pytorch/issues/146886>`_).

# %%
# With ``weights_only=False`` the file's code runs during :func:`torch.load`, before your code
# sees any result:

import contextlib
import io

with contextlib.redirect_stdout(io.StringIO()) as printed_by_file:
    loaded = torch.load(folder / "payload.pt", weights_only=False)
print("printed during torch.load:", repr(printed_by_file.getvalue()))
print("what torch.load returned:", loaded)
assert printed_by_file.getvalue().startswith("This line was printed by the file")
assert loaded is None

# %%
# **weights_only=False executes whatever the file contains: use it only for files you made
# yourself or fully trust.**
#
# The fix
# -------
#
# **Save state dicts, not objects.**
# :meth:`~torch.nn.Module.state_dict` holds only tensors in an ``OrderedDict``, so it loads with
# the default; ``map_location=device`` puts the tensors on the device this code runs on, whatever
# device saved them.

torch.save(model.state_dict(), folder / "weights.pt")
state = torch.load(folder / "weights.pt", map_location=device)
restored = nn.Linear(4, 2).to(device)
_ = restored.load_state_dict(state)
print("loaded keys:", list(state), "| on", state["weight"].device)
assert list(state) == ["weight", "bias"]
assert torch.equal(restored.weight, model.weight) and torch.equal(restored.bias, model.bias)

# %%
# A training checkpoint is a ``dict`` of state dicts and plain values.
# An optimizer's ``optimizer.state_dict()`` (here :class:`~torch.optim.Adam`, with
# its moment estimates) contains only tensors, numbers, lists and dicts, so it loads with the
# default too:

optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
model(torch.randn(8, 4, device=device)).pow(2).mean().backward()
optimizer.step()
checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 3}
torch.save(checkpoint, folder / "checkpoint.pt")
loaded_checkpoint = torch.load(folder / "checkpoint.pt", map_location=device)
print("checkpoint keys:", list(loaded_checkpoint), "| epoch:", loaded_checkpoint["epoch"])
assert loaded_checkpoint["epoch"] == 3
assert torch.equal(
    loaded_checkpoint["optimizer"]["state"][0]["exp_avg"], optimizer.state[model.weight]["exp_avg"]
)

# %%
# Your own classes in a checkpoint
# --------------------------------
#
# A checkpoint that also stores a configuration object of your own class is refused like the
# whole model was:

from dataclasses import dataclass


@dataclass
class TrainConfig:
    lr: float
    epochs: int


config = TrainConfig(lr=1e-3, epochs=3)
torch.save({"model": model.state_dict(), "config": config}, folder / "with_config.pt")
with expect_raises(pickle.UnpicklingError, "Unsupported global", show=False) as caught:
    torch.load(folder / "with_config.pt", weights_only=True)
print("refused:", re.search(r"Unsupported global: GLOBAL \S+", caught.message).group(0))

# %%
# **If you trust a class, put it on the allowlist instead of switching the check off.**
# :func:`torch.serialization.add_safe_globals` adds classes for the rest of the process (call it
# once at start-up); the ``torch.serialization.safe_globals`` context manager (PyTorch 2.5 and
# later) adds them only inside its block, which this page uses so that it leaves the process as it
# found it.
# Everything else in the file is still checked.

if torch.__version__ >= "2.6":
    with torch.serialization.safe_globals([TrainConfig]):
        with_config = torch.load(folder / "with_config.pt", map_location=device)
else:  # PyTorch 2.5 and older: ask for weights_only=True; 2.4 has only add_safe_globals
    allowed = torch.serialization.get_safe_globals()
    torch.serialization.add_safe_globals([TrainConfig])
    try:
        with_config = torch.load(folder / "with_config.pt", map_location=device, weights_only=True)
    finally:
        torch.serialization.clear_safe_globals()
        torch.serialization.add_safe_globals(allowed)
print("config:", with_config["config"])
assert with_config["config"] == config

# %%
# Simpler still, store the configuration as a plain ``dict`` (:func:`dataclasses.asdict`):
# it then loads with the default and needs no allowlist.
#
# NumPy values and random states in a checkpoint
# ----------------------------------------------
#
# A checkpoint that holds only state dicts can still be refused: a metric computed with NumPy is
# a NumPy scalar, not a Python number, and the state of NumPy's random number generator holds a
# NumPy array.
# Both are pickled as NumPy objects, which ``weights_only=True`` does not rebuild by default.
# The states of Python's ``random`` module (a tuple of ints) and of PyTorch's generator
# (a ``uint8`` tensor) are accepted:

import importlib
import random

import numpy as np

accuracies = np.array([0.81, 0.84, 0.83])
best_acc = accuracies.max()
rng_states = {
    "python": random.getstate(),
    "numpy": np.random.get_state(),
    "torch": torch.get_rng_state(),
}
print(f"best_acc: {best_acc!r} ({type(best_acc).__name__})")
torch.save(
    {"model": model.state_dict(), "best_acc": best_acc, "rng": rng_states},
    folder / "numpy_checkpoint.pt",
)
with expect_raises(
    pickle.UnpicklingError, "Unsupported global: GLOBAL numpy\\.", show=False
) as caught:
    torch.load(folder / "numpy_checkpoint.pt", map_location=device, weights_only=True)
print("refused:", re.search(r"Unsupported global: GLOBAL \S+", caught.message).group(0))
torch.save({"python": rng_states["python"], "torch": rng_states["torch"]}, folder / "rng_only.pt")
accepted = torch.load(folder / "rng_only.pt", weights_only=True)
print("Python and torch RNG states load:", sorted(accepted))
assert type(best_acc) is np.float64 and accepted["python"] == rng_states["python"]

# %%
# The error names one global at a time.
# Since PyTorch 2.6, :func:`torch.serialization.get_unsafe_globals_in_checkpoint` lists the
# globals a file needs without loading it; allowlisting them is still not enough, because NumPy's
# dtype classes (such as ``numpy.dtypes.Float64DType``, NumPy 1.25 and later) are checked when the
# objects are built, and the next error names one of them:

if torch.__version__ >= "2.6" and hasattr(np, "dtypes"):
    needed = sorted(
        torch.serialization.get_unsafe_globals_in_checkpoint(folder / "numpy_checkpoint.pt")
    )
    print("globals the file needs:", needed)
    assert needed and all(name.startswith("numpy.") for name in needed)
    listed = []
    for name in needed:
        module_name, _, attribute = name.rpartition(".")
        listed.append(getattr(importlib.import_module(module_name), attribute))
    with expect_raises(pickle.UnpicklingError, "numpy\\.dtypes\\.\\w+DType", show=False) as caught:
        with torch.serialization.safe_globals(listed):
            torch.load(folder / "numpy_checkpoint.pt", map_location=device)
    print("then refused:", re.search(r"numpy\.dtypes\.\w+DType", caught.message).group(0))
    dtype_classes = [type(best_acc.dtype), type(rng_states["numpy"][1].dtype)]
    with torch.serialization.safe_globals(listed + dtype_classes):
        allowlisted = torch.load(folder / "numpy_checkpoint.pt", map_location=device)
    print("loaded with", len(listed + dtype_classes), "allowlisted globals:", sorted(allowlisted))
    assert allowlisted["best_acc"] == best_acc

# %%
# **Store Python numbers and tensors, not NumPy objects:** ``best_acc.item()`` (or ``float()``)
# for a metric, and NumPy's generator state with its array as a list; such a checkpoint loads
# with the default and needs no allowlist.
# Restoring the three states then continues all three random streams exactly.
# ``map_location`` moves every tensor of the checkpoint, but the CPU generator's state must stay a
# CPU tensor, so the restore moves it back with ``.cpu()``:


def plain_rng_states():
    name, keys, position, has_gauss, cached_gaussian = np.random.get_state()
    numpy_state = (name, keys.tolist(), position, has_gauss, cached_gaussian)
    return {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}


def restore_rng_states(states):
    random.setstate(states["python"])
    name, keys, position, has_gauss, cached_gaussian = states["numpy"]
    np.random.set_state(
        (name, np.array(keys, dtype=np.uint32), position, has_gauss, cached_gaussian)
    )
    torch.set_rng_state(states["torch"].cpu())  # back from the GPU, where map_location put it


def draw():
    return random.random(), np.random.rand(), torch.rand(1).item()


torch.save(
    {"model": model.state_dict(), "best_acc": best_acc.item(), "rng": plain_rng_states()},
    folder / "plain_checkpoint.pt",
)
expected = draw()
plain = torch.load(folder / "plain_checkpoint.pt", map_location=device, weights_only=True)
restore_rng_states(plain["rng"])
print(f"best_acc: {plain['best_acc']!r} ({type(plain['best_acc']).__name__})")
after = draw()
print("draws after restoring match the draws after saving:", after == expected)
assert type(plain["best_acc"]) is float and after == expected
assert plain["rng"]["torch"].device.type == device.type

# %%
# The same error appears when NumPy values sit deeper in a checkpoint: in
# `deepmd-kit pull request 4147 <https://github.com/deepmodeling/deepmd-kit/pull/4147>`_, which
# switched the project's loads to ``weights_only=True``, the checkpoints were refused because a
# learning rate had been stored as a ``numpy.float64`` inside the model's state dict.
# Hugging Face's ``Trainer`` saves NumPy's generator state with its checkpoints: with the new
# default, its tests of resuming from a checkpoint failed
# (`transformers issue 34631 <https://github.com/huggingface/transformers/issues/34631>`_), and
# `transformers pull request 34632 <https://github.com/huggingface/transformers/pull/34632>`_
# allowlisted NumPy's array, dtype and reconstruction globals around the load; in a later report,
# `transformers issue 40500 <https://github.com/huggingface/transformers/issues/40500>`_, the
# random state was refused again with PyTorch 2.6.
#
# A whole model loaded in another project: "No module named …"
# -------------------------------------------------------------
#
# Passing ``weights_only=False`` for a whole-model file (the first way out the message offers)
# works in the project that saved it, and fails elsewhere.
# :func:`torch.save` does not store the model's code: :mod:`pickle` stores its class as a
# module path and a name, and loading imports that module again.
# We write a small project whose model class lives in ``mynet.py``, save the whole model there,
# then leave the project, as a script in another folder would: its folder is no longer on
# ``sys.path`` and ``mynet`` was never imported there.

import sys

project = folder / "project"
project.mkdir()
(project / "mynet.py").write_text(
    "from torch import nn\n\n\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(4, 2)\n\n"
    "    def forward(self, x):\n"
    "        return self.fc(x)\n"
)
sys.path.insert(0, str(project))
mynet = importlib.import_module("mynet")
net = mynet.Net().to(device)
torch.save(net, folder / "whole_net.pt")
torch.save(net.state_dict(), folder / "net_weights.pt")
sys.path.remove(str(project))
del sys.modules["mynet"], mynet

with expect_raises(ModuleNotFoundError, "No module named 'mynet'"):
    torch.load(folder / "whole_net.pt", map_location=device, weights_only=False)
with expect_raises(pickle.UnpicklingError, "Unsupported global", show=False) as caught:
    torch.load(folder / "whole_net.pt", map_location=device, weights_only=True)
print("the file names the class:", re.search(r"GLOBAL mynet\.Net", caught.message).group(0))

# %%
# **A whole-model file loads only where the same module path imports the same class:** the
# same folder layout, or the project installed as a package.
# Renaming or moving the file that defines the class breaks old checkpoints in the saving project
# too.
#
# **The fix is the state dict again:** it holds tensors under parameter names, loads with
# ``weights_only=True`` without importing anything, and the loading project builds the
# architecture from its own copy of the code:


class Net(nn.Module):  # the loading project's own definition of the architecture
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


weights = torch.load(folder / "net_weights.pt", map_location=device, weights_only=True)
rebuilt = Net().to(device)
_ = rebuilt.load_state_dict(weights)
print("keys:", list(weights), "| mynet imported:", "mynet" in sys.modules)
assert "mynet" not in sys.modules
assert torch.equal(rebuilt.fc.weight, net.fc.weight) and torch.equal(rebuilt.fc.bias, net.fc.bias)

# %%
# The error has been reported for as long as :func:`torch.save` has pickled whole models; in
# `PyTorch issue 18325 <https://github.com/pytorch/pytorch/issues/18325>`_ a whole-model
# checkpoint failed with ``No module named 'models'``, and the answer was a link to the
# recommended approach: save and load the state dict.
# `YOLOv5 issue 22 <https://github.com/ultralytics/yolov5/issues/22>`_ collected the same error
# from users who loaded YOLOv5's checkpoints, which pickle the model object, from their own
# projects outside the YOLOv5 folder.
#
# Detectors
# ---------
#
# The static checker's rule ``TP123`` (see :doc:`/detectors`) finds, in your own code, the loads
# that fail since PyTorch 2.6: a :func:`torch.load` without ``weights_only=`` in a file that saves
# more than tensors into its checkpoint (a whole module, an optimizer, an
# ``argparse.Namespace``, NumPy values) or uses what it loaded as a module. Loads of state dicts,
# which the new default reads, are left alone. It is on by default.
#
# Takeaway
# --------
#
# **Save state dicts and plain containers, load them with the default weights_only=True, and
# allowlist your own trusted classes with torch.serialization.add_safe_globals;
# weights_only=False runs the file's code, so keep it for files you trust.**
# Since PyTorch 2.6 that default is what :func:`torch.load` does when you pass nothing.
#
# See also :ref:`state-dict-prefix` for state dicts saved from a wrapped model, and
# :ref:`resume-training` for what a checkpoint needs to resume a training run exactly.

workdir.cleanup()
