"""The detectors' registry (src/torch_pitfalls/rules.py): one table, complete and consistent."""

from __future__ import annotations

import re

import pytest

from torch_pitfalls import rules

from .conftest import all_slugs, example_path

CJK = re.compile(r"[\u4e00-\u9fff]")


def test_ids_are_unique_stable_and_flake8_codes():
    ids = [r.id for r in rules.RULES]
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)
    for r in rules.RULES:
        assert re.fullmatch(r"TP\d{3}", r.id), r.id  # flake8: up to 3 letters and 3 digits
        # TP0xx run with the code (guards and notes), TP1xx read the source (lint)
        assert (r.kind == "lint") == r.id.startswith("TP1"), r.id


def test_every_rule_has_a_kind_title_and_message_in_both_languages():
    for r in rules.RULES:
        assert r.kind in rules.KINDS
        for field in (r.title, r.message):
            assert set(field) == set(rules.LANGUAGES), r.id
            assert field["en"].strip() and not CJK.search(field["en"]), r.id
            assert CJK.search(field["zh_CN"]), f"{r.id}: no Chinese in {field['zh_CN']!r}"


def test_every_slug_is_a_page_of_the_catalog():
    for r in rules.RULES:
        assert r.slug in all_slugs(), r.id
        assert example_path(r.slug).is_file(), r.id


def test_every_page_with_rules_names_exactly_its_rule_ids():
    for slug in all_slugs():
        source = example_path(slug).read_text(encoding="utf-8")
        named = set(re.findall(r"\bTP\d{3}\b", source))
        assert named == {r.id for r in rules.rules_for(slug)}, slug


def test_page_url_and_describe(monkeypatch):
    monkeypatch.delenv(rules.BASE_URL_ENV, raising=False)
    url = rules.page_url("tensor-to-numpy", language="zh_CN")
    assert url == f"{rules.BASE_URL}/zh_CN/auto_examples/devices/plot_tensor_to_numpy.html"
    monkeypatch.setenv(rules.BASE_URL_ENV, "http://localhost:8000/")
    assert rules.page_url("tensor-to-numpy", language="en").startswith("http://localhost:8000/en/")
    text = rules.describe("TP005", language="zh_CN")
    assert text.startswith("TP005 ") and CJK.search(text) and text.endswith(".html")
    assert " → http://localhost:8000/zh_CN/auto_examples/autograd/" in text


@pytest.mark.parametrize(
    ("given", "env", "expected"),
    [
        ("zh", {}, "zh_CN"),
        ("zh-CN", {}, "zh_CN"),
        ("en", {"TORCH_PITFALLS_LANGUAGE": "zh_CN"}, "en"),
        (None, {"TORCH_PITFALLS_LANGUAGE": "zh_CN", "LANG": "en_US.UTF-8"}, "zh_CN"),
        (None, {"LANG": "zh_CN.UTF-8"}, "zh_CN"),
        (None, {"LC_ALL": "en_GB.UTF-8", "LANG": "zh_CN.UTF-8"}, "en"),
        (None, {"LANG": "C.UTF-8"}, "en"),
    ],
)
def test_language_argument_then_environment_then_locale(monkeypatch, given, env, expected):
    for name in ("TORCH_PITFALLS_LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert rules.resolve_language(given) == expected


def test_bad_input_gets_a_clear_error():
    with pytest.raises(KeyError, match="unknown rule id 'TP999'; known: TP001"):
        rules.rule("TP999")
    with pytest.raises(ValueError, match="language must be one of"):
        rules.resolve_language("fr")
    with pytest.raises(KeyError, match="no page 'softmax-dims' in the catalog.*softmax-dim"):
        rules.page_url("softmax-dims")
    with pytest.raises(ValueError, match="kind must be one of"):
        rules.rules_for("tensor-to-numpy", kind="warning")
    with pytest.raises(KeyError, match="unknown rule id 'tp001'"):
        rules.check_ids(["tp001"])
    assert rules.check_ids("TP001") == {"TP001"}


def test_registry_imports_no_torch():
    import subprocess
    import sys

    code = "import sys, torch_pitfalls.rules; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
