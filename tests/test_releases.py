"""The recordings of the pages across PyTorch releases (``nox -s releases``) against the pages.

``docs/release_recordings/<slug>.json`` holds, per release, whether the page's example ran
there, its output and the lines that differ from the reference release's; ``_runs.json`` the
provenance of each release's run (``releases.py``). These tests keep the recordings and the
site's claims in step:

- a page with no recording on a listed release (a new page, a release just added) is reported,
  as a skip (``-ra`` lists it with the command that records it); a recording of a page or a
  release that no longer exists fails, as does a recording without its run's provenance;
- every "Changed in PyTorch X.Y" (a page's section or a row of docs/changes.md) newer than the
  oldest listed release is bracketed by two adjacent recorded releases, X.(Y-1) and X.Y, and the
  page's status or output differs between them;
- a change the recordings show between two consecutive recorded releases that no page or row
  names fails the test below unless it is listed in :data:`NOT_YET_SAID` with what changed, so a
  new one is reported (as a failure) and a listed one that the recordings no longer show too.
"""

from __future__ import annotations

import json
import re

import pytest
from pitfalls import releases_section as release_matrix

from tools import releases

from .conftest import ROOT, all_slugs, example_path

ORDER = sorted(releases.RELEASES, key=releases.release_key)
#: slug -> release -> entry, from every docs/release_recordings/<slug>.json.
PAGES = releases.page_recordings()
#: release -> provenance, from docs/release_recordings/_runs.json.
RUNS = releases.runs()

#: Changes between two consecutive recorded releases that no "Changed in PyTorch" names yet, in
#: tests/releases_not_yet_said.json: "<page> <first release that behaves differently>" -> what
#: changed, as changes_seen() words it. The report of what the matrix found that the pages do not
#: say yet: each entry is a behaviour to describe on its page (a "Changed in PyTorch X.Y" section
#: then replaces the entry) or a difference of builds rather than of releases (2.13 is the CPU
#: wheel; the other releases are CUDA builds, run without a GPU). Regenerate it with
#: ``PYTHONPATH=docs/_ext python -m tests.test_releases`` after recording, and read what changed.
NOT_YET_SAID_FILE = ROOT / "tests" / "releases_not_yet_said.json"
NOT_YET_SAID: dict[str, str] = json.loads(NOT_YET_SAID_FILE.read_text(encoding="utf-8"))


def changed_in() -> set[tuple[str, str]]:
    """(page, X.Y) for every "Changed in PyTorch X.Y": pages' sections and changes.md rows."""
    found = set()
    for slug in all_slugs():
        text = example_path(slug).read_text(encoding="utf-8")
        for version in re.findall(r"^# Changed in PyTorch (\d+\.\d+)", text, re.M):
            found.add((slug, version))
    changes = (ROOT / "docs" / "changes.md").read_text(encoding="utf-8")
    for pages, since in re.findall(
        r"^\| ((?:\{ref\}`[\w-]+`(?:, )?)+) \|.*\| ([\d.]+) \| [^|]* \|$", changes, re.M
    ):
        for slug in re.findall(r"\{ref\}`([\w-]+)`", pages):  # a row may name several pages
            found.add((slug, ".".join(since.split(".")[:2])))
    return found


def behaviour(label: str, slug: str) -> tuple[str, tuple[str, ...]]:
    page = PAGES[slug][label]
    return page["status"], tuple(page["output"])


def recorded(slug: str) -> list[str]:
    """The listed releases the page has a recording of, oldest first."""
    return [label for label in ORDER if label in PAGES.get(slug, {})]


def key(version: str) -> tuple[int, ...]:
    return releases.release_key(version)


def not_recorded_yet() -> dict[str, list[str]]:
    """slug -> the listed releases it has no recording of (every release, for a new page)."""
    missing = {
        slug: [label for label in ORDER if label not in recorded(slug)] for slug in all_slugs()
    }
    return {slug: labels for slug, labels in missing.items() if labels}


def test_every_page_is_recorded_on_every_listed_release():
    """Reported, not failed: a page or a release not recorded yet is a skip that names them."""
    missing = not_recorded_yet()
    if not missing:
        return
    # releases no page is recorded on (just listed), then the rest page by page (a new page)
    everywhere = [label for label in ORDER if all(label in missing.get(s, []) for s in all_slugs())]
    pages = {
        slug: [label for label in labels if label not in everywhere]
        for slug, labels in missing.items()
    }
    said = []
    if everywhere:
        said.append(
            f"PyTorch {', '.join(everywhere)}: no page recorded "
            f"(nox -s releases -- --releases {' '.join(everywhere)})"
        )
    for slug, labels in pages.items():
        if labels:
            said.append(
                f"{slug}: not recorded on {', '.join(labels)} "
                f"(nox -s releases -- --releases {' '.join(labels)} --pages {slug})"
            )
    pytest.skip("not recorded yet: " + "; ".join(said))


def test_no_recording_names_a_page_or_release_that_no_longer_exists():
    gone_pages = sorted(set(PAGES) - set(all_slugs()))
    assert not gone_pages, (
        f"recordings of pages that no longer exist: {gone_pages} "
        f"(delete docs/release_recordings/<slug>.json)"
    )
    unlisted = {
        slug: sorted(set(entries) - set(releases.RELEASES)) for slug, entries in PAGES.items()
    }
    unlisted = {slug: labels for slug, labels in unlisted.items() if labels}
    assert not unlisted, f"recordings of releases not listed in RELEASES: {unlisted}"
    assert set(RUNS) <= set(releases.RELEASES), "a run of an unlisted release in _runs.json"
    without_run = sorted({label for entries in PAGES.values() for label in entries} - set(RUNS))
    assert not without_run, f"pages recorded on {without_run}, which _runs.json has no run of"
    legacy = [path.name for path in releases.legacy_files()]
    assert not legacy, (
        f"recordings of the earlier layout: {legacy}: merge them with "
        "`python -m tools.releases --from-legacy docs/release_recordings/<release>.json ...`"
    )


def test_recordings_hold_their_provenance_and_compare_with_the_reference():
    assert releases.REFERENCE in RUNS, "no run of the reference release"
    for label, run in RUNS.items():
        for field in ("release", "torch", "python", "numpy", "date", "machine", "command"):
            assert run[field], (label, field)
        for field in ("install_seconds", "run_seconds", "disk_bytes"):
            assert isinstance(run[field], int | float), (label, field)
        assert run["release"] == label
        assert run["torch"].startswith(releases.RELEASES[label][0].split("==")[1])
        assert run["requirements"][:2] == list(releases.RELEASES[label]), label
        assert run["reference"] == releases.REFERENCE
    for slug, entries in PAGES.items():
        assert list(entries) == sorted(entries, key=releases.release_key), f"{slug}: order"
        reference = entries.get(releases.REFERENCE)
        if reference is not None:
            assert reference["status"] == "ran", f"{slug} fails on the reference release"
        for label, page in entries.items():
            assert page["status"] in ("ran", "failed"), (label, slug)
            assert (page["status"] == "failed") == bool(page.get("error")), (label, slug)
            if "rerun" in page:
                assert all(page["rerun"].get(f) for f in ("date", "machine", "command")), (
                    label,
                    slug,
                )
            if label == releases.REFERENCE:
                assert "differs" not in page, slug
            elif reference is None:
                assert "differs" not in page, f"{label}/{slug}: differs, but from what?"
            else:
                assert page["differs"] == releases.differences(
                    page["output"], reference["output"]
                ), f"{label}/{slug}: run `python -m tools.releases --rediff`"


def adjacent_releases(version: str) -> tuple[str, str] | None:
    """The two recorded releases that bracket "Changed in PyTorch ``version``": the minor release
    before it and ``version`` itself, or ``None`` when ``version`` is not after the oldest listed
    release (the recordings cannot show it).

    Raises:
        AssertionError: ``version`` is newer than the oldest listed release but it, or the minor
            release just before it, is not listed: a claim between two releases that are not
            adjacent is an inference, not a measurement.
    """
    if key(version) <= key(ORDER[0]):
        return None
    major, minor = key(version)[:2]
    previous = f"{major}.{minor - 1}"
    assert version in releases.RELEASES and previous in releases.RELEASES, (
        f"'Changed in PyTorch {version}': PyTorch {previous} and {version} must both be listed "
        "in RELEASES (tools/releases.py) and recorded, so that two adjacent releases bracket "
        "the change"
    )
    return previous, version


def test_adjacent_releases_bracket_a_change():
    assert adjacent_releases(ORDER[0]) is None
    assert adjacent_releases("1.13") is None
    assert adjacent_releases(ORDER[-1]) == (ORDER[-2], ORDER[-1])
    with pytest.raises(AssertionError, match="adjacent"):
        adjacent_releases("99.0")


def test_each_changed_in_section_differs_across_its_release():
    checked, unrecorded = [], []
    for slug, version in sorted(changed_in()):
        pair = adjacent_releases(version)
        if pair is None:
            continue  # the change is older than every listed release
        before, after = pair
        if not {before, after} <= set(recorded(slug)):
            unrecorded.append(f"{slug} {before}/{after}")  # reported below, not failed
            continue
        checked.append((slug, version))
        assert behaviour(before, slug) != behaviour(after, slug), (
            f"{slug}: 'Changed in PyTorch {version}', but PyTorch {before} and {after} "
            "behave the same"
        )
    if unrecorded:
        pytest.skip(
            f"{len(checked)} 'Changed in PyTorch' checked; not recorded yet on both releases "
            f"that bracket them: {', '.join(unrecorded)}"
        )
    assert checked, "no 'Changed in PyTorch' falls between two recorded releases"


def changes_seen() -> dict[tuple[str, str], str]:
    """(page, release) -> what: a page behaves differently than on the release before, among
    the releases the page is recorded on."""
    seen = {}
    for slug in all_slugs():
        labels = recorded(slug)
        for previous, label in zip(labels, labels[1:], strict=False):
            if behaviour(previous, slug) == behaviour(label, slug):
                continue
            was, now = (PAGES[slug][x] for x in (previous, label))
            if was["status"] != now["status"]:
                error = (was.get("error") or now.get("error")).splitlines()[-1]
                what = f"{was['status']} on {previous}, {now['status']} on {label}: {error}"
            else:
                lines = releases.differences(now["output"], was["output"])
                what = f"{len(lines)} output line(s) differ from {previous}, first: {lines[0]}"
            what = what if len(what) <= 160 else what[:159] + "…"
            seen[(slug, label)] = what
    return seen


def unsaid_changes() -> dict[str, str]:
    """The changes of changes_seen() that no "Changed in PyTorch" covers: "<page> <release>"."""
    said = changed_in()
    unsaid = {}
    for (slug, label), what in changes_seen().items():
        labels = recorded(slug)
        previous = labels[labels.index(label) - 1]
        if any(s == slug and key(previous) < key(version) <= key(label) for s, version in said):
            continue
        unsaid[f"{slug} {label}"] = what
    return unsaid


def test_changes_the_recordings_show_are_named_somewhere():
    unsaid = unsaid_changes()
    new = {name: what for name, what in unsaid.items() if name not in NOT_YET_SAID}
    gone = sorted(set(NOT_YET_SAID) - set(unsaid))
    assert not new and not gone, (
        "changes across releases that no 'Changed in PyTorch' names and "
        f"{NOT_YET_SAID_FILE.name} does not list: {json.dumps(new, indent=1)}; "
        f"listed there but no longer shown by the recordings: {gone}"
    )


def test_the_labels_are_in_the_template_that_feeds_the_catalog():
    template = (ROOT / "docs" / "_templates" / "release-strings.html").read_text(encoding="utf-8")
    listed = set(re.findall(r'\{\{ _\("(.*)"\) \}\}', template))
    assert set(release_matrix._labels_english()) == listed


def test_each_page_section_shows_every_recorded_result():
    for slug in all_slugs():
        entries = PAGES.get(slug, {})
        text = release_matrix.page_section(entries, RUNS).astext()
        for label in ORDER:
            page = entries.get(label)
            torch, date = release_matrix.recorded_on(label, page, RUNS)
            assert torch in text and date in text
            kind = release_matrix.outcome(page)
            if kind == "missing":
                assert release_matrix.LABELS["missing"] in text, (slug, label)
            elif kind == "fails":
                assert page["error"].splitlines()[-1] in text, (slug, label)
            elif kind == "differs":
                assert all(line in text for line in page["differs"]), (slug, label)


def test_a_release_that_differs_links_the_changed_in_sections_between_it_and_the_reference():
    from docutils import nodes

    older = ORDER[0]
    newer = ORDER[-1]
    assert releases.release_key(older) < releases.release_key(releases.REFERENCE)
    runs = {label: {"torch": label, "date": "2026-12-01"} for label in (older, newer)}
    runs[releases.REFERENCE] = {"torch": releases.REFERENCE, "date": "2026-12-01"}
    entries = {
        older: {"status": "failed", "error": "RuntimeError: old", "output": []},
        releases.REFERENCE: {"status": "ran", "output": ["new"]},
        newer: {"status": "ran", "output": ["newer"], "differs": ["-new", "+newer"]},
    }
    between = ORDER[1]  # after the oldest release, not after the reference
    changes = {
        between: ("changed-in-pytorch-x", "Changed in PyTorch " + between),
        "99.0": ("changed-in-pytorch-99-0", "Changed in PyTorch 99.0"),
    }
    section = release_matrix.page_section(entries, runs, changes)
    links = {
        row[0].astext(): [ref["refid"] for ref in row.findall(nodes.reference)]
        for row in section.findall(nodes.row)
    }
    assert links[older] == ["changed-in-pytorch-x"]
    assert links[newer] == []  # 99.0 is newer than every recorded release
    assert links[releases.REFERENCE] == []
    assert "Explained in the section: Changed in PyTorch " + between in section.astext()


def test_a_release_the_page_is_not_recorded_on_says_so_and_a_rerun_shows_its_own_date():
    from docutils import nodes

    older, newer = ORDER[0], ORDER[-1]
    runs = {
        older: {"torch": older + ".9", "date": "2026-12-01"},
        newer: {"torch": newer + ".9", "date": "2026-12-01"},
    }
    entries = {newer: {"status": "ran", "output": [], "rerun": {"date": "2026-12-24"}}}
    section = release_matrix.page_section(entries, runs)
    rows = {row[0].astext(): row.astext() for row in section.findall(nodes.row)}
    assert len(rows) == len(ORDER) + 1  # the header and one row per listed release
    assert "not recorded yet" in rows[older + ".9"] and "2026-12-01" not in rows[older + ".9"]
    assert "2026-12-24" in rows[newer + ".9"]  # the re-run's date, not the run's
    unrun = ORDER[1]  # no run: the version the release's requirement names
    assert "not recorded yet" in rows[releases.RELEASES[unrun][0].split("==")[1]]


def test_changed_in_sections_are_found_by_their_source_title():
    from docutils import nodes

    tree = nodes.section()
    for ids, names, title in [
        (["changed-in-pytorch-2-6"], ["changed in pytorch 2.6"], "在 PyTorch 2.6 中的变化"),
        (["changed-in-pytorch-1-10-the-message"], [], "Changed in PyTorch 1.10: the message"),
        (["why"], ["why"], "Why"),
    ]:
        section = nodes.section(ids=ids, names=names)
        section += nodes.title(title, title)
        tree += section
    assert release_matrix.changes_of(tree) == {
        "2.6": ("changed-in-pytorch-2-6", "在 PyTorch 2.6 中的变化"),
        "1.10": ("changed-in-pytorch-1-10-the-message", "Changed in PyTorch 1.10: the message"),
    }


if __name__ == "__main__":  # python -m tests.test_releases: rewrite the list of unsaid changes

    def order(name: str) -> tuple:
        slug, label = name.rsplit(" ", 1)
        return key(label), slug

    found = unsaid_changes()
    text = json.dumps(
        {name: found[name] for name in sorted(found, key=order)}, indent=1, ensure_ascii=False
    )
    NOT_YET_SAID_FILE.write_text(text + "\n", encoding="utf-8")
    print(f"{len(found)} change(s) not yet said, written to {NOT_YET_SAID_FILE}")
