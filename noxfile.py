"""Sessions of torch-pitfalls. A newcomer needs two: ``nox -s docs`` and ``nox -s tests``.

PyTorch: every session installs ``torch==2.13.0`` (a CPU wheel on the project's machines) before
the project, so that pip never resolves another build. Set ``TORCH_PITFALLS_TORCH`` to another pip
requirement to override it, or to ``none`` to skip the install (a machine with its own torch).
"""

from __future__ import annotations

import os
import shlex
import shutil
import time
import tomllib
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"  # pip and venv: uv would ignore the local torch wheel
nox.options.reuse_venv = "yes"
nox.options.sessions = ["lint", "tests", "docs"]

ROOT = Path(__file__).resolve().parent
DOCS = ROOT / "docs"
BUILD = DOCS / "_build"
HTML = BUILD / "html"
LANGUAGES = ["en", "zh_CN"]  # English first: it runs the examples, Chinese reuses their outputs
# -j auto: pages are read in one process, written in parallel (docs/_ext/pitfalls: read_serially)
SPHINX = ["sphinx-build", "-W", "--keep-going", "-n", "-q", "-j", "auto"]
#: The scripts of tools/ run as modules from the repository root; those run outside the project's
#: environments find its (standard-library-only) catalog through this path.
SOURCES = {"PYTHONPATH": str(ROOT / "src")}
PYTHON = "3.11"


def optional_dependencies(extra: str) -> list[str]:
    """The pinned requirements of one extra of pyproject.toml (single source of the pins)."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]["optional-dependencies"][extra]


def install(session: nox.Session, extra: str) -> None:
    """Install torch (pinned, overridable) and the project with one extra, editable."""
    torch = os.environ.get("TORCH_PITFALLS_TORCH", "torch==2.13.0").strip()
    if torch.lower() not in ("", "none"):
        session.install(*shlex.split(torch))
    session.install("-e", f".[{extra}]")


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Build the site in English, then Chinese, into docs/_build/html/{en,zh_CN}."""
    install(session, "docs")
    for language in LANGUAGES:
        started = time.time()
        session.run(
            *SPHINX,
            "-D",
            f"language={language}",
            "-d",
            str(BUILD / "doctrees" / language),
            str(DOCS),
            str(HTML / language),
            *session.posargs,
        )
        # sphinx-gallery rewrites an example's checksum file only when it executes the example.
        executed = [
            p for p in (DOCS / "auto_examples").rglob("*.py.md5") if p.stat().st_mtime >= started
        ]
        session.log(
            f"{language}: built in {time.time() - started:.0f} s, "
            f"{len(executed)} example(s) executed"
        )
    HTML.mkdir(parents=True, exist_ok=True)  # absent after `--install-only`
    shutil.copyfile(DOCS / "_root" / "index.html", HTML / "index.html")
    session.log(f"Open {HTML / 'index.html'} (English: en/index.html, 中文: zh_CN/index.html)")


@nox.session(python=PYTHON)
def serve(session: nox.Session) -> None:
    """Live preview: rebuild the English site on every change (sphinx-autobuild)."""
    install(session, "docs")
    session.install("sphinx-autobuild==2025.8.25")
    language = session.posargs[0] if session.posargs else "en"
    session.run(
        "sphinx-autobuild",
        "-D",
        f"language={language}",
        "-d",
        str(BUILD / "doctrees" / language),
        "--watch",
        str(ROOT / "examples"),
        "--watch",
        str(ROOT / "src"),
        str(DOCS),
        str(HTML / language),
    )


@nox.session(venv_backend="none")
def reproducible(session: nox.Session) -> None:
    """Run every example again and compare its outputs with the last build's (after docs).

    Uses the environment of the docs session rather than installing the same one again.
    """
    python = ROOT / ".nox" / "docs" / "bin" / "python"
    if not python.exists():
        session.error("run `nox -s docs` first: this check reuses its environment and its outputs")
    session.run(str(python), "-m", "tools.reproducible", external=True)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Measure setup, builds, examples and tests; then the detectors (guard overhead, checker
    speed). Print the tables. ``-- --no-fresh`` skips the setup, ``-- --detectors`` runs only the
    detectors' measurements."""
    install(session, "docs")
    session.install(*optional_dependencies("tests"))
    session.run("python", "-m", "tools.bench", *session.posargs)


@nox.session(venv_backend="none")
def releases(session: nox.Session) -> None:
    """Run every example on each PyTorch release of tools/releases.py; record the outputs.

    Not part of CI nor of ``nox -s bench``: each release is a fresh environment of 5–7.5 GB
    (downloaded, then deleted) in a temporary folder. Writes docs/release_recordings/<slug>.json
    (one file per page: release -> outcome, output, differences) and _runs.json (each release's
    run: versions, date, machine, command); a full run of a release replaces its entries there:
    commit them. ``-- --releases 2.4 2.6`` records only those; ``-- --pages SLUG`` re-runs only
    those pages' entries of releases that have a full run; ``-- --environments DIR`` keeps the
    environments there and reuses them; ``-- --rediff`` only compares the stored recordings with
    the reference again; ``-- --from-legacy FILE...`` merges recordings of the earlier layout
    (one <release>.json per release) and deletes them.
    """
    session.run(
        "nice", "python3", "-m", "tools.releases", *session.posargs, external=True, env=SOURCES
    )


@nox.session(venv_backend="none")
def new(session: nox.Session) -> None:
    """Start a new pitfall page: ``nox -s new -- SLUG TOPIC``.

    Writes the page's skeleton in the catalog's arc (examples/<topic>/plot_<slug>.py), its record in
    src/torch_pitfalls/catalog/pages.toml and its cheat-sheet entry; then write the page, run
    ``nox -s i18n`` and translate its catalog. Needs nothing but Python.
    """
    session.run("python3", "-m", "tools.new_page", *session.posargs, external=True, env=SOURCES)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run every example on every available device, the doctests, the helper and catalog tests."""
    install(session, "tests")
    session.run("pytest", "--ignore=tests/browser", *session.posargs, env={"MPLBACKEND": "Agg"})
    session.run("python", "-m", "tools.catalogs")


@nox.session(python=PYTHON)
def browser(session: nox.Session) -> None:
    """The built site as a reader gets it (run `nox -s docs` first).

    Browser tests in Debian's Chromium driven by Playwright, then an offline link check of both
    languages with LinkChecker (internal links and anchors; external links listed, not fetched).
    """
    session.install(*optional_dependencies("browser"))
    # --confcutdir: the other tests' conftest files (torch, sybil) are not needed here.
    session.run(
        "pytest", "--confcutdir=tests/browser", "tests/browser", *session.posargs, env=SOURCES
    )
    session.run("python", "-m", "tools.linkcheck", str(HTML))


@nox.session(python=PYTHON)
def translations(session: nox.Session) -> None:
    """Check the Chinese catalogs and print per-page translation progress."""
    install(session, "tests")
    session.run("python", "-m", "tools.catalogs", success_codes=[0, 1])
    session.run("pytest", "tests/test_translations.py", *session.posargs)


@nox.session(python=PYTHON, venv_params=["--system-site-packages"])
def cuda(session: nox.Session) -> None:
    """On a GPU machine: record every example's CUDA sections, then run all tests on CUDA.

    Uses the machine's own torch (the venv sees the system site-packages; no torch is installed).
    Offline, point TORCH_PITFALLS_WHEELS at a folder of the test dependencies' wheels.
    Writes docs/cuda_recordings/<slug>.json: commit them.
    """
    wheels = os.environ.get("TORCH_PITFALLS_WHEELS")
    if wheels:
        session.env.update({"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": wheels})
    session.run("python", "-c", "import torch; assert torch.cuda.is_available(), 'no CUDA here'")
    session.install("-e", ".[tests]")
    session.run("python", "-m", "torch_pitfalls.recording", "examples")
    session.run("pytest", "--ignore=tests/browser", *session.posargs, env={"MPLBACKEND": "Agg"})


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff (lint and format) on the Python sources, sphinx-lint on the docs and examples."""
    # The linters need neither torch nor the project: install the pinned extra on its own.
    session.install(*optional_dependencies("lint"))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # sphinx-lint reads every catalog as reST; those of MyST pages hold MyST roles ({ref}`x`).
    myst_catalogs = [f"docs/locale/zh_CN/LC_MESSAGES/{page.stem}.po" for page in DOCS.glob("*.md")]
    ignored = ["docs/_build", "docs/auto_examples", *myst_catalogs]
    session.run("sphinx-lint", "docs", "examples", *(f"--ignore={path}" for path in ignored))


@nox.session(python=PYTHON)
def survey(session: nox.Session) -> None:
    """Measure the static checker on real code: every rule over the folders given, each finding
    against its hand-made label (tools/survey_labels.toml), each rule's false-alarm rate.

    ``nox -s survey -- ~/corpora/pytorch-image-models ~/corpora/examples``: the folders are the
    fetched codebases, named and at the commits the labels file gives (not in the repository).
    Fails on a finding without a label, or a default rule at 5 % false alarms or more
    (``python -m tools.survey``); ``--statistics`` of the checker gives the raw counts.
    """
    if not session.posargs:
        session.error("give the folders to survey: nox -s survey -- FOLDER...")
    # The checker needs neither torch nor any other dependency: the project alone.
    session.install("--no-deps", "-e", ".")
    session.run("python", "-m", "tools.survey", *session.posargs)


@nox.session(python=PYTHON)
def i18n(session: nox.Session) -> None:
    """Update the Chinese catalogs from the English source (changed messages turn fuzzy)."""
    install(session, "docs")
    session.run("sphinx-build", "-q", "-b", "gettext", str(DOCS), str(BUILD / "gettext"))
    session.run(
        "sphinx-intl",
        "update",
        "-p",
        str(BUILD / "gettext"),
        "-l",
        "zh_CN",
        "-d",
        str(DOCS / "locale"),
    )
    # A message changed beyond sphinx-intl's fuzzy matching keeps its old translation, as fuzzy;
    # and every catalog is written in the one form of the catalogs, polib's (lines wrapped at 78
    # columns), whatever width sphinx-intl wrote it with.
    session.run("python", "-m", "tools.catalogs", "--carry-over")
