"""Run every example on several PyTorch releases and record how each page behaves on each.

Usage (``nox -s releases``; not part of ``nox -s bench`` nor of CI: it downloads several GB)::

    PYTHONPATH=src python -m tools.releases [--releases 2.4 2.6 ...] [--pages SLUG ...]
        [--timeout SECONDS] [--keep-going] [--environments DIR [--install-only]] [--no-reference]
    PYTHONPATH=src python -m tools.releases --rediff
    PYTHONPATH=src python -m tools.releases --from-legacy docs/release_recordings/2.5.json ...

For each release of :data:`RELEASES`, one at a time: make a fresh virtual environment in a
temporary folder outside the repository, install that release of PyTorch with the NumPy it
supports, Matplotlib and the project (``pip install --no-deps -e .``), run every example on the
CPU, each in a subprocess of its own (``python plot_<slug>.py`` in the example's folder, as
sphinx-gallery runs it, with ``MPLBACKEND=Agg`` and no GPU visible; each page seeds itself), then
delete the environment. The reference release (:data:`REFERENCE`, the release the site is built
with) is recorded first when it has no run yet: every other release is compared with it.

Writes, in ``docs/release_recordings`` (:data:`RECORDINGS`), one file per page and one for the
runs, so that a new page adds one file:

- ``<slug>.json`` (:func:`recording_path`): ``{release: entry}``, releases in release order;
  an entry says whether the page ran (``status``, ``seconds``), the error that stopped it
  (``error``: the last lines of the traceback, as Python printed them; ``stderr_tail``), its
  output (normalised: see :func:`normalise`), the lines that differ from the reference's output
  (``differs``, on the other releases) and, when the page was re-run alone (``--pages``), when,
  where and how (``rerun``: date, machine, command; a float's last digits can differ between
  CPUs);
- ``_runs.json`` (:data:`RUNS`): ``{release: provenance}``, the last full run of each release:
  release, torch, requirements, NumPy, Python, reference, date, machine, command, the time taken
  (``install_seconds``, ``run_seconds``) and the disk used (``disk_bytes``).

A full run of a release replaces that release's entry in every page's file and in
``_runs.json``; ``--pages SLUG ...`` re-runs only those pages' entries; ``--rediff`` compares
the stored outputs with the reference's again. ``--from-legacy`` merges recordings of the
earlier layout (one ``<release>.json`` per release) into this one and deletes them.
Commit the files; the docs build shows them (``docs/_ext/pitfalls/releases_section.py``) and
``tests/test_releases.py`` checks them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from torch_pitfalls import catalog  # the catalog: standard library only, no environment needed

ROOT = Path(__file__).resolve().parents[1]

EXAMPLES = ROOT / "examples"
RECORDINGS = ROOT / "docs" / "release_recordings"
#: The provenance of each release's last full run: ``{release: {release, torch, ...}}``.
RUNS = RECORDINGS / "_runs.json"

#: The releases measured, oldest first: label -> (pip requirement of torch, of NumPy).
#: The one list of them: the docs build, the tests and the README read it from here.
RELEASES: dict[str, tuple[str, str]] = {
    "2.4": ("torch==2.4.1", "numpy==2.0.2"),
    "2.5": ("torch==2.5.1", "numpy==2.0.2"),
    "2.6": ("torch==2.6.0", "numpy==2.4.6"),
    "2.7": ("torch==2.7.1", "numpy==2.4.6"),
    "2.8": ("torch==2.8.0", "numpy==2.4.6"),
    "2.9": ("torch==2.9.1", "numpy==2.4.6"),
    "2.10": ("torch==2.10.0", "numpy==2.4.6"),
    "2.11": ("torch==2.11.0", "numpy==2.4.6"),
    "2.12": ("torch==2.12.1", "numpy==2.4.6"),
    "2.13": ("torch==2.13.0", "numpy==2.4.6"),
    "2.14": ("torch==2.14.1", "numpy==2.4.6"),
}

#: The release the site is built with (``torch==2.13.0`` in noxfile.py): the others' yardstick.
REFERENCE = "2.13"

#: Installed beside torch and NumPy: what the examples import besides them (pyproject's pin).
OTHER_REQUIREMENTS = ["matplotlib==3.11.2"]

TIMEOUT = 900  # seconds per example

MEASURED = "[measured]"
#: Lines that libraries under PyTorch log to the standard output on some releases only (Gloo's
#: "[Gloo] Rank 0 is connected to 0 peer ranks" on 2.8 and 2.10): not the page's output.
LIBRARY_LOGS = ("[Gloo] ",)
TORCH_CXX_SOURCE = re.compile(r"(Triggered internally at )[^)]*:\d+\.?\)")
TORCH_SOURCE = re.compile(r"(site-packages/torch/[\w/.]+\.py)[:\", line]+\d+")


def release_key(label: str) -> tuple[int, ...]:
    """``"2.10"`` -> ``(2, 10)``: releases sort by number, not by text."""
    return tuple(int(part) for part in label.split("."))


def examples() -> dict[str, Path]:
    """Every page's example file, by slug, in the catalog's reading order."""
    return {page.slug: page.example(EXAMPLES) for page in catalog.pages()}


def normalise(text: str, venv: str) -> list[str]:
    """The output lines that can be compared between releases and runs.

    Drops the lines tagged ``[measured]`` (times, memory), the logs of :data:`LIBRARY_LOGS` and
    blank lines, replaces the temporary
    environment's path by ``<venv>`` and the repository's by ``<repo>``, and the line numbers of
    source locations inside PyTorch (``.../site-packages/torch/....py:NNN``) by ``N``.
    """
    lines = []
    for line in text.splitlines():
        if not line.strip() or line.startswith((MEASURED, *LIBRARY_LOGS)):
            continue
        line = line.replace(venv, "<venv>").replace(str(ROOT), "<repo>")
        lines.append(relocate(line))
    return lines


#: How the label of a recorded CUDA section starts (torch_pitfalls.recording prints it).
RECORDED_LABEL = "[Recorded on "


def relocate(line: str, version: str = "") -> str:
    """Source locations inside PyTorch, Python (``site-packages/torch/x.py:N``) and C++ (a
    warning's ``Triggered internally at <path>:N.``), without the line numbers and build paths;
    the version of PyTorch a page prints (``torch.__version__``) as ``<torch version>``, except
    in the label of a recorded CUDA section (``[Recorded on … PyTorch 2.11.0+cu130 …``), whose
    version is the recording's, whatever release runs the page.

    >>> relocate("torch 2.11.0+cu130 on cpu", "2.11.0+cu130")
    'torch <torch version> on cpu'
    >>> relocate("[Recorded on H200 (PyTorch 2.11.0+cu130), 2026-11-30]", "2.11.0+cu130")
    '[Recorded on H200 (PyTorch 2.11.0+cu130), 2026-11-30]'
    """
    if version and not line.startswith(RECORDED_LABEL):
        line = line.replace(version, "<torch version>")
    line = TORCH_SOURCE.sub(lambda m: m.group(0).rstrip("0123456789") + "N", line)
    return TORCH_CXX_SOURCE.sub(r"\1<PyTorch's C++ source>)", line)


WARNING_LINE = re.compile(r"^\S.*:\d+: \w*Warning: ")


def error_of(stderr: str, venv: str, frames: int = 2, message: int = 8) -> str:
    """Where and how the example stopped, as Python printed it.

    The last traceback's innermost ``frames`` frames (``File ...`` and its source line) and the
    exception (its first ``message`` lines); warnings printed after it (a temporary directory
    cleaned up at exit) are left out. Without a traceback (a timeout, a crash): the last lines.
    """
    kept = normalise(stderr, venv)
    starts = [i for i, line in enumerate(kept) if line.startswith("Traceback (most recent call")]
    if not starts:
        return "\n".join(kept[-message:])
    block = kept[starts[-1] + 1 :]
    body = next((i for i, line in enumerate(block) if not line.startswith(" ")), len(block))
    frame_lines = [i for i in range(body) if block[i].lstrip().startswith("File ")]
    first = frame_lines[-frames] if len(frame_lines) >= frames else 0
    exception = []
    for line in block[body:]:
        if WARNING_LINE.match(line) or len(exception) == message:
            break
        exception.append(line)
    return "\n".join(block[first:body] + exception)


def differences(output: list[str], reference: list[str]) -> list[str]:
    """The lines of ``output`` that the reference lacks (``+``) and the reverse (``-``)."""
    return [
        line
        for line in difflib.unified_diff(reference, output, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def disk_usage(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("$", " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def install(label: str, venv: Path) -> dict:
    """Make ``venv`` and install one release of PyTorch, its NumPy, Matplotlib and the project.

    Returns what the recording's provenance says of it (seconds taken, bytes on disk, date); it
    is also written to ``venv/installed.json``, so that a kept environment (``--environments``)
    is reused only when it holds the same requirements.
    """
    torch_req, numpy_req = RELEASES[label]
    requirements = [torch_req, numpy_req, *OTHER_REQUIREMENTS]
    marker = venv / "installed.json"
    if marker.exists():
        done = json.loads(marker.read_text(encoding="utf-8"))
        if done.get("requirements") == requirements:
            print(f"== PyTorch {label}: reusing {venv} (installed {done['date']})", flush=True)
            return done
        shutil.rmtree(venv)
    started = time.time()
    run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q", "--no-cache-dir"]
    run([*pip, *requirements])
    run([*pip, "--no-deps", "-e", str(ROOT)])
    done = {
        "requirements": requirements,
        "install_seconds": round(time.time() - started),
        "disk_bytes": disk_usage(venv),
        "date": dt.date.today().isoformat(),
    }
    marker.write_text(json.dumps(done) + "\n", encoding="utf-8")
    return done


def recording_path(slug: str) -> Path:
    """The file of one page's recordings: the one place a slug becomes a recording's file name
    (its reverse is :func:`page_recordings`).

    >>> recording_path("data-vs-detach").relative_to(ROOT).as_posix()
    'docs/release_recordings/data-vs-detach.json'
    """
    return RECORDINGS / f"{slug}.json"


LEGACY_NAME = re.compile(r"\d+(\.\d+)+")


def legacy_files() -> list[Path]:
    """Recordings of the earlier layout (``<release>.json``, one per release) still in
    :data:`RECORDINGS`: merge them with ``--from-legacy``."""
    return sorted(p for p in RECORDINGS.glob("*.json") if LEGACY_NAME.fullmatch(p.stem))


def page_recordings() -> dict[str, dict[str, dict]]:
    """Every page's recordings: slug -> release -> entry, from every ``<slug>.json``.

    Includes the files of pages that no longer exist (the tests report them); leaves out
    ``_runs.json`` and the legacy files (:func:`legacy_files`).
    """
    legacy = set(legacy_files())
    return {
        path.stem: _read(path)
        for path in sorted(RECORDINGS.glob("*.json"))
        if not path.name.startswith("_") and path not in legacy
    }


def load_page(slug: str) -> dict[str, dict]:
    """One page's recordings, release -> entry (empty when the page has none)."""
    path = recording_path(slug)
    return _read(path) if path.exists() else {}


def runs() -> dict[str, dict]:
    """The provenance of each release's last full run (``_runs.json``), in release order."""
    return _read(RUNS) if RUNS.exists() else {}


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, by_release: dict[str, dict]) -> bool:
    """Write ``{release: ...}`` in release order; ``False`` when the file already says that."""
    ordered = {label: by_release[label] for label in sorted(by_release, key=release_key)}
    text = json.dumps(ordered, indent=1, ensure_ascii=False) + "\n"
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    RECORDINGS.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True


def store(label: str, entries: dict[str, dict], run: dict | None) -> None:
    """Put one release's ``entries`` (slug -> entry) into the pages' files and, for a full run,
    its provenance ``run`` into ``_runs.json`` (both replace what that release had there)."""
    for slug, entry in entries.items():
        recorded = load_page(slug)
        recorded[label] = entry
        _write(recording_path(slug), recorded)
    if run is not None:
        recorded_runs = runs()
        recorded_runs[label] = run
        _write(RUNS, recorded_runs)


def machine() -> str:
    return (
        f"{platform.system()} {platform.machine()}, {cpu_name()}, "
        f"{os.cpu_count()} CPUs, no GPU visible"
    )


def record(
    label: str,
    timeout: int,
    command: str,
    only: list[str] | None = None,
    environments: Path | None = None,
) -> dict:
    """Install one release in a fresh environment, run every example there, delete it.

    Replaces that release's entry in every page's file and in ``_runs.json``. With ``only``,
    runs those pages alone and replaces their entries only (after a page changed, or for a new
    page); each entry says under ``rerun`` when, where and how (the run's provenance in
    ``_runs.json`` stays that of the last full run, so the versions must be the same).
    With ``environments``, the environment is ``environments/<release>``, made only when missing
    and kept (for work on the pages; several GB each). Returns the run's provenance.
    """
    torch_req, numpy_req = RELEASES[label]
    previous_run = runs().get(label)
    if only and previous_run is None:
        raise SystemExit(
            f"--pages needs a full run of PyTorch {label} in {RUNS.relative_to(ROOT)}: "
            f"record it first (--releases {label})"
        )
    where = environments if environments is not None else Path(tempfile.gettempdir())
    where.mkdir(parents=True, exist_ok=True)
    free_before = shutil.disk_usage(where).free
    print(f"== PyTorch {label}: {free_before / 1e9:.0f} GB free in {where}")
    with tempfile.TemporaryDirectory(prefix=f"torch-pitfalls-{label}-") as tmp:
        venv = (environments / label) if environments is not None else Path(tmp) / "venv"
        installed_env = install(label, venv)
        python = str(venv / "bin" / "python")
        installed = time.time()
        disk = installed_env["disk_bytes"]
        versions = subprocess.run(
            [
                python,
                "-c",
                "import sys, torch, numpy; print(torch.__version__, numpy.__version__,"
                " sys.version.split()[0])",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        if only:
            was = [previous_run[field] for field in ("torch", "numpy", "python")]
            if versions != was:
                raise SystemExit(
                    f"PyTorch {label}: this environment has torch, NumPy, Python {versions}, "
                    f"the full run in {RUNS.name} had {was}: record the release in full"
                )
        pages = {}
        for slug, path in examples().items():
            if only and slug not in only:
                continue
            env = {
                **os.environ,
                "MPLBACKEND": "Agg",
                "CUDA_VISIBLE_DEVICES": "",
                "TORCH_PITFALLS_EXAMPLE": slug,
                "PYTHONWARNINGS": "default",
            }
            env.pop("PYTHONPATH", None)
            page_started = time.time()
            try:
                done = subprocess.run(
                    [python, path.name],
                    cwd=path.parent,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
                status = "ran" if done.returncode == 0 else "failed"
                stdout, stderr = done.stdout, done.stderr
            except subprocess.TimeoutExpired as err:
                status = "failed"
                stdout = (err.stdout or b"").decode(errors="replace")
                stderr = f"TimeoutExpired: still running after {timeout} s"
            output = [relocate(line, versions[0]) for line in normalise(stdout, str(venv))]
            page = {"status": status, "seconds": round(time.time() - page_started, 1)}
            if status == "failed":
                page["error"] = error_of(stderr, str(venv))
                page["stderr_tail"] = normalise(stderr, str(venv))[-40:]
            page["output"] = output
            reference = load_page(slug).get(REFERENCE) if label != REFERENCE else None
            if reference is not None:
                page["differs"] = differences(output, reference["output"])
            pages[slug] = page
            print(
                f"  {slug}: {status} ({page['seconds']} s)"
                + (f" — {page['error'].splitlines()[-1]}" if status == "failed" else "")
                + (
                    f", {len(page.get('differs', []))} line(s) differ"
                    if page.get("differs")
                    else ""
                ),
                flush=True,
            )
    today = dt.date.today().isoformat()
    run = {
        "release": label,
        "torch": versions[0],
        "requirements": [torch_req, numpy_req, *OTHER_REQUIREMENTS],
        "numpy": versions[1],
        "python": versions[2],
        "reference": REFERENCE,
        "date": today,
        "machine": machine(),
        "command": command,
        "install_seconds": installed_env["install_seconds"],
        "run_seconds": round(time.time() - installed),
        "disk_bytes": disk,
    }
    if only:
        for page in pages.values():
            page["rerun"] = {"date": today, "machine": run["machine"], "command": command}
        run = previous_run
    store(label, pages, None if only else run)
    ran = sum(p["status"] == "ran" for p in pages.values())
    print(
        f"== PyTorch {label}: {ran}/{len(pages)} ran; installed in "
        f"{installed_env['install_seconds']} s ({disk / 1e9:.1f} GB), examples in "
        f"{round(time.time() - installed)} s; wrote {len(pages)} page(s) in "
        f"{RECORDINGS.relative_to(ROOT)}" + ("" if only else f" and {RUNS.name}"),
        flush=True,
    )
    return run


def from_legacy(recording: dict) -> tuple[dict, dict[str, dict]]:
    """Split a recording of the earlier layout (one file per release: provenance, ``pages`` and
    ``rerun``) into the run's provenance and the pages' entries; a page listed in ``rerun`` gets
    the last re-run's date, machine and command.

    >>> run, entries = from_legacy({
    ...     "release": "2.5", "torch": "2.5.1", "date": "2026-12-01", "machine": "m",
    ...     "command": "full",
    ...     "pages": {"a": {"status": "ran", "output": []}, "b": {"status": "ran", "output": []}},
    ...     "rerun": [{"pages": ["b"], "date": "2026-12-02", "machine": "m", "command": "once"},
    ...               {"pages": ["b"], "date": "2026-12-03", "machine": "m", "command": "again"}],
    ... })
    >>> run
    {'release': '2.5', 'torch': '2.5.1', 'date': '2026-12-01', 'machine': 'm', 'command': 'full'}
    >>> entries["a"]
    {'status': 'ran', 'output': []}
    >>> entries["b"]["rerun"]
    {'date': '2026-12-03', 'machine': 'm', 'command': 'again'}
    """
    run = {key: value for key, value in recording.items() if key not in ("pages", "rerun")}
    entries = {slug: dict(page) for slug, page in recording["pages"].items()}
    for rerun in recording.get("rerun", []):
        for slug in rerun["pages"]:
            if slug in entries:
                entries[slug]["rerun"] = {
                    key: value for key, value in rerun.items() if key != "pages"
                }
    return run, entries


def merge_legacy(paths: list[Path]) -> list[str]:
    """Merge recordings of the earlier layout into the pages' files and ``_runs.json``, then
    delete them; returns the releases merged.

    Each file replaces its release's entries (as a full run would). Merging the same file again
    gives the same files; a file already merged (and so deleted) is skipped with a note.
    """
    merged = []
    for path in paths:
        if not path.exists():
            print(f"{path}: not found (already merged?), skipped")
            continue
        recording = _read(path)
        if not {"release", "pages"} <= set(recording):
            raise SystemExit(f"{path}: not a recording of the earlier layout (release, pages)")
        run, entries = from_legacy(recording)
        label = run["release"]
        if label not in RELEASES:
            raise SystemExit(f"{path}: PyTorch {label} is not listed in RELEASES")
        store(label, entries, run)
        merged.append(label)
        path.unlink()
        print(f"{path}: PyTorch {label}, {len(entries)} page(s) merged; deleted", flush=True)
    return merged


def rediff() -> list[str]:
    """Compare every recorded output with the reference's again (``differs``); rewrite.

    Releases may be recorded before the reference (two runs at once, or a new reference): the
    outputs are stored whole, so the comparison never needs the examples to run again. A page
    with no recording on the reference has no ``differs``. Returns the pages whose file changed.
    """
    versions = {label: run["torch"] for label, run in runs().items()}
    changed = []
    for slug, recorded in page_recordings().items():
        for label, page in recorded.items():
            page["output"] = [
                relocate(line, versions.get(label, ""))
                for line in page["output"]
                if not line.startswith(LIBRARY_LOGS)
            ]
        reference = recorded.get(REFERENCE)
        for label, page in recorded.items():
            if label == REFERENCE:
                continue
            page.pop("differs", None)
            if reference is not None:
                page["differs"] = differences(page["output"], reference["output"])
            if "rerun" in page:  # keep the entry's field order: rerun last
                page["rerun"] = page.pop("rerun")
        if _write(recording_path(slug), recorded):
            changed.append(slug)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", nargs="+", choices=list(RELEASES), default=list(RELEASES))
    parser.add_argument(
        "--pages",
        nargs="+",
        metavar="SLUG",
        help="run only these pages and replace their entries for the releases (each release "
        "needs a full run in _runs.json)",
    )
    parser.add_argument("--timeout", type=int, default=TIMEOUT, help="seconds per example")
    parser.add_argument(
        "--environments",
        type=Path,
        metavar="DIR",
        help="keep each release's environment in DIR/<release> and reuse it (not deleted)",
    )
    parser.add_argument(
        "--install-only",
        action="store_true",
        help="with --environments: only make the environments (no example runs)",
    )
    parser.add_argument(
        "--keep-going", action="store_true", help="on to the next release when one fails to install"
    )
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="do not record the "
        "reference first when it has no full run yet (compare later: --rediff)",
    )
    parser.add_argument(
        "--rediff",
        action="store_true",
        help="only compare the stored recordings with the reference's again (no install, no run)",
    )
    parser.add_argument(
        "--from-legacy",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="merge recordings of the earlier layout (docs/release_recordings/<release>.json, one "
        "per release) into the pages' files and _runs.json, delete them, then --rediff",
    )
    args = parser.parse_args(argv)
    if args.from_legacy:
        merged = merge_legacy(args.from_legacy)
        print("merged:", ", ".join(merged) or "nothing")
        print("compared again:", ", ".join(rediff()) or "nothing changed")
        return 0
    if args.rediff:
        print("compared again:", ", ".join(rediff()) or "nothing changed")
        return 0
    if args.pages:
        unknown = sorted(set(args.pages) - set(examples()))
        if unknown:
            parser.error(f"--pages: no example for {unknown}")
    command = "python -m tools.releases " + " ".join(sys.argv[1:] if argv is None else argv)
    todo = list(args.releases)
    if REFERENCE not in runs() and REFERENCE not in todo and not args.no_reference:
        todo.insert(0, REFERENCE)
    todo.sort(key=lambda label: label != REFERENCE)  # the reference first
    failed = []
    if args.install_only:
        if args.environments is None:
            parser.error("--install-only needs --environments DIR")
        for label in args.releases:
            install(label, args.environments / label)
        return 0
    for label in todo:
        try:
            record(label, args.timeout, command.strip(), args.pages, args.environments)
        except subprocess.CalledProcessError as err:
            failed.append(label)
            print(f"== PyTorch {label}: not recorded ({err})", flush=True)
            if not args.keep_going:
                break
    rediff()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
