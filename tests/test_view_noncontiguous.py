"""What the "view-noncontiguous" page does not assert itself: the values it prints, and how often
its output shows the error."""

from __future__ import annotations

from .conftest import run_example


def test_view_noncontiguous(device):
    run = run_example("view-noncontiguous", device)
    assert run.stdout.count("view size is not compatible") == 2  # shown twice: symptom, top-k
    # compatible strides, not contiguity: splitting works
    assert run["split"].stride() == (6, 2, 1)
    # top-k: the comparison keeps the transposed layout
    assert run["hits"].shape == (5, 8)
    assert "top-1: 2 of 8 samples" in run.stdout and "top-5: 4 of 8 samples" in run.stdout
    assert run["top5_hits"] == 4
