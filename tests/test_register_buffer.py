"""What the "register-buffer" page cannot check itself: its CUDA parts in a CPU build."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_a_cpu_run_reports_the_cuda_sections():
    run = run_example("register-buffer", "cpu")
    assert cuda_parts_reported(run.stdout) == 3
