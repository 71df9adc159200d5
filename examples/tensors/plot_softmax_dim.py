"""
.. _softmax-dim:

``softmax`` without ``dim``
===========================

:func:`torch.nn.functional.softmax` and :class:`torch.nn.Softmax` still accept a call without
``dim`` and then guess the dimension from the number of dimensions of the input.
For a ``(batch, classes)`` tensor the guess happens to be right; for a ``(batch, seq, classes)``
tensor, or scores laid out as ``(classes, batch)``, it normalises across the wrong dimension.
The only sign is a deprecation warning, and the result is a tensor of the right shape with the
wrong numbers.

.. admonition:: What you will learn

   * which dimension an implicit softmax picks for inputs of each number of dimensions;
   * how that silently normalises across the batch for a 3-D input;
   * why passing ``dim=`` every time is the whole fix.

.. admonition:: Prerequisites

   :ref:`cross-entropy-expects-logits` (what the softmax of logits means).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`, :func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A sequence model's output: logits of shape ``(batch, seq, classes)``.
# Its softmax without ``dim`` warns, and then returns probabilities that do not add up to 1 over
# the classes.
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

batch, seq, classes = 2, 3, 4
logits = torch.randn(batch, seq, classes).to(device)  # drawn on the CPU: same values everywhere
with expect_warns(UserWarning, "Implicit dimension choice for softmax"):
    probs_implicit = F.softmax(logits)
sum_over_classes = probs_implicit.sum(dim=-1)
sum_over_batch = probs_implicit.sum(dim=0)
print("sum over the classes:\n", sum_over_classes)
print("sum over the batch:\n", sum_over_batch)
assert not torch.allclose(sum_over_classes, torch.ones_like(sum_over_classes))
torch.testing.assert_close(sum_over_batch, torch.ones_like(sum_over_batch))

# %%
# The "probabilities" add up to 1 across the batch: each sample's prediction now depends on the
# other samples in the batch.
# The predicted classes differ from the correct ones too:

predicted_implicit = probs_implicit.argmax(dim=-1)
predicted_correct = logits.argmax(dim=-1)
print("predicted with the implicit softmax:\n", predicted_implicit)
print("predicted from the logits:\n", predicted_correct)
assert not torch.equal(predicted_implicit, predicted_correct)

# %%
# Why
# ---
#
# Without ``dim``, PyTorch applies a legacy rule that looks only at the number of dimensions:
# **dimension 0 for 0-D, 1-D and 3-D inputs, dimension 1 for all others.**
# The rule was written for images: an unbatched ``(C, H, W)`` tensor or a batched
# ``(N, C, H, W)`` one, where dimension 0 or 1 is the channel.
# For each number of dimensions, we find which explicit ``dim`` gives the same result:

picked = {}
for ndim in range(6):
    x = torch.randn((2, 3, 4, 5, 6)[:ndim], device=device)
    with expect_warns(UserWarning, "Implicit dimension", show=False):
        y = F.softmax(x)
    matches = [d for d in range(max(ndim, 1)) if torch.allclose(y, F.softmax(x, dim=d))]
    picked[ndim] = matches[0]
    print(f"{ndim}-D input: the implicit softmax is dim={matches}")
assert picked == {0: 0, 1: 0, 2: 1, 3: 0, 4: 1, 5: 1}

# %%
# So a 3-D ``(batch, seq, classes)`` tensor is normalised along dimension 0, the batch.
# A 2-D tensor gets dimension 1: right for ``(batch, classes)``, wrong for scores laid out as
# ``(classes, batch)``, where each class is then normalised across the samples:

scores = torch.randn(classes, batch, device=device)  # (classes, batch)
with expect_warns(UserWarning, "Implicit dimension", show=False):
    probs_columns = F.softmax(scores)
print("sum over the classes:", probs_columns.sum(dim=0))
torch.testing.assert_close(probs_columns, F.softmax(scores, dim=1))
assert not torch.allclose(probs_columns.sum(dim=0), torch.ones(batch, device=device))

# %%
# :class:`torch.nn.Softmax` built without ``dim`` follows the same rule, and warns at each call:

softmax_module = nn.Softmax()
print(softmax_module)
with expect_warns(UserWarning, "Implicit dimension choice for softmax"):
    probs_module = softmax_module(logits)
torch.testing.assert_close(probs_module, probs_implicit)

# %%
# So does :func:`~torch.nn.functional.log_softmax`, the input of
# :func:`~torch.nn.functional.nll_loss`, whose warning names it:

with expect_warns(UserWarning, "Implicit dimension choice for log_softmax"):
    log_probs_implicit = F.log_softmax(logits)
torch.testing.assert_close(log_probs_implicit.exp(), probs_implicit)

# %%
# The newer spellings, :func:`torch.softmax` and the tensor method ``Tensor.softmax``, have no
# default at all:

if torch.__version__ >= "2.13":
    function_no_dim = method_no_dim = r'softmax\(\) missing 1 required positional arguments: "dim"'
else:  # PyTorch 2.12 and older list the accepted signatures, after the arguments they were given
    invalid = r"softmax\(\) received an invalid combination of arguments - got "
    function_no_dim = invalid + r"\(Tensor\), but expected one of:"
    method_no_dim = invalid + r"\(\), but expected one of:"
with expect_raises(TypeError, function_no_dim):
    torch.softmax(logits)
with expect_raises(TypeError, method_no_dim):
    logits.softmax()

# %%
# The implicit choice has been deprecated since early releases, yet it is still only a warning,
# and a warning that many training scripts filter out or never show.
#
# The fix
# -------
#
# **Always pass** ``dim=``: the dimension that holds the classes, usually ``dim=-1``.
# The same holds for :func:`~torch.nn.functional.log_softmax` and :class:`~torch.nn.Softmax`.

probs = F.softmax(logits, dim=-1)
log_probs = F.log_softmax(logits, dim=-1)
softmax_last = nn.Softmax(dim=-1)
print("sum over the classes:\n", probs.sum(dim=-1))
torch.testing.assert_close(probs.sum(dim=-1), torch.ones(batch, seq, device=device))
torch.testing.assert_close(log_probs.exp(), probs)
torch.testing.assert_close(softmax_last(logits), probs)
assert torch.equal(probs.argmax(dim=-1), predicted_correct)

# %%
# For the ``(classes, batch)`` layout, the classes are dimension 0:

probs_columns = F.softmax(scores, dim=0)
print("sum over the classes:", probs_columns.sum(dim=0))
torch.testing.assert_close(probs_columns.sum(dim=0), torch.ones(batch, device=device))

# %%
# Detectors
# ---------
#
# The static checker's rule ``TP125`` (see :doc:`/detectors`) finds this pitfall in your own
# code: :func:`~torch.nn.functional.softmax`, :func:`~torch.nn.functional.log_softmax` and
# ``F.softmin`` called without ``dim`` (or with ``dim=None``), and
# :class:`~torch.nn.Softmax`, :class:`~torch.nn.LogSoftmax` and ``nn.Softmin`` built
# without it.
# :func:`torch.softmax` and ``Tensor.softmax`` are left alone, since they raise without ``dim``.
# The rule is on by default; it has no automatic fix, because the dimension PyTorch picks
# depends on the number of dimensions of the input when the code runs, which the checker cannot
# see: its message suggests ``dim=-1``, where the classes usually are.
# As the code runs, PyTorch's own deprecation warning is the sign, and under
# :mod:`torch_pitfalls.guards` that warning carries a link to this page.
# Run on the page's wrong code and on its fix, the checker flags each call of the first only:

from torch_pitfalls.lint import check_source

wrong_code = """
import torch.nn.functional as F
from torch import nn

probs = F.softmax(logits)
log_probs = F.log_softmax(logits)
softmax_module = nn.Softmax()
"""
fixed_code = """
import torch.nn.functional as F
from torch import nn

probs = F.softmax(logits, dim=-1)
log_probs = F.log_softmax(logits, dim=-1)
softmax_module = nn.Softmax(dim=-1)
"""
static = {
    name: check_source(code, path=f"{name}.py", language="en")
    for name, code in (("wrong", wrong_code), ("fixed", fixed_code))
}
for finding in static["wrong"]:
    print(finding)
print("findings in the fix:", static["fixed"])
assert [(f.line, f.rule) for f in static["wrong"]] == [(5, "TP125"), (6, "TP125"), (7, "TP125")]
assert static["fixed"] == []

# %%
# Takeaway
# --------
#
# **A softmax without** ``dim`` **guesses from the number of dimensions, and for 3-D inputs it
# guesses the batch.**
# Write ``dim=`` in every softmax and log-softmax call, and in every :class:`~torch.nn.Softmax`.
