"""Every example runs to completion on every available device (its own asserts included)."""

from __future__ import annotations

import re

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


@pytest.mark.parametrize("slug", all_slugs())
def test_every_heading_underline_is_as_long_as_its_title(slug):
    """docutils warns (and ``-W`` fails the build) on an underline shorter than its title; a
    title made one character longer, in the page's title or in a text block, is the usual cause."""
    lines = example_path(slug).read_text(encoding="utf-8").splitlines()
    for number, (title, underline) in enumerate(zip(lines, lines[1:], strict=False), start=1):
        title, underline = title.removeprefix("# "), underline.removeprefix("# ")
        if re.fullmatch(r"([-=~^])\1{2,}", underline) and title.strip() and title[0] not in "#-=~^":
            assert len(underline) >= len(title), (
                f"{example_path(slug)}:{number}: underline of {len(underline)} for a title of "
                f"{len(title)} characters: {title!r}"
            )
