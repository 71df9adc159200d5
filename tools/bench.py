"""Measure the build and print one table (``nox -s bench``).

Rows: fresh environment setup; clean build of each language with the number of examples executed;
no-change rebuild; each example's run time on this build's device (from sphinx-gallery's junit
report); the test suite. Then the detectors: the runtime guards' overhead on two training loops, a
tiny MLP and a small CNN (ratio of the loop's time with guards to its time without, measured side
by side with torch_pitfalls.measure.compare_times: see guard_ratio), and the static checker's
speed (lines of this repository's Python per second). Times depend on the machine; this one
prints what it measured. ``--no-fresh`` skips the environment setup, ``--detectors`` measures
the detectors only.
Targets (2-core machine, environment present; catalog part 2b, 61 pages): clean build of both
languages <= 90 s, no-change rebuild of both <= 10 s, no example over 5 s on CPU, `nox -s tests`
<= 120 s; guards with the default rules on CPU <= 1.2x on ten training steps of the tiny MLP and
<= 1.05x on a training step of the small CNN (batch 64, 32x32 inputs). The note column says
whether each measurement met its target.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BUILD = DOCS / "_build"
TORCH = os.environ.get("TORCH_PITFALLS_TORCH", "torch==2.13.0")


def timed(command: list[str], **kwargs) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, **kwargs)
    return time.perf_counter() - start


def build(language: str) -> tuple[float, int]:
    """Build one language; return its time and how many examples it executed."""
    started = time.time()
    seconds = timed(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-n",
            "-q",
            "-j",
            "auto",  # as nox -s docs builds
            "-D",
            f"language={language}",
            "-d",
            str(BUILD / "doctrees" / language),
            str(DOCS),
            str(BUILD / "html" / language),
        ],
        stderr=subprocess.DEVNULL,
    )
    executed = [
        p for p in (DOCS / "auto_examples").rglob("*.py.md5") if p.stat().st_mtime >= started
    ]
    return seconds, len(executed)


def target(seconds: float, limit: float) -> str:
    """The note for a measurement that has a target: met or not."""
    return f"target <= {limit:g} s: {'met' if seconds <= limit else 'NOT met'}"


def built_pages(language: str) -> int:
    """Pages of one language's build: its HTML files, without the generated index and search."""
    generated = {"genindex.html", "search.html", "py-modindex.html"}
    folder = BUILD / "html" / language
    return sum(
        1
        for path in folder.rglob("*.html")
        if path.name not in generated and not {"_static", "_images"} & set(path.parts)
    )


def example_times(language: str = "en") -> list[tuple[str, float]]:
    report = BUILD / "junit" / f"sphinx-gallery-{language}.xml"
    cases = ET.parse(report).getroot().iter("testcase")
    return [
        (Path(case.get("file", case.get("name", "?"))).stem, float(case.get("time", 0)))
        for case in cases
    ]


def main(fresh: bool = True) -> None:
    rows = []
    if fresh:
        with tempfile.TemporaryDirectory() as tmp:
            venv = Path(tmp) / "venv"
            seconds = timed([sys.executable, "-m", "venv", str(venv)])
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
            seconds += timed([*pip, *TORCH.split()], stdout=subprocess.DEVNULL)
            seconds += timed([*pip, "-e", ".[docs]"], stdout=subprocess.DEVNULL)
            subprocess.run([*pip[:3], "install", "-q", "-e", "."], cwd=ROOT, check=True)
        rows.append(("fresh environment setup (venv, torch, docs extra)", seconds, ""))
    shutil.rmtree(BUILD, ignore_errors=True)
    shutil.rmtree(DOCS / "auto_examples", ignore_errors=True)
    clean = {}
    for language in ("en", "zh_CN"):
        clean[language] = build(language)
        if language == "en":  # read now: the no-change rebuild rewrites the report
            per_example = example_times("en")
        rows.append(
            (
                f"clean build, {language}",
                clean[language][0],
                f"{clean[language][1]} examples executed",
            )
        )
    both = sum(t for t, _ in clean.values())
    pages = built_pages("en")
    rows.append(("clean build, both languages", both, target(both, 90)))
    rows.append((f"clean build, both languages, per page ({pages} pages each)", both / pages, ""))
    again = sum(t for t, _ in (build(language) for language in ("en", "zh_CN")))
    rows.append(("no-change rebuild, both languages", again, target(again, 10)))
    device = os.environ.get("TORCH_PITFALLS_DEVICE") or (
        "cuda"
        if subprocess.run(
            [
                sys.executable,
                "-c",
                "import torch,sys;sys.exit(0 if torch.cuda.is_available() else 1)",
            ]
        ).returncode
        == 0
        else "cpu"
    )
    slowest_name, slowest = max(per_example, key=lambda item: item[1])
    examples_total = sum(seconds for _, seconds in per_example)
    rows.append(
        (
            f"slowest example on {device}: {slowest_name}",
            slowest,
            target(slowest, 5) if device == "cpu" else "target <= 5 s on cpu",
        )
    )
    rows.append(
        (
            f"all {len(per_example)} examples together on {device}",
            examples_total,
            f"clean two-language build / examples: {both / examples_total:.1f}x",
        )
    )
    for name, seconds in sorted(per_example, key=lambda item: -item[1]):
        rows.append((f"example {name} on {device}", seconds, ""))
    tests = timed(
        [sys.executable, "-m", "pytest", "-q", "--ignore=tests/browser", "-p", "no:cacheprovider"],
        stdout=subprocess.DEVNULL,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    rows.append(("test suite (pytest, as nox -s tests runs it)", tests, target(tests, 120)))
    width = max(len(r[0]) for r in rows)
    print(f"\n| {'measurement':<{width}} | seconds | note |")
    print(f"| {'-' * width} | ------: | ---- |")
    for what, seconds, note in rows:
        print(f"| {what:<{width}} | {seconds:7.1f} | {note} |")


def _small_cnn():
    """A realistic CPU workload: a small CNN, batch 64, 3x32x32 inputs, 10 classes."""
    import torch
    from torch import nn

    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.25),
        nn.Linear(64 * 8 * 8, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )
    return model, torch.randn(64, 3, 32, 32), torch.randint(0, 10, (64,))


def _tiny_mlp():
    """The tiny MLP: 64 -> 256 -> 10 with BatchNorm and dropout, batch 128."""
    import torch
    from torch import nn

    model = nn.Sequential(
        nn.Linear(64, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 10)
    )
    return model, torch.randn(128, 64), torch.randint(0, 10, (128,))


def guard_ratio(train, make_guards, rounds: int, block: float) -> tuple[float, float]:
    """Time ``train`` without and with guards; return the ratio (guarded / plain) and the plain
    time of one call, in seconds.

    The site's one timing method, :func:`torch_pitfalls.measure.compare_times`: ``rounds``
    interleaved rounds of timings of about ``block`` seconds on one intra-op thread, the fastest
    timing of each side kept. The guards (and a filter that silences their warnings) are entered
    around each guarded timing and left after it, outside the timed calls: a training loop enters
    them once, not once per step.
    """
    import warnings

    from torch_pitfalls.measure import compare_times

    @contextlib.contextmanager
    def guarded():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with make_guards():
                yield

    plain, with_guards = compare_times(
        train, train, rounds=rounds, block=block, contexts=[contextlib.nullcontext, guarded]
    )
    return with_guards / plain, plain


def detectors() -> None:
    """Print the detectors' table: guard overhead (ratios) and checker speed (lines per second)."""
    import torch

    import torch_pitfalls
    from torch_pitfalls import rules
    from torch_pitfalls.lint import check_source

    rows = []
    workloads = [
        # (name, model and data, training steps per timed call, rounds, seconds per timing, target)
        ("10 training steps of a tiny MLP", _tiny_mlp, 10, 21, 0.02, 1.2),
        ("a training step of a small CNN (batch 64, 32x32)", _small_cnn, 1, 21, 0.05, 1.05),
    ]
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        for name, make, steps, rounds, block, limit in workloads:
            torch.manual_seed(0)
            model, x, y = make()
            model, x, y = model.to(device), x.to(device), y.to(device)
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

            def train(model=model, optimizer=optimizer, x=x, y=y, device=device, steps=steps):
                for _ in range(steps):
                    optimizer.zero_grad()
                    torch.nn.functional.cross_entropy(model(x), y).backward()
                    optimizer.step()
                if device == "cuda":
                    torch.cuda.synchronize()

            train()  # warm-up: optimizer state, allocator
            for label, options in (("default rules", {}), ("opt-in TP010", {"enable": ["TP010"]})):
                make_guards = functools.partial(torch_pitfalls.guards, model, optimizer, **options)
                ratio, plain = guard_ratio(train, make_guards, rounds=rounds, block=block)
                note = (
                    f"x the time without guards ({plain * 1e3:.1f} ms; fastest of {rounds} "
                    "interleaved rounds, measure.compare_times)"
                )
                if label == "default rules" and device == "cpu":
                    note += f"; target <= {limit:g}x: {'met' if ratio <= limit else 'NOT met'}"
                rows.append((f"guards ({label}), {name} on {device}", ratio, note))
    sources = [
        (path, path.read_text(encoding="utf-8"))
        for folder in ("src", "examples", "tests", "docs/_ext", "tools")
        for path in sorted((ROOT / folder).rglob("*.py"))
    ]
    lines = sum(text.count("\n") + 1 for _, text in sources)
    static = [rule for rule in rules.RULES if rule.kind == "lint"]
    for label, options in (
        (f"the {sum(r.default for r in static)} default rules", {}),
        (f"all {len(static)} rules", {"select": [r.id for r in static]}),
    ):
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for path, text in sources:
                check_source(text, path=str(path), **options)
            best = min(best, time.perf_counter() - start)
        rows.append(
            (
                f"static checker, {label}, {len(sources)} files",
                lines / best,
                f"lines per second ({lines} lines in {best:.2f} s, best of 5)",
            )
        )
    width = max(len(r[0]) for r in rows)
    print(f"\n| {'detectors':<{width}} | value | unit |")
    print(f"| {'-' * width} | ----: | ---- |")
    for what, value, unit in rows:
        shown = f"{value:.2f}" if value < 100 else f"{value:,.0f}"
        print(f"| {what:<{width}} | {shown} | {unit} |")


if __name__ == "__main__":
    if "--detectors" not in sys.argv:
        main(fresh="--no-fresh" not in sys.argv)
    detectors()
