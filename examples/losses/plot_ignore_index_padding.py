"""
.. _ignore-index-padding:

Padding positions counted in the loss
=====================================

Sequences of different lengths are padded to the length of the longest one, and the labels are
made from the same padded token ids.
:func:`~torch.nn.functional.cross_entropy` and :class:`~torch.nn.CrossEntropyLoss` skip only
the targets equal to ``ignore_index``, whose default is ``-100``: a label equal to the padding
token's id is an ordinary class.
Nothing fails. The model is trained to predict padding after padding, the real tokens share the
gradient with the padded positions, and the reported loss of the very same sentences changes
with the amount of padding their batch needed.

.. admonition:: What you will learn

   * which targets ``ignore_index`` removes from the loss and its mean, and which it does not;
   * how padded labels dilute the loss and the gradient of the real tokens, and push the model
     towards the padding token;
   * the fix: ``-100`` in the labels at padded positions (or ``ignore_index=pad_id``), and why
     the positions, not the token id, must decide when the padding token is also a real token.

.. admonition:: Prerequisites

   :ref:`cross-entropy-expects-logits` (what :func:`~torch.nn.functional.cross_entropy`
   computes) and :ref:`loss-weights-reduction` (what its mean divides by).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A tiny next-token model (an embedding and a linear layer over a vocabulary of 8 tokens) and
# three sentences of 7, 4 and 3 tokens, each ending with the end-of-sequence token 1.
# Token 0 is the padding token.
# The batch is padded to the longest sentence, and, as in many training scripts, the labels are
# the padded ids shifted by one position:
import torch
import torch.nn.functional as F
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

vocab, pad_id, eos_id = 8, 0, 1
sentences = [[3, 5, 2, 7, 4, 6, 1], [4, 2, 6, 1], [5, 3, 1]]
model = nn.Sequential(nn.Embedding(vocab, 8), nn.Linear(8, vocab)).to(device)


def padded_batch(length, pad=pad_id):
    """The sentences padded with ``pad`` to ``length`` tokens: (inputs, labels) for next-token."""
    ids = torch.full((len(sentences), length), pad)
    for row, sentence in enumerate(sentences):
        ids[row, : len(sentence)] = torch.tensor(sentence)
    ids = ids.to(device)
    return ids[:, :-1], ids[:, 1:]


def loss_of(inputs, labels, **kwargs):
    logits = model(inputs)  # (..., vocab)
    return F.cross_entropy(logits.reshape(-1, vocab), labels.flatten(), **kwargs)


inputs, labels = padded_batch(7)
print("labels:", labels, sep="\n")
counted = labels.numel()
real = int(sum(len(s) - 1 for s in sentences))
print(f"positions in the loss: {counted}, of which real next tokens: {real}")
assert (counted, real) == (18, 11)

# %%
# The same three sentences in a batch padded to 7, 10 or 16 tokens (the longest sentence of
# another batch decides) give three different losses, with the same model:

losses = {length: loss_of(*padded_batch(length)).item() for length in (7, 10, 16)}
for length, value in losses.items():
    print(f"padded to {length:2d} tokens: loss {value:.4f}")
assert losses[7] != losses[10] != losses[16]

# %%
# **The loss of a sentence depends on its neighbours in the batch.**
# The padded positions are counted as if they were text, and the more there are, the more the
# reported loss measures how well the model predicts padding.
#
# Why
# ---
#
# Cross-entropy with class-index targets skips a position only when its target equals
# ``ignore_index``, ``-100`` unless told otherwise; it knows nothing about a padding token.
# A label ``0`` is the class 0 like any other: it gets a loss, a gradient, and a place in the
# mean's denominator.
# With ``reduction="mean"`` the loss is then ``(Σ real + Σ padded) / 18`` instead of
# ``Σ real / 11``, and so is its gradient:
# the real tokens' gradient is scaled down by ``11 / 18`` and the rest of the gradient teaches
# the model to continue padding with padding.


def gradient(loss):
    """All the parameter gradients of ``model`` for ``loss``, as one vector."""
    model.zero_grad()
    loss.backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()])


is_pad = labels == pad_id
mean_real = loss_of(inputs[~is_pad], labels[~is_pad])  # one row per real position
mean_padded = loss_of(inputs[is_pad], labels[is_pad])
with_padding = loss_of(inputs, labels)
print(f"loss over the real tokens: {mean_real.item():.4f}")
print(f"loss over the padded positions: {mean_padded.item():.4f}")
print(f"loss as computed: {with_padding.item():.4f} = (11 * real + 7 * padded) / 18")
torch.testing.assert_close(with_padding, (11 * mean_real + 7 * mean_padded) / 18)

g_real, g_padded = gradient(mean_real), gradient(mean_padded)
g_as_computed = gradient(loss_of(inputs, labels))
split = torch.allclose(g_as_computed, (11 * g_real + 7 * g_padded) / 18, rtol=1e-5, atol=1e-7)
print("gradient as computed = (11 * real-token gradient + 7 * padding gradient) / 18:", split)
assert split

# %%
# The bias of the output layer shows where the padded labels push the model.
# Its gradient for the padding class is negative, so gradient descent *raises* the logit of the
# padding token; when padding is never a target, the same gradient is positive and lowers it:

pad_bias_grad = {}
label_sets = {"padded labels": labels, "-100 labels": labels.masked_fill(is_pad, -100)}
for name, target in label_sets.items():
    model.zero_grad()
    loss_of(inputs, target).backward()
    pad_bias_grad[name] = model[1].bias.grad[pad_id].item()
    print(f"{name:>13}: d loss / d bias[pad] = {pad_bias_grad[name]:+.4f}")
assert pad_bias_grad["padded labels"] < 0 < pad_bias_grad["-100 labels"]

# %%
# The fix
# -------
#
# **Put -100 in the labels at every padded position**, or, when the padding id is never a real
# target, pass ``ignore_index=pad_id``.
# The loss is then the mean over the 11 real next tokens, whatever the padding:

fixed = {}
for length in (7, 10, 16):
    inputs_l, labels_l = padded_batch(length)
    fixed[length] = loss_of(inputs_l, labels_l.masked_fill(labels_l == pad_id, -100)).item()
    by_pad_id = loss_of(inputs_l, labels_l, ignore_index=pad_id).item()
    print(
        f"padded to {length:2d} tokens: -100 labels {fixed[length]:.4f}, ignore_index=pad_id "
        f"{by_pad_id:.4f}"
    )
    torch.testing.assert_close(by_pad_id, fixed[length])
    torch.testing.assert_close(fixed[length], mean_real.item())

# %%
# Only the labels take ``-100``: the inputs still hold the padding id, which
# :class:`~torch.nn.Embedding` must be able to look up (see :ref:`embedding-padding-idx`).
#
# When the padding token is also a real token
# -------------------------------------------
#
# Some tokenizers have no padding token, and a common workaround pads with the end-of-sequence
# token.
# Then ``ignore_index=pad_id``, or replacing every label equal to the padding id, also removes
# the real end-of-sequence targets: the model is never taught where a sentence ends.

_, labels_eos = padded_batch(7, pad=eos_id)
by_value = labels_eos.masked_fill(labels_eos == eos_id, -100)
lengths = torch.tensor([len(s) - 1 for s in sentences], device=device)  # labels per sentence
is_real = torch.arange(labels_eos.size(1), device=device) < lengths[:, None]
by_position = labels_eos.masked_fill(~is_real, -100)
kept_value = int((by_value != -100).sum())
kept_position = int((by_position != -100).sum())
eos_kept = int((by_position == eos_id).sum())
print(f"targets kept, -100 where the label is the padding id: {kept_value} (no end-of-sequence)")
print(
    f"targets kept, -100 where the position is padding:     {kept_position} "
    f"({eos_kept} end-of-sequence)"
)
assert (kept_value, kept_position, eos_kept) == (8, 11, 3)
assert int((by_value == eos_id).sum()) == 0

# %%
# **Decide from the positions (the lengths or the attention mask), not from the token id.**
#
# A real-world report
# -------------------
#
# In `transformers issue 11616 <https://github.com/huggingface/transformers/issues/11616>`_, a
# user pointed out that the masked and conditional language models of the library built their
# :class:`~torch.nn.CrossEntropyLoss` with the default ``ignore_index``, so that only labels
# equal to ``-100`` were skipped, while a padding id is usually another number: labels padded
# with the padding id would be trained on.
# The workaround the issue quotes from the library's documentation is the fix of this page:
# replace the padding ids in the labels with ``-100`` before the loss.
# The same mismatch appears in
# `LaTeX-OCR issue 305 <https://github.com/lukas-blecher/LaTeX-OCR/issues/305>`_, where an
# autoregressive wrapper pads with 0 and computes its loss with the default ``ignore_index``.
#
# Takeaway
# --------
#
# **ignore_index skips only the targets equal to it (-100 by default): set the labels of padded
# positions to -100, decided by position, or the loss trains on padding and depends on the
# batch's padding.**
# The loss over real tokens is also what gradient accumulation must average: see
# :ref:`token-mean-accumulation`.
#
# The :doc:`detectors </detectors>` have no rule for this pitfall, because whether a label is
# padding depends on the tokenizer's padding id, which the training code does not show.
