"""What readers take home: the downloads of every page, in the page's language, that run anywhere.

sphinx-gallery offers each page as a ``.py`` script, a Jupyter notebook and a zip of both; its
files are the English source as it is, with reST roles in the prose. This module writes the
downloads of both languages itself, from the example sources and the pages' catalogs, and points
the pages' download links at them (:func:`point_downloads`):

- the prose (docstring and text cells) in the build's language, from the page's catalog
  (``docs/locale/<language>/LC_MESSAGES/auto_examples/<topic>/plot_<slug>.po``);
- reST rendered as readable text: roles become the name they show (a link in the notebooks: a
  PyTorch object to PyTorch's docs, a page to its address on the site), ``literals`` become
  Markdown code, headings Markdown headings;
- first, one install line: the helper package's wheel, published with the site at
  ``<site>/wheels/`` (:func:`build_wheel`, :func:`wheel_url`), plus matplotlib or NumPy for the
  pages that use them. PyTorch itself is the reader's (CPU or CUDA build of their choice).

Code cells and the comments inside them stay as they are: code is never translated.
"""

from __future__ import annotations

import ast
import functools
import json
import posixpath
import re
import subprocess
import sys
import tempfile
import tomllib
import unicodedata
import zipfile
from pathlib import Path

from torch_pitfalls import catalog as pages

from .common import DOCS, ROOT, digest_of, language_of, stamp, up_to_date, write_if_changed
from .inventory import torch_inventory

EXAMPLES = ROOT / "examples"
#: Where the generated downloads live, per language (inside the Sphinx source folder, so that
#: ``:download:`` can reach them as ``/_build/downloads/<language>/…``).
DOWNLOADS = DOCS / "_build" / "downloads"
LANGUAGES = ("en", "zh_CN")

WORDS = {
    "en": {
        "needs": "Needs PyTorch (any recent CPU or CUDA build) and the torch-pitfalls helpers:",
        "run": "Run this line once, then the cells below in order.",
        "see_also": "See also",
        "note": "Note",
        "page": "This page on the site:",
    },
    "zh_CN": {
        "needs": "需要 PyTorch（任一较新的 CPU 或 CUDA 版本）和 torch-pitfalls 的辅助函数：",
        "run": "先运行一次这一行，再按顺序运行下面的单元格。",
        "see_also": "另请参阅",
        "note": "注意",
        "page": "本页在站点上的地址：",
    },
}


def version() -> str:
    """The helper package's version, from pyproject.toml."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["project"]["version"]


def wheel_name() -> str:
    """``torch_pitfalls-<version>-py3-none-any.whl``."""
    return f"torch_pitfalls-{version()}-py3-none-any.whl"


def wheel_url() -> str:
    """The address of the helper package's wheel on the published site."""
    from torch_pitfalls.catalog import site_url

    return f"{site_url()}/wheels/{wheel_name()}"


def build_wheel(target: Path) -> Path:
    """Build the helper package's wheel into ``target`` (offline: no build isolation, no index).

    The build backend is the docs environment's setuptools (pinned in the ``docs`` extra).
    """
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index",
             "--no-build-isolation", "--wheel-dir", scratch, str(ROOT)],
            check=True,
        )  # fmt: skip
        built = sorted(Path(scratch).glob("*.whl"))
        if [p.name for p in built] != [wheel_name()]:
            raise RuntimeError(f"expected {wheel_name()}, pip built {[p.name for p in built]}")
        path = target / wheel_name()
        path.write_bytes(built[0].read_bytes())
    return path


def requirements(source: str) -> list[str]:
    """What a page needs besides torch and the helpers: ``matplotlib``, ``numpy``, and
    ``cloudpickle`` for a page that starts ranks (:func:`~torch_pitfalls.run_ranks` sends them
    their function with it on a machine with a GPU)."""
    needs = []
    if "matplotlib" in source:
        needs.append("matplotlib")
    elif re.search(r"\bimport numpy\b|\.numpy\(\)", source):
        needs.append("numpy")
    if "run_ranks" in source:
        needs.append("cloudpickle")
    return needs


def install_line(source: str) -> str:
    """``pip install <wheel URL> [matplotlib|numpy] [cloudpickle]`` for the page whose source is
    ``source``."""
    return " ".join(["pip install", wheel_url(), *requirements(source)])


# -- Pages, labels and the catalogs --------------------------------------------------------------


def examples() -> list[Path]:
    return sorted(EXAMPLES.glob("*/plot_*.py"))


def slug_of(path: Path) -> str:
    from torch_pitfalls import catalog as pages

    return pages.slug_of(path)


def page_url(path: Path, language: str) -> str:
    from torch_pitfalls import catalog as pages

    return pages.url(pages.slug_of(path), language=language)


@functools.cache
def catalog(path: Path, language: str) -> dict[str, str]:
    """Normalised English message → translation, from one page's catalog (empty for English)."""
    if language == "en":
        return {}
    import polib

    po = DOCS / "locale" / language / "LC_MESSAGES" / "auto_examples" / path.parent.name
    po = po / f"{path.stem}.po"
    if not po.exists():
        return {}
    return {
        _key(entry.msgid): entry.msgstr
        for entry in polib.pofile(str(po)).translated_entries()
        if not entry.obsolete
    }


def _key(text: str) -> str:
    return " ".join(text.split())


def title_of(path: Path, language: str) -> str:
    """The page's title in ``language`` (reST markup kept)."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=True) or ""
    for unit in parse(docstring):
        if unit[0] == "heading":
            return catalog(path, language).get(_key(unit[2]), unit[2])
    return slug_of(path)


class Context:
    """What rendering a page needs: its language, catalog, and where names and labels link."""

    def __init__(self, language: str, table: dict[str, str]) -> None:
        self.language = language
        self.table = table
        self.pages = {slug_of(p): p for p in examples()}
        self.inventory = torch_inventory()

    def translate(self, text: str) -> str:
        return self.table.get(_key(text), text) if self.table else text


# -- reST to readable text -----------------------------------------------------------------------

ROLE = re.compile(r":(?:py:)?([a-z]+):`([^`]+)`")
EXPLICIT = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)
EXTERNAL = re.compile(r"`([^`<]+?)\s*<([^`>]+)>`__?")
LITERAL = re.compile(r"``(.+?)``")
DISPLAY_MATH = {"math"}


def inline(text: str, ctx: Context, markdown: bool) -> str:
    """reST inline markup of one paragraph → Markdown (``markdown``) or plain text."""
    text = text.replace("\\ ", "")

    def role(match: re.Match) -> str:
        kind, content = match.groups()
        explicit = EXPLICIT.match(content)
        shown, target = (explicit[1], explicit[2]) if explicit else (None, content)
        if kind == "math":
            return f"${content}$" if markdown else content
        if kind in ("ref", "doc"):
            return reference(kind, shown, target, ctx, markdown)
        name = target.lstrip("~")
        if shown is None:
            shown = name.rsplit(".", 1)[-1] if target.startswith("~") else name
            if kind in ("func", "meth"):
                shown += "()"
        url = ctx.inventory.get(name)
        if markdown and url:
            return f"[`{shown}`]({url})"
        return f"`{shown}`"

    text = ROLE.sub(role, text)
    text = EXTERNAL.sub(lambda m: f"[{m[1]}]({m[2]})" if markdown else f"{m[1]} ({m[2]})", text)
    return LITERAL.sub(lambda m: f"`{m[1]}`", text)


def reference(kind: str, shown: str | None, target: str, ctx: Context, markdown: bool) -> str:

    if kind == "doc":
        page = target.lstrip("/")
        url = pages.document_url(page, language=ctx.language)
        shown = shown or page.replace("-", " ").capitalize()
    elif target in ctx.pages:
        path = ctx.pages[target]
        url = page_url(path, ctx.language)
        if shown is None:
            shown = inline(title_of(path, ctx.language), ctx, markdown=False).replace("`", "")
    else:
        return shown or target
    return f"[{shown}]({url})" if markdown else f"“{shown}” ({url})"


HEADING_LINE = re.compile(r"^([=\-~^\"'`#*+.:_])\1{2,}\s*$")
DIRECTIVE = re.compile(r"^\.\.\s+([\w-]+)::\s*(.*)$")
TARGET = re.compile(r"^\.\.\s+_[^:]+:\s*$")
ITEM = re.compile(r"^(\*|-|\d+\.)\s+(.*)$")


def parse(text: str) -> list[tuple]:
    """The reST of one text block as units: heading, paragraph, item, directive, literal."""
    lines = text.splitlines()
    units: list[tuple] = []
    i = 0
    literal_next = False
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.startswith((" ", "\t")):  # an indented block: literal after "::", else a quote
            block = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                block.append(lines[i])
                i += 1
            body = _dedent(block)
            units.append(("literal", body) if literal_next else ("quote", parse(body)))
            literal_next = False
            continue
        literal_next = False
        if TARGET.match(line):
            i += 1
            continue
        if i + 1 < len(lines) and HEADING_LINE.match(lines[i + 1]) and not ITEM.match(line):
            units.append(("heading", lines[i + 1].strip()[0], line.strip()))
            i += 2
            continue
        directive = DIRECTIVE.match(line)
        if directive:
            i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                block.append(lines[i])
                i += 1
            body = _dedent(block)
            options = {}
            body_lines = body.splitlines()
            while body_lines and re.match(r"^:[\w-]+:(\s|$)", body_lines[0]):
                name, _, value = body_lines.pop(0)[1:].partition(":")
                options[name] = value.strip()
            units.append(("directive", directive[1], directive[2], options, "\n".join(body_lines)))
            continue
        item = ITEM.match(line)
        block = [item[2] if item else line]
        i += 1
        while i < len(lines) and lines[i].strip() and not ITEM.match(lines[i]):
            if not item and lines[i].startswith((" ", "\t")):
                break
            block.append(lines[i].strip())
            i += 1
        paragraph = " ".join(block)
        if item:
            units.append(("item", item[1], paragraph))
        else:
            units.append(("paragraph", paragraph))
            literal_next = paragraph.endswith("::")
    return units


def _dedent(lines: list[str]) -> str:
    import textwrap

    return textwrap.dedent("\n".join(lines)).strip("\n")


def literalinclude(argument: str, options: dict[str, str]) -> str:
    """The code a ``literalinclude`` shows (``:pyobject:`` supported)."""
    path = (DOCS / argument.lstrip("/")).resolve() if argument.startswith("/") else Path(argument)
    source = path.read_text(encoding="utf-8")
    name = options.get("pyobject")
    if not name:
        return source.rstrip()
    for node in ast.parse(source).body:
        if getattr(node, "name", None) == name:
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            return "\n".join(source.splitlines()[first - 1 : node.end_lineno])
    raise ValueError(f"{argument}: no top-level {name}")


def width(text: str) -> int:
    """Display width (a CJK character counts two columns): for reST-style underlines."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def render(units: list[tuple], ctx: Context, markdown: bool, levels: dict[str, int]) -> list[str]:
    """Readable text of parsed units: a list of paragraphs (joined by blank lines)."""
    out: list[str] = []
    previous = None
    for unit in units:
        kind = unit[0]
        after_item, previous = previous == "item", kind
        if kind == "heading":
            char, text = unit[1], inline(ctx.translate(unit[2]), ctx, markdown)
            level = levels.setdefault(char, len(levels) + 1)
            if markdown:
                out.append("#" * level + " " + text)
            else:
                out.append(text + "\n" + char * max(width(text), 3))
        elif kind == "paragraph":
            text = unit[1]
            translated = ctx.translate(text)
            if translated == text and text.endswith("::"):
                translated = ctx.translate(text[:-1])
            out.append(_wrap(inline(translated.replace("::", ":"), ctx, markdown), markdown))
        elif kind == "item":
            marker = unit[1] if unit[1][0].isdigit() else "-"
            item = f"{marker} " + _wrap(inline(ctx.translate(unit[2]), ctx, markdown), markdown)
            if out and after_item:  # one list, no blank lines between its items
                out[-1] += "\n" + item
            else:
                out.append(item)
        elif kind == "literal":
            out.append(_code(unit[1], markdown))
        elif kind == "quote":
            out.extend(_indent(render(unit[1], ctx, markdown, levels), markdown))
        elif kind == "directive":
            _, name, argument, options, body = unit
            if name == "literalinclude":
                out.append(_code(literalinclude(argument, options), markdown))
                continue
            if name in ("code-block", "code", "sourcecode"):
                out.append(_code(body, markdown))
                continue
            title = {"seealso": WORDS[ctx.language]["see_also"]}.get(name)
            title = title or {"note": WORDS[ctx.language]["note"]}.get(name)
            title = title or inline(ctx.translate(argument), ctx, markdown)
            inner = render(parse(body), ctx, markdown, levels)
            out.extend(_indent([f"**{title}**" if markdown else title, *inner], markdown))
    return out


def _wrap(text: str, markdown: bool) -> str:
    """Lines of at most 96 columns in the scripts (Latin text only: CJK text is left as one
    line, since a break inside it would show as a space in most viewers)."""
    import textwrap

    if markdown or width(text) != len(text):
        return text
    return textwrap.fill(text, 96, break_long_words=False, break_on_hyphens=False)


def _code(code: str, markdown: bool) -> str:
    if markdown:
        return f"```python\n{code}\n```"
    return "\n".join("    " + line if line else "" for line in code.splitlines())


def _indent(paragraphs: list[str], markdown: bool) -> list[str]:
    prefix = "> " if markdown else "   "
    indented = [
        "\n".join((prefix + line).rstrip() for line in paragraph.splitlines())
        for paragraph in paragraphs
    ]
    return ["\n>\n".join(indented)] if markdown else indented  # one quote in Markdown


def rendered(text: str, ctx: Context, markdown: bool, levels: dict[str, int]) -> str:
    return "\n\n".join(render(parse(text), ctx, markdown, levels))


# -- The downloads -------------------------------------------------------------------------------


def blocks(path: Path) -> list[tuple[str, str]]:
    """``(label, content)`` of the example: sphinx-gallery's own split into text and code."""
    from sphinx_gallery.py_source_parser import remove_config_comments, split_code_and_text_blocks

    _, found = split_code_and_text_blocks(str(path))
    return [(b.type, remove_config_comments(b.content) if b.type == "code" else b.content)
            for b in found]  # fmt: skip


def python_script(path: Path, language: str) -> str:
    """The page as a script: the install line, the prose as comments, the code as it is."""
    ctx = Context(language, catalog(path, language))
    words = WORDS[language]
    source = path.read_text(encoding="utf-8")
    levels: dict[str, int] = {}
    parts = [
        f"# {words['needs']}\n#\n#     {install_line(source)}\n#\n"
        f"# {words['page']} {page_url(path, language)}\n"
    ]
    for index, (label, content) in enumerate(blocks(path)):
        if label == "code":
            parts.append(content.strip("\n") + "\n")
            continue
        text = rendered(content, ctx, False, levels)
        if index == 0:
            parts.append('"""\n' + text.replace('"""', '\\"\\"\\"') + '\n"""\n')
        else:
            comment = "\n".join(("# " + line).rstrip() for line in text.splitlines())
            parts.append("# %%\n" + comment + "\n")
    return "\n".join(parts)


def notebook(path: Path, language: str) -> dict:
    """The page as a Jupyter notebook: a ``%pip install`` cell, then Markdown and code cells."""
    from sphinx_gallery.notebook import (
        add_code_cell,
        add_markdown_cell,
        jupyter_notebook_skeleton,
    )

    ctx = Context(language, catalog(path, language))
    words = WORDS[language]
    work = jupyter_notebook_skeleton()
    work["metadata"]["language_info"].pop("version", None)  # the reader's Python, not ours
    add_code_cell(work, f"# {words['needs']}\n# {words['run']}\n%{install_line(path.read_text())}")
    levels: dict[str, int] = {}
    for label, content in blocks(path):
        if label == "code":
            if content.strip():
                add_code_cell(work, content)
        else:
            add_markdown_cell(work, rendered(content, ctx, True, levels))
    return work


def write_downloads(language: str, target: Path = DOWNLOADS) -> list[Path]:
    """Write every page's ``.py``, ``.ipynb`` and ``.zip``, and the two all-pages zips, under
    ``target/<language>/auto_examples/``; a file whose content did not change is left as it is
    (``nox -s serve`` watches the source folder). Returns the files."""
    import io

    base = target / language / "auto_examples"
    files: dict[Path, bytes] = {}
    all_python, all_jupyter = io.BytesIO(), io.BytesIO()
    with (
        zipfile.ZipFile(all_python, "w") as python_zip,
        zipfile.ZipFile(all_jupyter, "w") as nb_zip,
    ):
        for path in examples():
            folder = base / path.parent.name
            script = python_script(path, language)
            book = json.dumps(notebook(path, language), indent=2, ensure_ascii=False) + "\n"
            py, nb = f"{path.parent.name}/{path.name}", f"{path.parent.name}/{path.stem}.ipynb"
            single = io.BytesIO()
            with zipfile.ZipFile(single, "w") as single_zip:
                for archive, name, text in (
                    (single_zip, py, script),
                    (python_zip, py, script),
                    (single_zip, nb, book),
                    (nb_zip, nb, book),
                ):
                    archive.writestr(_entry(name), text)  # fmt: skip
            files[folder / path.name] = script.encode()
            files[folder / f"{path.stem}.ipynb"] = book.encode()
            files[folder / f"{path.stem}.zip"] = single.getvalue()
    files[base / "auto_examples_python.zip"] = all_python.getvalue()
    files[base / "auto_examples_jupyter.zip"] = all_jupyter.getvalue()
    for path, data in files.items():
        write_if_changed(path, data)
    return list(files)


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # reproducible archives
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


# -- Sphinx wiring -------------------------------------------------------------------------------


def downloads_digest(language: str) -> str:
    """What the downloads of one language are made from: the examples, their catalogs, the
    inventory, the project's version, the site's address and this code."""
    import sphinx_gallery

    from torch_pitfalls import catalog as pages

    messages = DOCS / "locale" / language / "LC_MESSAGES" / "auto_examples"
    sources = [
        *examples(),
        *sorted(messages.glob("*/plot_*.po")),
        *(Path(__file__).parent / name for name in ("downloads.py", "inventory.py", "common.py")),
        Path(pages.__file__).with_name("pages.toml"),
        DOCS / "_inventories" / "torch.txt",
        ROOT / "pyproject.toml",
    ]
    return digest_of(sources, language, pages.site_url(), sphinx_gallery.__version__)


def write_downloads_of_build(app) -> None:
    """builder-inited: write this language's downloads, unless their inputs are unchanged."""
    language = language_of(app.config)
    base = DOWNLOADS / language / "auto_examples"
    digest = downloads_digest(language)
    if up_to_date(f"downloads-{language}", digest, [base / "auto_examples_python.zip"]):
        return
    write_downloads(language)
    stamp(f"downloads-{language}", digest)


def point_downloads(app, doctree) -> None:
    """Point the gallery's download links at this language's generated files.

    Runs before Sphinx's own collector of download files (priority 400 < 500), which then copies
    the generated files to ``_downloads/``.
    """
    from sphinx import addnodes

    docname = app.env.docname
    if not docname.startswith("auto_examples"):
        return
    base = DOWNLOADS / language_of(app.config)
    for node in doctree.findall(addnodes.download_reference):
        target = node["reftarget"]
        if not target.endswith((".py", ".ipynb", ".zip")):
            continue
        relative = (
            target.lstrip("/")
            if target.startswith("/")
            else posixpath.normpath(posixpath.join(posixpath.dirname(docname), target))
        )
        generated = base / relative
        if generated.exists():
            node["reftarget"] = "/" + generated.relative_to(DOCS).as_posix()


def publish_wheel(app, exception) -> None:
    """Build the helper package's wheel into ``<site>/wheels/`` (``docs/_build/html/wheels``),
    once for both languages: again only when the package's sources are newer than the wheel."""
    if exception is not None or app.builder.format != "html":
        return
    wheel = Path(app.outdir).parent / "wheels" / wheel_name()
    sources = [ROOT / "pyproject.toml", *(ROOT / "src").rglob("*.py")]
    if wheel.exists() and all(p.stat().st_mtime <= wheel.stat().st_mtime for p in sources):
        return
    build_wheel(wheel.parent)
