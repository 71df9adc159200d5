"""CUDA sections: recorded transcripts shown on CPU builds, and kept current on GPU builds.

Without CUDA these tests check the rendering of recordings, the staleness comparison, the
child-process isolation and the recording of every example, each in a fresh process, with CPU
stand-ins; with CUDA (``nox -s cuda``) they also run every
example live and compare each CUDA section with its recording.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import torch

from torch_pitfalls import recording, run_isolated
from torch_pitfalls.recording import cuda_section, stale_differences

from .conftest import all_slugs, example_path, run_example

SECTION = re.compile(r'cuda_section\(\s*device,\s*"([^"]+)"')
TRANSCRIPTS = sorted(recording.recordings_dir().glob("*.json"))


def sections_of(slug: str) -> list[str]:
    """Names of the CUDA sections an example declares, from its source."""
    return SECTION.findall(example_path(slug).read_text(encoding="utf-8"))


@pytest.fixture
def recordings(tmp_path, monkeypatch):
    monkeypatch.setenv(recording.RECORDINGS_ENV, str(tmp_path))
    return tmp_path


HEADER = {
    "gpu": "NVIDIA H200",
    "driver": "570.1",
    "cuda": "12.8",
    "torch": "2.13.0",
    "date": "2026-11-29",
}


def test_a_cpu_build_shows_the_recording_labelled_as_such(recordings, capsys):
    transcript = {**HEADER, "sections": {"the part": {"measured": False, "output": "42\n"}}}
    (recordings / "x.json").write_text(json.dumps(transcript))
    with cuda_section("cpu", "the part", slug="x") as live:
        assert not live
        print("never printed on CPU") if live else None
    out = capsys.readouterr().out
    assert out.startswith("[Recorded on NVIDIA H200 (driver 570.1, CUDA 12.8, PyTorch 2.13.0)")
    assert "not run in this build, which has no GPU" in out
    assert out.endswith("42\n[End of the recorded output.]\n")
    assert recording.split_recordings(out) == [("recorded", "42\n", HEADER)]


def test_a_recording_without_a_final_newline_is_still_closed(recordings, capsys):
    transcript = {**HEADER, "sections": {"the part": {"measured": False, "output": "42"}}}
    (recordings / "x.json").write_text(json.dumps(transcript))
    print("live before")
    with cuda_section("cpu", "the part", slug="x"):
        pass
    print("live after")
    parts = recording.split_recordings(capsys.readouterr().out)
    assert [(kind, text) for kind, text, _ in parts] == [
        ("live", "live before\n"),
        ("recorded", "42\n"),
        ("live", "live after\n"),
    ]


def test_an_unclosed_recording_is_a_clear_error():
    with pytest.raises(ValueError, match="not closed"):
        recording.split_recordings(recording.recorded_header(HEADER) + "\n42\n")


def test_recording_labels_exist_in_both_languages():
    assert recording.recording_label(HEADER, "en").startswith("Recorded on NVIDIA H200")
    assert recording.recording_label(HEADER, "zh_CN").startswith("录制于 NVIDIA H200")
    with pytest.raises(ValueError, match="language"):
        recording.recording_label(HEADER, "fr")


def test_without_a_recording_the_page_says_plainly_that_cuda_did_not_run(recordings, capsys):
    with cuda_section("cpu", "the part", slug="x"):
        pass
    out = capsys.readouterr().out
    assert out == (
        "[Not run in this build: the part needs CUDA, and no GPU was available. "
        "No recording of it exists yet.]\n"
    )
    assert recording.split_recordings(out) == [("not-run", "the part", {})]


def test_a_recording_round_trips(recordings):
    section = recording.Section("x", "the part", live=True, measured=True, output="1.5×\n")
    recording.save_section(section, env=HEADER)
    transcript = recording.load_transcript("x")
    assert transcript["gpu"] == "NVIDIA H200"
    assert transcript["sections"]["the part"] == {"measured": True, "output": "1.5×\n"}


def test_a_broken_transcript_is_a_clear_error(recordings):
    (recordings / "x.json").write_text('{"gpu": "A"}')
    with pytest.raises(ValueError, match="lacks"):
        recording.load_transcript("x")


def test_cuda_section_validates(recordings):
    with pytest.raises(ValueError, match="non-empty name"), cuda_section("cpu", " ", slug="x"):
        pass
    with pytest.raises(ValueError, match="slug"), cuda_section("cpu", "the part"):
        pass


@pytest.mark.parametrize(
    ("recorded", "live", "measured", "stale"),
    [
        (
            "RuntimeError: CUDA error: device-side assert\n",
            "RuntimeError: CUDA error: device-side assert\n",
            False,
            False,
        ),
        ("RuntimeError: index 5\n", "IndexError: index 5\n", False, True),  # behaviour changed
        ("3 nodes\n", "4 nodes\n", False, True),  # an exact value changed
        ("every step: 12.0× slower\n", "every step: 20.5× slower\n", True, False),  # noise
        ("every step: 12.0× slower\n", "every step: 1.1× slower\n", True, True),  # effect gone
    ],
)
def test_stale_differences(recorded, live, measured, stale):
    assert bool(stale_differences(recorded, live, measured=measured)) is stale


def test_recorded_transcripts_match_the_examples():
    slugs = set(all_slugs())
    for path in TRANSCRIPTS:
        transcript = recording.load_transcript(path.stem)
        assert path.stem in slugs, f"{path.name} records no existing page"
        unknown = set(transcript["sections"]) - set(sections_of(path.stem))
        assert not unknown, f"{path.name} records sections the page no longer has: {unknown}"


def test_the_cpu_stand_in_for_a_poisoned_context_leaves_this_process_working():
    # A child that dies the way a process with a device-side assert does (abort), then the
    # examples after it run in this process as before.
    child = run_isolated("import os; os.abort()", device="cpu")
    assert child.returncode != 0
    assert run_example("data-vs-detach", "cpu").stdout.startswith("device: cpu")


# -- on a GPU -----------------------------------------------------------------------------------

CUDA_SLUGS = [slug for slug in all_slugs() if sections_of(slug)]


@pytest.mark.cuda
@pytest.mark.parametrize("slug", CUDA_SLUGS)
def test_live_cuda_output_matches_the_recording(slug):
    run_example(slug, "cuda")
    transcript = recording.load_transcript(slug)
    assert transcript is not None, f"no recording for {slug}: run `nox -s cuda`"
    for name in sections_of(slug):
        live = recording.LIVE[(slug, name)]
        recorded = transcript["sections"].get(name)
        assert recorded is not None, f"{slug}: section {name!r} is not recorded"
        problems = stale_differences(recorded["output"], live.output, measured=live.measured)
        assert not problems, f"{slug}: {name!r} is stale: {problems}"


@pytest.mark.cuda
def test_examples_after_a_device_side_assert_still_run_on_cuda():
    run_example("index-select", "cuda")  # its device-side assert runs in child processes
    after = run_example("gradient-accumulation", "cuda")
    assert after.stdout.startswith("device: cuda")
    assert torch.cuda.is_available() and (torch.ones(2, device="cuda") * 2).sum().item() == 4


# -- recording every example, each in a fresh process (a CPU stand-in for CUDA) -----------------

#: A stand-in example: it records where and how it ran, then fails if its name says so.
STAND_IN = """\
import json, os, sys
import torch_pitfalls

report = {
    "cwd": os.getcwd(),
    "record": os.environ.get("TORCH_PITFALLS_RECORD"),
    "device": os.environ.get("TORCH_PITFALLS_DEVICE"),
    "backend": os.environ.get("MPLBACKEND"),
    "helpers": os.path.dirname(torch_pitfalls.__file__),
    "modules": sorted(name for name in sys.modules if name.startswith("torch_pitfalls.")),
}
name = os.path.basename(__file__)
with open(os.path.join(os.environ["STAND_IN_OUT"], name + ".json"), "w") as file:
    json.dump(report, file)
if "fails" in name:
    print("printed before the error", file=sys.stderr)
    raise RuntimeError("the stand-in's own error")
if "hangs" in name:
    import time
    time.sleep(60)
"""


@pytest.fixture
def stand_ins(tmp_path, monkeypatch, recordings):
    """An examples folder of stand-ins, CUDA said to be available, and where each one reports."""
    examples, out = tmp_path / "examples", tmp_path / "out"
    out.mkdir()
    for name in ("topic/plot_first.py", "topic/plot_fails.py", "other/plot_last.py"):
        (examples / name).parent.mkdir(parents=True, exist_ok=True)
        (examples / name).write_text(STAND_IN)
    monkeypatch.setenv("STAND_IN_OUT", str(out))
    monkeypatch.setattr(recording.torch.cuda, "is_available", lambda: True)
    return examples, out


def test_recording_runs_each_example_in_a_fresh_process_and_reports_every_failure(
    stand_ins, recordings, capsys
):
    examples, out = stand_ins
    for slug in ("first", "fails", "last"):  # stale transcripts, deleted before each run
        (recordings / f"{slug}.json").write_text("{}")
    with pytest.raises(RuntimeError, match=r"1 of 3 examples failed on CUDA: \['fails'\]") as err:
        recording.record_examples(examples)
    assert "fails (exit status 1):" in str(err.value)
    assert "printed before the error" in str(err.value)
    assert "RuntimeError: the stand-in's own error" in str(err.value)
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "recording other/plot_last.py",
        "recording topic/plot_fails.py",
        "recording topic/plot_first.py",  # tried after the failure
    ]
    assert "RuntimeError: the stand-in's own error" in captured.err  # shown as it happens
    assert not list(recordings.glob("*.json"))
    helpers = str(Path(recording.__file__).resolve().parent)
    for name, folder in [("plot_first", "topic"), ("plot_fails", "topic"), ("plot_last", "other")]:
        report = json.loads((out / f"{name}.py.json").read_text())
        assert report["cwd"] == str(examples / folder)
        assert (report["record"], report["device"], report["backend"]) == ("1", "cuda", "Agg")
        assert str(Path(report["helpers"]).resolve()) == helpers
        assert report["modules"] == []  # a fresh interpreter: no state of this process


def test_recording_only_some_examples_by_slug_or_path(stand_ins, capsys):
    examples, out = stand_ins
    assert recording.record_examples(examples, ["first", str(examples / "other/plot_last.py")]) == 2
    assert sorted(p.name for p in out.iterdir()) == ["plot_first.py.json", "plot_last.py.json"]
    assert recording.record_examples(examples, ["topic/plot_first.py", "first"]) == 1
    with pytest.raises(ValueError, match=r"nor the slug of one .*\['no-such-page'\]"):
        recording.record_examples(examples, ["first", "no-such-page"])
    recording.main([str(examples), "last"])
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "recording other/plot_last.py",
        f"recorded the CUDA sections of 1 examples into {recording.recordings_dir()}",
    ]


def test_recording_kills_an_example_that_runs_too_long(stand_ins):
    examples, _ = stand_ins
    (examples / "topic/plot_hangs.py").write_text(STAND_IN)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"\['hangs'\](.|\n)*killed after 3"):
        recording.record_examples(examples, ["hangs"], timeout=3)
    assert time.monotonic() - start < 30


def test_recording_needs_cuda(tmp_path, monkeypatch):
    monkeypatch.setattr(recording.torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="needs CUDA"):
        recording.record_examples(tmp_path)
