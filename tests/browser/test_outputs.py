"""Outputs as a reader sees them: recorded CUDA sections in boxes of their own, labelled in the
page's language and never mixed with live output; the detectors' messages in the page's language;
the footer naming what is recorded."""

from __future__ import annotations

import re

import pytest

from torch_pitfalls import (
    rules,  # with src on the path (nox -s browser sets PYTHONPATH)  (standard library only)
)

from .conftest import HTML, ROOT, site_pages

#: What a recording prints outside a box (torch_pitfalls.recording): never in a built page.
RAW_RECORDING = re.compile(r"\[Recorded on |Recorded output:\]|\[End of the recorded output\.\]")
RAW_NOT_RUN = re.compile(r"\[Not run in this build: ")
BOX = re.compile(
    r'<div class="pitfalls-recording pitfalls-(recorded|not-run) docutils container">\s*'
    r'<p class="pitfalls-recording-label">([^<]*)</p>'
)
LABEL_START = {
    "en": ("Recorded on ", "Not run in this build"),
    "zh_CN": ("录制于 ", "本次构建未运行"),
}
PAGES = [
    (language, path)
    for language in rules.LANGUAGES
    if (HTML / language).exists()
    for path in site_pages(language)
]


OUTPUT_BLOCK = re.compile(
    r'<div class="[^"]*(?:sphx-glr-script-out|cell_output|output)[^"]*">.*?</pre>', re.S
)


def read(language: str, path: str) -> str:
    return (HTML / language / path).read_text(encoding="utf-8")


def printed_outputs(html: str) -> str:
    """The printed outputs of a page (sphinx-gallery's and myst-nb's), joined."""
    return "\n".join(OUTPUT_BLOCK.findall(html))


@pytest.mark.parametrize(("language", "path"), PAGES)
def test_recordings_are_boxed_and_labelled_in_the_page_language(language, path):
    html = read(language, path)
    outputs = printed_outputs(html)
    assert not RAW_RECORDING.search(outputs), "a recording is printed as plain output"
    assert not RAW_NOT_RUN.search(outputs), "a CUDA part that did not run is printed as output"
    boxes = BOX.findall(html)
    for kind, label in boxes:
        assert label.startswith(LABEL_START[language][kind == "not-run"]), label
    if any(kind == "recorded" for kind, _ in boxes):  # a "not run" box has nothing to name
        footer = re.search(r'<p class="pitfalls-verified-with">(.*?)</p>', html, re.S).group(1)
        assert {"en": "recorded on", "zh_CN": "录制"}[language] in footer


@pytest.mark.parametrize("language", rules.LANGUAGES)
def test_a_build_without_a_gpu_shows_every_recorded_section(language):
    import json

    if "device cpu" not in read("en", "index.html"):
        pytest.skip("a build with a GPU runs its CUDA sections live")
    recorded = sum(
        len(json.loads(path.read_text(encoding="utf-8"))["sections"])
        for path in (ROOT / "docs" / "cuda_recordings").glob("*.json")
    )
    boxes = [
        kind
        for lang, path in PAGES
        if lang == language
        for kind, _ in BOX.findall(read(lang, path))
    ]
    assert boxes.count("recorded") == recorded


@pytest.mark.parametrize("path", [p for language, p in PAGES if language == "zh_CN"])
def test_detector_messages_on_chinese_pages_are_chinese(path):
    html = read("zh_CN", path).replace("&#8217;", "'").replace("&#39;", "'").replace("&gt;", ">")
    for rule in rules.RULES:
        assert rule.message["en"] not in html, f"{rule.id} printed in English"
    assert "readthedocs.io/en/auto_examples" not in html


def test_a_recording_label_is_not_cut_off(page, site_url):
    """The label wraps inside the content column, at desktop and at phone width."""
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site_url}/zh_CN/auto_examples/devices/plot_tensor_to_numpy.html")
        labels = page.locator(".pitfalls-recording-label")
        assert labels.count() >= 1
        for index in range(labels.count()):
            fits = labels.nth(index).evaluate("e => e.scrollWidth <= e.clientWidth")
            assert fits, f"label {index} is cut off at {width} px"
