"""Values explained on the "leaf-inplace-init" page, read from the example's own namespace."""

from __future__ import annotations

import torch

from .conftest import run_example

LEAF_IN_PLACE = "a leaf Variable that requires grad is being used in an in-place operation"


def test_leaf_inplace_init(device):
    run = run_example("leaf-inplace-init", device)
    out = run.stdout
    # normal_ on a parameter and fill_ on a requires_grad tensor both raise, leaving w unchanged
    assert out.count(LEAF_IN_PLACE) == 2
    # a tensor that does not require grad yet can be filled, then made trainable: still a leaf
    assert run["v"].is_leaf and run["v"].requires_grad
    assert torch.equal(run["v"].detach().cpu(), torch.full((3,), 0.5))
    # w = w * 0.01 is a non-leaf that the optimizer refuses
    assert not run["w"].is_leaf and run["w"].grad_fn is not None
    assert "ValueError: can't optimize a non-leaf Tensor" in out
    # under no_grad: the same Parameter object, still a leaf, with new values
    layer = run["layer"]
    assert layer.weight is run["weight_object"]
    assert layer.weight.is_leaf and layer.weight.requires_grad
    assert not torch.equal(layer.weight.detach(), run["weight_before"])
    assert torch.equal(layer.bias.detach().cpu(), torch.full((3,), 0.5))
    # nn.init through Module.apply changed every parameter and kept them all trainable leaves
    assert run["changed"] == [True, True, True, True]
    assert run["all_leaves"] and run["grads_filled"]
    linears = [m for m in run["model"] if isinstance(m, torch.nn.Linear)]
    assert all(torch.count_nonzero(m.bias) == 0 for m in linears)
    # re-initialising between forward and backward is caught by the version counter
    assert "modified by an inplace operation" in out
