"""Every example runs to completion on every available device (its own asserts included)."""

from __future__ import annotations

import pytest

from .conftest import all_slugs, run_example


@pytest.mark.parametrize("slug", all_slugs())
def test_example_runs(slug, device):
    run = run_example(slug, device)
    assert f"device: {device}" in run.stdout
