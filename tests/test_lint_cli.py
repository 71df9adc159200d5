"""The static checker's command line as a tool people adopt: output formats (text, JSON, SARIF,
GitHub annotations), exit codes, ``--explain``, configuration in ``pyproject.toml``, ``--fix`` and
``--diff``, and notebooks whose continuation lines start with ``%``.

The SARIF output is validated against the SARIF 2.1.0 JSON schema, committed as
``tests/lint_fixtures/sarif-schema-2.1.0.json`` (OASIS's
``sarif-2.1/schema/sarif-schema-2.1.0.json`` of github.com/oasis-tcs/sarif-spec, errata 01),
and checked offline.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import warnings
from pathlib import Path

import pytest

from torch_pitfalls import lint, rules
from torch_pitfalls.lint import formats

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "rules" / "fixtures"
LINT_FIXTURES = HERE / "lint_fixtures"
STATIC = [r for r in rules.RULES if r.kind == "lint"]
BASE = "https://example.org/pitfalls"

DROPOUT = "import torch.nn.functional as F\n\nh = F.dropout(x)\n"


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """Each test in an empty folder with no pyproject.toml above it that it did not write, and
    no setting from the environment."""
    for name in list(os.environ):
        if name.startswith("TORCH_PITFALLS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv(rules.LANGUAGE_ENV, "en")
    monkeypatch.chdir(tmp_path)


def run(capsys, *args: str) -> tuple[int, str, str]:
    """``python -m torch_pitfalls.lint ARGS``, in this process: (status, stdout, stderr)."""
    try:
        status = lint.main(["--base-url", BASE, *args])
    except SystemExit as error:  # argparse's usage errors
        status = error.code
    out, err = capsys.readouterr()
    return status, out, err


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# Output formats --------------------------------------------------------------------------------


def test_text_format_is_the_default(capsys):
    write(Path("a.py"), DROPOUT)
    status, out, _ = run(capsys, "a.py")
    assert status == 1
    assert out == f"a.py:3:5: {rules.describe('TP102', language='en', base_url=BASE)}\n"
    assert run(capsys, "--output-format", "text", "a.py")[1] == out


def test_json_format(capsys, tmp_path):
    write(Path("a.py"), DROPOUT)
    write(Path("b.py"), "import torch.nn.functional as F\n\nF.cross_entropy(F.softmax(z, 1), t)\n")
    write(Path("c.py"), "def (:\n")
    status, out, _ = run(capsys, "--output-format", "json", "--language", "zh_CN", ".")
    assert status == 2  # c.py cannot be parsed
    found = json.loads(out)
    tp102 = rules.rule("TP102")
    url = rules.page_url(tp102.slug, language="zh_CN", base_url=BASE)
    assert found[0] == {
        "code": "TP102",
        "message": tp102.message["zh_CN"],
        "filename": os.path.join(".", "a.py"),
        "cell": None,
        "location": {"row": 3, "column": 5},
        "url": url,
        "fix": None,  # not in a method of an nn.Module: no safe fix
    }
    assert [(f["code"], f["location"]["row"]) for f in found] == [
        ("TP102", 3),
        ("TP101", 3),
        ("E999", 1),
    ]
    assert found[2]["url"] is None and found[2]["message"].startswith("SyntaxError: ")
    assert "/zh_CN/" in found[1]["url"]

    clean = write(Path("clean.py"), "import torch\n")
    assert run(capsys, "--output-format", "json", str(clean)) == (0, "[]\n", "")


def test_json_format_in_a_notebook(capsys):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Title\n"]},
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": DROPOUT,
        },
    ]
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}
    write(Path("n.ipynb"), json.dumps(notebook))
    status, out, _ = run(capsys, "--output-format", "json", "n.ipynb")
    (finding,) = json.loads(out)
    assert status == 1
    assert (finding["cell"], finding["location"], finding["fix"]) == (
        2,
        {"row": 3, "column": 5},
        None,
    )


def sarif_validator():
    jsonschema = pytest.importorskip("jsonschema", reason="pinned in the tests extra")
    schema = json.loads((LINT_FIXTURES / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def test_sarif_format_is_valid_sarif(capsys):
    validator = sarif_validator()
    write(Path("src/model.py"), DROPOUT)
    write(Path("src/bad name.py"), "def (:\n")
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [{"cell_type": "code", "metadata": {}, "source": DROPOUT, "outputs": []}],
    }
    write(Path("src/n.ipynb"), json.dumps(notebook))
    status, out, _ = run(capsys, "--output-format", "sarif", "src")
    assert status == 2
    log = json.loads(out)
    errors = sorted(validator.iter_errors(log), key=str)
    assert not errors, "\n".join(e.message for e in errors)

    (sarif_run,) = log["runs"]
    driver = sarif_run["tool"]["driver"]
    assert driver["name"] == "torch-pitfalls"
    descriptors = {d["id"]: d for d in driver["rules"]}
    assert list(descriptors) == [r.id for r in STATIC] + ["E999"]
    tp102 = descriptors["TP102"]
    documentation = rules.documentation("TP102", language="en", base_url=BASE)
    assert tp102["name"] == "functional-dropout-training"
    assert tp102["shortDescription"]["text"] == rules.rule("TP102").title["en"]
    assert tp102["fullDescription"]["text"] == documentation["What it does"]
    assert tp102["help"]["text"] == rules.explain("TP102", language="en", base_url=BASE)
    assert tp102["helpUri"] == documentation["Page"]
    assert descriptors["TP104"]["defaultConfiguration"]["enabled"] is False  # opt-in
    assert descriptors["TP104"]["properties"]["tags"] == ["lint", "opt-in"]
    assert tp102["properties"]["tags"] == ["lint", "fixable"]

    results = sarif_run["results"]
    assert [r["ruleId"] for r in results] == ["E999", "TP102", "TP102"]
    for result in results:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
    bad, plain, notebook_result = results
    assert bad["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/bad%20name.py"
    assert plain["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "src/model.py"},
        "region": {"startLine": 3, "startColumn": 5},
    }
    assert plain["message"]["text"].endswith(" → " + documentation["Page"])
    assert "region" not in notebook_result["locations"][0]["physicalLocation"]
    assert notebook_result["message"]["text"].startswith("cell 1, line 3, column 5: F.dropout")

    write(Path("clean.py"), "import torch\n")
    status, out, _ = run(capsys, "--output-format", "sarif", "clean.py")
    log = json.loads(out)
    assert status == 0 and log["runs"][0]["results"] == []
    assert not list(validator.iter_errors(log))


def test_sarif_validation_can_fail():
    """The schema does reject a log that breaks it (so the test above can fail)."""
    validator = sarif_validator()
    log = formats.as_sarif([lint.Finding("a.py", 0, 1, "TP102", "m → u")], language="en")
    assert any("startLine" in str(e.path) for e in validator.iter_errors(log))


def test_github_format(capsys):
    write(Path("a,b.py"), DROPOUT)
    write(Path("c.py"), "import torch.nn.functional as F\nF.dropout(x)  # 100% wrong\n")
    status, out, _ = run(capsys, "--output-format", "github", "a,b.py", "c.py")
    assert status == 1
    message = rules.describe("TP102", language="en", base_url=BASE).removeprefix("TP102 ")
    assert out.splitlines() == [
        f"::error title=torch-pitfalls (TP102),file=a%2Cb.py,line=3,col=5::{message}",
        f"::error title=torch-pitfalls (TP102),file=c.py,line=2,col=1::{message}",
    ]
    escaped = formats.as_github([lint.Finding("x.py", 1, 1, "E999", "50%\nnext")])
    assert escaped == ["::error title=torch-pitfalls (E999),file=x.py,line=1,col=1::50%25%0Anext"]


def test_bad_output_format(capsys):
    status, out, err = run(capsys, "--output-format", "xml", ".")
    assert status == 2 and out == ""
    assert "argument --output-format: invalid choice: 'xml'" in err
    assert all(name in err for name in formats.FORMATS)


# --explain -------------------------------------------------------------------------------------


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_explain(capsys, language):
    status, out, err = run(capsys, "--explain", "tp102", "--language", language)
    assert (status, err) == (0, "")
    found = rules.rule("TP102")
    assert out.startswith(f"TP102: {found.title[language]} (lint, fixable)\n")
    documentation = rules.documentation("TP102", language=language, base_url=BASE)
    for name in rules.SECTIONS:
        assert f"\n{name}\n{'-' * len(name)}\n" in out
    assert "training=self.training" in out  # the "Use instead" example, from the module
    url = rules.page_url(found.slug, language=language, base_url=BASE)
    assert out.endswith(f"\nPage\n----\n{url}\n") and url == documentation["Page"]
    assert f"/{language}/auto_examples/" in url


def test_explain_says_whether_a_rule_is_opt_in_or_fixable(capsys):
    assert run(capsys, "--explain", "TP104")[1].startswith("TP104: ")
    assert run(capsys, "--explain", "TP104")[1].splitlines()[0].endswith(" (lint, opt-in)")
    assert run(capsys, "--explain", "TP103")[1].splitlines()[0].endswith(" (lint)")


def test_explain_unknown_id(capsys):
    status, out, err = run(capsys, "--explain", "TP999")
    assert status == 2 and out == "" and "unknown rule id 'TP999'" in err


# Exit codes ------------------------------------------------------------------------------------


def test_exit_codes(capsys):
    write(Path("clean.py"), "import torch\n")
    write(Path("found.py"), DROPOUT)
    write(Path("broken.py"), "def (:\n")
    assert run(capsys, "clean.py")[0] == lint.EXIT_CLEAN == 0
    assert run(capsys, "clean.py", "found.py")[0] == lint.EXIT_FINDINGS == 1
    assert run(capsys, "found.py", "broken.py")[0] == lint.EXIT_ERROR == 2
    assert run(capsys, "found.py", "missing.py")[0] == 2  # E902: cannot be read
    for args in (["--select", "TP999"], ["--language", "fr"], ["--output-format", "xml"], []):
        status, out, err = run(capsys, *args, *(["found.py"] if args else []))
        assert (status, out) == (2, ""), args
        assert "error: " in err
    status, _, err = run(capsys, "--base-url", "ftp://x", "found.py")
    assert status == 2 and "must start with http:// or https://" in err


def test_exit_codes_in_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        lint.main(["--help"])
    assert exit_.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 nothing found; 1 findings" in out
    assert "2 a usage or configuration error" in out


# pyproject.toml --------------------------------------------------------------------------------

TWO_RULES = (
    "import torch.nn.functional as F\n"
    "\n"
    "h = F.dropout(x)\n"  # TP102
    "y = F.cross_entropy(F.softmax(z, 1), t)\n"  # TP101
)


def codes(out: str) -> list[str]:
    return [line.split(": ")[1].split()[0] for line in out.splitlines()]


def test_config_select_ignore_extend_select(capsys, tmp_path):
    write(Path("a.py"), TWO_RULES)
    opt_in = (FIXTURES / "tp104_positive.py").read_text(encoding="utf-8")
    write(Path("b.py"), opt_in)
    assert codes(run(capsys, "a.py", "b.py")[1]) == ["TP102", "TP101"]

    write(Path("pyproject.toml"), '[tool.torch-pitfalls]\nselect = ["TP101"]\n')
    assert codes(run(capsys, "a.py")[1]) == ["TP101"]
    assert codes(run(capsys, "--isolated", "a.py")[1]) == ["TP102", "TP101"]
    assert codes(run(capsys, "--select", "TP102", "a.py")[1]) == ["TP102"]  # the options win

    write(Path("pyproject.toml"), '[tool.torch-pitfalls]\nignore = ["tp101"]\n')
    assert codes(run(capsys, "a.py")[1]) == ["TP102"]
    assert run(capsys, "--ignore", "TP102", "a.py")[0] == 0  # the options add to the file's

    for key in ("extend-select", "enable"):
        write(Path("pyproject.toml"), f'[tool.torch-pitfalls]\n{key} = ["TP104"]\n')
        assert set(codes(run(capsys, "b.py")[1])) == {"TP104"}, key


def test_config_found_walking_up(capsys, tmp_path, monkeypatch):
    write(Path("pyproject.toml"), '[tool.torch-pitfalls]\nignore = ["TP102"]\n')
    write(Path("pkg/pyproject.toml"), "[project]\nname = 'pkg'\n")  # no table: keep walking
    write(Path("pkg/sub/a.py"), TWO_RULES)
    monkeypatch.chdir(tmp_path / "pkg" / "sub")
    assert codes(run(capsys, "a.py")[1]) == ["TP101"]
    assert lint.config.discover() == tmp_path / "pyproject.toml"

    write(Path(tmp_path / "other.toml"), '[tool.torch-pitfalls]\nselect = ["TP102"]\n')
    assert codes(run(capsys, "--config", str(tmp_path / "other.toml"), "a.py")[1]) == ["TP102"]


def test_config_output_format(capsys):
    write(Path("a.py"), DROPOUT)
    write(Path("pyproject.toml"), '[tool.torch-pitfalls]\noutput-format = "json"\n')
    status, out, _ = run(capsys, "a.py")
    assert status == 1 and json.loads(out)[0]["code"] == "TP102"
    assert run(capsys, "--output-format", "github", "a.py")[1].startswith("::error ")


def test_config_per_file_ignores(capsys, tmp_path, monkeypatch):
    write(
        Path("pyproject.toml"),
        "[tool.torch-pitfalls.per-file-ignores]\n"
        '"tests/**/*.py" = ["TP102"]\n'
        '"legacy_*.py" = ["TP101", "TP102"]\n'
        '"src/one.py" = ["TP101"]\n',
    )
    for name in ("tests/a.py", "tests/deep/b.py", "src/legacy_c.py", "src/one.py", "src/d.py"):
        write(Path(name), TWO_RULES)
    status, out, _ = run(capsys, ".")
    found = [(line.split(":")[0], line.split(": ")[1].split()[0]) for line in out.splitlines()]
    assert status == 1
    assert sorted(found) == sorted(
        [
            ("./src/d.py", "TP101"),
            ("./src/d.py", "TP102"),
            ("./src/one.py", "TP102"),
            ("./tests/a.py", "TP101"),
            ("./tests/deep/b.py", "TP101"),
        ]
    )
    monkeypatch.chdir(tmp_path / "src")  # globs are relative to the file's folder
    status, out, _ = run(capsys, "one.py", "legacy_c.py")
    assert codes(out) == ["TP102"]
    assert run(capsys, "--isolated", "legacy_c.py")[0] == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[tool.torch-pitfalls]\nselectt = ['TP101']\n",
            "[tool.torch-pitfalls]: unknown key 'selectt'; allowed keys: select, ignore, "
            "extend-select, enable, per-file-ignores, output-format",
        ),
        (
            "[tool.torch-pitfalls]\nselect = ['TP999']\n",
            "[tool.torch-pitfalls]: unknown rule id in select 'TP999'; known: TP001",
        ),
        (
            "[tool.torch-pitfalls]\nignore = ['TP010']\n",
            "TP010 is a runtime guard rule, not a static check",
        ),
        ("[tool.torch-pitfalls]\nselect = 'TP101'\n", "select must be a list of rule ids"),
        ("[tool.torch-pitfalls]\noutput-format = 'xml'\n", "output-format must be one of text"),
        ("[tool.torch-pitfalls]\nper-file-ignores = ['x']\n", "per-file-ignores must be a table"),
        (
            "[tool.torch-pitfalls.per-file-ignores]\n'x.py' = ['TP9']\n",
            "unknown rule id in per-file-ignores 'x.py' 'TP9'",
        ),
        ("[tool.torch-pitfalls\n", "not valid TOML"),
        (
            "[tool.torch-pitfalls]\nenable = []\nextend-select = []\n",
            "'extend-select' and 'enable' are the same key",
        ),
    ],
)
def test_config_errors(capsys, text, message):
    write(Path("a.py"), DROPOUT)
    write(Path("pyproject.toml"), text)
    status, out, err = run(capsys, "a.py")
    assert (status, out) == (2, "")
    assert err.startswith(f"python -m torch_pitfalls.lint: error: {Path.cwd() / 'pyproject.toml'}")
    assert message in err
    assert run(capsys, "--isolated", "a.py")[0] == 1  # the file is not read


def test_config_option_errors(capsys):
    write(Path("a.py"), DROPOUT)
    write(Path("plain.toml"), "[project]\nname = 'x'\n")
    status, _, err = run(capsys, "--config", "missing.toml", "a.py")
    assert status == 2 and "--config missing.toml: no such file" in err
    status, _, err = run(capsys, "--config", "plain.toml", "a.py")
    assert status == 2 and "plain.toml: no [tool.torch-pitfalls] table" in err
    write(Path("empty.toml"), "[tool.torch-pitfalls]\n")  # a table with no keys: the defaults
    assert run(capsys, "--config", "empty.toml", "a.py")[0] == 1
    status, _, err = run(capsys, "--config", "plain.toml", "--isolated", "a.py")
    assert status == 2 and "--config and --isolated cannot be used together" in err


# Notebooks: a continuation line that starts with % ----------------------------------------------

NOTEBOOK_FIXTURE = LINT_FIXTURES / "percent_continuation.ipynb"


def test_notebook_continuation_lines_are_code(capsys):
    """d2l-zh's notebooks split ``print("…" % (…))`` over two lines; the second starts with
    ``%`` and is not a magic: the notebook parses, and its finding is reported."""
    status, out, _ = run(capsys, "--output-format", "json", str(NOTEBOOK_FIXTURE))
    assert status == 1
    assert [(f["code"], f["cell"], f["location"]) for f in json.loads(out)] == [
        ("TP102", 5, {"row": 2, "column": 12})
    ]
    source, cells = lint.notebooks.read_notebook(str(NOTEBOOK_FIXTURE))
    lines = source.splitlines()
    by_cell = {cell: lines[i] for i, cell in enumerate(cells)}
    assert by_cell[(2, 1)] == "pass"  # %matplotlib inline
    assert by_cell[(3, 8)] == "          % (total / n, correct / n))"
    assert by_cell[(4, 2)] == "    pass"  # %time, at the start of a statement in the loop
    assert by_cell[(4, 6)] == "        % (epoch + 1)"  # after a backslash
    assert by_cell[(4, 8)] == "%d rows"  # in a triple-quoted string
    assert by_cell[(4, 9)] == "!not a shell command"
    assert by_cell[(4, 11)] == "pass"  # !nvidia-smi, after the string closed
    ast.parse(source)


@pytest.mark.parametrize(
    ("cell", "blanked"),
    [
        ("x = f(\n    %s\n)", []),
        ("x = [a,  # a comment (\n%time\n]", []),
        ("x = 'a ( # b'\n%time f()", [2]),
        ("x = '''it's\n%d'''\n%time f()", [3]),
        ('x = "\\"("\n!ls', [2]),
        ("s = r'\\\\'\n%time f()", [2]),
        ("if x:  # (\n    %time f()\n    !ls", [2, 3]),
        ("x = 1 + \\\n    %", []),
        ("x = {'a': (1,\n%2)}\n%who", [3]),
    ],
)
def test_notebook_magics_only_at_the_start_of_a_statement(tmp_path, cell, blanked):
    path = write(tmp_path / "n.ipynb", notebook_json([cell]))
    source, _ = lint.notebooks.read_notebook(str(path))
    got = [i for i, line in enumerate(source.splitlines(), start=1) if line.strip() == "pass"]
    assert got == blanked


def notebook_json(sources: list[str]) -> str:
    cells = [
        {"cell_type": "code", "metadata": {}, "source": source, "outputs": []} for source in sources
    ]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells})


# --fix and --diff ------------------------------------------------------------------------------

FIXABLE = LINT_FIXTURES / "tp102_fixable.py"


def marked(text: str, mark: str) -> list[int]:
    """The lines of the fixture that end with the comment ``mark`` (a call that spans lines is
    marked on its last line, and reported on its first)."""
    lines = text.splitlines()
    out = []
    for number, line in enumerate(lines, start=1):
        if line.rstrip().endswith(f"# {mark}"):
            start = number
            while lines[start - 1].lstrip().startswith(")") or "F.dropout" not in lines[start - 1]:
                start -= 1
            out.append(start)
    return out


def tp102_lines(path: Path) -> list[int]:
    return [f.line for f in lint.check_paths(path) if f.rule == "TP102"]


def test_fix_fixture_marks_what_the_rule_reports():
    text = FIXABLE.read_text(encoding="utf-8")
    want = sorted(marked(text, "fix") + marked(text, "no fix"))
    assert tp102_lines(FIXABLE) == want
    fixable = [f.line for f in lint.check_paths(FIXABLE) if f.fix]
    assert fixable == marked(text, "fix") and len(fixable) == 9


def test_diff_changes_nothing(capsys, tmp_path):
    path = tmp_path / "model.py"
    original = FIXABLE.read_bytes()
    path.write_bytes(original)
    status, out, err = run(capsys, "--diff", "model.py")
    assert status == 1
    assert path.read_bytes() == original
    assert out.startswith("--- model.py\n+++ model.py\n@@ ")
    added = [line[1:] for line in out.splitlines() if line.startswith("+") and "++" not in line]
    removed = [line[1:] for line in out.splitlines() if line.startswith("-") and "--" not in line]
    assert len(added) == 9 and len(removed) == 8  # one fix adds a line
    assert all("training=self.training" in line for line in added)
    assert err == "9 fixes would be applied to 1 file\n"

    clean = write(tmp_path / "clean.py", "import torch.nn.functional as F\nF.dropout(x)\n")
    assert run(capsys, "--diff", str(clean))[:2] == (0, "")  # a finding, but no fix


def test_fix_applies_the_safe_fixes(capsys, tmp_path):
    path = tmp_path / "model.py"
    path.write_bytes(FIXABLE.read_bytes())
    status, out, err = run(capsys, "--diff", "model.py")
    expected_diff = out
    status, out, err = run(capsys, "--fix", "model.py")
    text = path.read_text(encoding="utf-8")
    no_fix = marked(text, "no fix")
    assert status == 1  # the findings without a fix are left, and printed
    assert [int(line.split(":")[1]) for line in out.splitlines()] == no_fix
    assert err == f"fixed 9 findings in 1 file, {len(no_fix)} left\n"
    ast.parse(text)
    assert tp102_lines(path) == no_fix
    before_text = FIXABLE.read_text(encoding="utf-8")
    assert text.count("training=self.training") - before_text.count("training=self.training") == 9
    assert next(line for line in text.splitlines() if "label = " in line) == (
        '        label = "σ(x)"; h = F.dropout(h, 0.1, training=self.training)  # fix'
    )
    before = before_text.splitlines(keepends=True)
    after = text.splitlines(keepends=True)
    assert "".join(difflib.unified_diff(before, after, "model.py", "model.py")) == expected_diff

    again = path.read_bytes()
    status, _, err = run(capsys, "--fix", "model.py")  # idempotent
    assert path.read_bytes() == again and status == 1
    assert err == f"fixed 0 findings in 0 files, {len(no_fix)} left\n"
    assert run(capsys, "--diff", "model.py")[:2] == (0, "")


def test_fix_leaves_nothing_when_every_finding_has_a_fix(capsys, tmp_path):
    source = (
        "import torch.nn.functional as F\nfrom torch import nn\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n"
        "        return F.dropout(F.dropout(x, 0.1), 0.2)\n"
    )
    path = write(tmp_path / "net.py", source)
    assert run(capsys, "--fix", "net.py")[0] == 0  # nested calls: fixed over two passes at most
    text = path.read_text(encoding="utf-8")
    assert text.endswith(
        "F.dropout(F.dropout(x, 0.1, training=self.training), 0.2, training=self.training)\n"
    )
    assert tp102_lines(path) == []


def test_fix_keeps_newlines_and_encoding(capsys, tmp_path):
    source = (
        "# -*- coding: latin-1 -*-\r\nimport torch.nn.functional as F\r\nimport torch.nn as nn\r\n"
        "class Net(nn.Module):\r\n    def forward(self, x):\r\n"
        "        return F.dropout(x, 0.5)  # café\r\n"
    )
    path = tmp_path / "latin.py"
    path.write_bytes(source.encode("latin-1"))
    assert run(capsys, "--fix", "latin.py")[0] == 0
    assert path.read_bytes() == source.replace("0.5)", "0.5, training=self.training)").encode(
        "latin-1"
    )


def test_fix_respects_configuration(capsys, tmp_path):
    path = tmp_path / "model.py"
    path.write_bytes(FIXABLE.read_bytes())
    write(
        tmp_path / "pyproject.toml",
        '[tool.torch-pitfalls.per-file-ignores]\n"model.py" = ["TP102"]\n',
    )
    assert run(capsys, "--fix", "model.py")[0] == 0
    assert path.read_bytes() == FIXABLE.read_bytes()
    assert run(capsys, "--fix", "--ignore", "TP102", "--isolated", "model.py")[0] == 0
    assert path.read_bytes() == FIXABLE.read_bytes()


def test_fix_in_json(capsys, tmp_path):
    path = tmp_path / "model.py"
    path.write_bytes(FIXABLE.read_bytes())
    status, out, _ = run(capsys, "--output-format", "json", "model.py")
    found = json.loads(out)
    first = found[0]
    assert first["fix"] == {
        "applicability": "safe",
        "edits": [
            {
                "content": ", training=self.training",
                "location": {"row": 15, "column": 33},
                "end_location": {"row": 15, "column": 33},
            }
        ],
    }
    assert sum(f["fix"] is not None for f in found) == 9


def test_fix_with_statistics_is_a_usage_error(capsys):
    status, _, err = run(capsys, "--fix", "--statistics", ".")
    assert status == 2 and "--statistics cannot be used with --fix or --diff" in err


def test_fix_edits_api():
    source = "x = 'é'; y = f(a)\n"
    text = lint.fixes.SourceText(source)
    call = ast.parse(source).body[1].value
    assert text.offset(call.end_lineno, call.end_col_offset) == len(source) - 1
    assert text.position(len(source) - 1) == (1, call.end_col_offset)
    edit = rules.Edit.insert(1, call.end_col_offset - 1, ", b")
    assert lint.fixes.apply(source, [(edit,)]) == ("x = 'é'; y = f(a, b)\n", 1)
    overlapping = [(edit,), (rules.Edit.insert(1, call.end_col_offset - 1, ", c"),)]
    assert lint.fixes.apply(source, overlapping) == ("x = 'é'; y = f(a, b)\n", 1)
    with pytest.raises(ValueError, match="must end after it starts"):
        rules.Edit(1, 5, 1, 4, "")
    with pytest.raises(ValueError, match="inside a character"):
        text.offset(1, 6)


MESHGRIDS = """\
import torch

ys, xs = torch.arange(4), torch.arange(6)
a = torch.meshgrid(ys, xs)
b = torch.meshgrid(
    ys,
    xs,
)
c = torch.meshgrid(*[ys, xs])
d = torch.meshgrid([ys, xs])  # a list of tensors
e = torch.meshgrid(ys, xs, indexing="xy")
"""


def test_fix_of_meshgrid_keeps_the_grids(capsys, tmp_path):
    """TP114's fix writes the default, "ij": the fixed calls return the grids the old ones did."""
    import torch

    path = write(tmp_path / "grids.py", MESHGRIDS)
    status, _, err = run(capsys, "--fix", str(path))
    fixed = path.read_text(encoding="utf-8")
    assert status == 0 and err == "fixed 4 findings in 1 file, 0 left\n"
    assert fixed.count('indexing="ij"') == 4 and '    indexing="ij",\n)' in fixed
    assert not [f for f in lint.check_paths(path) if f.rule == "TP114"]
    before, after = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the default's own warning
        exec(compile(MESHGRIDS, "before", "exec"), before)
    exec(compile(fixed, "after", "exec"), after)
    for name in "abcde":
        assert all(torch.equal(x, y) for x, y in zip(before[name], after[name], strict=True))
