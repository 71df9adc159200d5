"""Values explained on the "view-noncontiguous" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_view_noncontiguous(device):
    run = run_example("view-noncontiguous", device)
    x, xt = run["x"], run["xt"]
    # transposing swaps the strides and copies nothing; the result is not contiguous
    assert x.stride() == (3, 1) and xt.stride() == (1, 3)
    assert not xt.is_contiguous() and xt.data_ptr() == x.data_ptr()
    assert run.stdout.count("view size is not compatible") == 2  # shown twice: symptom, top-k
    assert run["offsets"].tolist() == [0, 3, 1, 4, 2, 5]
    # compatible strides, not contiguity: splitting works, merging across the gap does not
    assert not run["left"].is_contiguous() and run["split"].stride() == (6, 2, 1)
    # the fix: reshape copies here (and only here), contiguous().view() agrees
    assert run["flat"].tolist() == [0, 3, 1, 4, 2, 5]
    assert torch.equal(run["flat"], run["flat_too"])
    assert run["flat"].data_ptr() != x.data_ptr()
    # top-k: the comparison keeps the transposed layout; top-1 views, top-5 needs reshape or sum
    hits = run["hits"]
    assert hits.shape == (5, 8) and hits.stride() == (1, 5)
    assert "top-1: 2 of 8 samples" in run.stdout and "top-5: 4 of 8 samples" in run.stdout
    assert run["top5_hits"] == 4
