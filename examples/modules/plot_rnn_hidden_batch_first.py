"""
.. _rnn-hidden-batch-first:

``batch_first`` does not apply to the hidden state
==================================================

With ``batch_first=True``, the input and the output of :class:`~torch.nn.GRU`,
:class:`~torch.nn.LSTM` and :class:`~torch.nn.RNN` put the batch first: ``(N, L, features)``.
The final hidden state ``h_n`` does not: it stays ``(num_layers * directions, N, H)``.
Code that flattens it per sample with ``h_n.view(N, -1)`` runs without error and gives every
sample a vector made of pieces of *other* samples' states.
With one layer in one direction the mistake is invisible; it appears when the model becomes
bidirectional or deeper.

.. admonition:: What you will learn

   * the shapes of ``output`` and ``h_n``, and which one ``batch_first`` changes;
   * how ``h_n`` is ordered by layer and direction, and how it relates to ``output``;
   * how ``h_n.view(N, -1)`` mixes samples, and the reshaping that does not;
   * why an initial state given batch-first can be accepted silently.

.. admonition:: Prerequisites

   Recurrent layers in PyTorch (input of shape ``(N, L, features)`` with ``batch_first=True``);
   tensor shapes, and what ``view`` does to them.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`.
"""

# %%
# The symptom
# -----------
#
# A bidirectional GRU encodes a batch of 3 sequences of length 5, batch first.
# To classify each sequence, the code concatenates its final forward and backward states with
# ``h_n.view(N, -1)``, which has the expected shape ``(N, 2 * H)``.
import torch
from torch import nn

from torch_pitfalls import expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

N, L, H = 3, 5, 4
gru = nn.GRU(input_size=2, hidden_size=H, bidirectional=True, batch_first=True).to(device)
x = torch.randn(N, L, 2, device=device)
output, h_n = gru(x)
features = h_n.view(N, -1)
print("output:", tuple(output.shape), "| h_n:", tuple(h_n.shape))
print("h_n.view(N, -1):", tuple(features.shape))
assert output.shape == (N, L, 2 * H) and h_n.shape == (2, N, H) and features.shape == (N, 2 * H)

# %%
# **output is batch first, h_n is not: its batch dimension is the second one.**
# The shapes fit, so nothing complains.
# To see what ``view`` did, we change the input of sample 1 only and check which rows of the
# features change.


def changed_rows(before, after):
    return [i for i in range(N) if not torch.allclose(before[i], after[i], rtol=0, atol=1e-4)]


x_other = x.clone()
x_other[1] += 1.0
_, h_n_other = gru(x_other)
wrong_rows = changed_rows(features, h_n_other.view(N, -1))
print("rows of h_n.view(N, -1) changed by sample 1's input:", wrong_rows)
assert wrong_rows == [0, 2]

# %%
# **Changing sample 1 changed the features of samples 0 and 2, and not its own.**
# Labelling every number of ``h_n`` with the sample it belongs to shows the mix-up:

owner = torch.arange(N).view(1, N, 1).expand(2, N, H)  # owner[d, n, :] = n
owner_after_view = owner.reshape(N, -1)
print("sample that each number of h_n.view(N, -1) comes from:", owner_after_view, sep="\n")
assert owner_after_view[:, ::H].tolist() == [[0, 1], [2, 0], [1, 2]]

# %%
# Row 0 holds the forward states of samples 0 and 1, row 1 the forward state of sample 2 and
# the backward state of sample 0: ``view`` fills the rows in memory order, direction by
# direction.
#
# Why
# ---
#
# The documentation of the recurrent layers says it in one sentence: ``batch_first`` makes the
# input and output tensors ``(batch, seq, feature)``, and **this does not apply to hidden or
# cell states.**
# ``h_n`` has no sequence dimension; it has one slice per layer and direction, in the order
# (layer 0, forward), (layer 0, backward), (layer 1, forward), …, each of shape ``(N, H)``.
# Its relation to ``output`` shows the order: the forward direction ends at the last time step,
# the backward direction ends at the *first* one.

forward_final, backward_final = h_n[0], h_n[1]
forward_is_last_step = torch.allclose(forward_final, output[:, -1, :H])
backward_is_first_step = torch.allclose(backward_final, output[:, 0, H:])
last_step_is_h_n = torch.allclose(output[:, -1], torch.cat([forward_final, backward_final], 1))
print("h_n[0] is output[:, -1, :H] (forward, last step):  ", forward_is_last_step)
print("h_n[1] is output[:, 0, H:] (backward, first step): ", backward_is_first_step)
print("output[:, -1] holds the final state of both directions:", last_step_is_h_n)
assert forward_is_last_step and backward_is_first_step and not last_step_is_h_n

# %%
# ``view`` and ``reshape`` only regroup the numbers in memory order; they cannot move the batch
# dimension to the front.
# With one layer in one direction, ``h_n`` is ``(1, N, H)`` and the leading 1 makes
# ``h_n.view(N, -1)`` correct by accident, which is why the habit survives:

uni = nn.GRU(input_size=2, hidden_size=H, batch_first=True).to(device)
_, h_uni = uni(x)
print("one layer, one direction: h_n", tuple(h_uni.shape))
assert torch.equal(h_uni.view(N, -1), h_uni[-1])

# %%
# The same rule holds for an initial state ``h_0``: it must be ``(num_layers * directions, N, H)``
# too.
# Given batch first, it is refused when the shapes differ:

with expect_raises(RuntimeError, r"Expected hidden size \(2, 3, 4\), got \[3, 2, 4\]"):
    gru(x, torch.zeros(N, 2, H, device=device))

# %%
# An LSTM's state is a pair ``(h_0, c_0)`` of that same shape, and its message numbers the
# pair's elements:

lstm_one = nn.LSTM(2, H, bidirectional=True, batch_first=True).to(device)
state = (torch.zeros(N, 2, H, device=device), torch.zeros(N, 2, H, device=device))
with expect_raises(RuntimeError, r"Expected hidden\[0\] size \(2, 3, 4\), got \[3, 2, 4\]"):
    lstm_one(x, state)

# %%
# and **accepted silently when the batch size happens to equal num_layers × directions**.
# With 2 sequences and a bidirectional layer, a batch-first ``h_0`` of shape ``(2, 2, H)`` is
# read with its two dimensions swapped: changing the initial state meant for sample 1 changes the
# output of sample 0.

x2 = torch.randn(2, L, 2, device=device)
h0_batch_first = torch.randn(2, 2, H, device=device)  # meant as (sample, direction, H)
h0_other = h0_batch_first.clone()
h0_other[1] += 1.0  # only sample 1's initial state
out_a, _ = gru(x2, h0_batch_first)
out_b, _ = gru(x2, h0_other)
sample0_changed = not torch.allclose(out_a[0], out_b[0], rtol=0, atol=1e-4)
print("sample 0's output changed by sample 1's initial state:", sample0_changed)
assert sample0_changed

# %%
# The fix
# -------
#
# **Index h_n by layer and direction, then put the batch first: never view() it to (N, -1).**
# For the last layer of a bidirectional network, concatenate its two directions:
# ``torch.cat([h_n[-2], h_n[-1]], dim=1)``.
# In general, split the first dimension with ``h_n.view(num_layers, directions, N, H)`` (layers
# first, then directions, as the comparison with ``output`` below confirms), pick the layer, and
# move the batch to the front with ``permute`` or ``transpose``.


def last_layer_features(h_n, num_layers, directions):
    last = h_n.view(num_layers, directions, h_n.size(1), h_n.size(2))[-1]  # (D, N, H)
    return last.permute(1, 0, 2).reshape(h_n.size(1), -1)  # (N, D * H)


fixed = last_layer_features(h_n, num_layers=1, directions=2)
torch.testing.assert_close(fixed, torch.cat([h_n[-2], h_n[-1]], dim=1))
fixed_rows = changed_rows(fixed, last_layer_features(h_n_other, num_layers=1, directions=2))
print("rows changed by sample 1's input:", fixed_rows)
assert fixed_rows == [1]

# %%
# The same function on a two-layer bidirectional LSTM (its ``h_n`` is the first element of the
# returned ``(h_n, c_n)``) keeps the last layer's two final states, sample by sample.

lstm = nn.LSTM(2, H, num_layers=2, bidirectional=True, batch_first=True).to(device)
lstm_output, (lstm_h_n, _) = lstm(x)
lstm_features = last_layer_features(lstm_h_n, num_layers=2, directions=2)
print("h_n:", tuple(lstm_h_n.shape), "-> features:", tuple(lstm_features.shape))
torch.testing.assert_close(lstm_features[:, :H], lstm_output[:, -1, :H])
torch.testing.assert_close(lstm_features[:, H:], lstm_output[:, 0, H:])
assert lstm_h_n.shape == (4, N, H) and lstm_features.shape == (N, 2 * H)

# %%
# A real-world report: a tutorial's bidirectional LSTM
# ----------------------------------------------------
#
# A reader of a popular set of NLP tutorials noticed that its bidirectional LSTM with attention
# reshaped the final hidden state of shape ``(2, N, H)`` with ``view`` to put the batch first,
# and showed with a small tensor that the result mixed the examples of a batch
# (`nlp-tutorial issue 38 <https://github.com/graykode/nlp-tutorial/issues/38>`_).
# The opposite expectation was reported to PyTorch itself as a bug — ``h_n`` of an LSTM built
# with ``batch_first=True`` did not have the batch first — and the maintainers answered that
# this is the intended behaviour: a hidden state has no sequence dimension, so there is nothing
# for ``batch_first`` to swap (`PyTorch issue 19675
# <https://github.com/pytorch/pytorch/issues/19675>`_).
#
# Takeaway
# --------
#
# **batch_first changes the input and output only: h_n and c_n are always (num_layers ×
# directions, N, H), and h_n.view(N, -1) mixes samples.**
# Take ``h_n[-1]``, or ``torch.cat([h_n[-2], h_n[-1]], dim=1)`` for a bidirectional network,
# and test per-sample code by changing one sample and checking that only its row changes.
# For a padded batch, ``h_n`` is each sequence's final state only if the batch was packed: see
# :ref:`pack-padded-sequence`.
