"""Values explained on the "retain-graph" page, read from the example's own namespace."""

from __future__ import annotations

from itertools import pairwise

import torch

from .conftest import run_example

SECOND_TIME = "Trying to backward through the graph a second time"
IN_PLACE = "modified by an inplace operation"


def test_retain_graph(device):
    run = run_example("retain-graph", device)
    out = run.stdout
    # a second backward fails (x * x, x * 2, and the recurrent model's second batch)
    assert out.count(SECOND_TIME) == 3
    # retain_graph=True: the second pass adds the same gradient again
    torch.testing.assert_close(run["grad_once"].cpu(), torch.tensor([2.0, 4.0, 6.0]))
    torch.testing.assert_close(run["grad_twice"].cpu(), torch.tensor([4.0, 8.0, 12.0]))
    # backward of the sum once == two retained backward passes
    torch.testing.assert_close(run["grad_of_sum"].cpu(), torch.tensor([2.0, 4.0, 6.0]) * (4 / 3))
    # x + 1 saves nothing, so backward twice works and accumulates; x * 2 saves the constant
    assert run["saved"].count == 0
    assert torch.equal(run["grad_add_twice"].cpu(), torch.full((3,), 2.0))
    assert "saved by MulBackward0 -> tensor(2" in out
    # the GAN recipe: the step bumps D.weight's version, and backward refuses
    assert run["version_after_step"] > run["version_before_step"]
    assert out.count(IN_PLACE) == 2  # the GAN and the RNN with retain_graph=True
    # without detach, G receives gradients from the discriminator loss; with detach, none
    assert all(torch.count_nonzero(g) > 0 for g in run["g_grads_from_d_loss"])
    assert out.count("G grads after D's step: [None, None]") == 3
    # retain_graph=True: the graph grows by the same amount every batch; detach keeps it constant
    retained, detached = run["nodes_retained"], run["nodes_detached"]
    growth = {b - a for a, b in pairwise(retained)}
    assert len(growth) == 1 and growth.pop() > 0
    assert len(set(detached)) == 1 and detached[0] == retained[0]
    assert retained[-1] > detached[-1]
