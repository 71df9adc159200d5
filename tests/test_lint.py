"""The static checker (src/torch_pitfalls/lint/): command line, flake8, pre-commit, notebooks.

The rules' fixtures are compared by tests/rules/test_rule_fixtures.py. Every file of
tests/rules/fixtures marks each finding it should give with a trailing comment
``# expect: TP101`` (several ids comma-separated); the checker, with every rule on, must give
exactly those (line, id) pairs: a miss and a false alarm both fail.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from torch_pitfalls import lint, rules

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "rules" / "fixtures"
FIXTURE_FILES = sorted(FIXTURES.glob("tp1*.py"))  # the static rules' (tests/rules runs them)
STATIC_RULES = [r for r in rules.RULES if r.kind == "lint"]
ALL_STATIC = [r.id for r in STATIC_RULES]
DEFAULT_STATIC = [r.id for r in STATIC_RULES if r.default]
BASE = "https://example.org/pitfalls"

EXPECT = re.compile(r"#\s*expect:\s*(TP\d{3}(?:\s*,\s*TP\d{3})*)")
OUTPUT_LINE = re.compile(
    r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<id>TP\d{3}) (?P<message>.+)"
    r" → (?P<url>https?://\S+/(?P<language>en|zh_CN)/auto_examples/.+\.html)$"
)


def expected(path: Path) -> list[tuple[int, str]]:
    """The (line, id) pairs a fixture marks with ``# expect:``, sorted."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for match in EXPECT.finditer(line):
            pairs += [(number, rule_id.strip()) for rule_id in match[1].split(",")]
    return sorted(pairs)


def found(path: Path, **options) -> list[tuple[int, str]]:
    source = path.read_text(encoding="utf-8")
    return sorted((f.line, f.rule) for f in lint.check_source(source, str(path), **options))


def diff(want: list, got: list) -> str:
    missed = [pair for pair in want if pair not in got]
    extra = [pair for pair in got if pair not in want]
    return f"missed (line, id): {missed}; false alarms (line, id): {extra}"


def fixture_id(path: Path) -> str:
    return path.stem


# The fixtures ----------------------------------------------------------------------------------


def test_fixtures_are_valid_python_and_not_collected_as_tests():
    for path in FIXTURE_FILES:
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
        assert not path.name.startswith("test_") and not path.stem.endswith("_test")


def test_opt_in_rules_are_off_by_default():
    path = FIXTURES / "tp104_positive.py"
    assert found(path, language="en") == []
    assert found(path, enable="TP104", language="en") == expected(path)
    assert found(path, select=["TP104"], language="en") == expected(path)


# The Python interface --------------------------------------------------------------------------

SOURCE = """\
import torch.nn.functional as F

def step(model, optimizer, loader, x, y):
    h = F.dropout(x)
    for a, b in loader:
        F.cross_entropy(F.softmax(model(a), 1), b).backward()
        optimizer.step()
    h.data.zero_()
    h.sum().backward()
"""


def test_select_ignore_and_enable():
    def ids(**options):
        return [f.rule for f in lint.check_source(SOURCE, language="en", **options)]

    assert ids() == ["TP102", "TP103", "TP101"]  # sorted by line: 4, 5, 6
    assert ids(select="TP101") == ["TP101"]
    assert ids(select=["TP101", "TP104"]) == ["TP101", "TP104"]
    assert ids(ignore=["TP101", "TP103"]) == ["TP102"]
    assert ids(enable="TP104") == ["TP102", "TP103", "TP101", "TP104"]
    assert ids(select="TP104", ignore="TP104") == []
    assert ids(select=[]) == []


def test_finding_fields_and_text():
    finding = lint.check_source(SOURCE, "model.py", select="TP101", language="en", base_url=BASE)
    (only,) = finding
    assert (only.path, only.line, only.col, only.rule) == ("model.py", 6, 9, "TP101")
    assert f"{only.rule} {only.message}" == rules.describe("TP101", language="en", base_url=BASE)
    assert str(only) == f"model.py:6:9: {rules.describe('TP101', language='en', base_url=BASE)}"
    assert OUTPUT_LINE.match(str(only))


def test_messages_in_chinese():
    (finding,) = lint.check_source(SOURCE, select="TP102", language="zh_CN", base_url=BASE)
    assert finding.message.startswith(rules.rule("TP102").message["zh_CN"])
    assert "/zh_CN/auto_examples/modules/plot_functional_dropout.html" in finding.message


@pytest.mark.parametrize(
    ("options", "error", "text"),
    [
        ({"select": "TP999"}, KeyError, "unknown rule id in select 'TP999'"),
        ({"ignore": ["TP101", "nope"]}, KeyError, "unknown rule id in ignore 'nope'"),
        ({"enable": "TP001"}, ValueError, "TP001 is a runtime guard rule, not a static check"),
        ({"language": "fr"}, ValueError, "language must be one of"),
    ],
)
def test_bad_arguments(options, error, text):
    with pytest.raises(error, match=re.escape(text)):
        lint.check_source(SOURCE, **options)


def test_bad_source():
    with pytest.raises(TypeError, match="source must be a str"):
        lint.check_source(SOURCE.encode())
    with pytest.raises(SyntaxError):
        lint.check_source("def broken(:\n", language="en")


def test_check_paths(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "b.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "pkg" / "a.py").write_text("import torch.nn.functional as F\nF.dropout(x)\n")
    (tmp_path / "pkg" / "notes.txt").write_text("F.dropout(x)\n")
    for skipped in (".venv", "__pycache__", "build", ".nox"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "c.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "broken.py").write_text("def broken(:\n", encoding="utf-8")

    findings = lint.check_paths([tmp_path], language="en")
    located = [(Path(f.path).relative_to(tmp_path).as_posix(), f.line, f.rule) for f in findings]
    assert located == [
        ("broken.py", 1, "E999"),
        ("pkg/a.py", 2, "TP102"),
        ("pkg/b.py", 4, "TP102"),
        ("pkg/b.py", 5, "TP103"),
        ("pkg/b.py", 6, "TP101"),
    ]
    assert findings[0].message.startswith("SyntaxError: ")
    (missing,) = lint.check_paths(tmp_path / "missing.py", language="en")
    assert missing.rule == "E902" and "FileNotFoundError" in missing.message
    with pytest.raises(TypeError, match="paths must be str or os.PathLike"):
        lint.check_paths([42])


def test_deeply_nested_code(tmp_path):
    terms = " + ".join(["F.dropout(x)"] + ["x"] * 1500)  # deeper than the recursion limit
    source = f"import torch.nn.functional as F\ny = {terms}\n"
    assert [(f.line, f.rule) for f in lint.check_source(source, language="en")] == [(2, "TP102")]


def elif_chain(branches: int) -> str:
    """A module with an ``elif`` chain of ``branches`` branches, then a TP102 on its last line."""
    elifs = "".join(f"elif x == {i}:\n    y = {i}\n" for i in range(1, branches))
    return f"import torch.nn.functional as F\nif x == 0:\n    y = 0\n{elifs}F.dropout(x)\n"


@pytest.mark.parametrize("branches", [300, 600, 2500])
def test_long_elif_chain(tmp_path, branches):
    """Python compiles these; so the checker must check them (it once gave a RecursionError)."""
    source = elif_chain(branches)
    compile(source, "generated.py", "exec")
    last = 2 * branches + 2
    limit = sys.getrecursionlimit()
    assert [(f.line, f.rule) for f in lint.check_source(source, language="en")] == [(last, "TP102")]
    assert sys.getrecursionlimit() == limit  # raised for the analysis only
    path = tmp_path / "generated.py"
    path.write_text(source, encoding="utf-8")
    assert [(f.line, f.col, f.rule) for f in lint.check_paths(path, language="en")] == [
        (last, 1, "TP102")
    ]
    tree = ast.parse(source)
    assert [(line, text[:5]) for line, _, text, _ in lint.Flake8Checker(tree).run()] == [
        (last, "TP102")
    ]


@pytest.mark.parametrize(
    ("name", "source", "error"),
    [
        ("terms.py", "y = " + " + ".join(["x"] * 100_000) + "\n", "RecursionError"),
        ("elif.py", elif_chain(4000), "RecursionError"),
    ],
)
def test_too_deep_for_python(tmp_path, name, source, error):
    """Code too deep for Python's own parser: an E999 that says so, not a read error."""
    with pytest.raises(RecursionError):
        compile(source, name, "exec")
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    (finding,) = lint.check_paths(path, language="en")
    assert (finding.line, finding.col, finding.rule) == (1, 1, "E999")
    assert finding.message == (
        f"{error}: code nested too deeply for Python's parser (maximum recursion depth exceeded "
        "during ast construction); Python cannot compile this file either"
    )


def test_recursion_in_the_checker(tmp_path, monkeypatch):
    """Should the analysis still run out of stack, the file is reported, not the run ended."""

    def too_deep(tree, active, source="", fixes=None):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(lint.check, "_analyse", too_deep)
    path = tmp_path / "deep.py"
    path.write_text("x = 1\n", encoding="utf-8")
    assert [str(f) for f in lint.check_paths(path)] == [
        f"{path}:1:1: E902 RecursionError: code nested too deeply to check"
    ]


def notebook(*cells: tuple[str, str | list[str]]) -> str:
    """The JSON of an nbformat 4 notebook with these ``(cell type, source)`` cells."""
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
            "cells": [
                {"cell_type": kind, "metadata": {}, "source": source}
                | ({"execution_count": None, "outputs": []} if kind == "code" else {})
                for kind, source in cells
            ],
        }
    )


NOTEBOOK = notebook(
    ("markdown", ["# Training\n", "F.dropout(x) in markdown is not code\n"]),
    ("code", ["%matplotlib inline\n", "!pip install torch\n", "import torch.nn.functional as F"]),
    ("code", "%%bash\necho 'F.dropout(x)'\n"),
    ("raw", "F.dropout(x)\n"),
    ("code", ["for x in batches:\n", "    %time y = model(x)\n", "    h = F.dropout(x, 0.5)\n"]),
    ("code", ""),
    ("code", "probs = F.softmax(h, 1)\nloss = F.cross_entropy(probs, t)\nF.dropout(x)  # noqa\n"),
)


def test_notebook(tmp_path, capsys):
    path = tmp_path / "train.ipynb"
    path.write_text(NOTEBOOK, encoding="utf-8")
    assert lint.main(["--language", "en", "--base-url", BASE, str(path)]) == 1
    tp101 = rules.describe("TP101", language="en", base_url=BASE)
    tp102 = rules.describe("TP102", language="en", base_url=BASE)
    assert capsys.readouterr().out.splitlines() == [
        f"{path}:cell 5:3:9: {tp102}",
        f"{path}:cell 7:2:8: {tp101}",
    ]
    first = lint.check_paths(path, language="en")[0]
    assert (first.cell, first.line, first.col, first.rule) == (5, 3, 9, "TP102")


def test_notebooks_in_folders(tmp_path):
    (tmp_path / "a.py").write_text("import torch.nn.functional as F\nF.dropout(x)\n")
    (tmp_path / "b.ipynb").write_text(NOTEBOOK, encoding="utf-8")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "b-checkpoint.ipynb").write_text(NOTEBOOK)
    found = [(Path(f.path).name, f.cell, f.line, f.rule) for f in lint.check_paths(tmp_path)]
    assert found == [
        ("a.py", 0, 2, "TP102"),
        ("b.ipynb", 5, 3, "TP102"),
        ("b.ipynb", 7, 2, "TP101"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "{not json",
            "not valid notebook JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        ("[1, 2]", "not valid notebook JSON: no list of cells"),
        ('{"nbformat": 3, "cells": []}', "nbformat 3 is not supported (only nbformat 4)"),
        (
            '{"nbformat": 4, "cells": [{"cell_type": "code", "source": 7}]}',
            "not valid notebook JSON: cell 1 has no source text",
        ),
    ],
)
def test_bad_notebooks(tmp_path, capsys, text, message):
    path = tmp_path / "broken.ipynb"
    path.write_text(text, encoding="utf-8")
    assert lint.main(["--language", "en", str(path)]) == 2
    assert capsys.readouterr().out == f"{path}:1:1: E902 NotebookError: {message}\n"


def test_notebook_syntax_error(tmp_path, capsys):
    path = tmp_path / "broken.ipynb"
    path.write_text(notebook(("code", "x = 1\n"), ("code", "y = (\n")), encoding="utf-8")
    assert lint.main(["--language", "en", str(path)]) == 2
    assert capsys.readouterr().out == (
        f"{path}:cell 2:1:5: E999 SyntaxError: '(' was never closed\n"
    )


def test_flake8_checker_class():
    tree = ast.parse(SOURCE)
    results = list(lint.Flake8Checker(tree, "model.py").run())
    assert [(line, col) for line, col, _, _ in results] == [(4, 8), (5, 4), (6, 8)]
    assert all(kind is lint.Flake8Checker for *_, kind in results)
    assert results[0][2].startswith("TP102 ")

    class Options:
        torch_pitfalls_enable = ["tp104"]

    try:
        lint.Flake8Checker.parse_options(Options)
        assert [text[:5] for _, _, text, _ in lint.Flake8Checker(tree).run()][-1] == "TP104"
        Options.torch_pitfalls_enable = ["TP999"]
        with pytest.raises(ValueError, match="unknown --torch-pitfalls-enable 'TP999'"):
            lint.Flake8Checker.parse_options(Options)
    finally:
        lint.Flake8Checker.enabled = frozenset()


# The command line ------------------------------------------------------------------------------


def run_lint(*args: str, language: str | None = "en", **environment: str):
    """``python -m torch_pitfalls.lint ARGS`` with a controlled environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_PITFALLS_")}
    if language is not None:
        env[rules.LANGUAGE_ENV] = language
    env.update(environment, PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "torch_pitfalls.lint", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=ROOT,
    )


def output_pairs(stdout: str) -> list[tuple[str, int, str]]:
    pairs = []
    for line in stdout.splitlines():
        match = OUTPUT_LINE.match(line)
        assert match, f"not a finding line: {line!r}"
        pairs.append((Path(match["path"]).name, int(match["line"]), match["id"]))
    return pairs


def test_command_line_output_and_exit_status():
    path = FIXTURES / "tp101_positive.py"
    done = run_lint(str(path))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines and all(line.startswith(f"{path}:") for line in lines)
    assert [(line, i) for _, line, i in output_pairs(done.stdout)] == expected(path)
    assert all(OUTPUT_LINE.match(line)["language"] == "en" for line in lines)

    clean = run_lint(str(FIXTURES / "tp101_negative.py"), str(FIXTURES / "tp103_negative.py"))
    assert (clean.returncode, clean.stdout) == (0, ""), clean.stderr


def test_command_line_sorts_by_path_line_and_column():
    done = run_lint(str(FIXTURES / "tp103_positive.py"), str(FIXTURES))
    keys = []
    for line in done.stdout.splitlines():
        match = OUTPUT_LINE.match(line)
        keys.append((match["path"], int(match["line"]), int(match["col"])))
    assert keys == sorted(keys) and len(keys) == len(set(keys))
    all_default = sum(len(found(p, language="en")) for p in sorted(FIXTURES.glob("*.py")))
    assert len(keys) == all_default  # each file once, though named twice


def test_command_line_select_ignore_enable():
    path = str(FIXTURES / "tp104_positive.py")
    assert run_lint(path).returncode == 0  # TP104 is opt-in
    enabled = run_lint("--enable", "TP104", path)
    assert enabled.returncode == 1
    assert {i for _, _, i in output_pairs(enabled.stdout)} == {"TP104"}
    assert run_lint("--select", "TP104", path).stdout == enabled.stdout
    assert run_lint("--enable", "TP104", "--ignore", "tp104", path).returncode == 0

    mixed = str(FIXTURES / "tp101_positive_star_import.py")
    assert {i for _, _, i in output_pairs(run_lint(mixed).stdout)} == {"TP101", "TP102"}
    selected = run_lint("--select", "TP101,TP103", mixed)
    assert {i for _, _, i in output_pairs(selected.stdout)} == {"TP101"}
    ignored = run_lint("--ignore=TP101", mixed)
    assert {i for _, _, i in output_pairs(ignored.stdout)} == {"TP102"}


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (["--select", "TP999"], "unknown rule id 'TP999'"),
        (["--ignore", "TP101,XX"], "unknown rule id 'XX'"),
        (["--enable", "TP010"], "TP010 is a runtime guard rule, not a static check"),
        (["--language", "fr"], "argument --language: language must be one of"),
        (["--language", ""], "argument --language: language must be one of"),
        ([], "the following arguments are required: PATH"),
    ],
)
def test_command_line_usage_errors(args, text):
    done = run_lint(*args, *([str(FIXTURES)] if args else []))
    assert done.returncode == 2
    assert text in done.stderr and done.stdout == ""


def test_command_line_bad_language_in_the_environment():
    done = run_lint(str(FIXTURES), language="fr")
    assert done.returncode == 2 and "language must be one of" in done.stderr


def test_command_line_unreadable_files(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import torch.nn.functional as F\nF.dropout(x\n", encoding="utf-8")
    good = tmp_path / "good.py"
    good.write_text("import torch.nn.functional as F\nF.dropout(x)\n", encoding="utf-8")
    done = run_lint(str(broken), str(good), str(tmp_path / "missing.py"))
    assert done.returncode == 2
    lines = done.stdout.splitlines()
    assert re.match(rf"^{re.escape(str(broken))}:2:\d+: E999 SyntaxError: ", lines[0])
    assert lines[1].startswith(f"{good}:2:1: TP102 ")
    assert re.match(rf"^{re.escape(str(tmp_path / 'missing.py'))}:1:1: E902 ", lines[2])


def test_command_line_language_and_base_url():
    path = str(FIXTURES / "tp102_positive.py")
    chinese = run_lint("--language", "zh_CN", path)
    match = OUTPUT_LINE.match(chinese.stdout.splitlines()[0])
    assert match["message"] == rules.rule("TP102").message["zh_CN"]
    assert match["language"] == "zh_CN"
    assert match["url"] == rules.page_url("functional-dropout", language="zh_CN")

    from_environment = run_lint(path, language="zh_CN")
    assert from_environment.stdout == chinese.stdout
    for spelling in ("zh", "zh-CN", "ZH_hans"):  # as rules.resolve_language reads them
        assert run_lint("--language", spelling, path, language="en").stdout == chinese.stdout
        assert run_lint(path, language=spelling).stdout == chinese.stdout
    assert run_lint("--language", "en-US", path, language="zh_CN").stdout == run_lint(path).stdout

    mirror = run_lint(path, TORCH_PITFALLS_BASE_URL="http://localhost:8000/")
    first = OUTPUT_LINE.match(mirror.stdout.splitlines()[0])
    url = "http://localhost:8000/en/auto_examples/modules/plot_functional_dropout.html"
    assert first["url"] == url
    option = run_lint("--base-url", BASE, path, TORCH_PITFALLS_BASE_URL="http://localhost:8000/")
    assert OUTPUT_LINE.match(option.stdout.splitlines()[0])["url"].startswith(f"{BASE}/en/")


def test_command_line_noqa(tmp_path):
    path = tmp_path / "noqa.py"
    path.write_text(
        "import torch.nn.functional as F\n"
        "a = F.dropout(x)  # noqa: TP102\n"
        "b = F.dropout(x)  # NoQA:TP101,TP102\n"
        "c = F.dropout(x)  # noqa\n"
        "d = F.dropout(x)  # noqa: TP101\n"
        "e = F.dropout(x)  # noqa:E501\n",
        encoding="utf-8",
    )
    done = run_lint(str(path))
    assert [line for _, line, _ in output_pairs(done.stdout)] == [5, 6]


def test_command_line_does_not_import_torch():
    code = (
        "import sys, torch_pitfalls.lint\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "status = torch_pitfalls.lint.main([sys.argv[1]])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "sys.exit(status)\n"
    )
    fixture = str(FIXTURES / "tp103_positive.py")
    env = {**os.environ, rules.LANGUAGE_ENV: "en"}
    done = subprocess.run(
        [sys.executable, "-c", code, fixture],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
    )
    assert done.returncode == 1, done.stderr


# flake8 ---------------------------------------------------------------------------------------


def run_flake8(*args: str) -> dict[str, list[tuple[int, int, str]]]:
    """flake8's TP findings by file name: (line, column, id)."""
    if importlib.util.find_spec("flake8") is None:
        pytest.skip("flake8 is not installed (it is pinned in the tests extra of pyproject.toml)")
    entry_points = importlib.metadata.entry_points(group="flake8.extension", name="TP")
    assert entry_points, "the plugin is not registered: pip install -e . (pyproject entry point)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_PITFALLS_")}
    env[rules.LANGUAGE_ENV] = "en"
    done = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=TP", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
    )
    assert done.returncode in (0, 1), done.stderr
    results: dict[str, list[tuple[int, int, str]]] = {}
    for line in done.stdout.splitlines():
        match = OUTPUT_LINE.match(line)
        assert match, f"not a finding line: {line!r}"
        results.setdefault(Path(match["path"]).name, []).append(
            (int(match["line"]), int(match["col"]), match["id"])
        )
    return {name: sorted(pairs) for name, pairs in results.items()}


def located(path: Path, **options) -> list[tuple[int, int, str]]:
    source = path.read_text(encoding="utf-8")
    findings = lint.check_source(source, str(path), language="en", **options)
    return sorted((f.line, f.col, f.rule) for f in findings)


def test_flake8_plugin_finds_what_check_source_finds():
    by_file = run_flake8(*map(str, FIXTURE_FILES))
    for path in FIXTURE_FILES:
        assert by_file.get(path.name, []) == located(path), path.name
    assert sum(map(len, by_file.values())) > 0


def test_flake8_plugin_opt_in_rules():
    path = FIXTURES / "tp104_positive.py"
    assert run_flake8(str(path)) == {}
    enabled = run_flake8("--torch-pitfalls-enable=TP104", str(path))
    assert enabled[path.name] == located(path, enable="TP104")


# pre-commit -------------------------------------------------------------------------------------


def read_hooks(path: Path) -> list[dict]:
    """The hooks of a .pre-commit-hooks.yaml written as a flat list of ``key: value`` mappings."""
    hooks: list[dict] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split(" #")[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        if line.startswith("- "):
            hooks.append({})
            line = line[2:]
        key, _, value = line.strip().partition(":")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = [item.strip() for item in value[1:-1].split(",") if item.strip()]
        hooks[-1][key] = value
    return hooks


def test_pre_commit_hook():
    path = ROOT / ".pre-commit-hooks.yaml"
    hooks = read_hooks(path)
    if importlib.util.find_spec("yaml") is not None:
        import yaml

        assert yaml.safe_load(path.read_text(encoding="utf-8")) == hooks
    (hook,) = hooks
    assert hook["id"] == "torch-pitfalls-lint"
    assert hook["entry"] == "python -m torch_pitfalls.lint"
    assert (hook["language"], hook["types_or"]) == ("python", ["python", "jupyter"])
    assert hook["description"] == lint.cli.pre_commit_description(), (
        "the hook's description is generated from the rules: write this in "
        f".pre-commit-hooks.yaml:\n  description: {lint.cli.pre_commit_description()}"
    )
    assert ": " not in hook["description"] and " #" not in hook["description"]  # plain YAML

    command = shlex.split(hook["entry"])
    assert command[0] == "python"
    fixture = FIXTURES / "tp102_positive.py"
    done = subprocess.run(
        [sys.executable, *command[1:], str(fixture)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, rules.LANGUAGE_ENV: "en"},
    )
    assert done.returncode == 1, done.stderr
    assert [(line, i) for _, line, i in output_pairs(done.stdout)] == expected(fixture)

    notebook_path = ROOT / "tests" / "lint_fixtures" / "percent_continuation.ipynb"
    done = subprocess.run(  # the hook's types_or gives it notebooks too
        [sys.executable, *command[1:], str(notebook_path)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, rules.LANGUAGE_ENV: "en"},
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(f"{notebook_path}:cell 5:2:12: TP102 ")


def test_command_line_statistics(tmp_path):
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "ok.py").write_text("import torch\n", encoding="utf-8")
    (clean / "bad.py").write_text("def (:\n", encoding="utf-8")
    done = run_lint(
        "--statistics", "--select", "ALL", str(FIXTURES / "tp101_positive.py"), str(clean)
    )
    assert done.returncode == 2  # as without --statistics: a file could not be parsed
    lines = done.stdout.splitlines()
    tp101 = len(expected(FIXTURES / "tp101_positive.py"))
    later = [r for r in STATIC_RULES if r.id > "TP104"]  # TP105 and up: none in these files
    assert lines[: 6 + len(later)] == [
        f"{tp101:>5}  TP101  softmax output passed to cross-entropy or NLL",
        "    0  TP102  functional dropout without training=",
        "    0  TP103  training loop that never clears gradients",
        "    0  TP104  edit through .data before the backward",
        *(f"    0  {r.id}  {r.title['en']}" for r in later),
        "    1  E999   files that could not be parsed (not checked)",
        f"{tp101 + 1:>5}         total",
    ]
    rest = lines[6 + len(later) :]
    zeros = ["0"] * len(later)
    assert rest[0] == ""
    ids = ["TP101", "TP102", "TP103", "TP104", *(r.id for r in later)]
    assert rest[1].split() == ["path", *ids, "E999"]
    assert rest[2].split()[1:] == [str(tp101), "0", "0", "0", *zeros, "0"]
    assert rest[3].split() == [str(clean), "0", "0", "0", "0", *zeros, "1"]
    one = run_lint("--statistics", "--select", "TP103", str(FIXTURES / "tp103_negative.py"))
    assert (one.returncode, one.stdout) == (
        0,
        "    0  TP103  training loop that never clears gradients\n    0         total\n",
    )
    chinese = run_lint("--statistics", str(FIXTURES / "tp102_positive.py"), language="zh_CN")
    assert "  TP102  函数式 dropout 未传 training=" in chinese.stdout
