"""
.. _split-shared-transform:

``random_split`` subsets share one dataset
==========================================

:func:`~torch.utils.data.random_split` is the quick way to hold out a validation set.
The validation samples should not be augmented, so the next step is often to change the
transform of the validation subset.
Set on the subset itself, the new transform is ignored; set on its ``.dataset``, it applies to
the training subset too, and training silently loses its augmentation.

.. admonition:: What you will learn

   * what a :class:`~torch.utils.data.Subset` holds, and why the two subsets of a split share
     everything but their indices;
   * why setting ``val_set.transform`` does nothing and ``val_set.dataset.transform`` does too
     much;
   * two fixes: two dataset objects over the same indices, or a wrapper that applies the
     transform.

.. admonition:: Prerequisites

   :class:`~torch.utils.data.Dataset` (``__getitem__`` and ``__len__``) and a training loop with
   a validation set.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# A dataset of 8 short signals, each of 4 values, with an optional ``transform``.
# The augmentation reverses the signal: a stand-in for a random flip, deterministic so that the
# outputs are easy to read.
# The whole dataset is built with the training transform, then split 6 / 2.
import torch
from torch.utils.data import DataLoader, Dataset, Subset, random_split

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {device}")


class Signals(Dataset):
    def __init__(self, data, transform=None):
        self.data = data
        self.transform = transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        x = self.data[index]
        return self.transform(x) if self.transform is not None else x


def augment(x):
    return x.flip(0)


data = torch.arange(32.0).reshape(8, 4)
dataset = Signals(data, transform=augment)
train_set, val_set = random_split(dataset, [6, 2], generator=torch.Generator().manual_seed(0))
val_index = val_set.indices[0]
print("validation indices:", val_set.indices, "| first sample:", data[val_index].tolist())
print("validation item:   ", val_set[0].tolist(), "(augmented)")
assert torch.equal(val_set[0], data[val_index].flip(0))

# %%
# First attempt: give the validation subset no transform.
# No error, and nothing changes:

val_set.transform = None
print("after val_set.transform = None:        ", val_set[0].tolist())
assert torch.equal(val_set[0], data[val_index].flip(0))

# %%
# Second attempt, the one that "works": set it on the dataset behind the subset.
# The validation item is now as it should be, and so is the training item, which should not be:

train_index = train_set.indices[0]
val_set.dataset.transform = None
print("after val_set.dataset.transform = None:", val_set[0].tolist())
print("training item:                         ", train_set[0].tolist(), "(augmentation gone)")
assert torch.equal(val_set[0], data[val_index])
assert torch.equal(train_set[0], data[train_index])

# %%
# Why
# ---
#
# **A Subset is a reference to the original dataset plus a list of indices; the two subsets of a
# split hold the same dataset object.**
# ``Subset.__getitem__(i)`` returns ``dataset[indices[i]]``: the dataset's own ``__getitem__``
# runs, with the dataset's own ``transform``.
# An attribute set on the subset is new, and nothing reads it; an attribute set on
# ``subset.dataset`` changes the one object both subsets read.

print("train_set.dataset is val_set.dataset:", train_set.dataset is val_set.dataset)
print("attributes of the validation Subset:", sorted(vars(val_set)))
print("training indices:", train_set.indices, "| validation indices:", val_set.indices)
assert train_set.dataset is val_set.dataset is dataset
assert sorted(vars(val_set)) == ["dataset", "indices", "transform"]
assert sorted(train_set.indices + val_set.indices) == list(range(8))
split_indices = (list(train_set.indices), list(val_set.indices))

# %%
# The fix
# -------
#
# **Give each split its own dataset object, or apply the transform outside the shared dataset.**
#
# Two dataset objects with different transforms, over the same data, indexed by the indices of
# the split.
# The tensor ``data`` is not copied: both objects refer to it.
# (torchvision's datasets take ``transform=`` in their constructor; build such a dataset twice
# and split both with the same indices.)

split_train, split_val = random_split(range(8), [6, 2], generator=torch.Generator().manual_seed(0))
train_set = Subset(Signals(data, transform=augment), split_train.indices)
val_set = Subset(Signals(data), split_val.indices)
print("training item:  ", train_set[0].tolist(), "| validation item:", val_set[0].tolist())
print("the same split:", (split_train.indices, split_val.indices) == split_indices)
print("one data tensor:", train_set.dataset.data is val_set.dataset.data)
assert (split_train.indices, split_val.indices) == split_indices
assert torch.equal(train_set[0], data[split_train.indices[0]].flip(0))
assert torch.equal(val_set[0], data[split_val.indices[0]])
assert train_set.dataset.data is val_set.dataset.data

# %%
# The same seed gave the same split: splitting ``range(8)`` only draws the permutation, so the
# indices can be computed once and reused for as many datasets as needed.
#
# Or keep one dataset without a transform, split it, and wrap each subset in a small dataset
# that applies its own transform:


class WithTransform(Dataset):
    def __init__(self, subset, transform=None):
        self.subset = subset
        self.transform = transform

    def __len__(self):
        return len(self.subset)

    def __getitem__(self, index):
        x = self.subset[index]
        return self.transform(x) if self.transform is not None else x


plain_train, plain_val = random_split(
    Signals(data), [6, 2], generator=torch.Generator().manual_seed(0)
)
train_set, val_set = WithTransform(plain_train, augment), WithTransform(plain_val)
print("training item:", train_set[0].tolist(), "| validation item:", val_set[0].tolist())
assert torch.equal(train_set[0], data[plain_train.indices[0]].flip(0))
assert torch.equal(val_set[0], data[plain_val.indices[0]])

# %%
# Either way, check what the loaders deliver, on the device the model uses: every training batch
# augmented, no validation batch.
# (A random augmentation that runs in DataLoader workers has a pitfall of its own: see
# :ref:`dataloader-worker-rng`.)

for name, subset, augmented in (("training", train_set, True), ("validation", val_set, False)):
    batch = next(iter(DataLoader(subset, batch_size=len(subset)))).to(device)
    indices = plain_train.indices if augmented else plain_val.indices
    expected = data[indices].flip(1) if augmented else data[indices]
    print(f"{name} batch: {tuple(batch.shape)} on {batch.device.type}, augmented: {augmented}")
    assert torch.equal(batch.cpu(), expected)

# %%
# A real-world report: "setting the validation augmentation erases the training augmentation"
# -------------------------------------------------------------------------------------------
#
# In 2025 the developers of GroMo, a PyTorch package for networks that grow as they learn,
# found that their training data had not been augmented: the code set the validation set's
# augmentation (none) through the dataset that the two ``Subset`` objects share, which replaced
# the training set's augmentation too
# (`growingnet/gromo pull request #58 <https://github.com/growingnet/gromo/pull/58>`_).
# Nothing had failed; the pull request notes that the experiments should be run again.
#
# Takeaway
# --------
#
# **The subsets of random_split share one dataset: a transform set on** ``subset.dataset``
# **changes every split, and one set on the subset is ignored.**
# Build one dataset object per split over the same indices, or wrap each subset in a dataset that
# applies its own transform; then check one batch of each loader.
