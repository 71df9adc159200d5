"""The static checker measured on real code: every rule's findings on public codebases, labelled by
hand, and each rule's false-alarm rate (``nox -s survey -- FOLDER...``).

The codebases are not part of the repository: fetch them yourself (``git clone`` at the commit
the labels name) into folders named as in the labels file, and give those folders. The labels,
``tools/survey_labels.toml``, are committed: one entry per finding ever labelled, keyed by the
corpus (the folder's name), the file's path inside it (``path#cellN`` for a notebook's cell N,
whose line is then the cell's), the line and the rule, with its label
(``real``, ``debatable`` or ``false``: a false alarm) and why::

    [corpora.pytorch-image-models]
    repo = "huggingface/pytorch-image-models"
    commit = "aa4b5850…"

    [[finding]]
    corpus = "pytorch-image-models"
    path = "train.py"
    line = 512
    rule = "TP116"
    label = "real"
    why = "parsed with parse_args: torch.distributed.launch >= 2.0 passes --local-rank"

Every rule runs (``--select ALL``). The report has one row per rule: its findings, how many are
real, debatable and false alarms, how many are not labelled yet, and the false-alarm rate
(false / labelled). The exit status is 1 when a finding has no label or a default rule's rate
is 5 % or more (the issue's bound for a rule that is on by default), else 0; 2 for bad input
(a folder that does not exist, a malformed labels file), with what was expected.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tomllib
from pathlib import Path

LABELS = Path(__file__).with_name("survey_labels.toml")
KINDS = ("real", "debatable", "false")
DEFAULT_RULE_BOUND = 0.05
"""The highest false-alarm rate a rule that is on by default may have (below, not at)."""


def read_labels(path: Path) -> tuple[dict, dict[tuple[str, str, int, str], dict]]:
    """``(corpora, labels)`` of a labels file: ``corpora`` maps a corpus name to its repo and
    commit, ``labels`` maps ``(corpus, path, line, rule)`` to the entry.

    Raises:
        ValueError: a malformed file, an entry without its keys, an unknown label or corpus, or a
            finding labelled twice; every problem is listed.
    """
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    corpora = data.get("corpora", {})
    problems = [
        f"[corpora.{name}] needs repo and commit"
        for name, corpus in corpora.items()
        if not {"repo", "commit"} <= set(corpus)
    ]
    labels = {}
    for i, entry in enumerate(data.get("finding", ())):
        missing = {"corpus", "path", "line", "rule", "label", "why"} - set(entry)
        if missing:
            problems.append(f"finding {i + 1}: missing {sorted(missing)}")
            continue
        if entry["label"] not in KINDS:
            problems.append(f"finding {i + 1}: label {entry['label']!r} is not one of {KINDS}")
        if entry["corpus"] not in corpora:
            problems.append(f"finding {i + 1}: corpus {entry['corpus']!r} has no [corpora] entry")
        key = (entry["corpus"], entry["path"], int(entry["line"]), entry["rule"])
        if key in labels:
            problems.append(f"finding {i + 1}: {key} is labelled twice")
        labels[key] = entry
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return corpora, labels


def survey(folders: list[Path], labels: dict) -> tuple[dict, list]:
    """Run every static rule over ``folders``; return (counts per rule, unlabelled findings).

    Counts per rule: ``{"findings": n, "real": n, "debatable": n, "false": n, "unlabelled": n}``.
    """
    from torch_pitfalls import rules
    from torch_pitfalls.lint import check_paths

    counts = {
        rule.id: collections.Counter({kind: 0 for kind in ("findings", *KINDS, "unlabelled")})
        for rule in rules.RULES
        if rule.kind == "lint"
    }
    unlabelled = []
    for folder in folders:
        for finding in check_paths([folder], select=list(counts), language="en"):
            if finding.rule not in counts:  # E999 / E902: not a rule's finding
                continue
            path = Path(finding.path).relative_to(folder).as_posix()
            if finding.cell:  # a notebook: the line is the cell's
                path += f"#cell{finding.cell}"
            key = (folder.name, path, finding.line, finding.rule)
            counts[finding.rule]["findings"] += 1
            entry = labels.get(key)
            if entry is None:
                counts[finding.rule]["unlabelled"] += 1
                unlabelled.append(key)
            else:
                counts[finding.rule][entry["label"]] += 1
    return counts, unlabelled


def report(counts: dict) -> tuple[str, list[str]]:
    """The table (Markdown) and the default rules over the bound."""
    from torch_pitfalls import rules

    lines = [
        "| rule | default | findings | real | debatable | false alarms | unlabelled | rate |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    over = []
    for rule_id, count in counts.items():
        default = rules.rule(rule_id).default
        labelled = count["real"] + count["debatable"] + count["false"]
        rate = count["false"] / labelled if labelled else 0.0
        shown = f"{rate:.1%}" if labelled else "–"
        if default and labelled and rate >= DEFAULT_RULE_BOUND:
            over.append(f"{rule_id}: {rate:.1%} false alarms, on by default")
        lines.append(
            f"| {rule_id} | {'on' if default else 'opt-in'} | {count['findings']} | "
            f"{count['real']} | {count['debatable']} | {count['false']} | "
            f"{count['unlabelled']} | {shown} |"
        )
    return "\n".join(lines), over


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.survey", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("folders", nargs="+", type=Path, help="corpora, named as in the labels")
    parser.add_argument("--labels", type=Path, default=LABELS, help="the labels file (TOML)")
    args = parser.parse_args(argv)
    absent = [str(f) for f in args.folders if not f.is_dir()]
    if absent:
        print(f"not folders: {', '.join(absent)} (give the fetched codebases)", file=sys.stderr)
        return 2
    try:
        corpora, labels = read_labels(args.labels)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as error:
        print(f"cannot read the labels: {error}", file=sys.stderr)
        return 2
    unknown = [f.name for f in args.folders if f.name not in corpora]
    if unknown:
        known = ", ".join(sorted(corpora)) or "none"
        print(f"no [corpora] entry for {', '.join(unknown)} (known: {known})", file=sys.stderr)
        return 2
    folders = [f.resolve() for f in args.folders]
    counts, unlabelled = survey(folders, labels)
    table, over = report(counts)
    lines = sum(
        len(p.read_bytes().splitlines())
        for f in folders
        for p in f.rglob("*.py")
        if not any(part.startswith(".") for part in p.parts)
    )
    print(f"{len(folders)} corpora, {lines} lines of Python\n\n{table}")
    for key in unlabelled:
        print("unlabelled: {} {}:{} {}".format(*key))
    for line in over:
        print(f"over the {DEFAULT_RULE_BOUND:.0%} bound: {line}")
    return 1 if unlabelled or over else 0


if __name__ == "__main__":
    sys.exit(main())
