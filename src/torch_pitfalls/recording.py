"""CUDA sections of a page: live on a GPU, shown from a recorded transcript everywhere else.

Most builds of the site have no GPU. A page wraps each CUDA-only part in
:func:`~torch_pitfalls.cuda_section`:

.. code-block:: python

    with cuda_section(device, "the device-side assert") as live:
        if live:
            ...  # CUDA code; what it prints is the section's output

On CUDA the block runs and its output is shown as usual; with ``TORCH_PITFALLS_RECORD=1``
(``nox -s cuda``) it is also written to the page's transcript, ``docs/cuda_recordings/<slug>.json``,
with the GPU's name, the driver, CUDA and PyTorch versions and the date. Without CUDA the block
is skipped and the recorded output is printed instead, between a line that says where and when
it was recorded and a closing line — or, when none exists, a plain statement that the part did
not run. The docs build shows each recording in a box of its own with a label in the page's
language (:func:`split_recordings`, :func:`recording_label`). Introduced on "index-select";
every page with a CUDA-only part uses it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from torch_pitfalls import catalog

RECORD_ENV = "TORCH_PITFALLS_RECORD"
"""Set to ``1`` to write the output of every live CUDA section to its page's transcript."""

RECORDINGS_ENV = "TORCH_PITFALLS_RECORDINGS"
"""Folder of the transcripts; default: ``docs/cuda_recordings`` of the source tree."""


def recordings_dir() -> Path:
    """The folder that holds the transcripts (``docs/cuda_recordings`` unless overridden)."""
    override = os.environ.get(RECORDINGS_ENV, "").strip()
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "docs" / "cuda_recordings"


@dataclass
class Section:
    """One CUDA section of a page, as :func:`~torch_pitfalls.cuda_section` yields it.

    Attributes:
        slug: the page's slug.
        name: the section's name, unique on its page (``str``).
        live: ``True`` when the block runs on CUDA in this process.
        measured: its numbers are measurements (times, memory) that vary from run to run.
        output: what the block printed (``str``), once it has ended; ``""`` when not live.
    """

    slug: str
    name: str
    live: bool
    measured: bool = False
    output: str = ""

    def __bool__(self) -> bool:
        return self.live


#: Every live section run in this process, by (slug, name): the staleness test reads it.
LIVE: dict[tuple[str, str], Section] = {}


EXAMPLE_ENV = "TORCH_PITFALLS_EXAMPLE"
"""Slug of the example being run, set by the docs build (sphinx-gallery has no ``__file__``)."""


def _slug_of_caller(depth: int = 3) -> str:
    slug = catalog.slug_of(sys._getframe(depth).f_globals.get("__file__", ""))
    if slug:
        return slug
    if os.environ.get(EXAMPLE_ENV):
        return os.environ[EXAMPLE_ENV]
    raise ValueError("cuda_section needs slug= outside an example file (plot_<slug>.py)")


def environment() -> dict[str, str]:
    """GPU name, driver, CUDA and PyTorch versions and today's date, for a transcript header."""
    driver = "unknown"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        driver = subprocess.run(query, capture_output=True, text=True, timeout=30).stdout
        driver = driver.strip().splitlines()[0] if driver.strip() else "unknown"
    return {
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "none",
        "driver": driver,
        "cuda": str(torch.version.cuda),
        "torch": torch.__version__,
        "date": _dt.date.today().isoformat(),
    }


def load_transcript(slug: str) -> dict | None:
    """The recorded transcript of a page, or ``None`` when there is none.

    Raises:
        ValueError: the file exists but is not a transcript (bad JSON or missing keys).
    """
    path = recordings_dir() / f"{slug}.json"
    if not path.exists():
        return None
    try:
        transcript = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON: {err}") from None
    missing = {"gpu", "driver", "cuda", "torch", "date", "sections"} - set(transcript)
    if missing:
        raise ValueError(f"{path} lacks {sorted(missing)}")
    return transcript


def save_section(section: Section, env: dict[str, str] | None = None) -> Path:
    """Write one live section into its page's transcript (the header is refreshed)."""
    path = recordings_dir() / f"{section.slug}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    transcript = load_transcript(section.slug) or {"sections": {}}
    transcript.update(env or environment())
    transcript["sections"][section.name] = {"measured": section.measured, "output": section.output}
    path.write_text(json.dumps(transcript, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


RECORDED_HEADER = re.compile(
    r"^\[Recorded on (?P<gpu>.+) \(driver (?P<driver>[^,]*), CUDA (?P<cuda>[^,]*), "
    r"PyTorch (?P<torch>[^)]*)\), (?P<date>[^;]*); not run in this build, which has no GPU\. "
    r"Recorded output:\]$",
    re.MULTILINE,
)
"""The line that opens a recorded output (:func:`recorded_header`); the docs build finds it."""

RECORDED_END = "[End of the recorded output.]"
"""The line that closes a recorded output."""

NOT_RUN = re.compile(
    r"^\[Not run in this build: (?P<name>.+) needs CUDA, and no GPU was available\. "
    r"No recording of it exists yet\.\]$",
    re.MULTILINE,
)
"""The line printed for a CUDA section that neither ran nor has a recording."""


def recorded_header(transcript: dict) -> str:
    """The line that opens a recorded output: where and when it was recorded.

    A script run on a machine without CUDA prints it, then the recording, then
    :data:`RECORDED_END`. The docs build turns the three into a box of its own, labelled in the
    page's language (:func:`recording_label`), so that no recording shares a block with live
    output.

    >>> h = {"gpu": "NVIDIA H200", "driver": "570.1", "cuda": "12.8", "torch": "2.13.0",
    ...      "date": "2026-11-29"}
    >>> print(recorded_header(h))  # doctest: +ELLIPSIS
    [Recorded on NVIDIA H200 (driver 570.1, CUDA 12.8, PyTorch 2.13.0), 2026-11-29; not run ...]
    """
    return (
        f"[Recorded on {transcript['gpu']} (driver {transcript['driver']}, CUDA "
        f"{transcript['cuda']}, PyTorch {transcript['torch']}), {transcript['date']}; "
        "not run in this build, which has no GPU. Recorded output:]"
    )


def not_run_line(name: str) -> str:
    """The line printed for a CUDA section without a recording, on a machine without CUDA."""
    return (
        f"[Not run in this build: {name} needs CUDA, and no GPU was available. "
        "No recording of it exists yet.]"
    )


RECORDING_LABELS = {
    "en": (
        "Recorded on {gpu} (driver {driver}, CUDA {cuda}, PyTorch {torch}), {date}; "
        "not re-run in this build, which has no GPU."
    ),
    "zh_CN": (
        "录制于 {gpu}（驱动 {driver}，CUDA {cuda}，PyTorch {torch}），{date}；"
        "本次构建没有 GPU，未重新运行。"
    ),
}
NOT_RUN_LABELS = {
    "en": "Not run in this build: this part needs CUDA, no GPU was available, "
    "and no recording of it exists yet.",
    "zh_CN": "本次构建未运行这一部分：它需要 CUDA，而构建时没有 GPU，目前也还没有它的录制结果。",
}


def recording_label(header: dict, language: str = "en") -> str:
    """The label of a recorded output's box on a page, in the page's language.

    Args:
        header: the recording's ``gpu``, ``driver``, ``cuda``, ``torch`` and ``date`` (``str``
            each), as in a transcript or as :data:`RECORDED_HEADER` reads them back.
        language: ``"en"`` or ``"zh_CN"``.

    Raises:
        ValueError: ``language`` is not a site language.

    >>> h = {"gpu": "NVIDIA H200", "driver": "570.1", "cuda": "12.8", "torch": "2.11.0",
    ...      "date": "2026-11-29"}
    >>> print(recording_label(h, "zh_CN"))  # doctest: +ELLIPSIS
    录制于 NVIDIA H200（驱动 570.1，CUDA 12.8，PyTorch 2.11.0），2026-11-29；...
    """
    if language not in RECORDING_LABELS:
        raise ValueError(f"language must be one of {tuple(RECORDING_LABELS)}, got {language!r}")
    return RECORDING_LABELS[language].format(**header)


def split_recordings(text: str) -> list[tuple[str, str, dict]]:
    r"""Cut a cell's printed output into live parts, recorded outputs and parts that did not run.

    Returns:
        ``(kind, text, header)`` triples in order: ``kind`` is ``"live"``, ``"recorded"`` or
        ``"not-run"``; ``header`` holds the recording's fields (empty for the other kinds).
        Empty live parts are left out.

    Raises:
        ValueError: a recorded output is not closed by :data:`RECORDED_END`.

    >>> parts = split_recordings(
    ...     "before\n" + recorded_header({"gpu": "G", "driver": "1", "cuda": "2", "torch": "3",
    ...                                   "date": "d"}) + "\n42\n" + RECORDED_END + "\nafter\n")
    >>> [(kind, text) for kind, text, _ in parts]
    [('live', 'before\n'), ('recorded', '42\n'), ('live', 'after\n')]
    """
    parts: list[tuple[str, str, dict]] = []
    position = 0
    while True:
        opened, missing = RECORDED_HEADER.search(text, position), NOT_RUN.search(text, position)
        found = min((m for m in (opened, missing) if m), key=lambda m: m.start(), default=None)
        if found is None:
            break
        if text[position : found.start()].strip():
            parts.append(("live", text[position : found.start()], {}))
        if found is missing:
            parts.append(("not-run", found["name"], {}))
            position = found.end() + 1
            continue
        end = text.find(RECORDED_END, found.end())
        if end < 0:
            raise ValueError(f"a recorded output is not closed by {RECORDED_END!r}")
        header = {key: found[key] for key in ("gpu", "driver", "cuda", "torch", "date")}
        parts.append(("recorded", text[found.end() + 1 : end], header))
        position = end + len(RECORDED_END) + 1
    if text[position:].strip():
        parts.append(("live", text[position:], {}))
    return parts


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self):
        for stream in self.streams:
            stream.flush()


@contextlib.contextmanager
def cuda_section(
    device: torch.device | str, name: str, *, measured: bool = False, slug: str | None = None
) -> Iterator[Section]:
    """A CUDA-only part of a page: run it live on CUDA, else show its recording.

    Args:
        device: the page's device (from :func:`~torch_pitfalls.get_device`).
        name: what the section shows, unique on its page, e.g. ``"the device-side assert"``.
        measured: its numbers are times or memory; the staleness test compares them as ratios.
        slug: the page's slug; by default taken from the calling ``plot_<slug>.py``.

    Yields:
        A :class:`~torch_pitfalls.recording.Section`, true when the block must run (on CUDA).

    Raises:
        ValueError: ``name`` is empty, or the slug cannot be found.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError("a CUDA section needs a non-empty name")
    slug = slug or _slug_of_caller()
    live = torch.device(device).type == "cuda"
    section = Section(slug, name, live, measured)
    if not live:
        yield section
        transcript = load_transcript(slug)
        recorded = (transcript or {}).get("sections", {}).get(name)
        if recorded is None:
            print(not_run_line(name))
        else:
            print(recorded_header(transcript))
            output = recorded["output"]
            print(output, end="" if output.endswith("\n") or not output else "\n")
            print(RECORDED_END)
        return
    captured = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, captured)):
        yield section
    section.output = captured.getvalue()
    LIVE[(slug, name)] = section
    if os.environ.get(RECORD_ENV) == "1":
        save_section(section)


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def stale_differences(
    recorded: str, live: str, *, measured: bool, tolerance: float = 3.0
) -> list[str]:
    """How a live output differs from its recording; empty when the recording is current.

    Text must match exactly once numbers are set aside. Numbers must be equal, except in a
    measured section, where each live number must be within a factor ``tolerance`` of the
    recorded one (times and memory vary between runs and machines; a factor of 3 still catches a
    behaviour that changed, such as a ratio that flipped from 10× to 1×).

    Args:
        recorded: the recorded output (``str``).
        live: the output of this run (``str``).
        measured: compare numbers as ratios.
        tolerance: the largest accepted factor between a live and a recorded number (> 1).

    Returns:
        A list of human-readable differences (``list`` of ``str``).

    >>> stale_differences("took 2.0 ms, 4× faster", "took 3.1 ms, 5× faster", measured=True)
    []
    >>> stale_differences("error: out of range", "error: fine", measured=False)
    ["text differs: 'error: out of range' != 'error: fine'"]
    """
    if not tolerance > 1:
        raise ValueError(f"tolerance must be > 1, got {tolerance!r}")
    text_recorded, text_live = NUMBER.sub("#", recorded), NUMBER.sub("#", live)
    if text_recorded != text_live:
        return [f"text differs: {recorded.strip()[:200]!r} != {live.strip()[:200]!r}"]
    problems = []
    for old, new in zip(NUMBER.findall(recorded), NUMBER.findall(live), strict=True):
        a, b = float(old), float(new)
        if not measured:
            if a != b:
                problems.append(f"{old} became {new}")
        elif (a == 0) != (b == 0) or (a and not 1 / tolerance <= b / a <= tolerance):
            problems.append(f"measured {old} became {new} (beyond ×{tolerance})")
    return problems


def _examples_to_record(examples: Path, only: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The example files under ``examples`` named by ``only`` (paths or slugs), or all of them.

    Raises:
        ValueError: a name is neither an example file nor the slug of one.
    """
    paths = sorted(examples.glob("*/plot_*.py"))
    if not only:
        return paths
    by_slug = {catalog.slug_of(path): path for path in paths}
    chosen: list[Path] = []
    unknown: list[str] = []
    for name in only:
        for candidate in (Path(name), examples / name):
            if candidate.is_file() and catalog.slug_of(candidate):
                path = candidate
                break
        else:
            path = by_slug.get(catalog.slug_of(name) or str(name).strip())
        if path is None:
            unknown.append(str(name))
        elif path.resolve() not in {p.resolve() for p in chosen}:
            chosen.append(path)
    if unknown:
        raise ValueError(f"not an example file nor the slug of one under {examples}: {unknown}")
    return chosen


def _run_example(path: Path, env: dict[str, str], timeout: float) -> tuple[int, str]:
    """Run one example as ``python plot_<slug>.py`` in its own folder; its exit status and
    standard error. A run past ``timeout`` is killed with everything it started."""
    child = subprocess.Popen(
        [sys.executable, path.name],
        cwd=path.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,  # its own process group: a timeout kills its workers and ranks too
    )
    try:
        _, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        _, stderr = child.communicate()
        return -signal.SIGKILL, f"{stderr}\n[killed after {timeout} s]\n"
    finally:
        if child.poll() is None:  # an interruption (Ctrl-C) while waiting: leave nothing behind
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    return child.returncode, stderr


#: Lines of each failing example's standard error that the final error repeats.
FAILURE_LINES = 30


def record_examples(
    examples: Path, only: Sequence[str | os.PathLike[str]] = (), *, timeout: float = 900.0
) -> int:
    """Run the examples on CUDA, each in a fresh Python process, recording their CUDA sections
    (``nox -s cuda``; ``python -m torch_pitfalls.recording examples [path or slug ...]``).

    Each example runs as ``python plot_<slug>.py`` in its own folder (as the docs build runs it),
    with this process's environment plus ``TORCH_PITFALLS_RECORD=1``,
    ``TORCH_PITFALLS_DEVICE=cuda`` and ``MPLBACKEND=Agg`` (and this copy of
    :mod:`torch_pitfalls` first on ``PYTHONPATH``), so that no example inherits the CUDA state,
    the autograd engine's threads or the memory of another. Its transcript is deleted first, so
    that no stale section survives.

    Args:
        examples: the folder of the examples (the repository's ``examples/``).
        only: the examples to record, as paths of their files or their slugs; all when empty (a
            short GPU session can re-record the ones that failed).
        timeout: seconds (``float`` > 0) an example may run before it is killed, with the
            processes it started.

    Returns:
        The number of examples run (``int``).

    Raises:
        RuntimeError: CUDA is not available; or, once every example has been tried, some failed:
            the message names each one with its exit status and the end of its standard error
            (the whole of it is printed to standard error as soon as it fails), so that one GPU
            session shows every failure.
        ValueError: a name of ``only`` is neither an example file nor the slug of one.
    """
    if not torch.cuda.is_available():
        raise RuntimeError("recording CUDA transcripts needs CUDA, which is not available")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    examples = Path(examples)
    paths = _examples_to_record(examples, only)
    package = str(Path(__file__).resolve().parents[1])  # this torch_pitfalls, in every example
    env = {
        **os.environ,
        RECORD_ENV: "1",
        "TORCH_PITFALLS_DEVICE": "cuda",
        "MPLBACKEND": "Agg",
        "PYTHONPATH": os.pathsep.join([package, *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    failed: list[tuple[str, int, str]] = []
    for path in paths:
        try:
            shown = path.resolve().relative_to(examples.resolve())
        except ValueError:  # a file named by its path, outside the examples' folder
            shown = path
        print(f"recording {shown}", flush=True)
        slug = catalog.slug_of(path)
        (recordings_dir() / f"{slug}.json").unlink(missing_ok=True)  # no stale sections survive
        code, stderr = _run_example(path, env, timeout)
        if code != 0:
            print(f"{slug} failed (exit status {code}):\n{stderr}", file=sys.stderr, flush=True)
            failed.append((slug, code, stderr))
    if failed:
        report = []
        for slug, code, stderr in failed:
            lines = stderr.rstrip().splitlines()
            cut = ["..."] if len(lines) > FAILURE_LINES else []
            tail = "\n".join(f"    {line}" for line in cut + lines[-FAILURE_LINES:])
            report.append(f"{slug} (exit status {code}):\n{tail}")
        raise RuntimeError(
            f"{len(failed)} of {len(paths)} examples failed on CUDA: "
            f"{[slug for slug, _, _ in failed]}\n" + "\n".join(report)
        )
    return len(paths)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m torch_pitfalls.recording [examples] [path or slug ...] [--timeout SECONDS]``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m torch_pitfalls.recording",
        description="Run the examples on CUDA, each in a fresh process, and record their CUDA "
        "sections.",
    )
    parser.add_argument("examples", nargs="?", default="examples", help="the examples' folder")
    parser.add_argument(
        "only", nargs="*", help="record only these examples (paths of their files, or slugs)"
    )
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="seconds an example may run (default 900)"
    )
    arguments = parser.parse_args(argv)
    count = record_examples(Path(arguments.examples), arguments.only, timeout=arguments.timeout)
    print(f"recorded the CUDA sections of {count} examples into {recordings_dir()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
