"""Values explained on the "inplace-saved-tensor" page, read from the example's own namespace."""

from __future__ import annotations

import re

import torch

from .conftest import run_example

IN_PLACE = "modified by an inplace operation"


def test_inplace_saved_tensor(device):
    run = run_example("inplace-saved-tensor", device)
    out = run.stdout
    # six refusals: sigmoid + mul_, data normalised in place, exp + relu_, no_grad, anomaly mode,
    # and sigmoid + mul_ again under the guards
    assert out.count(IN_PLACE) == 6
    # the node is named "Sigmoid" on recent releases, "SigmoidBackward0" on older ones
    version_error = r"which is output 0 of Sigmoid(Backward0)?, is at version 1; expected version 0"
    assert len(re.findall(version_error, out)) == 4
    assert re.search(r"which is output 0 of Exp(Backward0)?, is at version 1", out)
    assert "FloatTensor [4]] is at version 1; expected version 0" in out  # data: no grad_fn
    # what each operation saves: sigmoid its output (the same memory), mul both inputs, add nothing
    assert run["saved_by_sigmoid"].count == 1
    assert run["saved_by_mul"].count == 2
    assert run["saved_by_add"].count == 0
    assert run["saved_is_output"]
    assert (run["version_saved"], run["gate"]._version) == (0, 1)
    # in place after add: the gradient of 2 * (x + 1) is 2 everywhere
    assert "x.grad after the in-place mul_: tensor([2., 2., 2., 2.]" in out
    # relu_ after Linear gives exactly the out-of-place gradient
    torch.testing.assert_close(run["grad_inplace"], run["layer"].weight.grad)
    assert torch.count_nonzero(run["grad_inplace"]) > 0
    # the out-of-place fix gives the derivative of 2 * sigmoid(x)
    sig = run["sig"]
    torch.testing.assert_close(run["expected"], 2 * sig * (1 - sig))
    assert run["expected"].shape == (4,)
    # anomaly mode: the warning names the backward node, the error points to the traceback
    assert run["anomaly_first_line"].startswith("Error detected in SigmoidBackward0.")
    assert "the backtrace further above shows the operation" in out
