"""
.. _functional-dropout:

``F.dropout`` and its ``training`` flag
=======================================

:func:`torch.nn.functional.dropout` is a plain function: it cannot see whether the model that
calls it is in training or in evaluation mode.
Its ``training`` argument defaults to ``True``, so a model that calls it without that argument
keeps dropping activations after :meth:`model.eval() <torch.nn.Module.eval>`.
Evaluation then gives a different answer on every call, and a worse one.

.. admonition:: What you will learn

   * why :meth:`~torch.nn.Module.eval` does not reach :func:`~torch.nn.functional.dropout`;
   * the two fixes: ``training=self.training``, or the :class:`~torch.nn.Dropout` module;
   * which functional layers default to which mode, and what changed in PyTorch 1.0;
   * that :func:`~torch.nn.functional.scaled_dot_product_attention` has no ``training`` argument
     and drops with ``dropout_p`` in evaluation mode too.

.. admonition:: Prerequisites

   :ref:`train-eval-mode` (what ``train()`` and ``eval()`` switch).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_warns`, :mod:`torch_pitfalls.guards`.
"""

# %%
# The symptom
# -----------
#
# A small network whose ``forward`` applies dropout with the functional form.
# We put it in evaluation mode and ask twice for the prediction on the same batch.
import inspect
import math

import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import PitfallWarning, expect_warns, get_device, guards, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


class FunctionalDropoutNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        hidden = F.dropout(F.relu(self.fc1(x)), p=0.5)  # training defaults to True
        return self.fc2(hidden)


model = FunctionalDropoutNet().to(device)
x = torch.randn(4, 8, device=device)
_ = model.eval()
with torch.no_grad():
    eval_a, eval_b = model(x), model(x)
print("model.training:", model.training)
print("first call: ", eval_a[0])
print("second call:", eval_b[0])
print("same prediction twice in eval mode:", torch.equal(eval_a, eval_b))
assert not model.training and not torch.equal(eval_a, eval_b)

# %%
# Why
# ---
#
# :meth:`~torch.nn.Module.eval` sets the ``training`` attribute of the module and of its
# registered submodules, nothing more (see :ref:`train-eval-mode`).
# A function call inside ``forward`` has no such attribute: it only sees its arguments.
# **F.dropout drops whenever its training argument is True, and True is its default.**

training_default = inspect.signature(F.dropout).parameters["training"].default
print("default of F.dropout's training argument:", training_default)
assert training_default is True

hidden = F.relu(model.fc1(x)).detach()
still_dropped = F.dropout(hidden, p=0.5)
zeros_added = int(((still_dropped == 0) & (hidden != 0)).sum())
print("activations zeroed by F.dropout with the model in eval mode:", zeros_added)
assert zeros_added > 0

# %%
# The functional layers do not even agree on their default.
# The dropout family defaults to training, while :func:`~torch.nn.functional.alpha_dropout` and
# :func:`~torch.nn.functional.batch_norm` default to evaluation:
# relying on any of these defaults hides which mode a layer runs in.

functions = [F.dropout, F.dropout2d, F.alpha_dropout, F.batch_norm]
defaults = {f.__name__: inspect.signature(f).parameters["training"].default for f in functions}
print("training defaults:", defaults)
assert defaults == {
    "dropout": True,
    "dropout2d": True,
    "alpha_dropout": False,
    "batch_norm": False,
}

# %%
# The fix
# -------
#
# **Pass the module's own flag, training=self.training, or use the nn.Dropout module.**
# Both fixed networks have the same weights as the broken one (dropout has no parameters, so the
# state dict loads unchanged).


class PassTrainingFlag(FunctionalDropoutNet):
    def forward(self, x):
        hidden = F.dropout(F.relu(self.fc1(x)), p=0.5, training=self.training)
        return self.fc2(hidden)


class DropoutModule(FunctionalDropoutNet):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x))))


fixed_flag = PassTrainingFlag().to(device)
fixed_module = DropoutModule().to(device)
_ = fixed_flag.load_state_dict(model.state_dict())
_ = fixed_module.load_state_dict(model.state_dict())

# %%
# In evaluation mode both are deterministic and equal to the network without any dropout.

_ = fixed_flag.eval()
_ = fixed_module.eval()
with torch.no_grad():
    no_dropout = model.fc2(F.relu(model.fc1(x)))
    flag_a, flag_b = fixed_flag(x), fixed_flag(x)
    module_a, module_b = fixed_module(x), fixed_module(x)
print("training=self.training, same twice:", torch.equal(flag_a, flag_b))
print("nn.Dropout, same twice:", torch.equal(module_a, module_b))
assert torch.equal(flag_a, flag_b) and torch.equal(module_a, module_b)
torch.testing.assert_close(flag_a, no_dropout)
torch.testing.assert_close(module_a, no_dropout)

# %%
# In training mode both still drop, so the regularisation is kept where it belongs.

_ = fixed_flag.train()
_ = fixed_module.train()
with torch.no_grad():
    flag_train_differs = not torch.equal(fixed_flag(x), fixed_flag(x))
    module_train_differs = not torch.equal(fixed_module(x), fixed_module(x))
print("train mode, outputs differ between calls:", flag_train_differs, module_train_differs)
assert flag_train_differs and module_train_differs

# %%
# If you *want* dropout at evaluation time (Monte Carlo dropout, to estimate uncertainty),
# write ``training=True`` explicitly, so that a reader can see it is intended.
#
# Changed in PyTorch 1.0
# ----------------------
#
# Up to PyTorch 0.4, :func:`~torch.nn.functional.dropout` defaulted to ``training=False``:
# calling it without the flag silently did nothing, even during training — the opposite bug.
# `Pull request #10417 <https://github.com/pytorch/pytorch/pull/10417>`_ changed the default to
# ``True``, first released in
# `PyTorch 1.0 <https://github.com/pytorch/pytorch/releases/tag/v1.0.0>`_.
# **Code written for either default is wrong under the other: always pass training explicitly.**

_ = model.train()
with torch.no_grad():
    no_flag = F.dropout(hidden, p=0.5)
    explicit_off = F.dropout(hidden, p=0.5, training=False)
print("without the flag, today it drops:", bool(((no_flag == 0) & (hidden != 0)).any()))
print("training=False is the identity:", torch.equal(explicit_off, hidden))
assert ((no_flag == 0) & (hidden != 0)).any() and torch.equal(explicit_off, hidden)

# %%
# Changed in PyTorch 2.7: other dropout masks on the CPU for the same seed
# ------------------------------------------------------------------------
#
# On the CPU, dropout draws its mask with ``bernoulli_(1 - p)``.
# Up to PyTorch 2.6, builds of PyTorch that include Intel MKL
# (``torch.backends.mkl.is_available()``; the x86-64 wheels for Linux do) drew that mask from MKL's
# generator, seeded with one number taken from PyTorch's generator, on Intel and AMD processors
# alike.
# Builds without MKL, such as those for Arm processors, already drew one number per element from
# PyTorch's generator, so that the mask is ``torch.rand(...) < 1 - p``.
# Since PyTorch 2.7 every build does
# (`pull request #146174 <https://github.com/pytorch/pytorch/pull/146174>`_, "Temp disable MKL in
# DistributionKernels.cpp", until
# `issue #132395 <https://github.com/pytorch/pytorch/issues/132395>`_ is fixed).
# **On a build with MKL, the same seed gives other dropout masks before and after 2.7: the outputs
# printed at the top of this page differ between those releases, and so does a seeded training
# run with dropout.**

with torch.random.fork_rng(devices=[]):  # leaves the page's generator as it was
    torch.manual_seed(0)
    kept = F.dropout(torch.ones(16), p=0.5) != 0
    torch.manual_seed(0)
    uniform = torch.rand(16, dtype=torch.float64)
mask_is_rand = torch.equal(kept, uniform < 0.5)
print("on the CPU, the dropout mask is torch.rand(...) < 1 - p:", mask_is_rand)
assert mask_is_rand == (torch.__version__ >= "2.7" or not torch.backends.mkl.is_available())

# %%
# The same trap in attention: ``F.scaled_dot_product_attention(dropout_p=…)``
# ---------------------------------------------------------------------------
#
# :func:`~torch.nn.functional.scaled_dot_product_attention` (SDPA) drops attention weights with
# the probability ``dropout_p``, and it has no ``training`` argument at all:

sdpa_signature = " ".join(F.scaled_dot_product_attention.__doc__.split("->")[0].split())
print("F." + sdpa_signature)
assert "dropout_p" in sdpa_signature and "training" not in sdpa_signature

# %%
# **SDPA applies its dropout whenever dropout_p is above 0, in evaluation mode too.**
# A self-attention layer that passes its configured rate on every call, as many do, is random
# after ``model.eval()``:


class SelfAttention(nn.Module):
    def __init__(self, dim=16, heads=2, dropout=0.5):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.qkv = nn.Linear(dim, 3 * dim)

    def attention(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout)  # also in eval()

    def forward(self, x):
        batch, length, dim = x.shape
        qkv = self.qkv(x).view(batch, length, 3, self.heads, dim // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (batch, heads, length, head_dim)
        return self.attention(q, k, v).transpose(1, 2).reshape(batch, length, dim)


attention = SelfAttention().to(device).eval()
tokens = torch.randn(2, 5, 16, device=device)
with torch.no_grad():
    attention_differs = not torch.equal(attention(tokens), attention(tokens))
print("model.training:", attention.training)
print("SDPA with dropout_p=0.5, two calls in eval mode differ:", attention_differs)
assert not attention.training and attention_differs

# %%
# **Pass** ``dropout_p=self.dropout if self.training else 0.0``: the rate in training mode, 0 in
# evaluation mode (the warning in SDPA's documentation says the same).
# The fixed layer, given the same weights, is deterministic in evaluation mode and equal to
# attention written out by hand without dropout, ``softmax(q kᵀ / √d) v``; in training mode it
# still drops.


class SelfAttentionFixed(SelfAttention):
    def attention(self, q, k, v):
        dropout_p = self.dropout if self.training else 0.0  # the fix
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)


attention_fixed = SelfAttentionFixed().to(device)
_ = attention_fixed.load_state_dict(attention.state_dict())
_ = attention_fixed.eval()
with torch.no_grad():
    fixed_a, fixed_b = attention_fixed(tokens), attention_fixed(tokens)
    q, k, v = attention.qkv(tokens).view(2, 5, 3, 2, 8).permute(2, 0, 3, 1, 4)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1)
    by_hand = (weights @ v).transpose(1, 2).reshape(2, 5, 16)
    _ = attention_fixed.train()
    fixed_train_differs = not torch.equal(attention_fixed(tokens), attention_fixed(tokens))
print("fixed, eval mode: same twice:", torch.equal(fixed_a, fixed_b))
print("fixed, eval mode: max difference from attention by hand:", end=" ")
print(f"{(fixed_a - by_hand).abs().max().item():.1e}")
print("fixed, train mode: two calls differ:", fixed_train_differs)
assert torch.equal(fixed_a, fixed_b) and fixed_train_differs
torch.testing.assert_close(fixed_a, by_hand)

# %%
# :class:`~torch.nn.MultiheadAttention` does this for you: like :class:`~torch.nn.Dropout`, it
# reads its own ``training`` flag and drops attention weights only in training mode.

mha = nn.MultiheadAttention(16, 2, dropout=0.5, batch_first=True).to(device)
with torch.no_grad():
    _ = mha.eval()
    mha_eval_same = torch.equal(mha(tokens, tokens, tokens)[0], mha(tokens, tokens, tokens)[0])
    _ = mha.train()
    mha_train_differs = not torch.equal(
        mha(tokens, tokens, tokens)[0], mha(tokens, tokens, tokens)[0]
    )
print("nn.MultiheadAttention(dropout=0.5): eval same twice:", mha_eval_same, end=" ")
print("| train differs:", mha_train_differs)
assert mha_eval_same and mha_train_differs

# %%
# The behaviour was reported as a bug in
# `PyTorch issue 124464 <https://github.com/pytorch/pytorch/issues/124464>`_: SDPA's reference
# implementation in the documentation calls the dropout with training always on.
# The answer was documentation, not a change of behaviour:
# `pull request 126294 <https://github.com/pytorch/pytorch/pull/126294>`_ added the warning that
# the function always applies ``dropout_p`` and that the caller must pass 0 outside training.
# A request for a ``training`` argument like :func:`~torch.nn.functional.dropout`'s,
# `PyTorch issue 99293 <https://github.com/pytorch/pytorch/issues/99293>`_, is still open; in the
# meantime the same fix has been applied one model at a time, for example to the attention layers
# of timm (`pull request 1978 <https://github.com/huggingface/pytorch-image-models/pull/1978>`_).

# %%
# Detectors
# ---------
#
# Two rules detect this pitfall in your own code (see :doc:`/detectors`): the runtime guard
# ``TP004`` (``F.dropout`` with ``training=True`` inside a module in eval mode) and ``TP102`` of
# the static checker (a call of ``F.dropout`` or its family without ``training=``).
# Under :mod:`torch_pitfalls.guards`, the wrong network of this page warns in evaluation mode,
# once per line, and both fixes are silent.
# The guard cannot tell an explicit ``training=True`` (Monte Carlo dropout) from a forgotten one:
# silence it there with :func:`allow("TP004") <torch_pitfalls.guards.allow>`.

_ = model.eval()
_ = fixed_flag.eval()
_ = fixed_module.eval()
with guards(language="en") as wrong:
    with expect_warns(PitfallWarning, "^TP004 "), torch.no_grad():
        model(x)
with guards(language="en") as fixed, torch.no_grad():
    fixed_flag(x)
    fixed_module(x)
print("found in the wrong code:", wrong.ids, "  in the fix:", fixed.ids)
assert wrong.ids == ["TP004"] and fixed.ids == []

# %%
# Takeaway
# --------
#
# **A functional layer never sees model.eval(): pass training=self.training to F.dropout, or use
# nn.Dropout, which reads the flag for you.**
# Check any model whose evaluation output changes between two identical calls for a bare
# ``F.dropout(x)``.
