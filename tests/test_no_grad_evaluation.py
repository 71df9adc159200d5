"""Values explained on the "no-grad-evaluation" page, read from the example's own namespace."""

from __future__ import annotations

import math

import torch

from .conftest import cuda_parts_reported, run_example


def test_no_grad_evaluation(device):
    run = run_example("no-grad-evaluation", device)
    # eval() alone: the loop records graphs and keeps their saved tensors; no_grad saves nothing
    assert run["outputs"][0].requires_grad
    assert run["saved_eval_only"].nbytes > 0 and run["saved_eval_only"].count > 0
    assert run["saved_no_grad"].nbytes == 0 and run["saved_no_grad"].count == 0
    assert not run["outputs_no_grad"][0].requires_grad
    for a, b in zip(run["outputs"], run["outputs_no_grad"], strict=True):
        torch.testing.assert_close(a, b)
    # each output keeps a graph: 9 recorded operations and one AccumulateGrad per parameter (8)
    assert run["nodes_eval_only"] == 17 and run["n_parameters"] == 8
    assert run["nodes_no_grad"] == 0
    # recording is slower, by a margin; inference_mode is close to no_grad (both on one thread)
    assert math.isfinite(run["time_ratio"]) and run["time_ratio"] > 1.05
    assert 0.8 < run["inference_ratio"] < 1.25
    # printed as measurements, with the machine they were made on
    assert f"[measured] on {device} (" in run.stdout
    # the peak CUDA memory part runs on CUDA only, and says so elsewhere
    if device == "cuda":
        assert run["peak_eval_only"] > run["peak_no_grad"]
    else:
        assert cuda_parts_reported(run.stdout) == 1
    # no_grad ends with its block
    assert not run["inside"].requires_grad and run["after"].requires_grad
    # eval() and no_grad() do different things; evaluation needs both
    modes = run["modes"]
    assert modes["eval() only"]["requires grad"] and modes["eval() only"]["repeatable"]
    assert not modes["no_grad() only"]["requires grad"]
    assert not modes["no_grad() only"]["repeatable"]
    assert modes["no_grad() only"]["running mean moved"]
    assert modes["eval() + no_grad()"] == {
        "repeatable": True,
        "requires grad": False,
        "running mean moved": False,
    }
    assert run["saved_fixed"].nbytes == 0 and run["back_in_training"]
    # inference tensors cannot be saved for backward; a clone can
    assert run["features"].is_inference()
    assert "Inference tensors cannot be saved for backward" in run.stdout
    assert run["head"].weight.grad is not None
    # volatile=True warns and has no effect
    assert "volatile was removed" in run.stdout
    assert run["volatile_out"].requires_grad
    assert f"device: {device}" in run.stdout
