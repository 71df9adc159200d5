"""What the "cross-entropy-expects-logits" page prints or states but does not assert itself."""

from __future__ import annotations

import math

from .conftest import cuda_parts_reported, run_example


def test_cross_entropy_expects_logits(device):
    run = run_example("cross-entropy-expects-logits", device)
    # the floor the page computes is the prose's -log(e / (e + C - 1)) for C = 10
    floor = -math.log(math.e / (math.e + 9))
    assert math.isclose(run["floor"], floor, rel_tol=1e-12)
    # the page asserts that softmax first never crosses the floor; training on logits does
    assert min(run["losses_logits"]) < floor
    # the bound on the shrink factor is below 1: no row's largest probability reaches 1
    assert (run["largest_probability"] < 1).all()
    # the page matches "out of bounds"; the message names the target
    assert "IndexError: Target 10 is out of bounds" in run.stdout
    # the device-side assert runs on CUDA only (where the page asserts it), and a CPU run says so
    if device == "cpu":
        assert cuda_parts_reported(run.stdout) == 1
