"""Values explained on the "train-eval-mode" page, read from the example's own namespace."""

from __future__ import annotations

from .conftest import run_example


def test_train_eval_mode(device):
    run = run_example("train-eval-mode", device)
    # the exact batch sizes the page prints (it asserts only the last one and the minimum)
    assert run["sizes"] == [3, 3, 3, 1] and run["sizes_drop_last"] == [3, 3, 3]
