"""Values explained on the "requires-grad-propagation" page, read from the example's namespace."""

from __future__ import annotations

from .conftest import run_example


def test_requires_grad_propagation(device):
    run = run_example("requires-grad-propagation", device)
    # data and targets do not require grad, parameters do, the output does
    assert not run["inputs"].requires_grad and not run["targets"].requires_grad
    assert run["params_require_grad"] == [True, True, True, True]
    assert run["output"].requires_grad and run["loss"].requires_grad
    # requires_grad=True on inputs and targets: a larger graph, more bytes saved, unused grads
    assert run["nodes_rg"] > run["nodes_plain"]
    assert run["saved_rg"].nbytes > 2 * run["saved_plain"].nbytes
    assert run["saved_rg"].count > run["saved_plain"].count
    assert run["inputs"].grad is None
    assert run["unused_grad_bytes"] == run["inputs"].nbytes + run["targets"].nbytes
    # the preprocessing is recorded only when the input requires grad
    assert run["preprocessed_plain"].grad_fn is None
    assert run["preprocessed_rg"].grad_fn is not None
    # the rule, on one operation
    assert not run["only_data"].requires_grad and run["mixed"].requires_grad
    # every parameter frozen: no graph, backward raises; an input requiring grad hides the error
    assert not run["frozen_loss"].requires_grad
    assert "does not require grad and does not have a grad_fn" in run.stdout
    assert all(g is None for g in run["frozen_grads"])
    assert run["probe"].grad is not None
    assert f"device: {device}" in run.stdout
