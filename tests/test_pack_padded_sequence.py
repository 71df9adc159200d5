"""What the "pack-padded-sequence" page cannot check itself: its CUDA part in a CPU build."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_a_cpu_run_reports_the_cuda_section():
    run = run_example("pack-padded-sequence", "cpu")
    assert cuda_parts_reported(run.stdout) == 1
