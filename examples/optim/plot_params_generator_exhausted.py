"""
.. _params-generator-exhausted:

``model.parameters()`` is a generator
=====================================

:meth:`~torch.nn.Module.parameters` does not return a list: it returns a generator, which yields
each parameter once and is then empty.
Kept in a variable and used twice, it gives everything to its first user and nothing to the
second: an optimizer built from an exhausted generator refuses to start, but gradient clipping
given one clips nothing, and code of your own that loops over it twice silently does half its
work.

.. admonition:: What you will learn

   * what a generator is, and why the second loop over ``model.parameters()`` finds nothing;
   * which uses fail loudly (an optimizer), which only warn (``clip_grad_norm_``), and which are
     silent (your own code);
   * the fix: a list, or a fresh ``model.parameters()`` at each use.

.. admonition:: Prerequisites

   :ref:`params-not-in-optimizer` (an optimizer keeps the parameters it was given).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`, :func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A training step with gradient clipping: the parameters are kept in a variable, given to the
# optimizer, and given again to :func:`~torch.nn.utils.clip_grad_norm_`, which should scale the
# gradients down to a total norm of at most 1.
# The loss is scaled up so that the gradients are large:
import warnings

import torch
from torch import nn

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
x, y = torch.randn(32, 8, device=device), torch.randn(32, 1, device=device)


def grad_norm(parameters):
    """The total 2-norm of the gradients, as clip_grad_norm_ computes it."""
    norms = torch.stack([torch.linalg.vector_norm(p.grad) for p in parameters])
    return torch.linalg.vector_norm(norms).item()


params = model.parameters()
optimizer = torch.optim.SGD(params, lr=0.01)
(100 * nn.functional.mse_loss(model(x), y)).backward()
if torch.__version__ >= "2.8":
    with expect_warns(UserWarning, "empty generator"):
        returned = nn.utils.clip_grad_norm_(params, max_norm=1.0)
else:  # PyTorch 2.7 and older: no warning, see "Changed in PyTorch 2.8" below
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        returned = nn.utils.clip_grad_norm_(params, max_norm=1.0)
    print("warnings:", [str(w.message) for w in seen])
    assert seen == []
after = grad_norm(model.parameters())
print(f"clip_grad_norm_ returned {returned.item()}; gradient norm after clipping: {after:.1f}")
assert returned.item() == 0 and after > 10

# %%
# **Nothing was clipped**: the function saw no parameters, returned a norm of 0 and left the
# gradients as they were; the next optimizer step applies them in full.
# Since PyTorch 2.8 it at least warns (the line above); older releases say nothing.
#
# Why
# ---
#
# **model.parameters() returns a generator: it yields each parameter once, then it is
# exhausted.**
# Building the optimizer looped over it to the end; everything that loops over it afterwards gets
# nothing.
# Each call of ``model.parameters()`` makes a new generator, so the model itself is fine:

print("model.parameters() returns a", type(params).__name__)
assert type(params).__name__ == "generator"
remaining = list(params)
fresh = list(model.parameters())
print("left in the used generator:", len(remaining), "| in a fresh one:", len(fresh))
assert remaining == [] and len(fresh) == 4

# %%
# The same mistake in the other order fails loudly: counting the parameters for a log line
# consumes the generator, and the optimizer then gets an empty list.

params = model.parameters()
print("number of parameter values:", sum(p.numel() for p in params))
with expect_raises(ValueError, "optimizer got an empty parameter list"):
    torch.optim.SGD(params, lr=0.01)

# %%
# Your own code gets no warning.
# A function that clips by hand, in two passes over its argument (the total norm first, then the
# scaling), computes the norm from a generator and then scales nothing:


def clip_by_total_norm(parameters, max_norm):
    """Scale the gradients so that their total norm is at most max_norm; return the norm."""
    total = torch.sqrt(sum(p.grad.pow(2).sum() for p in parameters))  # first pass
    scale = min(1.0, max_norm / (total.item() + 1e-6))
    for p in parameters:  # second pass: empty if parameters is a generator
        p.grad.mul_(scale)
    return total.item()


norm_seen = clip_by_total_norm(model.parameters(), max_norm=1.0)
after_own = grad_norm(model.parameters())
print(f"norm computed: {norm_seen:.1f}; gradient norm after clipping by hand: {after_own:.1f}")
assert abs(norm_seen - after_own) < 1e-4 * after_own and after_own > 10

# %%
# The fix
# -------
#
# **Turn the generator into a list once, or call model.parameters() again at each use.**
# A list can be looped over any number of times:

params = list(model.parameters())
optimizer = torch.optim.SGD(params, lr=0.01)
returned = nn.utils.clip_grad_norm_(params, max_norm=1.0)
after_fixed = grad_norm(params)
print(f"clip_grad_norm_ returned {returned.item():.1f}; gradient norm after: {after_fixed:.4f}")
assert returned.item() > 10 and abs(after_fixed - 1.0) < 1e-3

# %%
# Functions that take parameters should do the same with their argument: the first line of
# ``clip_by_total_norm`` becomes ``parameters = list(parameters)``.
#
# Changed in PyTorch 2.8: ``clip_grad_norm_`` warns
# -------------------------------------------------
#
# Up to PyTorch 2.7, ``clip_grad_norm_`` given an exhausted generator returned a norm of 0 and
# clipped nothing, silently.
# `PyTorch 2.8 <https://github.com/pytorch/pytorch/releases/tag/v2.8.0>`_ is the first release
# with the warning shown above
# (`pull request #151529 <https://github.com/pytorch/pytorch/pull/151529>`_, April 2025, in answer
# to `pytorch/pytorch issue #148259 <https://github.com/pytorch/pytorch/issues/148259>`_); the pull
# request was labelled as not user-facing, so the release notes do not mention it.
# It covers ``clip_grad_norm_`` only: functions of your own or of other libraries get no such
# check.
#
# A real-world report
# -------------------
#
# The issue above is itself the report: its author described a scenario in which code loops over
# the parameters kept in a variable, then passes the same variable to ``clip_grad_norm_``, and
# updates the model with gradients that were never clipped, without any sign
# (`pytorch/pytorch issue #148259 <https://github.com/pytorch/pytorch/issues/148259>`_, 2025).
# The two-pass case happened in torchtitan, PyTorch's library for training large models: its own
# ``clip_grad_norm_`` went through its argument twice, so given ``model.parameters()`` it
# computed the norm and left the gradients unchanged
# (`pytorch/torchtitan pull request #1258 <https://github.com/pytorch/torchtitan/pull/1258>`_).

# %%
# Detectors
# ---------
#
# The static checker's rule ``TP109`` (see :doc:`/detectors`) finds this pitfall in your own code:
# a variable assigned ``model.parameters()`` (or ``named_parameters()``, or a ``filter`` over
# them) and read a second time, or read inside a loop, before it is assigned again.
# It cannot see a function that goes through its argument twice, the torchtitan case above.
# Run on the page's first wrong code and on its fix, it flags the second read only:

from torch_pitfalls.lint import check_source

wrong_code = """
import torch

params = model.parameters()
optimizer = torch.optim.SGD(params, lr=0.01)
torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
"""
fixed_code = """
import torch

params = list(model.parameters())
optimizer = torch.optim.SGD(params, lr=0.01)
torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
"""
static = {
    name: check_source(code, path=f"{name}.py", language="en")
    for name, code in (("wrong", wrong_code), ("fixed", fixed_code))
}
for finding in static["wrong"]:
    print(finding)
print("findings in the fix:", static["fixed"])
assert [(f.line, f.rule) for f in static["wrong"]] == [(6, "TP109")] and static["fixed"] == []

# %%
# Takeaway
# --------
#
# **model.parameters() can be looped over once: keep list(model.parameters()) in a variable, or
# call model.parameters() at each use.**
# An optimizer given an exhausted generator raises an error and ``clip_grad_norm_`` warns (since
# PyTorch 2.8), but a function that loops over its argument twice gets no help.
