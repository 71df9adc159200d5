"""What the "item-and-tolist" page shows but cannot check itself."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_the_synchronisation_part_is_reported_on_the_cpu():
    # it runs on CUDA only, where the page asserts its ratio; a CPU run says so
    run = run_example("item-and-tolist", "cpu")
    assert cuda_parts_reported(run.stdout) == 1
