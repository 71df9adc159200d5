"""Values explained on the "index-select" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_index_select(device):
    run = run_example("index-select", device)
    x = run["x"]
    # rows and columns, in the order of the index
    assert torch.equal(run["rows"], x[[2, 0]])
    assert torch.equal(run["cols"], x[:, [3, 1]])
    # only int64 and int32 indices are accepted; a 0-d index keeps the dimension
    assert run["accepted"] == ["torch.int64", "torch.int32"]
    assert run["refused"] == ["torch.int16", "torch.uint8", "torch.bool", "torch.float32"]
    assert run["one_row"].shape == (1, 4)
    # changed in 1.8 (index_select) and 2.0 (brackets): an int32 index picks the same rows both ways
    assert run["int32_index"].dtype == torch.int32
    assert torch.equal(run["by_brackets"], run["rows"])
    assert torch.equal(run["by_index_select"], run["rows"])
    # on the CPU an out-of-range index raises inside the call, with a class that depends on the path
    assert run["reached_next_line"] is False
    classes = run["out_of_range"]
    assert classes["index_select, dimension 0"] == "IndexError"
    assert classes["index_select, dimension 1"] == "RuntimeError"
    assert classes["torch.gather"] == "RuntimeError"
    assert classes["x[index]"] == classes["nn.Embedding"] == "IndexError"
    assert "index out of range in self" in run.stdout
    assert "INDICES element is out of DATA bounds" in run.stdout
    # brackets wrap -1, index_select does not
    assert torch.equal(run["last_row"], x.cpu()[2:])
    # the fix: a flattened 2-D index, and a range check that raises before any launch
    assert torch.equal(run["picked"], x[run["index_2d"]])
    assert "indices must be in [0, 3) for dim 0, got 0..5" in run.stdout
    assert torch.equal(run["good"], run["rows"])
    if device == "cuda":
        # the device-side assert poisons the child, CUDA_LAUNCH_BLOCKING=1 locates it
        assert "device-side assert" in run["async_run"].last_error_line()
        assert "a fresh CUDA computation fails too" in run["async_run"].stdout
        assert "torch.index_select(x, 0, index)" in run["blocking_line"]
        assert run["after"].device.type == "cuda"
    else:
        assert cuda_parts_reported(run.stdout) == 3
        # the blocking child's part: a statement that it did not run, or its recorded output
        assert (
            "CUDA_LAUNCH_BLOCKING=1 needs CUDA" in run.stdout
            or "points at: rows = torch.index_select(x, 0, index)" in run.stdout
        )
