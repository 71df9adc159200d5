"""
.. _module-backward-hook:

Module backward hooks that see the wrong gradients
==================================================

A backward hook on a module should receive ``grad_input``, the gradient of the loss with respect
to the module's input, and ``grad_output``, the gradient with respect to its output: what
gradient logging, saliency maps and attribution methods are built on.
With the old :meth:`~torch.nn.Module.register_backward_hook`, ``grad_input`` is something else
for any module made of more than one operation: the gradients of the inputs of its *last*
operation, which may include a bias gradient or an intermediate activation, and never the
module's input.
The newer :meth:`~torch.nn.Module.register_full_backward_hook` gets it right, but on the first
layer of a network, whose input is data that does not require grad, its ``grad_input`` is
``(None,)``, and on a frozen module fed with data it never fires.

.. admonition:: What you will learn

   * what the legacy hook's ``grad_input`` holds, and why it depends on the last operation of
     the module;
   * what ``register_full_backward_hook`` passes, and when it fires (module inputs that do not
     require grad, outputs that do not);
   * the fixes: full hooks, tensor hooks, or an input that requires grad.

.. admonition:: Prerequisites

   :ref:`requires-grad-propagation` (which tensors require grad, and what ``grad_fn`` is);
   :ref:`non-leaf-grad` (tensor hooks with :meth:`~torch.Tensor.register_hook`).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`, :func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A small block, ``Linear(3, 4) → ReLU → Linear(4, 2)``, receives a batch of 5 samples.
# A hook registered with ``register_backward_hook`` keeps the block's ``grad_input``, meant to
# be the gradient with respect to the block's input ``x``, of shape ``(5, 3)``.
# Calling the block already warns; the hook's tuple has three entries and none has the shape of
# ``x``.
import warnings

import torch
from torch import nn

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


def shapes(grads):
    return [None if g is None else tuple(g.shape) for g in grads]


block = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
x = torch.randn(5, 3, device=device, requires_grad=True)

seen = {}
block.register_backward_hook(lambda module, grad_input, grad_output: seen.update(old=grad_input))
with expect_warns(FutureWarning, "non-full backward hook when the forward contains multiple"):
    out = block(x)
out.sum().backward()
print("x:", tuple(x.shape), "| grad_input seen by the hook:", shapes(seen["old"]))
assert shapes(seen["old"]) == [(2,), (5, 4), (4, 2)]

# %%
# **grad_input holds a bias gradient of shape (2,), the gradient of the ReLU's output (5, 4) and
# a weight gradient (4, 2): the gradients of the last Linear, not of the block.**
# Even on a single :class:`~torch.nn.Linear`, where the right gradient is among them, it is not
# where the documentation puts it: ``grad_input[0]`` is the bias gradient, the input gradient
# comes second.

linear = nn.Linear(3, 4).to(device)
linear.register_backward_hook(lambda module, grad_input, grad_output: seen.update(lin=grad_input))
x.grad = None
with expect_warns(FutureWarning, "non-full backward hook", show=False):
    linear(x).sum().backward()
print("Linear(3, 4): grad_input shapes:", shapes(seen["lin"]))
assert shapes(seen["lin"]) == [(4,), (5, 3), (3, 4)]
assert torch.equal(seen["lin"][1], x.grad)

# %%
# Why
# ---
#
# The legacy hook is attached to one node of the autograd graph: the ``grad_fn`` of the
# module's output, that is, the node of the *last* operation the module ran.
# Its ``grad_input`` are the gradients that node computes for its own inputs.
# The block's output comes from ``addmm`` (bias + input @ weightᵀ), whose inputs are the bias,
# the ReLU's output and the transposed weight:

with expect_warns(FutureWarning, "non-full backward hook", show=False):
    out = block(x)
last_node = out.grad_fn
inputs_of_last_node = [type(node).__name__ for node, _ in last_node.next_functions]
print("last node:", type(last_node).__name__, "| its inputs come from:", inputs_of_last_node)
assert type(last_node).__name__ == "AddmmBackward0"
assert inputs_of_last_node == ["AccumulateGrad", "ReluBackward0", "TBackward0"]

# %%
# ``AccumulateGrad`` is the bias (a leaf), ``ReluBackward0`` the activation, ``TBackward0`` the
# transposed weight: the three entries of ``grad_input`` above.
# What this node's inputs are depends on how the module is implemented (the order of ``addmm``'s
# arguments, a ``view`` or an activation at the end), so the same hook gives other tuples for
# other layers.
# The method is deprecated in favour of the full hook below, and the call above warned that the
# hook "will be missing some grad_input".
#
# The fix
# -------
#
# **Use register_full_backward_hook: grad_input is the gradient with respect to the module's
# positional inputs, grad_output with respect to its outputs.**
# The hook is called once the gradients with respect to the inputs are computed.

full_block = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
full_block.register_full_backward_hook(
    lambda module, grad_input, grad_output: seen.update(full=grad_input, full_out=grad_output)
)
x.grad = None
full_block(x).sum().backward()
print("full hook: grad_input", shapes(seen["full"]), "| grad_output", shapes(seen["full_out"]))
assert shapes(seen["full"]) == [(5, 3)] and shapes(seen["full_out"]) == [(5, 2)]
assert torch.equal(seen["full"][0], x.grad)

# %%
# ``grad_input[0]`` is exactly ``x.grad``.
# When only one tensor matters, a tensor hook (:meth:`~torch.Tensor.register_hook`) is the most
# direct tool: it receives that tensor's gradient and nothing else.
# Installed from a forward hook, it can be set up once per module, like a module hook:

tensor_block = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
tensor_block.load_state_dict(full_block.state_dict())


def hook_output_gradient(module, args, output):
    output.register_hook(lambda grad: seen.update(tensor_out=grad))


tensor_block.register_forward_hook(hook_output_gradient)
tensor_block(x).sum().backward()
print("tensor hook on the output: shape", tuple(seen["tensor_out"].shape))
assert torch.equal(seen["tensor_out"], seen["full_out"][0])

# %%
# The two hook kinds cannot be mixed on one module, and removing the legacy hook does not undo
# the choice: a module that had a ``register_backward_hook`` refuses a full hook even after
# ``handle.remove()``.
# Build the module again (or restart the notebook) when switching.

handle = linear.register_backward_hook(lambda *args: None)
handle.remove()
with expect_raises(RuntimeError, "Cannot use both regular backward hooks and full backward hooks"):
    linear.register_full_backward_hook(lambda *args: None)

# %%
# Full hooks when no input requires grad
# --------------------------------------
#
# The first layer of a network receives data, which does not require grad.
# A full hook on it cannot be called "when the gradients with respect to the inputs are
# computed": there are none.
# It fires earlier, when the gradients with respect to the module's outputs are computed, with
# ``grad_input`` set to ``(None,)``, and PyTorch warns.
# A hook written for the input gradient, that logs ``grad_input[0].norm()`` for example, fails
# on ``None`` there.

data = torch.randn(5, 3, device=device)  # a batch of data: requires_grad=False
first = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
first.register_full_backward_hook(
    lambda module, grad_input, grad_output: seen.update(first=grad_input, first_out=grad_output)
)
if torch.__version__ >= "2.8":
    with expect_warns(UserWarning, "Full backward hook is firing when gradients are computed with"):
        first(data).sum().backward()
else:  # PyTorch 2.7 and older: the same call, silently (see "Changed in PyTorch 2.8" below)
    with warnings.catch_warnings(record=True) as hook_warnings:
        warnings.simplefilter("always")
        first(data).sum().backward()
    hook_warnings = [str(w.message) for w in hook_warnings if "backward hook" in str(w.message)]
    print("warnings:", hook_warnings)
    assert hook_warnings == []
print("data input: grad_input", seen["first"], "| grad_output", shapes(seen["first_out"]))
assert seen["first"] == (None,) and shapes(seen["first_out"]) == [(5, 2)]

# %%
# And when the module's *outputs* do not require grad either (a frozen module fed with data, as
# at the bottom of a fine-tuned network), the hook does not fire at all, without a warning: no
# gradient flows through that module.

calls = {"frozen": 0, "head": 0}
frozen, head = nn.Linear(3, 4).to(device), nn.Linear(4, 2).to(device)
frozen.requires_grad_(False)
frozen.register_full_backward_hook(lambda *args: calls.update(frozen=calls["frozen"] + 1))
head.register_full_backward_hook(lambda *args: calls.update(head=calls["head"] + 1))
if torch.__version__ >= "2.8":  # the head's input, the frozen module's output, needs no grad
    with expect_warns(UserWarning, "no inputs require gradients", show=False):
        head(frozen(data)).sum().backward()
else:
    head(frozen(data)).sum().backward()
print("hook calls:", calls)
assert calls == {"frozen": 0, "head": 1}

# %%
# The documentation of ``register_full_backward_hook`` lists these three rules: the hook fires
# with the input gradients; if no input requires grad, with the output gradients; if no output
# requires grad, not at all.
#
# **The fix, when a hook needs the gradient with respect to the data: make the input require
# grad** (``data.requires_grad_()``, which costs one more gradient in backward).
# When it needs only the output gradient, as Grad-CAM does, read ``grad_output`` or use a
# tensor hook on the output, as above, and do not touch ``grad_input``.

data.requires_grad_()
first(data).sum().backward()
print("input requires grad: grad_input", shapes(seen["first"]))
assert torch.equal(seen["first"][0], data.grad)

# %%
# Changed in PyTorch 2.8: a warning when a full hook fires with the output gradients
# ----------------------------------------------------------------------------------
#
# Up to PyTorch 2.7, a full backward hook on a module whose inputs do not require grad was
# called with ``grad_input=(None,)`` without a word: the behaviour shown above, which
# `pull request #56693 <https://github.com/pytorch/pytorch/pull/56693>`_ introduced in 2021.
# `PyTorch 2.8 <https://github.com/pytorch/pytorch/releases/tag/v2.8.0>`_ warns each time it
# happens: "Full backward hook is firing when gradients are computed with respect to module
# outputs since no inputs require gradients", with a link to the documentation
# (`pull request #155339 <https://github.com/pytorch/pytorch/pull/155339>`_); the case of a
# frozen module, whose hook does not fire at all, stays silent.
# **On PyTorch 2.7 and older, a hook that receives None in grad_input gets no warning: check
# grad_input for None yourself.**
#
# A real-world report
# -------------------
#
# A contributor pointed out, early on, that a module hook's ``grad_input`` holds the gradients
# for the inputs of the module's last operation, so that for a ``Sequential`` they can be
# unrelated to the module's input, and proposed making the hook match its description
# (`PyTorch issue 7040 <https://github.com/pytorch/pytorch/issues/7040>`_); another user
# reported the unexpected order and content of ``grad_input`` on ``nn.Linear``
# (`PyTorch issue 16276 <https://github.com/pytorch/pytorch/issues/16276>`_).
# The full hooks that followed at first did not fire on a network's first layer, whose input
# does not require grad (`PyTorch issue 56380 <https://github.com/pytorch/pytorch/issues/56380>`_);
# `pull request 56693 <https://github.com/pytorch/pytorch/pull/56693>`_ made them fire in that
# case, with the output gradients, which later surprised another user with a changed hook order
# (`PyTorch issue 100528 <https://github.com/pytorch/pytorch/issues/100528>`_) and led to the
# three documented rules (`pull request 151785 <https://github.com/pytorch/pytorch/pull/151785>`_)
# and to the warning printed above
# (`pull request 155339 <https://github.com/pytorch/pytorch/pull/155339>`_).
#
# Takeaway
# --------
#
# **register_backward_hook reports the last operation's gradients, not the module's: use
# register_full_backward_hook or a tensor hook, and expect grad_input == (None,) when the
# module's input does not require grad.**
# Check a new hook once against ``x.grad`` of an input created with ``requires_grad=True``.
