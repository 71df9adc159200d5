"""CUDA sections: recorded transcripts shown on CPU builds, and kept current on GPU builds.

Without CUDA these tests check the rendering of recordings, the staleness comparison and the
child-process isolation with a CPU stand-in; with CUDA (``nox -s cuda``) they also run every
example live and compare each CUDA section with its recording.
"""

from __future__ import annotations

import json
import re

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
