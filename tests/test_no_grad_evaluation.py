"""What the "no-grad-evaluation" page prints but does not check itself."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_no_grad_evaluation(device):
    run = run_example("no-grad-evaluation", device)
    # the timings are printed as measurements, with the machine they were made on (the
    # reproducibility check skips those lines)
    assert f"[measured] on {device} (" in run.stdout
    # the peak CUDA memory part runs on CUDA only (where the page asserts it), and a CPU run says so
    if device == "cpu":
        assert cuda_parts_reported(run.stdout) == 1
