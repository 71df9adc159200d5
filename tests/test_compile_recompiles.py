"""Values explained on the "compile-recompiles" page, read from the example's own namespace."""

from __future__ import annotations

import logging

import torch

from .conftest import run_example


def test_compile_recompiles(device):
    run_example("compile-recompiles", device)
    # the page leaves Dynamo's settings and loggers as it found them
    assert torch._dynamo.config.allow_unspec_int_on_nn_module is False
    assert logging.getLogger("torch._dynamo.convert_frame").propagate
