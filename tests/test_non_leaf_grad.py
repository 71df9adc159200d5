"""Values explained on the "non-leaf-grad" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_non_leaf_grad(device):
    run = run_example("non-leaf-grad", device)
    out = run.stdout
    # hidden.grad warns (shown once, with PyTorch's message) and is None; w.grad too
    assert out.count("The .grad attribute of a Tensor that is not a leaf Tensor") == 1
    assert run["hidden_grad"] is None and run["w_grad"] is None
    assert "hidden.grad: None" in out
    # the leaf table
    assert "x (data)      is_leaf=True  requires_grad=False grad_fn=None" in out
    assert "first.weight  is_leaf=True  requires_grad=True  grad_fn=None" in out
    assert "hidden        is_leaf=False requires_grad=True  grad_fn=AddmmBackward0" in out
    # retain_grad, the hook and autograd.grad all give relu'(hidden) * head.weight
    expected = run["expected_hidden_grad"]
    assert expected.shape == (5, 4)
    torch.testing.assert_close(run["retained_grad"], expected)
    assert torch.count_nonzero(expected) > 0 and torch.count_nonzero(expected) < expected.numel()
    torch.testing.assert_close(run["seen"]["hidden"], expected)
    torch.testing.assert_close(run["grad_via_autograd"], expected)
    assert "RuntimeError: can't retain_grad on Tensor that has requires_grad=False" in out
    # * 0.01 and .double() make non-leaves; the optimizer refuses one
    assert "w.is_leaf: False | grad_fn: MulBackward0" in out
    assert "after .double(): is_leaf: False | grad_fn: ToCopyBackward0" in out
    assert "ValueError: can't optimize a non-leaf Tensor" in out
    # .to(device): the same leaf on the CPU, a non-leaf copy on CUDA
    moved, created = run["moved"], run["created"]
    if device == "cpu":
        assert moved is created and moved.is_leaf
        assert cuda_parts_reported(out) == 1
    else:
        assert moved is not created and not moved.is_leaf
    # the fixed w is a float64 leaf that trained; p is a Parameter leaf
    w = run["w"]
    assert w.is_leaf and w.requires_grad and w.dtype == torch.float64
    assert w.grad is not None and not torch.equal(w.detach(), run["w_before"])
    assert run["p"].is_leaf and run["p"].requires_grad
