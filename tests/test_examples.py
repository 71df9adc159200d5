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


@pytest.mark.parametrize("slug", all_slugs())
def test_every_section_heading_is_in_a_text_block(slug):
    """A heading (``# Title`` over ``# -----``) is text only in a block that ``# %%`` opens; in
    the comments of a code cell (after a mistyped ``# %``, say) the section, its prose and every
    later heading are shown as code and left out of the Chinese catalog."""
    lines = example_path(slug).read_text(encoding="utf-8").splitlines()
    for number, (title, underline) in enumerate(zip(lines, lines[1:], strict=False), start=1):
        if not (re.fullmatch(r"# -{3,}", underline) and re.fullmatch(r"# \w.*", title)):
            continue
        start = number - 1
        while start > 0 and lines[start - 1].startswith("#"):
            start -= 1  # to the first line of this run of comments
        opener = lines[start]
        assert opener.strip() == "# %%", (
            f"{example_path(slug)}:{number}: the heading {title!r} is in a code cell's comments "
            f"(its comment block starts with {opener!r}, not '# %%')"
        )


#: Bold or italic text holding a literal or a role: reST does not nest inline markup, so the page
#: shows the backticks and colons as text (the browser tests find it on the built site).
NESTED_MARKUP = re.compile(r"(\*\*|(?<![*\w])\*(?=\S))((?:(?!\1).)+?)\1", re.S)


def nested_markup(text: str) -> list[str]:
    """Bold or italic spans of ``text`` that hold a literal or a role.

    >>> nested_markup("**Call ``model(x)``, not forward.** Then *read ``x``*, but ``*a*``.")
    ['**Call ``model(x)``, not forward.**', '*read ``x``*']
    """
    text = re.sub(r"``.*?``", lambda m: m[0] if "*" not in m[0] else "``x``", text, flags=re.S)
    return [m[0] for m in NESTED_MARKUP.finditer(text) if re.search(r"``|:\w+:`", m[2])]


@pytest.mark.parametrize("slug", all_slugs())
def test_no_literal_or_role_inside_bold_or_italic(slug):
    source = example_path(slug).read_text(encoding="utf-8")
    blocks = re.findall(r"^# %%\n((?:#.*\n)+)", source, flags=re.M)
    prose = "\n\n".join(re.sub(r"^# ?", "", block, flags=re.M) for block in blocks)
    docstring = source.split('"""')[1]
    found = nested_markup(prose) + nested_markup(docstring)
    assert not found, f"{example_path(slug)}: markup inside bold or italic shows as text: {found}"
