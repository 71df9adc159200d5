"""What the "save-view-saves-storage" page does not assert itself: the device and offset of the
loaded rows, and a non-contiguous view."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_save_view_saves_storage(device):
    run = run_example("save-view-saves-storage", device)
    # a loaded row lands on the device it was saved from
    assert run["loaded"].device.type == device
    # the fix: a cloned row starts its own storage
    assert run["fixed"].storage_offset() == 0


def test_a_transposed_view_saves_its_storage_and_its_clone_does_not(tmp_path):
    big = torch.zeros(64, 64)
    column = big.t()[0]  # non-contiguous: a column of big
    torch.save(column, tmp_path / "column.pt")
    torch.save(column.clone(), tmp_path / "clone.pt")
    assert (tmp_path / "column.pt").stat().st_size > big.nbytes
    assert (tmp_path / "clone.pt").stat().st_size < big.nbytes // 8
