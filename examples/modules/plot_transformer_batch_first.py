"""
.. _transformer-batch-first:

``nn.Transformer*`` and ``nn.MultiheadAttention`` default to ``batch_first=False``
==================================================================================

:class:`~torch.nn.MultiheadAttention`, :class:`~torch.nn.TransformerEncoderLayer`,
:class:`~torch.nn.TransformerDecoderLayer`, :class:`~torch.nn.TransformerEncoder` and
:class:`~torch.nn.Transformer` read their input as ``(S, N, E)`` — sequence first, then batch —
unless they are built with ``batch_first=True``.
A batch held the usual way, ``(N, S, E)``, goes through them without an error and comes out with
the right shape, but the attention runs along the wrong dimension: each sample's tokens never see
each other, and every token attends to the tokens at the same position in the *other samples* of
the batch.
The model still trains, badly, and its predictions for one sample depend on the rest of the batch.

.. admonition:: What you will learn

   * which dimension the attention layers attend along by default, and how to see it;
   * the one warning PyTorch prints, and the one error you may get (a padding mask);
   * the fix, ``batch_first=True`` in every attention and Transformer layer, or a transpose.

.. admonition:: Prerequisites

   What self-attention computes (each token a weighted sum over the tokens of its sequence);
   tensor shapes.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.expect_warns`.
"""

# %%
# The symptom
# -----------
#
# A two-layer Transformer encoder, built with the defaults, encodes a batch of 4 sequences of
# 10 tokens with 16 features each, held batch first: ``(N, S, E) = (4, 10, 16)``.
# (Dropout is off so that the outputs are deterministic.)
# Building the encoder prints a warning about performance; the forward pass prints nothing, and
# the output has the input's shape.
import torch
from torch import nn

from torch_pitfalls import expect_raises, expect_warns, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

N, S, E = 4, 10, 16


def make_encoder(**kwargs):
    layer = nn.TransformerEncoderLayer(E, nhead=2, dim_feedforward=32, dropout=0.0, **kwargs)
    return nn.TransformerEncoder(layer, num_layers=2).to(device)


with expect_warns(UserWarning, "self_attn.batch_first was not True"):
    encoder = make_encoder()
x = torch.randn(N, S, E, device=device)  # batch first, as the data loader gives it
out = encoder(x)
print("input:", tuple(x.shape), "-> output:", tuple(out.shape))
assert out.shape == (N, S, E)

# %%
# To see which tokens attend to which, we change the input of sample 1 only and list the samples
# whose output changes: only sample 1 should.


def changed(before, after, dim):
    """Indices along ``dim`` where ``before`` and ``after`` differ."""
    difference = (after - before).abs().transpose(0, dim).flatten(1).amax(dim=1)
    return [i for i, d in enumerate(difference.tolist()) if d > 1e-5]


x_other = x.clone()
x_other[1] += 1.0  # only sample 1
samples_changed = changed(encoder(x), encoder(x_other), dim=0)
print("samples whose output changed when sample 1 changed:", samples_changed)
assert samples_changed == [0, 1, 2, 3]

# %%
# **Changing sample 1 changed the output of every sample in the batch.**
# Conversely, changing one token of sample 0 should change all 10 tokens of sample 0, since
# every token attends to every other; it changes only the token itself:

x_token = x.clone()
x_token[0, 3] += 1.0  # sample 0, token 3
tokens_changed = changed(encoder(x)[0], encoder(x_token)[0], dim=0)
print("tokens of sample 0 whose output changed when its token 3 changed:", tokens_changed)
assert tokens_changed == [3]

# %%
# The tokens of a sequence never exchange information; the model sees 10 "sequences" of 4
# "tokens", one per time step, made of the 4 samples.
# The attention weights of a :class:`~torch.nn.MultiheadAttention` built with the defaults show it
# in their shape, ``(batch, target length, source length)``:

mha = nn.MultiheadAttention(E, num_heads=2).to(device)
_, weights = mha(x, x, x)
print("attention weights:", tuple(weights.shape), "(10 'sequences' of 4 'tokens')")
assert weights.shape == (S, N, N)

# %%
# The only error comes from a key padding mask, which is always ``(N, S)``: the layer, reading
# the batch as ``(S, N, E)``, expects ``(10, 4)``.

padding_mask = torch.zeros(N, S, dtype=torch.bool, device=device)  # True = padding
padding_mask[:, 8:] = True
# PyTorch 2.5 and older word it "expecting key_padding_mask shape of (10, 4), but got
# torch.Size([4, 10])".
message = "Expected key_padded_mask" if torch.__version__ >= "2.6" else "expecting key_padding_mask"
with expect_raises(AssertionError, message):
    encoder(x, src_key_padding_mask=padding_mask)

# %%
# When the batch size equals the sequence length, even the mask fits: a batch of 10 sequences
# of 10 tokens goes through with its mask, which the layer applies along the wrong dimension.

x_square = torch.randn(S, S, E, device=device)
square_mask = torch.zeros(S, S, dtype=torch.bool, device=device)
square_mask[:, 8:] = True
print(
    "10 sequences of 10 tokens, with a mask:",
    tuple(encoder(x_square, src_key_padding_mask=square_mask).shape),
)

# %%
# Why
# ---
#
# The attention layers were added to PyTorch with the layout of its recurrent layers,
# ``(S, N, E)``, and ``batch_first`` came later as an option; its default stayed ``False``, the
# original layout.
# Every one of these classes has it, and it is ``False`` unless you pass ``True``:

with expect_warns(UserWarning, "batch_first was not True", show=False):
    transformer = nn.Transformer(E, nhead=2, num_encoder_layers=1, num_decoder_layers=1)
defaults = {
    "MultiheadAttention": nn.MultiheadAttention(E, 2).batch_first,
    "TransformerEncoderLayer": nn.TransformerEncoderLayer(E, 2).self_attn.batch_first,
    "TransformerDecoderLayer": nn.TransformerDecoderLayer(E, 2).self_attn.batch_first,
    "Transformer": transformer.batch_first,
}
print("batch_first by default:", defaults)
assert not any(defaults.values())

# %%
# Attention itself is a weighted sum over the dimension the layer takes as the sequence; nothing
# in a tensor of shape ``(4, 10, 16)`` says whether 4 or 10 is the batch, so a batch-first tensor
# is a valid, if wrong, sequence-first one.
# Newer APIs chose the other layout:
# :func:`~torch.nn.functional.scaled_dot_product_attention` takes ``(N, …, S, E)``, batch first,
# so code that mixes it with ``MultiheadAttention`` has to keep track of both.
# On the same batch, it keeps the samples apart:

import torch.nn.functional as F

sdpa_samples = changed(
    F.scaled_dot_product_attention(x, x, x),
    F.scaled_dot_product_attention(x_other, x_other, x_other),
    dim=0,
)
print("scaled_dot_product_attention, samples changed by sample 1:", sdpa_samples)
assert sdpa_samples == [1]

# %%
# The warning at construction, "enable_nested_tensor is True, but self.use_nested_tensor is False
# because encoder_layer.self_attn.batch_first was not True", is about the fast inference path,
# which needs ``batch_first=True``; it says nothing about your data's layout, and it is printed
# for correct sequence-first code too.
#
# The fix
# -------
#
# **Build every Transformer and attention layer with batch_first=True when your batches are
# (N, S, E).**
# The warning goes away, a change to sample 1 changes only sample 1, and a change to one token
# reaches every token of its sequence:

import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fixed = make_encoder(batch_first=True)
print("warnings at construction:", [str(w.message) for w in caught])
assert not caught

fixed_samples = changed(fixed(x), fixed(x_other), dim=0)
fixed_tokens = changed(fixed(x)[0], fixed(x_token)[0], dim=0)
print("samples changed by sample 1:", fixed_samples)
print("tokens of sample 0 changed by its token 3:", fixed_tokens)
assert fixed_samples == [1]
assert fixed_tokens == list(range(S))

# %%
# The padding mask now has the shape the layer expects, and the padded tokens do not influence
# the others (here, changing them leaves the output of the real tokens unchanged):

x_pad = x.clone()
x_pad[:, 8:] = 5.0  # new values in the padded positions only
real_changed = changed(
    fixed(x, src_key_padding_mask=padding_mask)[:, :8],
    fixed(x_pad, src_key_padding_mask=padding_mask)[:, :8],
    dim=0,
)
print("samples whose real tokens changed when the padding changed:", real_changed)
assert real_changed == []

# %%
# ``batch_first`` does not change the parameters: the same weights compute the same function
# with either layout.
# Code that cannot change how its layers are built (an older checkpoint's class, for instance)
# can transpose instead, ``model(x.transpose(0, 1)).transpose(0, 1)``:

_ = encoder.load_state_dict(fixed.state_dict())
transposed = encoder(x.transpose(0, 1)).transpose(0, 1)
torch.testing.assert_close(transposed, fixed(x))
print("default layers on x.transpose(0, 1), transposed back == batch_first=True layers: True")

# %%
# A real-world report: an encoder fed batch-first data
# ----------------------------------------------------
#
# In IBM's TabFormer, the tabular Transformer's encoder received tensors with the batch in the
# first dimension while ``nn.MultiheadAttention`` expected it in the second; a contributor fixed
# the resulting wrong attention by transposing before the encoder and back after, since the
# PyTorch release the project used had no ``batch_first`` option yet
# (`TabFormer pull request 14 <https://github.com/IBM/TabFormer/pull/14>`_).
# The same mistake in a set of PyTorch exercises produced a high training loss and test error
# until ``batch_first=True`` was passed to the encoder layer, which the maintainer confirmed
# (`TorchLeet issue 5 <https://github.com/Exorust/TorchLeet/issues/5>`_).
# In PyTorch's own tracker, a user asked for ``batch_first=True`` as the default because of the
# construction warning above (`PyTorch issue 137173
# <https://github.com/pytorch/pytorch/issues/137173>`_).

# %%
# Detectors
# ---------
#
# Nothing in a tensor says which of its dimensions is the batch, so no detector can tell a
# batch-first input from a sequence-first one in general.
# The code shows it in one place: where the output of a layer built without
# ``batch_first=True`` is pooled as if it were batch-first, ``out[:, 0]`` or
# ``out.mean(dim=1)``: for an ``(S, N, E)`` output, these take one sample, or the average over the
# batch, at every position.
# The static checker's ``TP130`` (see :doc:`/detectors`) reports that pooling.
# A layer called on one sequence made a batch of one (``x.unsqueeze(1)``), where ``[:, 0]`` drops
# the batch dimension, is left alone.
# Run on the kind of model of the exercise above and on its fix:

from torch_pitfalls.lint import check_source

wrong_code = """
from torch import nn

class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, nhead=2)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        x = self.encoder(x)
        return self.head(x.mean(dim=1))
"""
fixed_code = wrong_code.replace("nhead=2)", "nhead=2, batch_first=True)")
static = {
    name: check_source(code, path=f"{name}.py", language="en")
    for name, code in (("wrong", wrong_code), ("fixed", fixed_code))
}
for finding in static["wrong"]:
    print(finding)
print("findings in the fix:", static["fixed"])
assert [(f.line, f.rule) for f in static["wrong"]] == [(13, "TP130")] and static["fixed"] == []

# %%
# Takeaway
# --------
#
# **Transformer and MultiheadAttention layers read (S, N, E) unless built with batch_first=True:
# a (N, S, E) batch runs without error and attends across the samples of the batch.**
# Pass ``batch_first=True`` to every such layer, and test the model by changing one sample and
# checking that only its output changes.
# The recurrent layers share the default, with a twist for their hidden state
# (:ref:`rnn-hidden-batch-first`); ``Conv1d`` and ``BatchNorm1d`` want the features in dimension
# 1 (:ref:`channels-first-1d`); masks have conventions of their own
# (:ref:`attention-mask-polarity`).
