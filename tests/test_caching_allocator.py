"""Values explained on the "caching-allocator" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import cuda_parts_reported, run_example


def test_caching_allocator(device):
    run = run_example("caching-allocator", device)
    # a view of one row keeps the whole 16 MiB storage; its clone keeps 4 KiB
    assert run["kept_by_view"] == 16 * 2**20
    assert run["row"].untyped_storage().nbytes() == 4096
    if device == "cuda":
        # del frees the tensor, the allocator keeps the memory until empty_cache()
        assert run["after_alloc"] == (256, 256)
        assert run["after_del"] == (0, 256)
        assert run["after_empty"] == (0, 0)
        # a live view: nothing to free
        assert run["with_view"] == (256, 256) and run["without_view"] == (0, 0)
        # the CUDA context: more than 100 MiB in use on the device besides PyTorch's reserve
        assert run["in_use"] - run["reserved_now"] > 100 * 2**20
    else:
        assert cuda_parts_reported(run.stdout) == 3
