"""Values explained on the "expand-inplace-write" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import run_example


def test_expand_inplace_write(device):
    run = run_example("expand-inplace-write", device)
    # a row assignment reached every row and the source (silently); fill_ and zero_ as well
    assert "start: tensor([[1., 2., 3., 4.]]" in run.stdout
    assert "start after batch.fill_(7): tensor([[7., 7., 7., 7.]]" in run.stdout
    # element-wise in-place operations are refused, a masked write only warns
    assert "more than one element of the written-to tensor refers to a single" in run.stdout
    assert run["refused"] == [
        "batch.mul_(2)",
        "batch.copy_(a 3x4 tensor)",
        "batch[:, 0] = [1, 2, 3]",
    ]
    assert "on expanded tensors is deprecated" in run.stdout
    # stride 0: one row of memory behind three rows
    batch = run["batch"]
    assert batch.stride() == (0, 1) and batch.untyped_storage().nbytes() == 16
    # the fix: clone and repeat own their rows; the source is untouched
    cloned = run["cloned"]
    assert cloned.stride() == (4, 1)
    assert cloned.tolist() == [[1.0] * 4, [2.0, 3.0, 4.0, 5.0], [1.0] * 4]
    assert (run["start"] == 0).all()
