"""What the "backward-step-zero-grad" page prints but does not assert itself."""

from __future__ import annotations

from .conftest import run_example


def test_the_printed_row_shows_the_grad_fn_of_the_indexing(device):
    # the page asserts grad_fn.name(); its prose is about the grad_fn in the printed row
    run = run_example("backward-step-zero-grad", device)
    assert "grad_fn=<SelectBackward0>" in run.stdout
