"""The catalog of pages: one record per page, and the only code that turns a slug into anything.

A page is ``examples/<topic>/plot_<slug with underscores>.py``, built by sphinx-gallery into the
document ``auto_examples/<topic>/plot_<…>`` and published at
``<site>/<language>/auto_examples/<topic>/plot_<…>.html``. Everything the site says about a page
besides the page itself is its record in ``pages.toml`` beside this module (shipped in the wheel):
its topic and reading order, what readers search for, its related pages, the symptoms it explains
and PyTorch's messages it explains. The docs build, the detectors and the tests derive every list,
order, index, URL and registry from it; ``tests/test_catalog.py`` checks it against the
``examples/`` tree.

This module imports only the standard library, so that the static checker and the docs build can
read it without torch.

>>> page("functional-dropout").topic
'modules'
>>> page("functional-dropout").docname
'auto_examples/modules/plot_functional_dropout'
>>> slug_of("examples/modules/plot_functional_dropout.py")
'functional-dropout'
>>> url("functional-dropout", language="zh_CN", base_url="https://example.org/")
'https://example.org/zh_CN/auto_examples/modules/plot_functional_dropout.html'
"""

from __future__ import annotations

import functools
import locale
import os
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePath

BASE_URL = "https://torch-pitfalls.readthedocs.io"
"""The address where the site is published, which serves the build's ``docs/_build/html`` folder
(its ``en/`` and ``zh_CN/`` folders hold the two languages). It is the one setting behind every
page URL of the detectors and the docs' ``html_baseurl``; override it with the environment
variable :data:`BASE_URL_ENV` (a mirror, a local build).

Read the Docs serves a project under ``/<language>/<version>/`` by default; this address assumes
the project's "URL versioning scheme" is set to "Single version without translations", which
serves the uploaded folder at ``/``. The Read the Docs build checks that
(``docs/_ext/published_url.py``) and fails otherwise."""

BASE_URL_ENV = "TORCH_PITFALLS_BASE_URL"
"""Environment variable that overrides :data:`BASE_URL` (for a mirror or a local build)."""

LANGUAGE_ENV = "TORCH_PITFALLS_LANGUAGE"
"""Environment variable that chooses the language of messages and URLs, ``en`` or ``zh_CN``."""

LANGUAGES = ("en", "zh_CN")
"""The site's languages, English (the source) and Simplified Chinese."""

GALLERY = "auto_examples"
"""The folder of the built site (and of the docs source) where sphinx-gallery puts the pages."""

MESSAGE_KINDS = ("error", "warning")
SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class Topic:
    """A topic: a folder of ``examples/`` and a section of the gallery.

    Attributes:
        name: the folder's name (``"autograd"``).
        colour: the colour of its cards (``"#4c72b0"``).
        sign: the sign drawn on its cards (``"∇"``).
    """

    name: str
    colour: str
    sign: str


@dataclass(frozen=True)
class Symptom:
    """An entry of the symptom index: what readers see before they know the cause.

    Attributes:
        id: stable id (``"loss-nan"``), the anchor of its section.
        title: what the reader sees, in English (the Chinese is in the symptom page's catalog).
        pages: the slugs of the pages that explain it, in reading order.
        group: the id of the :class:`SymptomGroup` it is listed under, or ``""``.
    """

    id: str
    title: str
    pages: tuple[str, ...]
    group: str = ""


@dataclass(frozen=True)
class SymptomGroup:
    """A heading of the symptom index, grouping symptoms as readers think of them (the loss,
    memory, speed, results that change …).

    Attributes:
        id: stable id (``"memory"``), the anchor of its section.
        title: the heading, in English (the Chinese is in the symptom page's catalog).
    """

    id: str
    title: str


@dataclass(frozen=True)
class Page:
    """One page's record.

    Attributes:
        slug: the page's stable id (``"functional-dropout"``).
        topic: the name of its :class:`Topic`.
        search: what readers type or paste for it, in English (API names, messages, symptoms).
        search_zh: the same in Chinese.
        related: slugs of the pages to read next (the reverse direction is derived).
        symptoms: ids of the :class:`Symptom` entries it explains.
        messages: PyTorch's errors and warnings it explains, each a ``dict`` with ``kind``,
            ``category``, ``pattern`` and optionally ``rule`` and ``until``
            (:mod:`torch_pitfalls.messages` reads them).
        log_lines: lines its outputs print that readers paste but that are no ``Class: message``
            (a TorchDynamo log warning, a launcher's argument error), each a ``dict`` with
            ``source`` (what prints it: ``"torch._dynamo"``, ``"argparse"``) and ``pattern`` (a
            regular expression searched in an output's line; the error index lists the line
            from where it matches).
        no_detector: for a page that no rule of the detectors finds, why none can be precise
            (one sentence, English); the box at the top of the page shows it, or the page's
            rules (:mod:`torch_pitfalls.rules`) where it has some.
        no_detector_zh: the same in Chinese.
    """

    slug: str
    topic: str
    search: tuple[str, ...] = ()
    search_zh: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    symptoms: tuple[str, ...] = ()
    messages: tuple[dict, ...] = ()
    log_lines: tuple[dict, ...] = ()
    no_detector: str = ""
    no_detector_zh: str = ""

    @property
    def stem(self) -> str:
        """The example's file name without ``.py`` (``plot_<slug with underscores>``)."""
        return stem(self.slug)

    @property
    def docname(self) -> str:
        """The Sphinx document name of the page (``auto_examples/<topic>/<stem>``)."""
        return f"{GALLERY}/{self.topic}/{self.stem}"

    def example(self, examples: Path) -> Path:
        """The example's file under the folder ``examples`` (the repository's ``examples/``)."""
        return Path(examples) / self.topic / f"{self.stem}.py"


@dataclass(frozen=True)
class Catalog:
    """A catalog read by :func:`parse`: its topics, pages (in reading order), symptoms and the
    symptom index's headings."""

    topics: tuple[Topic, ...]
    pages: tuple[Page, ...]
    symptoms: tuple[Symptom, ...]
    symptom_groups: tuple[SymptomGroup, ...] = ()


def stem(slug: str) -> str:
    """``"functional-dropout"`` → ``"plot_functional_dropout"``, the example's file name stem."""
    return "plot_" + slug.replace("-", "_")


def slug_of(name: str | PurePath) -> str | None:
    """The slug of an example file, a page's file name or docname, or ``None`` for anything else.

    >>> slug_of("auto_examples/autograd/plot_retain_graph")
    'retain-graph'
    >>> slug_of(Path("plot_retain_graph.py")), slug_of("errors")
    ('retain-graph', None)
    """
    base = PurePath(str(name)).name
    for suffix in (".py", ".html", ".rst", ".ipynb", ".po"):
        base = base.removesuffix(suffix)
    if not base.startswith("plot_"):
        return None
    return base.removeprefix("plot_").replace("_", "-")


def parse(text: str, source: str = "pages.toml") -> Catalog:
    """Read and validate a catalog.

    Raises:
        ValueError: a page of an unknown topic, a related page or symptom that does not exist, a
            page related to itself, a symptom or topic declared twice, a malformed slug, or a
            message without ``kind``, ``category`` and a valid ``pattern``; every problem is
            listed, with the page it belongs to.
    """
    data = tomllib.loads(text)
    problems = []
    topics = tuple(Topic(t["name"], t["colour"], t["sign"]) for t in data.get("topics", ()))
    names = [t.name for t in topics]
    problems += [f"topic {n!r} is declared twice" for n in set(names) if names.count(n) > 1]
    groups = tuple(SymptomGroup(g["id"], g["title"]) for g in data.get("symptom_groups", ()))
    group_ids = [g.id for g in groups]
    problems += [
        f"symptom group {g!r} is declared twice" for g in set(group_ids) if group_ids.count(g) > 1
    ]
    symptom_ids = [s["id"] for s in data.get("symptoms", ())]
    problems += [
        f"symptom {s['id']!r}: group {s['group']!r} is not a [[symptom_groups]]"
        for s in data.get("symptoms", ())
        if s.get("group") and s["group"] not in group_ids
    ]
    problems += [  # the symptom index lists symptoms under their groups' headings
        f"symptom {s['id']!r} has no group (each symptom is listed under its [[symptom_groups]])"
        for s in data.get("symptoms", ())
        if groups and not s.get("group")
    ]
    problems += [
        f"symptom {s!r} is declared twice" for s in set(symptom_ids) if symptom_ids.count(s) > 1
    ]
    records = data.get("pages", {})
    pages = []
    for slug, record in records.items():
        unknown = set(record) - {f.name for f in Page.__dataclass_fields__.values()}
        if unknown:
            problems.append(f"[pages.{slug}]: unknown field(s) {sorted(unknown)}")
        if not SLUG.fullmatch(slug):
            problems.append(f"[pages.{slug}]: a slug is lower-case words joined by '-'")
        if record.get("topic") not in names:
            problems.append(f"[pages.{slug}]: topic {record.get('topic')!r} is not a [[topics]]")
        for other in record.get("related", ()):
            if other not in records:
                problems.append(f"[pages.{slug}]: related page {other!r} is not a page")
            if other == slug:
                problems.append(f"[pages.{slug}] is related to itself")
        for symptom in record.get("symptoms", ()):
            if symptom not in symptom_ids:
                problems.append(f"[pages.{slug}]: symptom {symptom!r} is not a [[symptoms]]")
        if bool(record.get("no_detector")) != bool(record.get("no_detector_zh")):
            problems.append(f"[pages.{slug}]: no_detector needs both languages")
        for message in record.get("messages", ()):
            if message.get("kind") not in MESSAGE_KINDS or not message.get("category"):
                problems.append(f"[pages.{slug}]: a message needs a kind and a category")
            try:
                re.compile(message.get("pattern", ""))
            except re.error as err:
                problems.append(f"[pages.{slug}]: pattern {message.get('pattern')!r}: {err}")
        for line in record.get("log_lines", ()):
            if not line.get("source") or not line.get("pattern"):
                problems.append(f"[pages.{slug}]: a log line needs a source and a pattern")
            try:
                re.compile(line.get("pattern", ""))
            except re.error as err:
                problems.append(f"[pages.{slug}]: pattern {line.get('pattern')!r}: {err}")
        known = {f.name for f in Page.__dataclass_fields__.values()} - {"slug"}
        fields = {
            k: tuple(v) if isinstance(v, list) else v for k, v in record.items() if k in known
        }
        pages.append(Page(slug=slug, **fields))
    if problems:
        raise ValueError(f"{source}: " + "; ".join(problems))
    order = {name: i for i, name in enumerate(names)}
    pages.sort(key=lambda p: order[p.topic])  # stable: file order within a topic
    symptoms = tuple(
        Symptom(
            s["id"],
            s["title"],
            tuple(p.slug for p in pages if s["id"] in p.symptoms),
            s.get("group", ""),
        )
        for s in data.get("symptoms", ())
    )
    return Catalog(topics, tuple(pages), symptoms, groups)


@functools.cache
def load() -> Catalog:
    """The catalog of the installed package (``pages.toml``), read once."""
    text = resources.files(__name__).joinpath("pages.toml").read_text(encoding="utf-8")
    return parse(text)


def topics() -> tuple[Topic, ...]:
    """The topics, in reading order."""
    return load().topics


def pages() -> tuple[Page, ...]:
    """Every page, in reading order (topic by topic, each topic's pages in catalog order)."""
    return load().pages


def slugs() -> tuple[str, ...]:
    """Every page's slug, in reading order."""
    return tuple(p.slug for p in pages())


def symptoms() -> tuple[Symptom, ...]:
    """The symptom index's entries, in its order."""
    return load().symptoms


def symptom_groups() -> tuple[SymptomGroup, ...]:
    """The symptom index's headings, in its order."""
    return load().symptom_groups


@functools.cache
def _by_slug() -> dict[str, Page]:
    return {p.slug: p for p in pages()}


def page(slug: str) -> Page:
    """The record of the page ``slug``.

    Raises:
        KeyError: ``slug`` is not a page of the catalog (the message lists the close ones).
    """
    try:
        return _by_slug()[slug]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(str(slug), _by_slug(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise KeyError(f"no page {slug!r} in the catalog (pages.toml){hint}") from None


def docname(slug: str) -> str:
    """The Sphinx document name of the page ``slug``: ``auto_examples/<topic>/plot_<…>``."""
    return page(slug).docname


def resolve_language(language: str | None = None) -> str:
    """The language of messages and URLs: ``"en"`` or ``"zh_CN"``.

    ``language`` if given, else the environment variable :data:`LANGUAGE_ENV`, else the locale
    (``LC_ALL``, ``LC_MESSAGES``, ``LANG`` or :func:`locale.getlocale`): Chinese (``zh``…) gives
    ``zh_CN``, anything else ``en``. ``zh``, ``zh-CN``, ``zh_Hans`` and the like are accepted, and
    so is a Sphinx build's ``language`` setting.

    Raises:
        ValueError: ``language`` (or the environment variable) names another language.
    """
    chosen = language if language is not None else os.environ.get(LANGUAGE_ENV, "").strip()
    if chosen:
        normal = chosen.replace("-", "_").lower()
        if normal in ("en", "en_us", "en_gb", "english"):
            return "en"
        if normal in ("zh", "zh_cn", "zh_hans", "zh_hans_cn", "chinese"):
            return "zh_CN"
        raise ValueError(f"language must be one of {LANGUAGES}, got {chosen!r}")
    for variable in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(variable, "")
        if value:
            return "zh_CN" if value.lower().startswith("zh") else "en"
    try:
        current = locale.getlocale()[0] or ""
    except ValueError:
        current = ""
    return "zh_CN" if current.lower().startswith("zh") else "en"


def site_url(override: str | None = None) -> str:
    """The site's address, without a trailing slash: ``override``, else the environment variable
    :data:`BASE_URL_ENV`, else :data:`BASE_URL`.

    Raises:
        ValueError: the address is not an ``http://`` or ``https://`` URL.

    >>> site_url("https://example.org/pitfalls/")
    'https://example.org/pitfalls'
    """
    base = (override or os.environ.get(BASE_URL_ENV, "").strip() or BASE_URL).rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ValueError(f"the site's base URL must start with http:// or https://, got {base!r}")
    return base


def page_path(slug: str, *, language: str | None = None) -> str:
    """Where the page ``slug`` lies in the built site, relative to its root (``docs/_build/html``).

    >>> page_path("functional-dropout", language="zh_CN")
    'zh_CN/auto_examples/modules/plot_functional_dropout.html'

    Raises:
        KeyError: ``slug`` is not a page of the catalog.
        ValueError: ``language`` is not a site language.
    """
    return f"{resolve_language(language)}/{docname(slug)}.html"


def document_url(docname: str, *, language: str | None = None, base_url: str | None = None) -> str:
    """URL of any document of the built site (``"errors"``, ``"auto_examples/index"``) in
    ``language``: the site's address (:func:`site_url`), the language, the docname, ``.html``.

    >>> document_url("errors", language="zh_CN", base_url="https://example.org")
    'https://example.org/zh_CN/errors.html'

    Raises:
        ValueError: ``language`` is not a site language, or the base URL is not a URL.
    """
    return f"{site_url(base_url)}/{resolve_language(language)}/{docname}.html"


def url(slug: str, *, language: str | None = None, base_url: str | None = None) -> str:
    """URL of the page ``slug`` in ``language`` (see :func:`resolve_language`): the site's address
    (:func:`site_url`) followed by :func:`page_path`.

    Raises:
        KeyError: ``slug`` is not a page of the catalog.
        ValueError: ``language`` is not a site language, or the base URL is not a URL.
    """
    return document_url(docname(slug), language=language, base_url=base_url)


def see_also() -> dict[str, list[str]]:
    """Both directions of the declared relations: slug → its related pages, each once.

    The page's own declaration comes first, in its order; then the pages that declared it, in
    reading order.
    """
    both: dict[str, list[str]] = {p.slug: list(dict.fromkeys(p.related)) for p in pages()}
    for p in pages():
        for other in p.related:
            if p.slug not in both[other]:
                both[other].append(p.slug)
    return both


def problems_with_tree(examples: Path) -> list[str]:
    """What differs between the catalog and the ``examples`` folder: a page without a record, a
    record without a page, a page in another topic's folder, a topic without its folder."""
    found = {slug_of(p): p.parent.name for p in sorted(Path(examples).glob("*/plot_*.py"))}
    problems = [f"{path}: no [pages.{slug}] in pages.toml" for slug, path in found.items()
                if slug not in _by_slug()]  # fmt: skip
    for p in pages():
        if p.slug not in found:
            problems.append(f"[pages.{p.slug}]: no {p.topic}/{p.stem}.py in {examples}")
        elif found[p.slug] != p.topic:
            problems.append(
                f"[pages.{p.slug}]: topic {p.topic!r}, but the file is in {found[p.slug]}/"
            )
    for t in topics():
        if not (Path(examples) / t.name).is_dir():
            problems.append(f"topic {t.name!r}: no folder {examples}/{t.name}")
    return problems
