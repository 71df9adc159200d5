"""What the "ddp-unused-parameters" page does not check itself: the process group it leaves, and
DDP's behaviour in each configuration, on each device.

Every test runs DDP in a gloo process group of one process (the page's ``process_group_of_one``),
which is destroyed when the test's block ends, whether it passes or fails.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from .conftest import run_example

UNFINISHED = "Expected to have finished reduction in the prior iteration"


def test_ddp_unused_parameters(device):
    run = run_example("ddp-unused-parameters", device)
    # no process group is left behind by any of the page's blocks (the page checks the first)
    assert not dist.is_initialized()
    assert "backend: gloo | world size: 1" in run.stdout


@pytest.fixture(scope="module")
def page():
    return run_example("ddp-unused-parameters", "cpu")


def steps(model, device, count=3):
    for _ in range(count):
        model(torch.randn(4, 4, device=device)).sum().backward()


@pytest.mark.parametrize(
    "options", [{"find_unused_parameters": True}, {"static_graph": True}], ids=["find", "static"]
)
def test_each_option_trains_the_used_parameters(page, device, options):
    with page["process_group_of_one"]():
        net = page["TwoHeads"]().to(device)
        steps(DDP(net, **options), device)
        assert net.head.weight.grad is not None and net.body.weight.grad is not None
        assert net.aux_head.weight.grad is None


def test_the_second_iteration_raises_without_an_option(page, device):
    with page["process_group_of_one"]():
        model = DDP(page["TwoHeads"]().to(device))
        steps(model, device, count=1)
        with pytest.raises(RuntimeError, match=UNFINISHED):
            steps(model, device, count=1)


def test_a_model_that_uses_every_parameter_needs_no_option(page, device):
    with page["process_group_of_one"]():
        model = DDP(nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 1)).to(device))
        steps(model, device)
        assert all(p.grad is not None for p in model.parameters())


def test_the_process_group_is_destroyed_when_the_block_fails(page):
    with pytest.raises(ZeroDivisionError), page["process_group_of_one"]():
        assert dist.is_initialized() and dist.get_world_size() == 1
        raise ZeroDivisionError("a failure inside the block")
    assert not dist.is_initialized()


def test_a_second_group_in_the_same_process_is_refused(page):
    with page["process_group_of_one"]():
        with pytest.raises(RuntimeError, match="already exists"), page["process_group_of_one"]():
            pass
        assert dist.is_initialized()
    assert not dist.is_initialized()
