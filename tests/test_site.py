"""The project's own wiring: README commands, CI, page order, the cheat sheet and labels."""

from __future__ import annotations

import re
import shutil
import zlib

import pytest
from pitfalls import gallery, inventory, search

from .conftest import ROOT, all_slugs, example_path


def readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quick start.*?```bash\n(.*?)```", readme, re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


def test_readme_names_two_commands_and_ci_runs_them():
    commands = readme_commands()
    assert len(commands) == 2
    assert commands[0].endswith("nox -s docs") and commands[1].endswith("nox -s tests")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in commands:
        assert command in ci


def test_torch_inventory_compiles(tmp_path):
    target = inventory.compile_inventory(
        ROOT / "docs" / "_inventories" / "torch.txt", tmp_path / "torch.inv"
    )
    assert target.read_bytes().startswith(b"# Sphinx inventory version 2")
    body = zlib.decompress(target.read_bytes().split(b"zlib.\n", 1)[1]).decode()
    assert "$" not in body  # Sphinx expands a "$" only at the end of a URI: the build expands all
    assert "torch.nn.Linear py:class 1 generated/torch.nn.Linear.html#torch.nn.Linear -" in body


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("torch.nn.Linear py:class generated/$.html", "expected 'PAGE.html#ANCHOR'"),
        ("torch.nn.Linear py:class generated/torch.nn.ReLU.html#$", "not on the page of"),
        ("torch.nn py:module nn.html#torch.nn", "module-torch.nn"),
        ("torch.nn.Linear py:class generated/$.html#$\ntorch.nn.Linear py:class x.html#$", "twice"),
    ],
)
def test_a_torch_inventory_line_of_the_wrong_shape_is_refused(tmp_path, line, problem):
    source = tmp_path / "torch.txt"
    source.write_text(line + "\n")
    with pytest.raises(ValueError, match=problem):
        inventory.compile_inventory(source, tmp_path / "torch.inv")


def test_a_changed_helper_reruns_every_example(tmp_path, monkeypatch):
    folder = tmp_path / "auto_examples"
    (folder / "autograd").mkdir(parents=True)
    checksum = folder / "autograd" / "plot_x.py.md5"
    monkeypatch.setattr(gallery, "GALLERY_DIR", folder)
    monkeypatch.setattr(gallery, "STAMP", folder / ".inputs.sha256")
    digest = ["helpers v1"]
    monkeypatch.setattr(gallery, "inputs_digest", lambda: digest[0])

    checksum.write_text("abc")
    assert gallery.invalidate_stale_examples()  # first build: no stamp yet
    checksum.write_text("abc")  # sphinx-gallery writes it again after running the example
    assert not gallery.invalidate_stale_examples()  # second language: nothing changed
    assert checksum.exists()
    digest[0] = "helpers v2"  # a helper in src/ was edited
    assert gallery.invalidate_stale_examples()
    assert not checksum.exists()  # sphinx-gallery will re-run the example


def test_inputs_digest_follows_the_helper_sources(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "src", tmp_path / "src")
    monkeypatch.setattr(gallery, "ROOT", tmp_path)
    first = gallery.inputs_digest()
    assert first == gallery.inputs_digest()
    helper = tmp_path / "src" / "torch_pitfalls" / "measure.py"
    helper.write_text(helper.read_text() + "\n# edited\n")
    assert gallery.inputs_digest() != first


CHANGED = re.compile(r"^# Changed in PyTorch (\d+\.\d+(?:\.\d+)?)", re.M)


def changed_sections() -> set[tuple[str, str]]:
    """(slug, version) of every "Changed in PyTorch X.Y" section of the pages."""
    found = set()
    for slug in all_slugs():
        for version in CHANGED.findall(example_path(slug).read_text(encoding="utf-8")):
            found.add((slug, version))
    return found


def test_every_changed_behaviour_is_in_the_changes_table():
    table = (ROOT / "docs" / "changes.md").read_text(encoding="utf-8")
    rows = {
        (slug, since)
        for pages, since in re.findall(
            r"^\| ((?:\{ref\}`[\w-]+`(?:, )?)+) \|.*\| (\d+\.\d+(?:\.\d+)?) ", table, re.M
        )
        for slug in re.findall(r"\{ref\}`([\w-]+)`", pages)
    }
    assert changed_sections(), "no page has a 'Changed in PyTorch X.Y' section"
    # a row without a section: a message that its page shows only in passing
    assert changed_sections() <= rows, changed_sections() - rows
    assert {slug for slug, _ in rows} <= set(all_slugs())


def test_gallery_thumbnails_are_translated():
    table = {"requires_grad propagates": "requires_grad 会传播", "It's a page.": "这是一页。"}
    raw = (
        '<div class="sphx-glr-thumbcontainer" tooltip="It&#x27;s a page.">'
        '<div class="sphx-glr-thumbnail-title">requires_grad propagates</div>'
        '<div class="sphx-glr-thumbnail-title">Not translated yet</div>'
    )
    out = gallery.translate_thumbnails(raw, table)
    assert 'tooltip="这是一页。"' in out
    assert ">requires_grad 会传播<" in out
    assert ">Not translated yet<" in out


def test_thumbnail_table_is_read_once_per_state_of_the_catalogs(tmp_path):
    import os

    import polib

    folder = tmp_path / "auto_examples" / "autograd"
    folder.mkdir(parents=True)
    path = folder / "plot_x.po"

    def write(msgstr: str, mtime_ns: int) -> None:
        catalog = polib.POFile()
        catalog.append(polib.POEntry(msgid="It's a page.", msgstr=msgstr))
        catalog.save(str(path))
        os.utime(path, ns=(mtime_ns, mtime_ns))

    write("这是一页。", 10**18)
    first = gallery.thumbnail_translations(tmp_path)
    assert first == {"It's a page.": "这是一页。"}
    assert gallery.thumbnail_translations(tmp_path) is first  # cached
    write("这是另一页。", 2 * 10**18)  # a changed catalog is read again
    assert gallery.thumbnail_translations(tmp_path) == {"It's a page.": "这是另一页。"}


def test_thumbnail_text_is_reduced_like_sphinx_gallery():
    plain = gallery._plain
    assert plain("用 :meth:`~torch.Tensor.backward` 计算") == "用 backward 计算"
    assert plain("一步：:meth:`~torch.Tensor.backward`\\ 计算") == "一步：backward计算"
    assert plain("Use ``x`` and **bold**") == "Use x and bold"


def test_chinese_queries_are_split_into_bigrams():
    assert search.cjk_bigrams("梯度累积") == ["梯度", "度累", "累积"]
    assert search.cjk_bigrams("计算图 backward") == ["计算", "算图"]
    assert search.cjk_bigrams("用") == ["用"]


def test_read_the_docs_publishes_the_build_root_where_the_detectors_link():
    """.readthedocs.yaml checks the serving address first, then uploads docs/_build/html as the
    site's root."""
    from tools import published_url
    from torch_pitfalls import catalog

    steps = (ROOT / ".readthedocs.yaml").read_text(encoding="utf-8").split("html:", 1)[1]
    commands = [line.strip().removeprefix("- ") for line in steps.splitlines() if line.strip()]
    assert commands[0] == "PYTHONPATH=src python -m tools.published_url"
    assert commands[-1] == "cp -r docs/_build/html/. $READTHEDOCS_OUTPUT/html/"
    assert published_url.mismatch(catalog.BASE_URL + "/", catalog.BASE_URL) is None
    assert published_url.mismatch(catalog.BASE_URL + "/en/latest/", catalog.BASE_URL)


def test_the_offline_link_check_fails_on_a_placeholder_and_a_bare_url(tmp_path, capsys):
    from tools import linkcheck

    page = tmp_path / "en" / "page.html"
    page.parent.mkdir()
    torch_docs = "https://docs.pytorch.org/docs/stable/"
    page.write_text(
        f'<a href="{torch_docs}generated/$.html#torch.nn.ReLU">ReLU</a>'
        f'<a href="{torch_docs}generated/torch.nn.ReLU.html#torch.nn.ReLU">ReLU</a>'
        '<a href="https://github.com/pytorch/pytorch/pull/1">https://github.com/pytorch/pytorch/pull/1</a>'
        '<a href="https://github.com/pytorch/pytorch/pull/2">PR 2</a>',
        encoding="utf-8",
    )
    assert linkcheck.check_external(tmp_path) == 2
    out = capsys.readouterr().out
    assert "4 external links" in out and "2  docs.pytorch.org" in out and "2  github.com" in out


# -- Finding the page: docs/_ext/pitfalls/indexes.py (records: tests/test_catalog.py) ----------


def _finding():
    from pitfalls import indexes as finding

    return finding


def test_messages_are_read_from_outputs_and_mapped_to_where_they_were_printed():
    finding = _finding()
    text = (
        "device: cpu\n"
        "RuntimeError: Trying to backward through the graph a second time (or directly ...\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "PitfallWarning: TP005 backward is adding to gradients\n"
        "not a message: RuntimeError: inside a line\n"
        "child's error: torch.AcceleratorError: CUDA error: device-side assert triggered\n"
    )
    assert finding.message_lines(text) == [
        ("RuntimeError", "Trying to backward through the graph a second time (or directly ..."),
        ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB"),
        ("torch.AcceleratorError", "CUDA error: device-side assert triggered"),
    ]
    a = finding.Printed("ValueError", "boom", "auto_examples/x/plot_a", "the-symptom", "S")
    b = finding.Printed("ValueError", "boom", "auto_examples/x/plot_b", "why", "W")
    assert finding.explaining_pages([a, b]) == {("ValueError", "boom"): [a, b]}
    assert finding.message_head("Target 10 is out of bounds.") == "Target N is out of bounds"
    assert finding.message_head("mat1 and mat2 (x)") == "mat1 and mat2"


def test_every_timing_a_page_asserts_goes_through_the_one_retry_mechanism():
    """A page compares times only with compare_times(..., expect=...), which measures a
    comparison again before it fails (torch_pitfalls.measure): no page keeps a retry loop of its
    own, and no timing assertion can fail a build because the machine was busy once."""
    import ast

    for slug in all_slugs():
        tree = ast.parse(example_path(slug).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "compare_times":
                keywords = {k.arg for k in node.keywords}
                assert "expect" in keywords, f"{slug}:{node.lineno}: compare_times without expect="


# -- The answer first: the box at the top of each page ---------------------------------------------


def test_every_page_has_a_cheat_sheet_snippet_for_its_answer_box():
    from pitfalls import answer_first

    snippets = answer_first.snippets()
    missing = [slug for slug in all_slugs() if slug not in snippets]
    assert not missing, f"no cheat sheet snippet (### heading, code, 'Full page:') for {missing}"
    assert all(s.code.startswith(">>> ") for s in snippets.values())


def test_the_answer_box_labels_are_in_the_template_that_feeds_the_catalog():
    from pitfalls import answer_first

    template = (ROOT / "docs" / "_templates" / "answer-strings.html").read_text(encoding="utf-8")
    listed = set(re.findall(r'\{\{ _\("(.*)"\) \}\}', template))
    assert set(answer_first._labels_english()) == listed


def test_persistent_workers_an_example_leaves_are_stopped_cleanly_before_the_collection():
    from torch.utils.data import DataLoader

    namespace = {}  # an example's globals: a reference cycle, freed only by the collector
    namespace["loader"] = DataLoader(
        list(range(8)), batch_size=2, num_workers=2, timeout=60, persistent_workers=True
    )
    namespace["self"] = namespace
    assert [batch.tolist() for batch in namespace["loader"]][0] == [0, 1]
    workers = list(namespace["loader"]._iterator._workers)
    del namespace

    assert gallery.stop_persistent_workers() >= 1
    # Exit status 0: each worker received its stop message and returned; a worker that waited
    # out the join timeout is terminated instead (exit status -SIGTERM).
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert gallery.stop_persistent_workers() == 0  # stopped iterators are not stopped again
