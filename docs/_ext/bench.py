"""Measure the build and print one table (``nox -s bench``).

Rows: fresh environment setup; clean build of each language with the number of examples executed;
no-change rebuild; each example's run time on this build's device (from sphinx-gallery's junit
report); the test suite. Times depend on the machine; this one prints what it measured.
Targets (2-core machine, environment present): clean build of both languages <= 120 s, no-change
rebuild of both <= 20 s, no example over 10 s on CPU, `nox -s tests` <= 120 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
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
    rows.append(
        ("clean build, both languages", sum(t for t, _ in clean.values()), "target <= 120 s")
    )
    again = [build(language) for language in ("en", "zh_CN")]
    rows.append(("no-change rebuild, both languages", sum(t for t, _ in again), "target <= 20 s"))
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
    for name, seconds in per_example:
        rows.append((f"example {name} on {device}", seconds, "target <= 10 s on cpu"))
    tests = timed(
        [sys.executable, "-m", "pytest", "-q", "--ignore=tests/browser", "-p", "no:cacheprovider"],
        stdout=subprocess.DEVNULL,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )
    rows.append(("test suite (pytest, as nox -s tests runs it)", tests, "target <= 120 s"))
    width = max(len(r[0]) for r in rows)
    print(f"\n| {'measurement':<{width}} | seconds | note |")
    print(f"| {'-' * width} | ------: | ---- |")
    for what, seconds, note in rows:
        print(f"| {what:<{width}} | {seconds:7.1f} | {note} |")


if __name__ == "__main__":
    main(fresh="--no-fresh" not in sys.argv)
