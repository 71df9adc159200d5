"""Fixtures shared by the tests: running an example once per device and reading its results."""

from __future__ import annotations

import contextlib
import io
import os
import runpy
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from torch_pitfalls import DEVICE_ENV, catalog

os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

#: Every device a device-parametrised test runs on; CUDA is skipped (with a reason) without a GPU.
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.cuda),
]


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA: torch.cuda.is_available() is False here")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


def example_path(slug: str) -> Path:
    """Path of the example for ``slug``, from its record in the catalog."""
    return catalog.page(slug).example(EXAMPLES)


def all_slugs() -> list[str]:
    """Slugs of every example file of the ``examples/`` tree (tests/test_catalog.py checks that
    the catalog lists the same pages)."""
    return sorted(catalog.slug_of(p) for p in EXAMPLES.glob("*/plot_*.py"))


@dataclass
class ExampleRun:
    """An example run to completion: its global namespace and everything it printed."""

    namespace: dict
    stdout: str

    def __getitem__(self, name: str):
        return self.namespace[name]


_RUNS: dict[tuple[str, str], ExampleRun] = {}


def run_example(slug: str, device: str) -> ExampleRun:
    """Run an example as a script with ``TORCH_PITFALLS_DEVICE=device``, once per session."""
    key = (slug, device)
    if key not in _RUNS:
        path = example_path(slug)
        old = os.environ.get(DEVICE_ENV)
        os.environ[DEVICE_ENV] = device
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                namespace = runpy.run_path(str(path), run_name="__main__")
        finally:
            if old is None:
                os.environ.pop(DEVICE_ENV, None)
            else:
                os.environ[DEVICE_ENV] = old
            import matplotlib.pyplot as plt

            plt.close("all")
        _RUNS[key] = ExampleRun(namespace, out.getvalue())
    return _RUNS[key]


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    """Each available device in turn ("cuda" is skipped without a GPU)."""
    return request.param


def cuda_parts_reported(stdout: str) -> int:
    """How many CUDA sections a CPU run reported: from their recording, or as not run."""
    from torch_pitfalls import recording

    return len(recording.NOT_RUN.findall(stdout)) + len(recording.RECORDED_HEADER.findall(stdout))
