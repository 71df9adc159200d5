"""Each pitfall page shows its detectors: the page's wrong code triggers exactly the page's runtime
rules, and its fix none (read from the examples' own runs, on every device); the static checker
finds exactly the page's static rules in its source."""

from __future__ import annotations

import pytest

from torch_pitfalls import rules
from torch_pitfalls.lint import check_paths

from .conftest import all_slugs, example_path, run_example

#: Rules that can only fire on CUDA (the conversion of a CUDA tensor to NumPy).
CUDA_ONLY = {"TP008"}


@pytest.mark.parametrize("slug", sorted({r.slug for r in rules.RULES}))
def test_page_wrong_code_triggers_exactly_its_rules_and_the_fix_none(slug, device):
    expected = {r.id for r in rules.rules_for(slug) if r.kind != "lint"}
    if not expected:
        pytest.skip("static rules only: see test_checker_finds_exactly_the_page_static_rules")
    run = run_example(slug, device)
    if device == "cpu":
        expected -= CUDA_ONLY
    assert set(run["wrong"].ids) == expected
    assert run["fixed"].ids == []
    for finding in run["wrong"].found:
        assert finding.message.startswith(f"{finding.rule_id} ")
        assert finding.message.endswith(rules.page_url(slug, language="en"))


#: Pages whose wrong code is a script held in a string (run as a file), not the page's own code:
#: the page runs the checker on that string itself, and asserts its rules' findings there.
WRONG_CODE_IN_A_STRING = {
    "spawn-main-guard": {"TP121"},
    "backward-step-zero-grad": {"TP129"},
    "transformer-batch-first": {"TP130"},
}


@pytest.mark.parametrize("slug", all_slugs())
def test_checker_finds_exactly_the_page_static_rules(slug):
    """The static checker, every rule on, finds each page's own wrong code and nothing else."""
    everything = [r.id for r in rules.RULES if r.kind == "lint"]
    findings = check_paths([example_path(slug)], select=everything, language="en")
    expected = {r.id for r in rules.rules_for(slug, kind="lint")}
    in_a_string = WRONG_CODE_IN_A_STRING.get(slug, set())
    assert {f.rule for f in findings} == expected - in_a_string
    if in_a_string:  # the page checks its script and asserts the rule's finding
        source = example_path(slug).read_text(encoding="utf-8")
        assert "check_source(" in source and all(i in source for i in in_a_string)
