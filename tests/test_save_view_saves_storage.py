"""Values explained on the "save-view-saves-storage" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_save_view_saves_storage(device):
    run = run_example("save-view-saves-storage", device)
    sample_bytes, batch_bytes = run["sample_bytes"], run["batch_bytes"]
    assert (sample_bytes, batch_bytes) == (16 * 1024, 256 * 1024)
    # each saved row carries the whole batch's storage, on disk and after loading
    assert all(batch_bytes < size < batch_bytes + 4096 for size in run["view_sizes"])
    assert run["loaded"].storage_offset() == 5 * 4096
    assert run["loaded_storage"] == batch_bytes
    assert run["loaded"].device.type == device
    # views shared in one file are stored once and still share after loading
    assert run["together"] < run["batch_alone"] + 4096
    assert torch.equal(run["reloaded"]["batch"][2], run["reloaded"]["row_2"])
    # only advanced indexing and clone() copy; contiguous() of a contiguous view does not
    shared = run["shares_storage"]
    assert shared["features[:2].contiguous()"] and shared["features.chunk(8)[0]"]
    assert not shared["features[[0, 1]]"] and not shared["features[:2].clone()"]
    # the fix: cloned rows give files of one row's size
    assert all(sample_bytes < size < sample_bytes + 4096 for size in run["clone_sizes"])
    assert sum(run["view_sizes"]) > 10 * sum(run["clone_sizes"])
    assert run["fixed_storage"] == sample_bytes and run["fixed"].storage_offset() == 0


def test_a_transposed_view_saves_its_storage_and_its_clone_does_not(tmp_path):
    big = torch.zeros(64, 64)
    column = big.t()[0]  # non-contiguous: a column of big
    torch.save(column, tmp_path / "column.pt")
    torch.save(column.clone(), tmp_path / "clone.pt")
    assert (tmp_path / "column.pt").stat().st_size > big.nbytes
    assert (tmp_path / "clone.pt").stat().st_size < big.nbytes // 8
