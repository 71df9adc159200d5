"""Values explained on the "softmax-dim" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import run_example


def test_softmax_dim(device):
    run = run_example("softmax-dim", device)
    # the page matches only the start of the deprecation warning
    assert "Implicit dimension choice for softmax has been deprecated" in run.stdout
