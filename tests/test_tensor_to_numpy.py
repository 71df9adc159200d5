"""What the "tensor-to-numpy" page shows but cannot check itself."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_the_cuda_conversions_are_reported_on_the_cpu():
    # the conversion of a CUDA tensor, without and with the guards, runs on CUDA only (where the
    # page asserts the error); a CPU run says so for both
    run = run_example("tensor-to-numpy", "cpu")
    assert cuda_parts_reported(run.stdout) == 2
