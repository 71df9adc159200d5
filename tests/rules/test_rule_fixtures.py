"""Every rule, of either kind, against its fixtures: one parametrised test per kind of rule.

Each rule ``TPNNN`` has ``fixtures/tpNNN_positive.py`` and ``fixtures/tpNNN_negative.py`` (and may
have more, ``tpNNN_positive_<case>.py``); each line where a finding is expected carries
``# expect: TPNNN`` (several ids comma-separated). The findings must be exactly the expected
``(line, id)`` pairs: a miss and a false alarm both fail.

A static rule's fixture is checked once, with every static rule on (``select=ALL``). A runtime
rule's fixture is a small script run once per device (the ``device`` fixture of tests/conftest.py:
"cpu", and "cuda", skipped without a GPU) with that device as the default device (``with
torch.device(device)``: what the script makes without naming a device is made there, and the
previous default is back afterwards, also after an error), under guards with every runtime rule
on (opt-in ones included); a finding placed in another file than the fixture fails too. A fixture
whose docstring says ``# requires: cuda`` (or ``# requires: cpu``) runs on that device only, and is
skipped on the other (it must exist all the same).
"""

from __future__ import annotations

import re
import runpy
import warnings
from pathlib import Path

import pytest

from torch_pitfalls import rules

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIXTURE_FILES = sorted(FIXTURES.glob("tp*.py"))
EXPECT = re.compile(r"#\s*expect:\s*(TP\d{3}(?:\s*,\s*TP\d{3})*)")
STATIC = [r.id for r in rules.RULES if r.kind == "lint"]
RUNTIME = [r.id for r in rules.RULES if r.kind != "lint"]


def expected(path: Path) -> list[tuple[int, str]]:
    """The (line, id) pairs a fixture marks with ``# expect:``, sorted."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for match in EXPECT.finditer(line):
            pairs += [(number, rule_id.strip()) for rule_id in match[1].split(",")]
    return sorted(pairs)


REQUIRES = re.compile(r"#\s*requires:\s*(\w+)")
STATIC_FIXTURES = [path for path in FIXTURE_FILES if path.name.startswith("tp1")]
RUNTIME_FIXTURES = [path for path in FIXTURE_FILES if not path.name.startswith("tp1")]


def found_static(path: Path) -> list[tuple[int, str]]:
    """The (line, id) pairs the static checker gives on a fixture, sorted."""
    from torch_pitfalls.lint import check_source

    source = path.read_text(encoding="utf-8")
    findings = check_source(source, str(path), select=STATIC, language="en")
    return sorted((f.line, f.rule) for f in findings)


def found_at_runtime(path: Path, device: str) -> list[tuple[int, str]]:
    """The (line, id) pairs the guards give on a fixture run with ``device`` as the default
    device, sorted; every finding must be placed in the fixture."""
    import torch

    import torch_pitfalls

    requires = REQUIRES.search(path.read_text(encoding="utf-8"))
    if requires and requires[1] != device:
        pytest.skip(f"{path.name} runs on {requires[1]} only (# requires: {requires[1]})")
    with warnings.catch_warnings(), torch.device(device):
        warnings.simplefilter("ignore")
        with torch_pitfalls.guards(language="en", enable=RUNTIME) as guard:
            runpy.run_path(str(path), run_name="__fixture__")
    elsewhere = [(f.filename, f.lineno, f.rule_id) for f in guard.found if f.filename != str(path)]
    assert not elsewhere, f"findings placed outside the fixture: {elsewhere}"
    return sorted((f.lineno, f.rule_id) for f in guard.found)  # a place found twice fails


def diff(want: list, got: list) -> str:
    missed = [pair for pair in want if pair not in got]
    extra = [pair for pair in got if pair not in want]
    return f"missed (line, id): {missed}; false alarms (line, id): {extra}"


@pytest.mark.parametrize("path", STATIC_FIXTURES, ids=lambda path: path.stem)
def test_static_fixture_gives_exactly_its_expected_findings(path):
    want = expected(path)
    got = found_static(path)
    assert got == want, diff(want, got)


@pytest.mark.parametrize("path", RUNTIME_FIXTURES, ids=lambda path: path.stem)
def test_runtime_fixture_gives_exactly_its_expected_findings_on_each_device(path, device):
    import torch
    from torch.overrides import _get_current_function_mode_stack as modes

    before = (torch.get_default_device(), modes())
    want = expected(path)
    got = found_at_runtime(path, device)
    assert (torch.get_default_device(), modes()) == before  # the device context is gone again
    assert got == want, diff(want, got)


@pytest.mark.parametrize("rule", rules.RULES, ids=lambda r: r.id)
def test_every_rule_has_a_positive_and_a_negative_fixture(rule):
    prefix = rule.id.lower()
    positive, negative = FIXTURES / f"{prefix}_positive.py", FIXTURES / f"{prefix}_negative.py"
    assert positive.is_file(), f"no tests/rules/fixtures/{positive.name}"
    assert negative.is_file(), f"no tests/rules/fixtures/{negative.name}"
    assert rule.id in {i for _, i in expected(positive)}, f"{positive.name} expects no {rule.id}"
    negatives = FIXTURES.glob(f"{prefix}_negative*.py")
    assert all(rule.id not in {i for _, i in expected(p)} for p in negatives)


@pytest.mark.parametrize("rule", rules.RULES, ids=lambda r: r.id)
def test_every_rule_is_documented_in_the_fixed_sections(rule):
    sections = rules.documentation(rule.id, language="en", base_url="https://x.org")
    assert list(sections) == [*rules.SECTIONS, "Page"]
    assert all(sections[name].strip() for name in rules.SECTIONS), rule.id
    assert ".. code-block:: python" in sections["Example"], rule.id
    assert ".. code-block:: python" in sections["Use instead"], rule.id
    assert sections["Page"].endswith(".html")


def _code(section: str) -> str:
    """The code of a ``.. code-block:: python`` section, dedented."""
    import textwrap

    return textwrap.dedent(section.split(".. code-block:: python", 1)[1]).strip() + "\n"


@pytest.mark.parametrize("rule", [r for r in rules.RULES if r.kind == "lint"], ids=lambda r: r.id)
def test_a_static_rule_finds_its_example_and_not_its_fix(rule):
    from torch_pitfalls.lint import check_source

    sections = rules.documentation(rule.id, language="en")
    for name, want in (("Example", True), ("Use instead", False)):
        ids = {f.rule for f in check_source(_code(sections[name]), select=STATIC, language="en")}
        assert (rule.id in ids) is want, f"{rule.id} {name}: {sorted(ids)}"
