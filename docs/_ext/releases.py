"""Run every example on several PyTorch releases and record how each page behaves on each.

Usage (``nox -s releases``; not part of ``nox -s bench`` nor of CI: it downloads several GB)::

    python docs/_ext/releases.py [--releases 2.4 2.6 ...] [--timeout SECONDS] [--keep-going]

For each release of :data:`RELEASES`, one at a time: make a fresh virtual environment in a
temporary folder outside the repository, install that release of PyTorch with the NumPy it
supports, Matplotlib and the project (``pip install --no-deps -e .``), run every example on the
CPU, each in a subprocess of its own (``python plot_<slug>.py`` in the example's folder, as
sphinx-gallery runs it, with ``MPLBACKEND=Agg`` and no GPU visible; each page seeds itself), then
delete the environment. The reference release (:data:`REFERENCE`, the release the site is built
with) is recorded first when its recording is missing: every other release is compared with it.

Writes ``docs/release_recordings/<release>.json``: the provenance (release, Python, NumPy, date,
machine, the command, the time taken and the disk used) and, per page, whether it ran, the
error that stopped it (the last lines of the traceback, as Python printed them), its output
(normalised: see :func:`normalise`) and the lines that differ from the reference's output.
Commit them; the docs build shows them (``release_matrix.py``) and ``tests/test_releases.py``
checks them.
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

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RECORDINGS = ROOT / "docs" / "release_recordings"

#: The releases measured, oldest first: label -> (pip requirement of torch, of NumPy).
#: The one list of them: the docs build, the tests and the README read it from here.
RELEASES: dict[str, tuple[str, str]] = {
    "2.4": ("torch==2.4.1", "numpy==2.0.2"),
    "2.6": ("torch==2.6.0", "numpy==2.4.6"),
    "2.8": ("torch==2.8.0", "numpy==2.4.6"),
    "2.10": ("torch==2.10.0", "numpy==2.4.6"),
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
    """Every page's example file, by slug."""
    return {
        path.stem.removeprefix("plot_").replace("_", "-"): path
        for path in sorted(EXAMPLES.glob("*/plot_*.py"))
    }


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


def relocate(line: str, version: str = "") -> str:
    """Source locations inside PyTorch, Python (``site-packages/torch/x.py:N``) and C++ (a
    warning's ``Triggered internally at <path>:N.``), without the line numbers and build paths;
    the version of PyTorch a page prints (``torch.__version__``) as ``<torch version>``."""
    if version:
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


def record(
    label: str,
    timeout: int,
    command: str,
    only: list[str] | None = None,
    environments: Path | None = None,
) -> dict:
    """Install one release in a fresh environment, run every example there, delete it.

    With ``only``, run those pages alone and replace them in the release's existing recording
    (after a page changed); the recording lists them under ``rerun`` with the command, the date
    and the machine (a float's last digits can differ between CPUs).
    With ``environments``, the environment is ``environments/<release>``, made only when missing
    and kept (for work on the pages; several GB each).
    """
    torch_req, numpy_req = RELEASES[label]
    reference = load(REFERENCE) if label != REFERENCE else None
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
            if reference is not None and slug in reference["pages"]:
                page["differs"] = differences(output, reference["pages"][slug]["output"])
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
    recording = {
        "release": label,
        "torch": versions[0],
        "requirements": [torch_req, numpy_req, *OTHER_REQUIREMENTS],
        "numpy": versions[1],
        "python": versions[2],
        "reference": REFERENCE,
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.system()} {platform.machine()}, {cpu_name()}, "
        f"{os.cpu_count()} CPUs, no GPU visible",
        "command": command,
        "install_seconds": installed_env["install_seconds"],
        "run_seconds": round(time.time() - installed),
        "disk_bytes": disk,
        "pages": pages,
    }
    if only:
        previous = load(label)
        if previous is None:
            raise SystemExit(f"--pages needs a recording of PyTorch {label} to update")
        previous["pages"].update(pages)
        previous.setdefault("rerun", []).append(
            {
                "pages": sorted(pages),
                "date": recording["date"],
                "machine": recording["machine"],
                "command": command,
            }
        )
        recording = previous
        pages = recording["pages"]
    RECORDINGS.mkdir(parents=True, exist_ok=True)
    path = RECORDINGS / f"{label}.json"
    path.write_text(json.dumps(recording, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    ran = sum(p["status"] == "ran" for p in pages.values())
    print(
        f"== PyTorch {label}: {ran}/{len(pages)} ran; installed in "
        f"{recording['install_seconds']} s ({disk / 1e9:.1f} GB), examples in "
        f"{recording['run_seconds']} s; wrote {path.relative_to(ROOT)}",
        flush=True,
    )
    return recording


def load(label: str) -> dict | None:
    """The recording of one release, or ``None``."""
    path = RECORDINGS / f"{label}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def rediff() -> list[str]:
    """Compare every recording's outputs with the reference's again (``differs``); rewrite.

    Releases may be recorded before the reference (two runs at once, or a new reference): the
    outputs are stored whole, so the comparison never needs the examples to run again.
    """
    reference = load(REFERENCE)
    changed = []
    if reference is None:
        return changed
    for page in reference["pages"].values():
        page["output"] = [
            relocate(line, reference["torch"])
            for line in page["output"]
            if not line.startswith(LIBRARY_LOGS)
        ]
    text = json.dumps(reference, indent=1, ensure_ascii=False) + "\n"
    path = RECORDINGS / f"{REFERENCE}.json"
    if text != path.read_text(encoding="utf-8"):
        path.write_text(text, encoding="utf-8")
        changed.append(REFERENCE)
    for path in sorted(RECORDINGS.glob("*.json")):
        if path.stem == REFERENCE:
            continue
        recording = json.loads(path.read_text(encoding="utf-8"))
        for slug, page in recording["pages"].items():
            page["output"] = [
                relocate(line, recording["torch"])
                for line in page["output"]
                if not line.startswith(LIBRARY_LOGS)
            ]
            if slug in reference["pages"]:
                page["differs"] = differences(page["output"], reference["pages"][slug]["output"])
        text = json.dumps(recording, indent=1, ensure_ascii=False) + "\n"
        if text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")
            changed.append(path.stem)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", nargs="+", choices=list(RELEASES), default=list(RELEASES))
    parser.add_argument(
        "--pages",
        nargs="+",
        metavar="SLUG",
        help="run only these pages and update them in the releases' existing recordings",
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
        "reference first when its recording is missing (compare later: --rediff)",
    )
    parser.add_argument(
        "--rediff",
        action="store_true",
        help="only compare the stored recordings with the reference's again (no install, no run)",
    )
    args = parser.parse_args(argv)
    if args.rediff:
        print("compared again:", ", ".join(rediff()) or "nothing changed")
        return 0
    command = "python docs/_ext/releases.py " + " ".join(sys.argv[1:] if argv is None else argv)
    todo = list(args.releases)
    if load(REFERENCE) is None and REFERENCE not in todo and not args.no_reference:
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
