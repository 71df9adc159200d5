"""
.. _cuda-visible-devices-after-init:

Set ``CUDA_VISIBLE_DEVICES`` before anything touches CUDA
=========================================================

You want a job on the second GPU, so the script sets ``os.environ["CUDA_VISIBLE_DEVICES"] = "1"``
(or a config module imported halfway down does).
The job still lands on GPU 0, next to someone else's, or sees every GPU of the machine.
The same variable typed on the command line, ``CUDA_VISIBLE_DEVICES=1 python train.py``, works.
Nothing warns you: the assignment succeeds, ``os.environ`` shows the new value, and CUDA ignores
it.

.. admonition:: What you will learn

   * that the CUDA driver reads ``CUDA_VISIBLE_DEVICES`` once, when it is initialised, and that a
     later change does not move the process to other GPUs;
   * that ``import torch`` does not initialise CUDA, but :func:`torch.cuda.is_available` already
     asks the driver, while :func:`torch.cuda.is_initialized` still says ``False``;
   * which of PyTorch's functions read the variable themselves, and why
     :func:`torch.cuda.device_count` can then disagree with the GPUs the process really uses;
   * the fix: set the variable before the process starts, or at the very top of the script.

.. admonition:: Prerequisites

   :ref:`device-agnostic-code` (what a device is, ``cuda:0``).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.run_isolated`,
:func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# The variable only matters at the moment CUDA starts, so every experiment on this page runs in a
# fresh child process (:func:`~torch_pitfalls.run_isolated`), which changes the variable at a
# different moment.
# One lever works on any machine with at least one GPU: the empty value ``""`` hides every GPU.
# The child reports whether CUDA is available, how many devices PyTorch counts, and where a new
# tensor lands; it hides the GPUs at the moment named by ``MOMENT``.
import json

import torch

from torch_pitfalls import cuda_section, get_device, run_isolated

device = get_device()
print(f"device: {device}")
VERSION = tuple(int(part) for part in torch.__version__.split(".")[:2])

CUDA_CHILD = """
import json, os
import torch

moment = os.environ["MOMENT"]
report = {}
if moment == "after import torch":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
report["is_available"] = torch.cuda.is_available()
if moment == "after is_available()":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
report["is_initialized"] = torch.cuda.is_initialized()
report["device_count"] = torch.cuda.device_count()
try:
    report["tensor_on"] = str(torch.zeros(1, device="cuda").device)
except RuntimeError as error:
    report["tensor_on"] = "RuntimeError: " + str(error).splitlines()[0]
if moment == "after the first CUDA tensor":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    report["next_tensor_on"] = str(torch.zeros(1, device="cuda").device)
report["device_count_at_end"] = torch.cuda.device_count()
report["is_available_at_end"] = torch.cuda.is_available()
print(json.dumps(report))
"""


def run_child(moment, **env):
    """Run ``CUDA_CHILD`` with ``MOMENT=moment`` (and ``env``); print and return its report."""
    result = run_isolated(CUDA_CHILD, env={"MOMENT": moment, **env})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    extra = "".join(f" ({key}={value!r})" for key, value in env.items())
    print(f"hidden {moment}{extra}:")
    for key, value in report.items():
        print(f"    {key:20} {value}")
    return report


# %%
# First the late assignment, after the first CUDA tensor.
# On a build without a GPU, the output below is the recorded CUDA run, labelled with its GPU,
# versions and date, or a sentence saying that it did not run.

with cuda_section(device, "hiding the GPUs after the first CUDA tensor") as live:
    if live:
        gpus = torch.cuda.device_count()
        print("GPUs this page's own process sees:", gpus)
        late = run_child("after the first CUDA tensor")
        assert late["is_available"] and late["tensor_on"] == "cuda:0"
        assert late["next_tensor_on"] == "cuda:0" and late["is_available_at_end"]
        # the GPUs the process saw at first since PyTorch 2.12, 0 before (see "Changed in 2.12")
        assert late["device_count_at_end"] == (gpus if VERSION >= (2, 12) else 0)

# %%
# After ``CUDA_VISIBLE_DEVICES=""`` the process should see no GPU at all.
# What the block asserts, and so checks on every GPU run: the next tensor still lands on
# ``cuda:0``, and :func:`torch.cuda.is_available` still says ``True``.
# :func:`torch.cuda.device_count` still counts the GPUs the process saw at first since PyTorch
# 2.12; before, it counts none, while the process goes on using its GPU (see "Changed in PyTorch
# 2.12" below).
# The reports below set ``"1"`` instead of ``""``: the same mechanism left their ``cuda:0`` on the
# first GPU of the machine.
#
# Why
# ---
#
# ``CUDA_VISIBLE_DEVICES`` is read by the CUDA driver, not by your code: **when the driver is
# initialised in a process, it reads the variable once and numbers the GPUs it lists from 0.**
# A later change of ``os.environ`` changes a string in the process's memory that the driver never
# looks at again.
#
# So the question is *when* the driver starts. PyTorch initialises CUDA lazily, not at
# ``import torch``. This child imports :mod:`torch`, :mod:`torch.nn` and
# :mod:`torch.utils.data`, then calls :func:`torch.cuda.is_available`, and asks
# :func:`torch.cuda.is_initialized` after each step (this part runs on every build):

IMPORT_CHILD = """
import json
import torch
import torch.nn, torch.utils.data
after_import = torch.cuda.is_initialized()
available = torch.cuda.is_available()
after_is_available = torch.cuda.is_initialized()
print(json.dumps([after_import, available, after_is_available]))
"""
imported = run_isolated(IMPORT_CHILD)
assert imported.returncode == 0, imported.stderr
after_import, available, after_is_available = json.loads(imported.stdout)
print("is_initialized() after the imports:      ", after_import)
print("is_available():                          ", available)
print("is_initialized() after is_available():   ", after_is_available)
assert after_import is False and after_is_available is False
assert available == torch.cuda.is_available()

# %%
# ``is_initialized()`` stays ``False`` after ``is_available()``, on a GPU build too.
# That does not mean the driver has not started (the CUDA part below checks both moments).
# Here is what the installed PyTorch does in :func:`torch.cuda.is_available`, read from its own
# source:

import inspect

print("torch", torch.__version__)


def quote(function, *needles):
    """Print the lines of ``function``'s source that contain one of ``needles``; assert each."""
    lines = inspect.getsource(function).splitlines()
    for needle in needles:
        found = [line for line in lines if needle in line]
        assert found, f"{needle!r} is no longer in {function.__name__}"
        for line in found:
            print(f"{function.__name__}: {line.strip()}")


quote(torch.cuda.is_available, "if _nvml_based_avail():", "return device_count() > 0")
quote(
    torch.cuda.is_available,
    "The default availability inspection",
    "be initialized. This uses the CUDA Runtime API",
    "API via `cuInit`",
    "return torch._C._cuda_getDeviceCount() > 0",
)
quote(torch.cuda._nvml_based_avail, "PYTORCH_NVML_BASED_CUDA_CHECK")

# %%
# By default, ``is_available()`` calls ``cudaGetDeviceCount``, and the comment in the source says
# it: that call initialises the CUDA driver (``cuInit``), which reads ``CUDA_VISIBLE_DEVICES``.
# PyTorch's own CUDA state (the one ``is_initialized()`` reports) starts only at the first CUDA
# tensor, but the driver's list of GPUs is fixed already.
# Only with ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` does ``is_available()`` ask NVML (NVIDIA's
# management library) through :func:`torch.cuda.device_count` instead, which leaves the driver
# alone; if NVML fails, it falls back to ``cudaGetDeviceCount``, as the comment above that branch
# says.
#
# :func:`torch.cuda.device_count` is the one function that reads the variable itself, and it
# caches its answer only once CUDA is initialised:

quote(
    torch.cuda.device_count,
    "if _cached_device_count is not None:",
    # 2.12 and later ask the driver once CUDA is initialised (see "Changed in PyTorch 2.12")
    *(
        ("if _initialized or", "nvml_count = _device_count_nvml()")
        if VERSION >= (2, 12)
        else ("_device_count_nvml()",)
    ),
    "Do not cache the device count prior to CUDA initialization",
    "the number of devices can change due to changes to CUDA_VISIBLE_DEVICES",
    "if _initialized:",
    "_cached_device_count = r",
)
quote(torch.cuda._device_count_nvml, "visible_devices = _parse_visible_devices()")
quote(torch.cuda._parse_visible_devices, 'os.getenv("CUDA_VISIBLE_DEVICES")')

# %%
# Before initialisation, then, ``device_count()`` asks NVML how many GPUs the machine has and
# trims that list with PyTorch's own parser of the variable, the private
# ``torch.cuda._parse_visible_devices``, which reads ``os.environ`` afresh at every call.
# That parser is plain Python, so we can watch it here (the variable is changed only inside the
# ``with`` block):

import os
from unittest import mock

for value in ["1", "1,0", "", "0,0", "2,-1,3", None]:
    with mock.patch.dict(os.environ):
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        if value is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = value
        parsed = torch.cuda._parse_visible_devices()
    shown = parsed if len(parsed) < 8 else f"list(range({len(parsed)}))"
    print(f"CUDA_VISIBLE_DEVICES={value!r:9} -> {shown}")
    expected = {
        "1": [1],
        "1,0": [1, 0],
        "": [],
        "0,0": [],
        "2,-1,3": [2],
        None: list(range(64)),
    }[value]
    assert parsed == expected

# %%
# The rules follow the driver's, as the source's comments say: the listed GPUs in that order, an
# empty list for ``""`` or a repeated index, the list cut at the first negative entry, and, when
# the variable is unset, every index.
#
# So between ``is_available()`` and the first CUDA tensor, ``device_count()`` follows the
# *current* value while the driver keeps the one it read: the two can disagree.
# The same child as above, hiding the GPUs after ``is_available()`` (by default, then with
# ``PYTORCH_NVML_BASED_CUDA_CHECK=1``), right after ``import torch``, and before the process
# starts:

with cuda_section(device, "hiding the GPUs at earlier moments") as live:
    if live:
        gpus = torch.cuda.device_count()
        after_check = run_child("after is_available()")
        assert after_check["is_available"] and not after_check["is_initialized"]
        assert after_check["device_count"] == 0  # NVML and the new value: no GPU
        assert after_check["tensor_on"] == "cuda:0"  # the driver: the GPUs it read at first
        assert after_check["device_count_at_end"] == (gpus if VERSION >= (2, 12) else 0)

        after_imports = run_child("after import torch")
        at_start = run_child("before the process starts", CUDA_VISIBLE_DEVICES="")
        nvml_check = run_child("after is_available()", PYTORCH_NVML_BASED_CUDA_CHECK="1")
        assert nvml_check["is_available"] and not nvml_check["is_initialized"]
        for hidden in (after_imports, at_start):
            assert not hidden["is_available"]
        for hidden in (after_imports, at_start, nvml_check):
            assert not hidden["is_available_at_end"]
            assert hidden["device_count"] == 0 and hidden["device_count_at_end"] == 0
            assert hidden["tensor_on"] == "RuntimeError: No CUDA GPUs are available"

# %%
# What the block asserts on a GPU: hidden after ``is_available()``, the GPUs are gone for
# ``device_count()`` (0) but not for the driver: the tensor lands on ``cuda:0``, and from then on
# ``device_count()`` reports the GPUs the driver read at the start (since PyTorch 2.12; before, it
# goes on reporting 0).
# Hidden right after ``import torch``, or before the process starts, the GPUs are really gone:
# CUDA is unavailable and creating a CUDA tensor fails with ``No CUDA GPUs are available``.
# With ``PYTORCH_NVML_BASED_CUDA_CHECK=1``, ``is_available()`` asks NVML and leaves the driver
# alone, so hiding the GPUs after it still works.
#
# The fix
# -------
#
# **Set CUDA_VISIBLE_DEVICES before the process starts; if it must be set in Python, set it in
# the first lines of the main script, before importing torch or anything that might use CUDA.**
#
# * On the command line or in the job script: ``CUDA_VISIBLE_DEVICES=1 python train.py``.
# * In Python, before every other import. "Before the first CUDA call" is not a rule you can
#   check: ``is_available()``, a library's import-time device check or a ``cuda:0`` default
#   argument all count, and ``is_initialized()`` misses the first of them. A guard that fails
#   loudly instead of silently using the wrong GPU checks the only thing you can check, that
#   :mod:`torch` is not imported yet:

GUARD_CHILD = """
import os, sys

def select_gpus(ids):
    if "torch" in sys.modules:
        raise RuntimeError("set CUDA_VISIBLE_DEVICES before importing torch")
    os.environ["CUDA_VISIBLE_DEVICES"] = ids

select_gpus("1")
import torch
print("selected", os.environ["CUDA_VISIBLE_DEVICES"], "| initialised:", torch.cuda.is_initialized())
try:
    select_gpus("0")
except RuntimeError as error:
    print("the second call:", error)
"""
guarded = run_isolated(GUARD_CHILD)
print(guarded.stdout, end="")
assert guarded.returncode == 0, guarded.stderr
assert "selected 1 | initialised: False" in guarded.stdout
assert "the second call: set CUDA_VISIBLE_DEVICES before importing torch" in guarded.stdout

# %%
# * A launcher that starts one process per GPU sets the variable in each child's environment
#   before it starts (``subprocess`` with ``env=``, a job scheduler), never from inside a
#   running process.
# * Inside a running process, choose the GPU by index instead: ``torch.device("cuda:1")`` or
#   :func:`torch.cuda.set_device` work at any time, on the GPUs the driver listed.
#
# Changed in PyTorch 2.12: device_count() asks the driver once CUDA is initialised
# --------------------------------------------------------------------------------
#
# Up to PyTorch 2.11, :func:`torch.cuda.device_count` asked NVML with the variable's current value
# even after CUDA was initialised, and cached that answer: in a process that hid its GPUs after
# its first CUDA tensor, it said 0 while the process went on using its GPU, and
# :func:`torch.cuda.is_available`, which asks the driver, said ``True``.
# Since 2.12 it asks the driver once CUDA is initialised, or while it initialises (the line
# ``if _initialized or`` of its source; `pull request #175355
# <https://github.com/pytorch/pytorch/pull/175355>`_, "Fix device count inconsistency in
# torch.cuda during lazy initialization").
# **Either way, a late change of the variable moves the process to no other GPU: only the count
# that device_count() reports differs.**

asks_driver = "if _initialized or" in inspect.getsource(torch.cuda.device_count)
print("device_count() asks the driver once CUDA is initialised:", asks_driver)
assert asks_driver == (VERSION >= (2, 12))

# %%
# A real-world report
# -------------------
#
# In `PyTorch issue 23544 <https://github.com/pytorch/pytorch/issues/23544>`_ a user set
# ``CUDA_VISIBLE_DEVICES`` through ``os.environ`` and found that the program always ran on GPU 0.
# After a long search they traced it to a ``torch.cuda.is_available()`` check that ran before
# the assignment; swapping the two lines fixed it. A maintainer answered that the variable only
# has an effect before PyTorch accesses CUDA, and advised setting it at the very top or on the
# command line, or choosing the device explicitly.
# The older `PyTorch issue 9158 <https://github.com/pytorch/pytorch/issues/9158>`_ is the same
# story without the clue: the assignment in the script did nothing, the same value on the command
# line worked, and the answer was to set it before importing torch.
#
# Takeaway
# --------
#
# **CUDA reads CUDA_VISIBLE_DEVICES once, when the driver starts, and torch.cuda.is_available()
# already starts it: set the variable before the process starts, or before importing torch.**
