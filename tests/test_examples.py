"""Every example runs to completion on every available device (its own asserts included)."""

from __future__ import annotations

import pytest

from .conftest import all_slugs, example_path, run_example


@pytest.mark.parametrize("slug", all_slugs())
def test_example_runs(slug, device):
    run = run_example(slug, device)
    assert f"device: {device}" in run.stdout


@pytest.mark.parametrize("slug", all_slugs())
def test_every_text_block_starts_on_the_line_after_its_marker(slug):
    """A comment separated from its ``# %%`` by a blank line is not a text block: sphinx-gallery
    shows it as a comment in code, and a heading there is lost (it happened to a "The fix")."""
    lines = example_path(slug).read_text(encoding="utf-8").splitlines()
    triples = zip(lines, lines[1:], lines[2:], strict=False)
    for number, (marker, blank, comment) in enumerate(triples, start=1):
        assert not (marker.strip() == "# %%" and not blank.strip() and comment.startswith("#")), (
            f"{example_path(slug)}:{number}: a blank line between '# %%' and its text"
        )
