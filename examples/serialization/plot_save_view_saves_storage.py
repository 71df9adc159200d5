"""
.. _save-view-saves-storage:

Saving a slice saves the whole storage
======================================

A feature-extraction script runs a batch through a model and saves each sample's features to a
file of its own.
Every file turns out as large as the whole batch: :func:`torch.save` writes the entire storage
that a tensor views, not just the elements the tensor shows.
The sixteen files hold the batch sixteen times over, and loading one sample allocates the memory
of all of them.

.. admonition:: What you will learn

   * which operations return a view that shares its storage with the original tensor, and which
     return a copy;
   * why :func:`torch.save` writes whole storages: tensors that shared a storage before saving
     still share it after loading;
   * how to save only what you mean to save, with :meth:`~torch.Tensor.clone`.

.. admonition:: Prerequisites

   :ref:`view-noncontiguous` (views, strides and storages) and :ref:`torch-load-weights-only`
   (saving and loading tensors).

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A batch of 16 samples, each with 4096 ``float32`` features: 16 KiB per sample, 256 KiB for the
# batch.
# The script saves ``features[i]``, one file per sample, to a temporary directory.
# File sizes below are in bytes.
import tempfile
import zipfile
from pathlib import Path

import torch

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")

workdir = tempfile.TemporaryDirectory()
folder = Path(workdir.name)

features = torch.randn(16, 4096, device=device)
sample_bytes = features[0].nbytes
batch_bytes = features.nbytes
print(f"one sample: {sample_bytes} bytes of data, the batch: {batch_bytes} bytes")
assert (sample_bytes, batch_bytes) == (16 * 1024, 256 * 1024)


def saved_size(obj, name):
    """Save ``obj`` with torch.save and return the size of the file in bytes."""
    path = folder / name
    torch.save(obj, path)
    return path.stat().st_size


view_sizes = [saved_size(features[i], f"sample_{i:02}.pt") for i in range(len(features))]
print("size of each sample's file:", sorted(set(view_sizes)))
print(f"all 16 files: {sum(view_sizes)} bytes for {batch_bytes} bytes of features")
assert all(batch_bytes < size < batch_bytes + 4096 for size in view_sizes)

# %%
# **Each file holds the whole batch.**
# Loading one of them gives back a tensor of the right shape and values, which still views a
# storage of the whole batch's size, at the sample's offset:

loaded = torch.load(folder / "sample_05.pt", map_location=device)
loaded_storage = loaded.untyped_storage().nbytes()
print(f"loaded: shape {tuple(loaded.shape)}, storage offset {loaded.storage_offset()}, ", end="")
print(f"storage of {loaded_storage} bytes")
assert torch.equal(loaded, features[5])
assert loaded.storage_offset() == 5 * 4096 and loaded_storage == batch_bytes

# %%
# Why
# ---
#
# Indexing with an integer or a slice returns a *view*: a new tensor header (shape, strides,
# storage offset) over the same storage as the original tensor, with no copy.
# ``features[5]`` is the 4096 elements that start at offset 20480 of the batch's storage:


def shares_storage_with_features(tensor):
    return tensor.untyped_storage().data_ptr() == features.untyped_storage().data_ptr()


view = features[5]
print("features[5] is a view of features:", view._base is features)
print(f"its storage: {view.untyped_storage().nbytes()} bytes, offset {view.storage_offset()}")
assert shares_storage_with_features(view)

# %%
# **torch.save writes every storage that the saved tensors use, whole, once, and records each
# tensor as a view into it.**
# This is how PyTorch keeps view relationships through a file: tensors that shared a storage
# before saving share one after loading, and the file holds that storage once.
# Saving the batch and two of its rows together costs no more than saving the batch alone, and
# a write through one loaded tensor shows in the others:

together = saved_size({"batch": features, "row_2": features[2], "row_3": features[3]}, "all.pt")
batch_alone = saved_size(features, "batch.pt")
print(f"batch and two rows: {together} bytes; the batch alone: {batch_alone} bytes")
assert batch_bytes < together < batch_bytes + 4096 and batch_bytes < batch_alone < together + 1

reloaded = torch.load(folder / "all.pt", map_location=device)
reloaded["row_2"].fill_(7.0)
print("after writing 7 into row_2, batch[2, :3] =", reloaded["batch"][2, :3].tolist())
assert torch.equal(reloaded["batch"][2], torch.full((4096,), 7.0, device=device))

# %%
# A file records storages, not just tensors, and a storage can be far larger than the tensor you
# thought you saved.
# Here is which ways of taking the first 2 rows keep the batch's storage, and what each file
# weighs:

ways = {
    "features[:2]": features[:2],
    "features.narrow(0, 0, 2)": features.narrow(0, 0, 2),
    "features.chunk(8)[0]": features.chunk(8)[0],
    "features.split(2)[0]": features.split(2)[0],
    "features[:2].view(-1)": features[:2].view(-1),
    "features[:2].detach()": features[:2].detach(),
    "features[:2].contiguous()": features[:2].contiguous(),
    "features[[0, 1]]": features[[0, 1]],
    "features[:2].clone()": features[:2].clone(),
}
shares_storage = {}
for name, tensor in ways.items():
    shares_storage[name] = shares_storage_with_features(tensor)
    size = saved_size(tensor, "way.pt")
    print(f"{name:26} shares the batch's storage: {shares_storage[name]!s:5} file: {size:>6} bytes")
assert [name for name, shared in shares_storage.items() if not shared] == [
    "features[[0, 1]]",
    "features[:2].clone()",
]
first_rows = features[:2]
assert first_rows.contiguous() is first_rows  # already contiguous: the same tensor, no copy

# %%
# Slicing, :meth:`~torch.Tensor.narrow`, ``chunk`` and ``split``, :meth:`~torch.Tensor.detach`
# and :meth:`~torch.Tensor.view` all return views.
# :meth:`~torch.Tensor.contiguous` copies only a tensor that is not contiguous already: the first
# rows of a batch are contiguous, so it returns the view itself.
# Indexing with a list or a tensor of indices (advanced indexing) copies, and so does
# :meth:`~torch.Tensor.clone`.
#
# The fix
# -------
#
# **Clone a view before you save it, unless you mean to save its whole storage.**
# :meth:`~torch.Tensor.clone` copies the elements the view shows into a storage of their own:

clone_sizes = [saved_size(features[i].clone(), f"sample_{i:02}.pt") for i in range(len(features))]
print("size of each sample's file:", sorted(set(clone_sizes)))
print(f"all 16 files: {sum(clone_sizes)} bytes for {batch_bytes} bytes of features")
fixed = torch.load(folder / "sample_05.pt", map_location=device)
fixed_storage = fixed.untyped_storage().nbytes()
print(f"loaded: storage of {fixed_storage} bytes, offset {fixed.storage_offset()}")
assert all(sample_bytes < size < sample_bytes + 4096 for size in clone_sizes)
assert sum(view_sizes) > 10 * sum(clone_sizes)
assert torch.equal(fixed, features[5]) and fixed_storage == sample_bytes

# %%
# A dictionary of views needs each value cloned, ``{name: t.clone() for name, t in views.items()}``.
# Cloning gives up the sharing on purpose: two clones saved together are two storages, and a
# write to one no longer reaches the other.
# A state dict is normally not affected: ``model.state_dict()`` returns the parameters and
# buffers, which usually each have a storage of their own, the right size:

state = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).state_dict()
print(
    "every entry's storage is its own size:",
    all(value.untyped_storage().nbytes() == value.nbytes for value in state.values()),
)
assert all(value.untyped_storage().nbytes() == value.nbytes for value in state.values())

# %%
# Changed in PyTorch 2.7: two more records in every file
# ------------------------------------------------------
#
# A file written by :func:`torch.save` is a zip archive: the pickled object (``data.pkl``), one
# record per storage (``data/0``, ...) and a few small records.
# Since PyTorch 2.7 it holds two more: ``.format_version``, written by
# `pull request #143879 <https://github.com/pytorch/pytorch/pull/143879>`_ (which also writes the
# storages in numeric order), and ``.storage_alignment``, written by
# `pull request #147788 <https://github.com/pytorch/pytorch/pull/147788>`_ (which made the
# alignment of storages in the file configurable).
# **Each file above is a little larger than the same save with PyTorch 2.6 (the Across releases
# section at the end of this page shows both sizes); what a view costs, its whole storage, is the
# same on every release.**

with zipfile.ZipFile(folder / "sample_05.pt") as archive:
    records = [name.split("/", 1)[1] for name in archive.namelist()]
print("records in a saved file:", records)
added_in_2_7 = {".format_version", ".storage_alignment"}
if torch.__version__ >= "2.7":
    assert added_in_2_7 <= set(records)
else:  # PyTorch 2.6 and older
    assert not added_in_2_7 & set(records)

# %%
# A real-world report
# -------------------
#
# In `huggingface/transformers issue #25911 <https://github.com/huggingface/transformers/issues/25911>`_,
# a user converting a Hugging Face model to Megatron's format noticed that when the weights were
# split with ``torch.chunk`` for tensor parallelism, every saved part took as much disk space as
# the whole model, while a split across pipeline stages gave parts of the expected size, and
# proposed cloning each chunk before saving it.
# The same surprise has reached PyTorch's issue tracker again and again since 2017
# (`pytorch/pytorch issue #1995 <https://github.com/pytorch/pytorch/issues/1995>`_).
# In `pytorch/pytorch issue #53419 <https://github.com/pytorch/pytorch/issues/53419>`_ (2021), a
# maintainer answered that it is expected, and pointed to PyTorch's serialization notes, which
# describe the behaviour and the ``clone()`` workaround under
# `"Saving and loading tensors preserves views"
# <https://docs.pytorch.org/docs/stable/notes/serialization.html#saving-and-loading-tensors-preserves-views>`_.
#
# Takeaway
# --------
#
# **torch.save writes the whole storage behind a tensor, so a saved slice, row or chunk of a
# larger tensor carries all of it, on disk and again in memory after loading.**
# Call ``.clone()`` on views before saving them; ``.contiguous()`` is not enough.

workdir.cleanup()
