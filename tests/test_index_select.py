"""What the "index-select" page does not assert itself: the full CPU message, and its CUDA parts
in a CPU build."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_index_select(device):
    run = run_example("index-select", device)
    # the page matches only the end of this CPU message
    assert "INDICES element is out of DATA bounds" in run.stdout


def test_a_cpu_run_reports_the_cuda_sections():
    run = run_example("index-select", "cpu")
    assert cuda_parts_reported(run.stdout) == 3
    # the blocking child's part: a statement that it did not run, or its recorded output
    assert (
        "CUDA_LAUNCH_BLOCKING=1 needs CUDA" in run.stdout
        or "points at: rows = torch.index_select(x, 0, index)" in run.stdout
    )
