"""What the "float64-creep" page prints but does not assert itself."""

from __future__ import annotations

from .conftest import run_example


def test_float64_creep(device):
    run = run_example("float64-creep", device)
    # the page matches the refusal on every release; on the CPU the message names both dtypes
    if device == "cpu":
        assert "mat1 and mat2 must have the same dtype, but got Double and Float" in run.stdout
    # from_numpy shares the array's memory (the page shows its consequences)
    table, shared = run["table"], run["shared"]
    assert shared.data_ptr() == table.__array_interface__["data"][0]
