"""What the "non-blocking-copy" page does not assert itself: which error pin_memory() raises here,
and its CUDA parts in a CPU build."""

from __future__ import annotations

import torch

from .conftest import cuda_parts_reported, run_example


def test_non_blocking_copy(device):
    run = run_example("non-blocking-copy", device)
    if not torch.accelerator.is_available():
        # the page accepts any of three messages, one per kind of build
        assert "Cannot access accelerator device when none is available" in run.stdout


def test_a_cpu_run_reports_the_cuda_sections():
    run = run_example("non-blocking-copy", "cpu")
    assert cuda_parts_reported(run.stdout) == 4
