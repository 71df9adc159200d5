"""Values explained on the "split-shared-transform" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_split_shared_transform(device):
    run = run_example("split-shared-transform", device)
    data = run["data"]
    dataset = run["dataset"]
    # the second attempt removed the transform of the one dataset both subsets share
    assert dataset.transform is None
    train_indices, val_indices = run["split_indices"]
    assert sorted(train_indices + val_indices) == list(range(8)) and len(val_indices) == 2
    assert "(augmentation gone)" in run.stdout
    # both fixes: training items flipped, validation items not, over the same split
    train_set, val_set = run["train_set"], run["val_set"]
    assert [i for i in run["plain_train"].indices] == train_indices
    for i, index in enumerate(train_indices):
        assert torch.equal(train_set[i], data[index].flip(0))
    for i, index in enumerate(val_indices):
        assert torch.equal(val_set[i], data[index])
    assert run["batch"].device.type == torch.device(device).type
