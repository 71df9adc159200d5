"""What the "non-leaf-grad" page prints but does not assert itself."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_non_leaf_grad(device):
    run = run_example("non-leaf-grad", device)
    out = run.stdout
    # the warning on hidden.grad is shown once, with PyTorch's message (the second one is hidden)
    assert out.count("The .grad attribute of a Tensor that is not a leaf Tensor") == 1
    # the leaf table: the page asserts the flags, not the grad_fn it prints
    assert "hidden        is_leaf=False requires_grad=True  grad_fn=AddmmBackward0" in out
    # relu'(hidden) * head.weight: the ReLU lets some entries through and blocks others
    expected = run["expected_hidden_grad"]
    assert torch.count_nonzero(expected) > 0 and torch.count_nonzero(expected) < expected.numel()
    # * 0.01 and .double() make non-leaves: the grad_fn names the page prints
    assert "w.is_leaf: False | grad_fn: MulBackward0" in out
    assert "after .double(): is_leaf: False | grad_fn: ToCopyBackward0" in out
    # .to(device) on CUDA runs on CUDA only (where the page asserts it), and a CPU run says so
    if device == "cpu":
        assert cuda_parts_reported(out) == 1
    # the fixed w is a float64 leaf (the page asserts leaf and requires_grad, prints the dtype)
    assert run["w"].dtype == torch.float64
