"""The "squeeze-batch-of-one" page's two classifiers on every batch size from 1 to 9."""

from __future__ import annotations

import torch

from .conftest import run_example


def test_only_a_batch_of_one_loses_its_batch_dimension(device):
    namespace = run_example("squeeze-batch-of-one", device).namespace
    model, fixed, classes = namespace["model"], namespace["fixed"], namespace["K"]
    with torch.no_grad():
        for n in range(1, 10):
            x = torch.randn(n, 1, 8, 8, device=device)
            expected = (classes,) if n == 1 else (n, classes)
            assert model(x).shape == expected, n
            assert fixed(x).shape == (n, classes), n
            torch.testing.assert_close(fixed(x)[-1], model(x[-1:]))
