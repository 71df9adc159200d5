"""
.. _pack-padded-sequence:

Padded batches through an RNN: the last time step is padding
============================================================

To batch sequences of different lengths, we pad them to the longest one.
A recurrent layer knows nothing about that padding: it runs over every position, padding
included, so for every sequence but the longest, "the output at the last time step" and the
final hidden state ``h_n`` are the state *after reading the padding*.
:func:`~torch.nn.utils.rnn.pack_padded_sequence` tells the layer where each sequence ends;
this page shows the wrong and the right final states, the ``enforce_sorted`` flag, and why the
lengths must stay on the CPU.

.. admonition:: What you will learn

   * why ``output[:, -1]`` and ``h_n`` of a padded batch are wrong for short sequences;
   * how to pack a padded batch, read ``h_n``, and get the last real output of each sequence;
   * what ``enforce_sorted`` does, and that sorting by length is no longer needed;
   * why ``lengths`` must be a CPU tensor or a list, even on the GPU.

.. admonition:: Prerequisites

   :ref:`rnn-hidden-batch-first` (the shapes of ``output`` and ``h_n``).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`,
:func:`~torch_pitfalls.expect_raises`, :func:`~torch_pitfalls.cuda_section`.
"""

# %%
# The symptom
# -----------
#
# Three sequences of lengths 2, 5 and 3 are padded with zeros into one batch with
# :func:`~torch.nn.utils.rnn.pad_sequence`, and go through a GRU.
# A sequence classifier typically keeps the output at the last time step.
# As a reference we run each sequence alone, without padding, and keep its final state.
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

from torch_pitfalls import cuda_section, expect_raises, get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

lengths = [2, 5, 3]
sequences = [torch.randn(n, 2, device=device) for n in lengths]
padded = pad_sequence(sequences, batch_first=True)  # (3, 5, 2), zeros after each sequence
gru = nn.GRU(input_size=2, hidden_size=3, batch_first=True).to(device)


def same(a, b):
    """Equal up to float32 rounding (runs with other batch sizes may use other GPU kernels)."""
    return torch.allclose(a, b, rtol=0, atol=1e-4)


output, h_n = gru(padded)
last_step = output[:, -1]  # (N, H): what the classifier reads
reference = torch.stack([gru(seq.unsqueeze(0))[1][0, 0] for seq in sequences])
last_step_right = [same(last_step[i], reference[i]) for i in range(3)]
h_n_right = [same(h_n[0, i], reference[i]) for i in range(3)]
print("padded batch:", tuple(padded.shape), "| lengths:", lengths)
print("output[:, -1] is the sequence's final state:", last_step_right)
print("h_n is the sequence's final state:          ", h_n_right)
assert last_step_right == [False, True, False] and h_n_right == [False, True, False]

# %%
# **Only the longest sequence gets its own final state; the other two get the state after three
# and two steps of padding.**
# Nothing fails: the shapes are right, and the model learns from corrupted features.
#
# Why
# ---
#
# A recurrent layer applies the same update at every position: a padding vector of zeros is an
# input like any other, and the update still moves the state through its biases and its
# recurrent weights.
# For the sequence of length 2, the output reaches its true final state at its last real step
# (step 1), then moves away from it over the three padding steps:

drift = (output[0] - reference[0]).norm(dim=-1).detach()
print("distance from its true final state, step by step:", drift)
assert drift[1] < 1e-4 and (drift[2:] > 0.1).all()

# %%
# The layer cannot guess the lengths: padding with zeros is a convention of your data, not
# something a tensor records.
#
# The fix
# -------
#
# **Pack the padded batch with its lengths: the layer then stops each sequence at its real
# end, and h_n holds each sequence's own final state.**
# :func:`~torch.nn.utils.rnn.pack_padded_sequence` builds a
# :class:`~torch.nn.utils.rnn.PackedSequence`, which every recurrent layer accepts as input;
# with ``enforce_sorted=False`` the batch may be in any order.

packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
packed_output, packed_h_n = gru(packed)
packed_right = [same(packed_h_n[0, i], reference[i]) for i in range(3)]
print("h_n of the packed batch is each sequence's final state:", packed_right)
assert packed_right == [True, True, True]

# %%
# The output is a :class:`~torch.nn.utils.rnn.PackedSequence` too.
# :func:`~torch.nn.utils.rnn.pad_packed_sequence` turns it back into a padded tensor, with zeros
# after each sequence's end, and returns the lengths; the last *real* output of sequence ``i`` is
# at position ``lengths[i] - 1``.

unpacked, unpacked_lengths = pad_packed_sequence(packed_output, batch_first=True)
rows = torch.arange(len(lengths), device=device)
last_real = unpacked[rows, unpacked_lengths.to(device) - 1]
print("lengths returned:", unpacked_lengths)
print("output after the end of sequence 0:", unpacked[0, 2:].detach())
torch.testing.assert_close(last_real, packed_h_n[0])
assert unpacked_lengths.tolist() == lengths and torch.count_nonzero(unpacked[0, 2:]) == 0

# %%
# ``enforce_sorted`` and the order of the batch
# ---------------------------------------------
#
# ``enforce_sorted=True`` is the default, and it requires the sequences sorted by decreasing
# length; our batch is not:

with expect_raises(RuntimeError, "must be sorted in decreasing order"):
    pack_padded_sequence(padded, lengths, batch_first=True)

# %%
# The message gives the way out.
# **With enforce_sorted=False, PyTorch sorts the batch itself, and h_n and the unpacked output
# come back in your original order**: the packed sequence records the permutation in
# ``sorted_indices`` and ``unsorted_indices``.
# The documentation says that ``enforce_sorted=True`` is only necessary to export the model to
# ONNX.

print("sorted_indices:", packed.sorted_indices, "| unsorted_indices:", packed.unsorted_indices)
assert packed.sorted_indices.tolist() == [1, 2, 0]

# %%
# Changed in PyTorch 1.1
# ----------------------
#
# Before PyTorch 1.1, packing required a batch sorted by decreasing length, with no option:
# code sorted every batch by length, packed it, and sorted the results back, and older
# tutorials still do.
# `Pull request #15225 <https://github.com/pytorch/pytorch/pull/15225>`_ added
# ``enforce_sorted=False`` and the two permutations of
# :class:`~torch.nn.utils.rnn.PackedSequence`, first released in
# `PyTorch 1.1 <https://github.com/pytorch/pytorch/releases/tag/v1.1.0>`_.
# **The manual sort-pack-unsort recipe is no longer needed:** it gives the same final states as
# ``enforce_sorted=False``.

order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
sorted_batch = pack_padded_sequence(
    padded[order], [lengths[i] for i in order], batch_first=True
)  # the old recipe: sort, pack with enforce_sorted=True ...
_, sorted_h_n = gru(sorted_batch)
manual_h_n = torch.empty_like(sorted_h_n)
manual_h_n[:, order] = sorted_h_n  # ... and sort the results back
same_as_manual = same(manual_h_n, packed_h_n)
print("sort-pack-unsort by hand gives the h_n of enforce_sorted=False:", same_as_manual)
assert same_as_manual

# %%
# Lengths stay on the CPU
# -----------------------
#
# Packing computes ``batch_sizes``, the number of sequences still running at each time step.
# A :class:`~torch.nn.utils.rnn.PackedSequence` always keeps it as a CPU ``int64`` tensor,
# whatever the device of the data, and computes it on the CPU from the lengths.
# **lengths must be a list or a CPU tensor, even when the data are on the GPU**, as the
# documentation of :func:`~torch.nn.utils.rnn.pack_padded_sequence` says.

print("batch_sizes:", packed.batch_sizes, "on", packed.batch_sizes.device)
print("packed data on", packed.data.device)
assert packed.batch_sizes.tolist() == [3, 3, 2, 1, 1] and packed.batch_sizes.device.type == "cpu"

# %%
# A list or a CPU tensor works on every device; a data pipeline that moves the whole batch to
# the GPU, lengths included, gets this error:

lengths_tensor = torch.tensor(lengths)  # on the CPU
packed_from_tensor = pack_padded_sequence(
    padded, lengths_tensor, batch_first=True, enforce_sorted=False
)
torch.testing.assert_close(gru(packed_from_tensor)[1], packed_h_n)
with cuda_section(device, "lengths on the GPU refused by pack_padded_sequence") as live:
    if live:
        with expect_raises(RuntimeError, "'lengths' argument should be a 1D CPU int64 tensor"):
            pack_padded_sequence(
                padded, lengths_tensor.to(device), batch_first=True, enforce_sorted=False
            )
        moved_back = pack_padded_sequence(
            padded, lengths_tensor.to(device).cpu(), batch_first=True, enforce_sorted=False
        )
        print("with lengths.cpu(): packed data on", moved_back.data.device)

# %%
# The check refuses every device but the CPU, so this machine can show its message too, with
# lengths on PyTorch's ``meta`` device (a tensor with a shape and no data) in place of the GPU
# (``enforce_sorted=True`` here: sorting meta lengths would fail first, on the missing data):

with expect_raises(RuntimeError, "'lengths' argument should be a 1D CPU int64 tensor"):
    pack_padded_sequence(
        padded, lengths_tensor.sort(descending=True).values.to("meta"), batch_first=True
    )

# %%
# Bidirectional layers need packing even more
# -------------------------------------------
#
# In a bidirectional layer the backward direction reads each sequence from its end.
# On a padded batch it starts at the padding, so for short sequences even the outputs *inside*
# the sequence are wrong, not only the final state; packing starts it at each sequence's real
# last step.

bigru = nn.GRU(input_size=2, hidden_size=3, batch_first=True, bidirectional=True).to(device)
bi_output, _ = bigru(padded)
bi_packed_output, _ = bigru(packed)
bi_unpacked, _ = pad_packed_sequence(bi_packed_output, batch_first=True)
bi_reference = [bigru(seq.unsqueeze(0))[0][0] for seq in sequences]
inside_right = [same(bi_output[i, :n], bi_reference[i]) for i, n in enumerate(lengths)]
packed_inside_right = [same(bi_unpacked[i, :n], bi_reference[i]) for i, n in enumerate(lengths)]
print("padded: outputs inside each sequence are right:", inside_right)
print("packed: outputs inside each sequence are right:", packed_inside_right)
assert inside_right == [False, True, False] and packed_inside_right == [True, True, True]

# %%
# A real-world report: the last time step of a text classifier
# ------------------------------------------------------------
#
# A reader of a tutorial on text classification with torchtext pointed out that its model
# classified each sentence from the recurrent layer's output at the last position, which for a
# sentence shorter than the longest one of its batch is not the sentence's last word
# (`practical-torchtext issue 5 <https://github.com/keitakurita/practical-torchtext/issues/5>`_).
# The answer was that torchtext pads the batches, which is exactly the situation this page
# shows: after padding, the last position of a short sentence holds padding.
# The CUDA error above is a frequent report of its own (for example
# `PyTorch issue 47637 <https://github.com/pytorch/pytorch/issues/47637>`_, where a training
# framework had moved the lengths to the GPU with the rest of the batch); ``lengths.cpu()``
# fixes it.
#
# Takeaway
# --------
#
# **A padded batch's last time step is padding for every sequence but the longest: pack it with
# pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False), with the lengths on
# the CPU, and read h_n.**
# When you need the outputs, unpack them with ``pad_packed_sequence`` and gather position
# ``length - 1``; never sort batches by hand for packing any more.
