"""What the "inplace-saved-tensor" page prints but does not assert itself."""

from __future__ import annotations

import re

import torch

from .conftest import run_example

IN_PLACE = "modified by an inplace operation"


def test_inplace_saved_tensor(device):
    run = run_example("inplace-saved-tensor", device)
    out = run.stdout
    # the page matches each refusal by its version clause; all six are the same error: sigmoid +
    # mul_, data normalised in place, exp + relu_, no_grad, anomaly mode, and sigmoid + mul_ again
    # under the guards
    assert out.count(IN_PLACE) == 6
    # the anomaly-mode error (matched by the page on its hint only) names the sigmoid as well;
    # the node is named "Sigmoid" on recent releases, "SigmoidBackward0" on older ones
    version_error = r"which is output 0 of Sigmoid(Backward0)?, is at version 1; expected version 0"
    assert len(re.findall(version_error, out)) == 4
    # relu_ after Linear: the equal gradients the page compares are not both zero
    assert torch.count_nonzero(run["grad_inplace"]) > 0
