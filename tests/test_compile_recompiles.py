"""Values explained on the "compile-recompiles" page, read from the example's own namespace."""

from __future__ import annotations

import logging

import torch

from .conftest import run_example


def test_compile_recompiles(device):
    run = run_example("compile-recompiles", device)
    # an int attribute that changes every step: compiled up to the limit (8), then not at all
    assert len(run["compilations"]) == torch._dynamo.config.recompile_limit == 8
    assert run["reasons"][:2] == ["self.step == 0", "self.step == 1"]
    assert len(run["reasons"]) == 8
    assert "hit config.recompile_limit (8)" in run["limit_warning"]
    assert torch._dynamo.config.cache_size_limit == torch._dynamo.config.recompile_limit
    # the fixes: a tensor step, dynamic ints, dynamic sizes
    assert run["with_tensor"] == 1
    assert run["with_unspec"] == 2
    assert run["as_argument"] == 2 and run["as_dynamic_argument"] == 1
    assert run["by_default"] == 2 and run["marked"] == 1
    # a recompile limit per torch.compile call (2.12), a cache and count per call (2.13)
    assert run["limited"] == 3
    assert run["shared"] == (6, 2) and run["isolated"] == (6, 6)
    # the page leaves Dynamo's settings and loggers as it found them
    assert torch._dynamo.config.allow_unspec_int_on_nn_module is False
    assert logging.getLogger("torch._dynamo.convert_frame").propagate
