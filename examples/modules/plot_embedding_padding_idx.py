"""
.. _embedding-padding-idx:

``nn.Embedding(padding_idx=…)``: the padding row is zero only at construction
=============================================================================

Sequences of different lengths are padded to one length with a padding token, and
``nn.Embedding(..., padding_idx=pad)`` is often read as "the padding token embeds to zeros".
It does not quite mean that.
:class:`~torch.nn.Embedding` zeroes the padding row when it creates its weight, and gives that row
a zero gradient; the forward pass looks it up like any other row.
A custom initialisation, or :meth:`~torch.nn.Embedding.from_pretrained` with a matrix whose
padding row is not zero, leaves a non-zero padding vector that no training step will ever
remove, and a model that sums over the sequence then gives a sentence a different prediction
depending on how much padding its batch needed.

.. admonition:: What you will learn

   * what ``padding_idx`` does: a zero row at construction and a zero gradient, nothing more;
   * how a custom initialisation or ``from_pretrained`` gives the padding token a non-zero
     vector, and why training never removes it;
   * two fixes: zero the row after initialising, and mask the padding where it matters.

.. admonition:: Prerequisites

   :ref:`leaf-inplace-init` (initialising parameters under :class:`torch.no_grad`);
   :ref:`backward-step-zero-grad` (what an optimizer step does).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A bag-of-embeddings classifier: it sums the embeddings of a sentence's tokens and applies a
# linear layer.
# Token 0 is the padding token, declared with ``padding_idx=0``, so the sum should ignore it.
# The model initialises its embeddings with a normal distribution of standard deviation 0.1, as
# many training recipes do.
import torch
from torch import nn

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

PAD = 0


class BagOfEmbeddings(nn.Module):
    def __init__(self, vocab_size=10, dim=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim, padding_idx=PAD)
        self.classifier = nn.Linear(dim, 2)
        nn.init.normal_(self.embedding.weight, std=0.1)  # the recipe's initialisation

    def forward(self, ids):
        return self.classifier(self.embedding(ids).sum(dim=1))


model = BagOfEmbeddings().to(device)
print("embedding of the padding token:", model.embedding.weight[PAD])
assert model.embedding.weight[PAD].abs().sum() > 0

# %%
# The same sentence arrives in two batches: in the first the longest sentence has 4 tokens, in
# the second 8, so it is padded to 4 and to 8 tokens.

sentence = [3, 7, 2]


def padded(tokens, length):
    return torch.tensor([tokens + [PAD] * (length - len(tokens))], device=device)


with torch.no_grad():
    logits_4 = model(padded(sentence, 4))
    logits_8 = model(padded(sentence, 8))
print("padded to 4:", logits_4)
print("padded to 8:", logits_8)
assert not torch.allclose(logits_4, logits_8)

# %%
# **The prediction depends on how much padding the batch needed**: every padding token adds the
# padding vector to the sum.
# Training does not repair it.
# After 30 steps of SGD every row that the data uses has moved, and the padding row has not:

ids = torch.randint(1, 10, (16, 6), device=device)
ids[:, 4:] = PAD  # two padding positions in every sentence
labels = torch.randint(0, 2, (16,), device=device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
pad_row_before = model.embedding.weight[PAD].detach().clone()
token_row_before = model.embedding.weight[ids[0, 0]].detach().clone()
for _ in range(30):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(ids), labels).backward()
    optimizer.step()
pad_row_unchanged = torch.equal(model.embedding.weight[PAD], pad_row_before)
token_row_changed = not torch.equal(model.embedding.weight[ids[0, 0]], token_row_before)
print("padding row unchanged by training:", pad_row_unchanged)
print("a token's row changed by training:", token_row_changed)
assert pad_row_unchanged and token_row_changed

# %%
# Why
# ---
#
# ``padding_idx`` does two things, both described in the documentation of
# :class:`~torch.nn.Embedding`.
# When the module creates its weight, it fills the padding row with zeros; and in the backward
# pass, **the padding row gets a zero gradient, so no gradient step ever changes it**.
# The forward pass does no masking: index 0 returns row 0, whatever it holds.
# A fresh layer shows both halves of the rule:

fresh = nn.Embedding(10, 4, padding_idx=PAD).to(device)
print("fresh padding row:", fresh.weight[PAD])
fresh(padded(sentence, 8)).sum().backward()
print("gradient of the padding row:", fresh.weight.grad[PAD])
print("gradient of token 3's row:  ", fresh.weight.grad[3])
assert torch.count_nonzero(fresh.weight[PAD]) == 0
assert torch.count_nonzero(fresh.weight.grad[PAD]) == 0 and torch.all(fresh.weight.grad[3] == 1)

# %%
# :func:`torch.nn.init.normal_` writes the whole weight, padding row included; so does any
# ``model.apply(init_fn)`` that initialises embeddings.
# The zero gradient then *freezes* the random vector in place, which is why training left it
# alone.
#
# :meth:`~torch.nn.Embedding.from_pretrained` has the same blind spot: it uses the matrix it is
# given as the weight, and ``padding_idx`` only sets the zero gradient.
# A pretrained matrix whose padding row is not zero keeps it:

pretrained = torch.randn(10, 4, device=device)
loaded = nn.Embedding.from_pretrained(pretrained, freeze=False, padding_idx=PAD)
loaded_pad_row = loaded.weight[PAD].detach().clone()
print("padding row after from_pretrained:", loaded_pad_row)
assert torch.equal(loaded_pad_row, pretrained[PAD])

# %%
# A zero gradient does not even guarantee a fixed row.
# :class:`~torch.optim.AdamW` applies its weight decay to every parameter with a gradient,
# zero or not, so it shrinks a non-zero padding vector a little at every step: one step with
# ``lr=0.1`` and ``weight_decay=0.1`` multiplies it by 0.99.
# A zero row, in contrast, stays zero under any optimizer.

decayed = nn.Embedding(10, 4, padding_idx=PAD).to(device)
with torch.no_grad():
    decayed.weight[PAD] = 1.0
adamw = torch.optim.AdamW(decayed.parameters(), lr=0.1, weight_decay=0.1)
decayed(padded(sentence, 8)).sum().backward()
adamw.step()
print("padding row of ones after one AdamW step:", decayed.weight[PAD])
torch.testing.assert_close(decayed.weight[PAD].detach(), torch.full((4,), 0.99, device=device))

# %%
# The fix
# -------
#
# **After any custom initialisation or pretrained load, zero the padding row yourself**, under
# :class:`torch.no_grad` since the weight is a leaf that requires grad (see
# :ref:`leaf-inplace-init`).
# The zero gradient then keeps it at zero, and the padding amount no longer matters.


class BagOfEmbeddingsFixed(BagOfEmbeddings):
    def __init__(self, vocab_size=10, dim=4):
        super().__init__(vocab_size, dim)
        with torch.no_grad():
            self.embedding.weight[self.embedding.padding_idx].zero_()  # the fix


seed_everything(0)
fixed = BagOfEmbeddingsFixed().to(device)
with torch.no_grad():
    fixed_4 = fixed(padded(sentence, 4))
    fixed_8 = fixed(padded(sentence, 8))
print("padded to 4:", fixed_4)
print("padded to 8:", fixed_8)
torch.testing.assert_close(fixed_4, fixed_8)

# %%
# The zero row only protects operations that treat a zero vector as "nothing": a sum, or a
# mean that divides by the true lengths.
# A plain mean over the padded length, an attention layer (see :ref:`attention-mask-polarity`)
# or a recurrent network (see :ref:`pack-padded-sequence`) still sees the padding positions.
# **Where the padding must not count, mask it explicitly**: then even a non-zero padding vector
# does no harm.
# Here the pooling sums only the real tokens of the model with the random padding row from the
# symptom:

mask_4 = padded(sentence, 4) != PAD
mask_8 = padded(sentence, 8) != PAD
with torch.no_grad():
    h_4 = model.embedding(padded(sentence, 4)) * mask_4.unsqueeze(-1)
    h_8 = model.embedding(padded(sentence, 8)) * mask_8.unsqueeze(-1)
    masked_4 = model.classifier(h_4.sum(dim=1))
    masked_8 = model.classifier(h_8.sum(dim=1))
print("masked, padded to 4:", masked_4)
print("masked, padded to 8:", masked_8)
torch.testing.assert_close(masked_4, masked_8)

# %%
# A real-world report: "padding_idx does not pad with zeros"
# ----------------------------------------------------------
#
# A user who initialised an embedding by hand after declaring ``padding_idx`` found that padding
# tokens no longer embedded to zeros, and asked for ``padding_idx`` to produce zeros whatever
# the weight holds (`PyTorch issue 6411 <https://github.com/pytorch/pytorch/issues/6411>`_).
# A maintainer declined, since the weight is an ordinary tensor and some models want a specific,
# non-zero padding vector, and offered to document the behaviour instead.
# Today's documentation says it plainly: the padding row defaults to zeros for a newly
# constructed layer, and can be set to another value.
# Pretrained models carry the same trap: the padding row of the BLOOM language model's
# embeddings is not zero, because it was trained without ``padding_idx``
# (`transformers issue 30255 <https://github.com/huggingface/transformers/issues/30255>`_); a
# commenter there points out that this is harmless as long as the padding is masked.
#
# Takeaway
# --------
#
# **padding_idx zeroes the padding row once, at construction, and then only blocks its
# gradient; re-zero it after a custom init or from_pretrained, and mask padding wherever it must
# not count.**
# In a code review, look for ``nn.init.*`` or ``from_pretrained`` on an embedding with
# ``padding_idx``, and for sums or means over padded positions without a mask.
