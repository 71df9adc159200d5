"""The Chinese catalogs: one per page, complete (no empty, no fuzzy entry), compilable, and
keeping every role, link target and inline literal of the English message."""

from __future__ import annotations

import collections
import csv
import functools
import gettext
import re
from pathlib import Path

import polib
import pytest

from .conftest import ROOT, all_slugs, example_path

LOCALE = ROOT / "docs" / "locale" / "zh_CN"
MESSAGES = LOCALE / "LC_MESSAGES"
CATALOGS = sorted(MESSAGES.rglob("*.po"))


def page_names() -> list[str]:
    """Every page of the site, as Sphinx docnames (one catalog each)."""
    pages = [
        p.relative_to(ROOT / "docs").with_suffix("").as_posix()
        for p in [*(ROOT / "docs").glob("*.md"), *(ROOT / "docs").glob("*.rst")]
    ]
    topics = sorted({example_path(slug).parent.name for slug in all_slugs()})
    pages += ["auto_examples/index"] + [f"auto_examples/{t}/index" for t in topics]
    pages += [
        f"auto_examples/{example_path(s).parent.name}/{example_path(s).stem}" for s in all_slugs()
    ]
    return sorted(pages)


def catalog_id(path: Path) -> str:
    return path.relative_to(MESSAGES).with_suffix("").as_posix()


#: Not a page: interface strings of the theme that its own Chinese catalog leaves untranslated.
THEME_CATALOG = "sphinx"


def test_every_page_has_a_catalog():
    pages = sorted(catalog_id(p) for p in CATALOGS if catalog_id(p) != THEME_CATALOG)
    assert pages == page_names()


@pytest.mark.parametrize("path", CATALOGS, ids=catalog_id)
def test_catalog_is_complete(path):
    catalog = polib.pofile(str(path))
    untranslated = [e.msgid[:60] for e in catalog.untranslated_entries()]
    fuzzy = [e.msgid[:60] for e in catalog.fuzzy_entries()]
    assert not untranslated, f"untranslated entries in {path.name}: {untranslated}"
    assert not fuzzy, f"fuzzy entries in {path.name}: {fuzzy}"
    assert catalog.percent_translated() == 100
    obsolete = [e.msgid[:60] for e in catalog.obsolete_entries()]
    assert not obsolete, (
        f"obsolete (#~) entries in {path.name}: {obsolete}; `nox -s i18n` removes them"
    )


@pytest.mark.parametrize("path", CATALOGS, ids=catalog_id)
def test_catalog_compiles(path, tmp_path):
    mo = tmp_path / "page.mo"
    polib.pofile(str(path)).save_as_mofile(str(mo))
    with mo.open("rb") as file:
        translations = gettext.GNUTranslations(file)
    entry = next(e for e in polib.pofile(str(path)) if e.msgid and not e.obsolete)
    assert translations.gettext(entry.msgid) == entry.msgstr


ROLE = re.compile(r"(\{[A-Za-z][\w:-]*\}|:[A-Za-z][\w:-]*:)`([^`]*)`")
LITERAL = re.compile(r"``(.+?)``|(?<![`\w])`([^`]+)`(?![`_])")
TARGET = re.compile(r"<([^<>]+)>`")
LINK = re.compile(r"`[^`]*<[^<>]+>`__?")


def markup(text: str) -> dict[str, list[str]]:
    """Roles (with their targets), inline literals and link targets of a message."""
    roles = []
    for role, content in ROLE.findall(text):
        target = TARGET.search(content + "`")
        roles.append(f"{role}{target.group(1) if target else content}")
    stripped = LINK.sub("", ROLE.sub("", text))
    literals = sorted(a or b for a, b in LITERAL.findall(stripped))
    return {"roles": sorted(roles), "literals": literals, "targets": sorted(TARGET.findall(text))}


def test_a_literal_that_starts_like_a_myst_role_is_a_literal():
    # ``{0}`` (a set, a format field) followed by a literal is not the MyST role {0}`…`
    found = markup("With ``L == S`` both see ``{0}`` and ``{0, 1}``; {ref}`retain-graph`.")
    assert found["roles"] == ["{ref}retain-graph"]
    assert found["literals"] == ["L == S", "{0, 1}", "{0}"]


@pytest.mark.parametrize("path", CATALOGS, ids=catalog_id)
def test_translation_keeps_markup(path):
    problems = []
    for entry in polib.pofile(str(path)).translated_entries():
        if markup(entry.msgid) != markup(entry.msgstr):
            problems.append(
                f"{entry.msgid[:70]!r}: {markup(entry.msgid)} != {markup(entry.msgstr)}"
            )
    assert not problems, "\n".join(problems)


def _generic_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    from docutils import nodes

    target = re.search(r"<([^<>]+)>$", text)
    return [nodes.literal(rawtext, f"{name}:{target.group(1) if target else text}")], []


ROLES = ["ref", "doc", "class", "func", "meth", "attr", "mod", "download", "data", "obj", "exc"]


def rest_structure(text: str) -> collections.Counter:
    """Inline literals, roles (by target), references and parse errors of a reST message."""
    from docutils.core import publish_doctree
    from docutils.parsers.rst import roles

    for role in [
        "ref",
        "doc",
        "class",
        "func",
        "meth",
        "attr",
        "mod",
        "download",
        "data",
        "obj",
        "exc",
    ]:
        roles.register_local_role(role, _generic_role)
    tree = publish_doctree(text, settings_overrides={"report_level": 5, "halt_level": 5})
    found = collections.Counter()
    for node in tree.findall():
        if node.tagname == "literal":
            found[("literal", node.astext())] += 1
        elif node.tagname in ("reference", "problematic", "system_message"):
            found[(node.tagname,)] += 1
        elif node.tagname in ("strong", "emphasis"):
            found[(node.tagname,)] = 1  # present or not: word order may split a bold phrase
    return found


REST_CATALOGS = [p for p in CATALOGS if catalog_id(p).startswith("auto_examples/")]


@pytest.mark.parametrize("path", REST_CATALOGS, ids=catalog_id)
def test_translation_parses_like_the_english(path):
    """Docutils reads the msgstr with the same literals, roles and links as the msgid.

    Catches what a regular expression cannot: markup that no longer parses because a Chinese
    character or an opening full-width bracket touches it (write ``\\ `` between them).
    """
    problems = []
    for entry in polib.pofile(str(path)).translated_entries():
        expected, got = rest_structure(entry.msgid), rest_structure(entry.msgstr)
        if expected != got:
            problems.append(
                f"{entry.msgstr[:70]!r}: missing {expected - got}, extra {got - expected}"
            )
    assert not problems, "\n".join(problems)


def glossary_rows() -> list[dict[str, str]]:
    """The rows of glossary.csv; a row may leave out its last column, ``avoid``."""
    with (LOCALE / "glossary.csv").open(encoding="utf-8") as file:
        return [{key: value or "" for key, value in row.items()} for row in csv.DictReader(file)]


def glossary() -> list[tuple[str, str]]:
    return [(row["english"], row["chinese"]) for row in glossary_rows()]


def forms(cell: str) -> list[str]:
    """The ``;``-separated forms of a glossary cell (``variants`` or ``avoid``)."""
    return [form.strip() for form in cell.split(";") if form.strip()]


def test_glossary_has_unique_terms():
    terms = [english for english, _ in glossary()]
    assert len(terms) == len(set(terms))


def test_glossary_variants_name_no_other_term():
    """A variant readers type (column "variants") leads to its own term's pages only."""
    rows = glossary_rows()
    chinese = {row["chinese"] for row in rows}
    for row in rows:
        for variant in forms(row["variants"]):
            assert variant not in chinese, f"{variant} is a term of its own, not a variant"
            assert variant != row["chinese"]


def test_glossary_avoided_forms_are_in_no_term():
    """A form to avoid (column "avoid") is not, and is not part of, any term the site uses:
    otherwise writing that term would fail the check."""
    rows = glossary_rows()
    assert list(rows[0]) == ["english", "chinese", "note", "variants", "avoid"]
    for row in rows:
        for form in forms(row["avoid"]):
            clashes = [other["chinese"] for other in rows if form in other["chinese"]]
            assert not clashes, f"{row['english']}: {form} to avoid, but it is in {clashes}"


# Terms whose Chinese rendering must appear whenever the English term is in a message's prose.
STRICT_TERMS = [
    "gradient accumulation",
    "computation graph",
    "leaf tensor",
    "version counter",
    "optimizer",
    "learning rate",
    "running statistics",
    "hidden state",
    "runtime guard",
    "backbone",
    "unexpected key",
    "allocated memory",
    "reserved memory",
    "state dict",
]


@functools.cache
def avoided() -> dict[str, tuple[str, str]]:
    """Every form the glossary says to avoid → (its term in English, the Chinese to use)."""
    return {
        form: (row["english"], row["chinese"])
        for row in glossary_rows()
        for form in forms(row["avoid"])
    }


def glossary_problems(english: str, chinese: str) -> list[str]:
    """How a translation ``chinese`` of ``english`` departs from the glossary: a strict term of the
    English without its Chinese rendering, or a form the glossary says to avoid (looked for in the
    text a reader sees: code, literals and link targets are left out).

    >>> for problem in glossary_problems("The runtime guard finds it", "运行时守卫能发现它"):
    ...     print(problem)
    runtime guard → 运行时检查 missing
    "运行时守卫" is a form to avoid: write runtime guard as 运行时检查
    >>> glossary_problems("Learning rate", "步长")
    ['learning rate → 学习率 missing']
    """
    table = dict(glossary())
    problems = []
    text = LITERAL.sub("", ROLE.sub("", english)).lower()
    for term in STRICT_TERMS:
        if re.search(rf"\b{re.escape(term)}s?\b", text) and table[term] not in chinese:
            problems.append(f"{term} → {table[term]} missing")
    seen = prose(chinese)
    for form, (term, preferred) in avoided().items():
        # a form the English holds too is quoted, not used (the contributor guide names them)
        if form in seen and form not in english:
            problems.append(f'"{form}" is a form to avoid: write {term} as {preferred}')
    return problems


@pytest.mark.parametrize("path", CATALOGS, ids=catalog_id)
def test_translation_follows_the_glossary(path):
    problems = [
        f"{catalog_id(path)}.po, entry {entry.msgid[:50]!r}: {problem}\n  in: {entry.msgstr[:60]}"
        for entry in polib.pofile(str(path)).translated_entries()
        for problem in glossary_problems(entry.msgid, entry.msgstr)
    ]
    assert not problems, "\n".join(problems)


def test_rule_texts_follow_the_glossary():
    """The detectors' Chinese titles and messages (src/torch_pitfalls/rules.py and the static
    rules' modules) are written out by Python, not by a catalog: the same check applies."""
    from torch_pitfalls import rules

    # Code in a rule's English is not marked up: optimizer.step(), scaler.unscale_(optimizer)
    code = re.compile(r"[\w.]*[._][\w.]*(?:\([^()]*\))?|\w+\([^()]*\)")
    problems = [
        f"{rule.id} {field}: {problem}\n  in: {text['zh_CN'][:60]}"
        for rule in rules.RULES
        for field, text in (("title", rule.title), ("message", rule.message))
        for problem in glossary_problems(code.sub("", text["en"]), text["zh_CN"])
    ]
    assert not problems, "\n".join(problems)


def test_catalog_record_chinese_follows_the_glossary_and_typography():
    """The catalog's Chinese sentences (``no_detector_zh`` of pages.toml, shown in each page's
    box) are written in the record, not in a .po catalog: the catalogs' checks apply."""
    import autocorrect_py
    import opencc

    from torch_pitfalls import catalog

    to_simplified = opencc.OpenCC("t2s")
    problems = []
    for page in catalog.pages():
        if not page.no_detector_zh:
            continue
        text = page.no_detector_zh
        problems += [f"{page.slug}: {p}" for p in glossary_problems(page.no_detector, text)]
        if to_simplified.convert(text) != text:
            problems.append(f"{page.slug}: Traditional characters in {text[:60]!r}")
        if autocorrect_py.format(prose(text)) != prose(text):
            problems.append(f"{page.slug}: typography: {prose(text)[:60]!r}")
        if not CJK_TEXT.search(text):
            problems.append(f"{page.slug}: no Chinese in {text!r}")
    assert not problems, "\n".join(problems)


CJK_TEXT = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
PYTHON_WITH_CHINESE = sorted(
    [
        *(ROOT / "src" / "torch_pitfalls").rglob("*.py"),
        *(ROOT / "docs" / "_ext").rglob("*.py"),
        *(ROOT / "tools").glob("*.py"),
    ]
)


def chinese_strings(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of every string constant holding Chinese in a Python file: what the site
    and the detectors print (docstrings, where doctests show examples, are left out)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and CJK_TEXT.search(node.value)
    ]


@pytest.mark.parametrize("path", PYTHON_WITH_CHINESE, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_chinese_printed_by_python_avoids_the_glossary_forms(path):
    """Chinese that Python writes out (rule messages, the error notes, recording labels, the
    measured lines' tags, the rule table's headings) uses no form the glossary says to avoid."""
    problems = [
        f'{path.relative_to(ROOT)}:{line}: "{form}" is a form to avoid: write {term} as {chinese}'
        for line, text in chinese_strings(path)
        for form, (term, chinese) in avoided().items()
        if form in text
    ]
    assert not problems, "\n".join(problems)


def test_forms_to_avoid_are_found():
    """The check catches the slips it was written for: 运行时守卫 and 意外键 in the
    state-dict-prefix page and the TP015 message, 主干网络 for the backbone, and the caching
    allocator's GPU memory written 内存 (已分配内存, 预留内存)."""
    catalog = polib.POFile()
    catalog.append(
        polib.POEntry(
            msgid="The runtime guard ``TP015`` finds a key whose unexpected counterpart differs "
            "by a prefix. A partial load, such as the backbone above, is not flagged.",
            msgstr="运行时守卫 ``TP015`` 能发现：缺失的键与对应的意外键只差一个前缀。"
            "部分加载（比如上面的主干网络）不会被标记。",
        )
    )
    catalog.append(
        polib.POEntry(msgid="Allocated and reserved memory", msgstr="已分配内存与预留内存")
    )
    catalog.append(polib.POEntry(msgid="Allocated memory", msgstr="已分配显存"))
    found = [
        problem
        for entry in catalog.translated_entries()
        for problem in glossary_problems(entry.msgid, entry.msgstr)
    ]
    assert found == [
        "runtime guard → 运行时检查 missing",
        "backbone → 骨干网络 missing",
        '"主干网络" is a form to avoid: write backbone as 骨干网络',
        '"运行时守卫" is a form to avoid: write runtime guard as 运行时检查',
        '"意外键" is a form to avoid: write unexpected key as 多余的键',
        "reserved memory → 预留显存 missing",
        '"已分配内存" is a form to avoid: write allocated memory as 已分配显存',
        '"预留内存" is a form to avoid: write reserved memory as 预留显存',
    ]
    # the TP015 message as it was in src/torch_pitfalls/rules.py
    assert glossary_problems(
        "left keys missing whose unexpected counterparts differ only by a wrapper's prefix",
        "留下了缺失的键，而对应的意外键只多了或少了包装器的前缀",
    ) == ['"意外键" is a form to avoid: write unexpected key as 多余的键']
    # a form inside code or a literal is not the reader's text, nor one the English quotes
    assert glossary_problems("Set ``x``", "设置 ``主干网络``") == []
    assert glossary_problems("Do not write 主干网络", "不要写“主干网络”") == []


# -- Chinese text: Simplified characters and typography --------------------------------------------

MARKUP = [
    # roles, reST and MyST: an explicit title is what the reader sees; a cross-reference to a page
    # shows that page's (translated) title, here a CJK stand-in; an API name stays Latin
    (re.compile(r"(?:\{[A-Za-z][\w:-]*\}|:[A-Za-z][\w:-]*:)`([^`<]+?)\s*<[^>]+>`"), r"\1"),
    (re.compile(r"(?:\{(?:ref|doc)\}|:(?:ref|doc):)`[^`]*`"), "页"),
    (re.compile(r"(?:\{[A-Za-z][\w:-]*\}|:[A-Za-z][\w:-]*:)`[^`]*`"), "X"),
    (re.compile(r"``[^`]+``"), "X"),  # reST inline literals
    (re.compile(r"`([^`<]+?)\s*<[^>]+>`__?"), r"\1"),  # reST links: keep the text
    (re.compile(r"\[([^\]]+)\]\([^)]+\)"), r"\1"),  # Markdown links: keep the text
    (re.compile(r"`[^`]+`"), "X"),  # Markdown code spans
    (re.compile(r"\*\*|\*"), ""),  # emphasis markers
    (re.compile(r"\\ "), ""),  # reST escaped space (an empty separator)
    (re.compile(r"https?://\S+"), "X"),  # bare URLs
]


def prose(text: str) -> str:
    """The text a reader sees, with every piece of code or markup replaced by a Latin token."""
    for pattern, replacement in MARKUP:
        text = pattern.sub(replacement, text)
    return text


@pytest.mark.parametrize("path", CATALOGS, ids=catalog_id)
def test_translation_is_simplified_chinese(path):
    import opencc

    to_simplified = opencc.OpenCC("t2s")
    problems = []
    for entry in polib.pofile(str(path)).translated_entries():
        simplified = to_simplified.convert(entry.msgstr)
        if simplified != entry.msgstr:
            chars = {a for a, b in zip(entry.msgstr, simplified, strict=True) if a != b}
            problems.append(f"Traditional characters {sorted(chars)} in: {entry.msgstr[:60]}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CATALOGS, ids=catalog_id)
def test_translation_typography(path):
    """Spaces between CJK and Latin letters or digits, full-width punctuation (autocorrect)."""
    import autocorrect_py

    problems = []
    for entry in polib.pofile(str(path)).translated_entries():
        text = prose(entry.msgstr)
        fixed = autocorrect_py.format(text)
        if fixed != text:
            problems.append(f"{text[:80]!r}\n  should read {fixed[:80]!r}")
    assert not problems, "\n".join(problems)


NAMED_LINKS_AND_CODE = re.compile(
    r"`[^`<]+?\s*<[^>]+>`__?"  # reST named link
    r"|\[[^\]]+\]\([^)]+\)"  # MyST named link
    r"|``(?:[^`]|`(?!`))+``|`[^`]+`"  # inline literals (single backticks inside) and code spans
    r'|<a href="[^"]+">'  # HTML links of the theme's strings (sphinx.po)
)


def bare_urls(text: str) -> list[str]:
    """The URLs of ``text`` that a reader would see as addresses rather than as named links.

    >>> bare_urls("see https://x.org/a（发布说明）")
    ['https://x.org/a（发布说明）']
    >>> bare_urls("see `the notes <https://x.org/a>`_ and [this](https://x.org/b)")
    []
    """
    return re.findall(r"https?://[^\s\"]+", NAMED_LINKS_AND_CODE.sub("", text))


@pytest.mark.parametrize("path", CATALOGS, ids=catalog_id)
def test_no_bare_url(path):
    """Every URL in prose is a named link, in the English and in the Chinese: a bare URL reads
    badly, and next to a full-width bracket it swallows the bracket into the address."""
    problems = []
    for entry in polib.pofile(str(path)).translated_entries():
        for side, text in (("msgid", entry.msgid), ("msgstr", entry.msgstr)):
            problems += [f"{side} {text[:60]!r}: {url}" for url in bare_urls(text)]
    assert not problems, "\n".join(problems)


def test_bare_urls_are_found():
    assert bare_urls("见 https://github.com/pytorch/pytorch/releases/tag/v1.5（发布说明）") == [
        "https://github.com/pytorch/pytorch/releases/tag/v1.5（发布说明）"
    ]
    assert (
        bare_urls("见 `发布说明 <https://github.com/pytorch/pytorch/releases/tag/v1.5.0>`_") == []
    )
    assert bare_urls("见 [发布说明](https://github.com/pytorch/pytorch/releases/tag/v1.5.0)") == []
    assert bare_urls("运行 ``pip install https://x.org/a.whl``") == []
    # an inline literal holding single backticks, then a named link
    text = "ended ``or use `torch.no_grad()` instead.`` (`PR 1 <https://github.com/p/p/pull/1>`_)"
    assert bare_urls(text) == []


def test_a_rewritten_paragraph_keeps_its_translation_as_fuzzy():
    from tools import catalogs

    catalog = polib.POFile()
    old = polib.POEntry(
        msgid="Backward frees the saved tensors.", msgstr="反向传播释放保存的张量。"
    )
    old.obsolete = True
    catalog.append(old)
    catalog.append(polib.POEntry(msgid="Backward frees every saved tensor at once.", msgstr=""))
    catalog.append(polib.POEntry(msgid="Something else entirely, about devices.", msgstr=""))
    assert catalogs.carry_over(catalog) == 1
    entry = catalog.find("Backward frees every saved tensor at once.")
    assert entry.msgstr == "反向传播释放保存的张量。" and "fuzzy" in entry.flags
    assert entry.previous_msgid == "Backward frees the saved tensors."
    assert not catalog.obsolete_entries()
    assert catalog.find("Something else entirely, about devices.").msgstr == ""


# -- Cross-references next to Chinese text ---------------------------------------------------------
#
# A :ref: to a page renders as that page's Chinese title: a plain space between it and Chinese
# text shows as a stray space on the page (the built-site check tests/browser/test_typography.py
# finds it too, but only after a build). reST needs an escaped space there: 见\ :ref:`slug`。

CJK_CHAR = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
PAGE_REF = re.compile(r":(?:ref|doc):`([^`<]+?)(?:\s*<[^>]+>)?`")
TITLED = re.compile(r"\.\. _([\w-]+):\n\n(.+)\n=+\n")


@functools.cache
def chinese_titles() -> dict[str, str]:
    """Label of every example page and topic → the title a Chinese reader sees."""
    titles = {}
    sources = [*(ROOT / "examples").glob("*/plot_*.py")]
    sources += [*(ROOT / "examples").glob("*/GALLERY_HEADER.rst")]
    for source in sources:
        match = TITLED.search(source.read_text(encoding="utf-8"))
        if not match:
            continue
        stem = "index" if source.suffix == ".rst" else source.stem
        catalog = MESSAGES / "auto_examples" / source.parent.name / f"{stem}.po"
        english = match[2].strip()
        if not catalog.exists():  # test_every_page_has_a_catalog names it; no cascade here
            titles[match[1]] = english
            continue
        titles[match[1]] = next(
            (e.msgstr for e in polib.pofile(str(catalog)) if e.msgid == english and e.msgstr),
            english,
        )
    for page in (ROOT / "docs").glob("*.md"):  # :doc:`/detectors` shows its translated title
        heading = re.search(r"^# (.+)$", page.read_text(encoding="utf-8"), re.MULTILINE)
        catalog = MESSAGES / f"{page.stem}.po"
        if heading and catalog.exists():
            english = heading[1].strip()
            titles[f"/{page.stem}"] = next(
                (e.msgstr for e in polib.pofile(str(catalog)) if e.msgid == english and e.msgstr),
                english,
            )
    return titles


def stray_spaces_at_references(text: str, titles: dict[str, str]) -> list[str]:
    r"""Plain spaces between Chinese text and a reference rendered as a Chinese title.

    >>> stray_spaces_at_references("见 :ref:`a`。:ref:`a` 展示", {"a": "梯度"})
    ['见 :ref:`a`', ':ref:`a` 展']
    >>> stray_spaces_at_references("见\\ :ref:`a`，用 :ref:`b`", {"a": "梯度", "b": "CUDA 计时"})
    []
    >>> stray_spaces_at_references("见\\ :ref:`b`", {"b": "``GradScaler`` 与梯度裁剪"})
    ['见\\ :ref:`b`']
    """
    found = []
    for match in PAGE_REF.finditer(text):
        shown = match[1] if "<" in match[0] else titles.get(match[1].lstrip("~"), match[1])
        before, after = text[: match.start()], text[match.end() :]
        if (
            before.endswith(" ")
            and not before.endswith("\\ ")
            and CJK_CHAR.match(before[-2:-1] or "a")
            and CJK_CHAR.match(shown[0])
        ):
            found.append(before[-2:] + match[0])
        if after[:1] == " " and CJK_CHAR.match(after[1:2] or "a") and CJK_CHAR.match(shown[-1]):
            found.append(match[0] + after[:2])
        # The other way round: an escaped space (no space shown) between Chinese text and a
        # title that begins or ends with Latin letters or digits, where the page needs a space.
        latin_start, latin_end = LATIN_EDGE.match(shown), LATIN_EDGE.match(shown[::-1])
        if before.endswith("\\ ") and IDEOGRAPH.match(before[-3:-2] or "a") and latin_start:
            found.append(before[-3:] + match[0])
        if after[:2] == "\\ " and IDEOGRAPH.match(after[2:3] or "a") and latin_end:
            found.append(match[0] + after[:3])
    return found


#: A title's first (or, reversed, last) character as shown: a letter or digit, after any literal
#: or emphasis markup.
LATIN_EDGE = re.compile(r"[`*]*[A-Za-z0-9]")
#: A Chinese character, not punctuation: full-width punctuation needs no space on either side.
IDEOGRAPH = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


EXAMPLE_CATALOGS = [path for path in CATALOGS if "auto_examples" in path.parts]


@pytest.mark.parametrize("path", EXAMPLE_CATALOGS, ids=catalog_id)
def test_no_space_between_chinese_and_a_page_title(path):
    titles = chinese_titles()
    problems = [
        f"{found!r} in: {entry.msgstr[:60]}"
        for entry in polib.pofile(str(path)).translated_entries()
        for found in stray_spaces_at_references(entry.msgstr, titles)
    ]
    assert not problems, (
        "between Chinese text and a Chinese title use a reST escaped space (\\ ); before or "
        "after a title that begins or ends in Latin letters, a plain space:\n" + "\n".join(problems)
    )


def test_stray_spaces_at_references_are_found():
    titles = {"a": "梯度", "b": "CUDA 计时"}
    assert stray_spaces_at_references("见 :ref:`a`。:ref:`a` 展示", titles) == [
        "见 :ref:`a`",
        ":ref:`a` 展",
    ]
    assert stray_spaces_at_references("见\\ :ref:`a`，用 :ref:`b`", titles) == []
    assert stray_spaces_at_references("见 :ref:`梯度累积 <a>`", titles) == [
        "见 :ref:`梯度累积 <a>`"
    ]
    assert stray_spaces_at_references("见\\ :ref:`b`，和\\ :ref:`a`", titles) == ["见\\ :ref:`b`"]


#: A named link whose text ends with a Chinese character, then a space and a Chinese character:
#: the page shows a space between two Chinese words (reST needs an escaped space, ``\ ``).
SPACE_AFTER_CHINESE_LINK = re.compile(r"[\u4e00-\u9fff] <[^<>`]+>`__? (?=[\u4e00-\u9fff])")


def test_space_after_a_chinese_link_is_found():
    assert SPACE_AFTER_CHINESE_LINK.search("见 `文档 <https://x.org>`_ 建议")
    assert not SPACE_AFTER_CHINESE_LINK.search("见 `issue 5 <https://x.org>`_ 中")
    assert not SPACE_AFTER_CHINESE_LINK.search("见 `文档 <https://x.org>`_\\ 建议")


@pytest.mark.parametrize("path", CATALOGS, ids=catalog_id)
def test_no_space_after_a_link_whose_text_ends_in_chinese(path):
    problems = [
        entry.msgstr[:80]
        for entry in polib.pofile(str(path)).translated_entries()
        if SPACE_AFTER_CHINESE_LINK.search(entry.msgstr)
    ]
    assert not problems, "use a reST escaped space (\\ ) after the link:\n" + "\n".join(problems)


#: A MyST role whose text is Chinese, after Chinese with a space: the page shows a space between
#: two Chinese characters (``见 {ref}`退出状态 <…>``` → "见 退出状态").
MYST_ROLE_AFTER_A_SPACE = re.compile(
    r"[\u3400-\u9fff，：（] (?:\{(?:ref|doc)\}`|\[)[\u3400-\u9fff]"
)  # a role or a named link ([发布说明](…))


@pytest.mark.parametrize("path", CATALOGS, ids=catalog_id)
def test_no_space_between_chinese_and_a_myst_role_in_chinese(path):
    problems = [
        entry.msgstr[:80]
        for entry in polib.pofile(str(path)).translated_entries()
        if MYST_ROLE_AFTER_A_SPACE.search(entry.msgstr)
    ]
    assert not problems, "\n".join(problems)


def test_a_space_before_a_chinese_myst_role_is_found():
    assert MYST_ROLE_AFTER_A_SPACE.search("时为 2：见 {ref}`退出状态 <lint-exit-status>`")
    assert not MYST_ROLE_AFTER_A_SPACE.search("时为 2：见{ref}`退出状态 <lint-exit-status>`")
    assert not MYST_ROLE_AFTER_A_SPACE.search("见 {ref}`Exit status <lint-exit-status>`")
    assert MYST_ROLE_AFTER_A_SPACE.search("见 [发布说明](https://example.org)")
    assert not MYST_ROLE_AFTER_A_SPACE.search("与 [PR#30531](https://example.org)")
