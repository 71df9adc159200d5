"""The detectors' rules: one module per rule, of either kind, and what reads them.

Each module ``tpNNN_<name>.py`` of this package is the one home of one rule (``TP0xx`` runtime,
``TP1xx`` static), and holds:

* ``RULE``, its :class:`Rule`: id, kind, page, title and message in English and Simplified
  Chinese, and for a runtime rule what it watches (``on``, as data: the dotted names of torch
  functions, or events);
* its check: ``check(context)`` for a static rule (:mod:`torch_pitfalls.lint`), which yields
  ``(line, column from 0)`` of each finding; for a runtime rule the functions its events call
  (:data:`EVENTS`; :mod:`torch_pitfalls.guards` resolves the names on entering);
* for a static rule that can fix some of its findings, ``fix(context)``, which yields a
  :class:`Fix` for each finding that it can fix safely, located where ``check`` reported it
  (``python -m torch_pitfalls.lint --fix`` applies them, ``--diff`` shows them; it is called only
  on a module where ``check`` found something, after ``check``, with the same context; a fix
  whose finding is silenced by ``# noqa`` is not applied). For example, ``TP102``'s adds
  ``training=self.training`` to ``F.dropout(x, 0.5)`` in a method of an ``nn.Module``:
  ``yield Fix(call.lineno, call.col_offset, (Edit.insert(end.end_lineno, end.end_col_offset,
  ", training=self.training"),))``, where ``end`` is the call's last argument;
* its documentation, in its docstring, in one fixed shape (ruff's): the sections
  :data:`SECTIONS`, each under ``.. rubric::``; :func:`documentation` reads them, for the
  Detectors page, ``python -m torch_pitfalls.lint --explain ID`` and the API reference.

The modules are found by name (:data:`RULES`, sorted by id): a new rule is a new module, and its
two fixtures ``tests/rules/fixtures/tpNNN_positive.py`` and ``tpNNN_negative.py``. This package
imports only the standard library (a runtime rule imports torch inside its functions), so the
checker and the docs load every rule without torch.

>>> rule("TP001").slug
'cross-entropy-expects-logits'
>>> page_url("functional-dropout", language="en", base_url="https://example.org/")
'https://example.org/en/auto_examples/modules/plot_functional_dropout.html'
>>> list(documentation("TP101"))
['What it does', 'Why is this bad?', 'Example', 'Use instead', 'Page']
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import textwrap
import types
from dataclasses import dataclass

from torch_pitfalls.catalog import (  # noqa: F401  (the detectors' URLs, re-exported)
    BASE_URL,
    BASE_URL_ENV,
    LANGUAGE_ENV,
    LANGUAGES,
    page_path,
    resolve_language,
    site_url,
)
from torch_pitfalls.catalog import url as page_url

KINDS = ("guard", "note", "lint")
"""The kinds of rule. ``guard`` is a runtime check that warns with a
:class:`~torch_pitfalls.guards.PitfallWarning`, ``note`` a runtime check that adds a note (PEP 678)
to an error PyTorch raises, ``lint`` a static check of source code (:mod:`torch_pitfalls.lint`)."""


@dataclass(frozen=True)
class Rule:
    """One detector.

    Attributes:
        id: stable id, ``TP`` and three digits (``TP0xx`` runtime, ``TP1xx`` static); flake8
            accepts it as an error code.
        kind: one of :data:`KINDS`.
        slug: the page that explains the pitfall (a page of :mod:`torch_pitfalls.catalog`).
        title: short name, by language (``{"en": ..., "zh_CN": ...}``).
        message: what was found and what to do, by language.
        default: ``False`` for an opt-in rule, which runs only when enabled by id.
        on: for a runtime rule, what it watches, as data (:class:`Call`, :class:`Returned`,
            :class:`Error` of a torch function named by its dotted name, or an event of
            :data:`EVENTS`): the guards resolve the names on entering.
    """

    id: str
    kind: str
    slug: str
    title: dict[str, str]
    message: dict[str, str]
    default: bool = True
    on: tuple = ()

    @property
    def module(self) -> types.ModuleType:
        """The rule's module, its one home (``check``, ``forward``… and its documentation)."""
        return _MODULES[self.id]


@dataclass(frozen=True)
class Edit:
    """One change of a fix (:class:`Fix`): the text of the module from ``(line, col)`` to
    ``(end_line, end_col)`` replaced by ``replacement`` (an insertion when both are the same).

    Lines count from 1 and columns from 0, as :mod:`ast` counts them (``node.lineno``,
    ``node.col_offset``, ``node.end_lineno``, ``node.end_col_offset``: UTF-8 bytes), so that a
    rule takes them straight from the nodes it reads.
    """

    line: int
    col: int
    end_line: int
    end_col: int
    replacement: str

    def __post_init__(self) -> None:
        if (self.line, self.col) > (self.end_line, self.end_col) or self.line < 1 or self.col < 0:
            raise ValueError(f"an edit must end after it starts, at line 1 or later: {self}")

    @classmethod
    def insert(cls, line: int, col: int, text: str) -> Edit:
        """Insert ``text`` at ``(line, col)``."""
        return cls(line, col, line, col, text)


@dataclass(frozen=True)
class Fix:
    """A safe fix of one finding of a static rule: its edits (:class:`Edit`, which must not
    overlap), for the finding the rule's ``check`` reported at ``(line, col)``.

    A fix is safe when it changes nothing but the pitfall: the fixed code does what its author
    meant, and what it did when the pitfall did not bite. A rule whose fix is not safe says what
    to write in its message instead.
    """

    line: int
    col: int
    edits: tuple[Edit, ...]


def _rule(id, kind, slug, title_en, title_zh, message_en, message_zh, default=True, on=()) -> Rule:
    """A :class:`Rule` from its texts in English and Chinese, in that order."""
    return Rule(id, kind, slug, {"en": title_en, "zh_CN": title_zh},
                {"en": message_en, "zh_CN": message_zh}, default, tuple(on))  # fmt: skip


@dataclass(frozen=True)
class Call:
    """A runtime rule's target: each call of a torch function, named by its dotted name; the
    rule's ``check(guards, func, args, kwargs)`` runs before the call."""

    name: str


@dataclass(frozen=True)
class Returned:
    """Each call of a torch function that returned; the rule's ``returned(guards, result)``."""

    name: str


@dataclass(frozen=True)
class Error:
    """An error raised by a call of a torch function, which may get the rule's note (PEP 678) when
    the registry of PyTorch's messages (:mod:`torch_pitfalls.messages`) names the rule; the rule's
    optional ``claims(error, func, args, kwargs)`` says whether the error is the rule's."""

    name: str


EVENTS = {
    "forward": "forward(guards, module): before each module's forward",
    "optimizer step": "step(guards, optimizer, args, kwargs): before each optimizer step",
    "after optimizer step": "after_step(guards, optimizer): after each optimizer step",
    "backward": "before_backward(guards) -> token, after_backward(guards, token): around backward",
    "evaluation settled": "settled(guards, records, optimizer): eval-mode forwards under grad "
    "mode, settled at the next optimizer step (None: on leaving the guards)",
    "saved tensors": "pack(guards, tensor), unpack(guards, packed): each tensor saved for "
    "backward, and its use (torch.autograd.graph.saved_tensors_hooks; one rule at most)",
}
"""The events of the runtime guards a rule can watch besides calls (its ``on``), each with the
function of the rule's module that it calls. A rule may also define ``start(guards)`` and
``stop(guards)``, run on entering and leaving the guards."""


def loss_input(args: tuple, kwargs: dict):
    """The ``input`` of a loss call (``cross_entropy``, ``nll_loss``) as the runtime rules check
    it: a non-empty floating-point tensor, else ``None`` (nothing to check). Torch is imported
    only when a rule runs, under the guards."""
    import torch

    value = args[0] if args else kwargs.get("input")
    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
        return value
    return None


def _discover() -> tuple[Rule, ...]:
    """Every ``tpNNN_*.py`` module of this package, imported; their ``RULE``, in id order."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        if _MODULE_NAME.fullmatch(info.name):
            module = importlib.import_module(f"{__name__}.{info.name}")
            if module.RULE.id.lower() != info.name[:5]:
                raise ImportError(f"{info.name} declares {module.RULE.id}")
            _MODULES[module.RULE.id] = module
            found.append(module.RULE)
    return tuple(sorted(found, key=lambda r: r.id))


_MODULE_NAME = re.compile(r"tp\d{3}_\w+")
_MODULES: dict[str, types.ModuleType] = {}
RULES: tuple[Rule, ...] = _discover()
"""Every rule in id order, the ``RULE`` of each module ``tpNNN_<name>.py`` of this package."""

_BY_ID = {r.id: r for r in RULES}


def rule(rule_id: str) -> Rule:
    """The rule with this id.

    Raises:
        KeyError: no rule has this id; the message lists the known ids.
    """
    try:
        return _BY_ID[rule_id]
    except (KeyError, TypeError):
        raise KeyError(f"unknown rule id {rule_id!r}; known: {', '.join(_BY_ID)}") from None


def rules_for(slug: str, kind: str | None = None) -> list[Rule]:
    """The rules that point to the page ``slug`` (of one kind, if given), in id order."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return [r for r in RULES if r.slug == slug and (kind is None or r.kind == kind)]


def check_ids(ids, *, what: str = "rule id") -> frozenset[str]:
    """Validate an iterable of rule ids (a single string is one id); return them as a set.

    Raises:
        KeyError: an id is unknown.
    """
    if isinstance(ids, str):
        ids = [ids]
    out = frozenset(ids)
    for rule_id in out:
        if rule_id not in _BY_ID:
            raise KeyError(f"unknown {what} {rule_id!r}; known: {', '.join(_BY_ID)}")
    return out


def localize(text: str, language: str) -> str:
    """``text`` with every English finding message (:func:`describe`), and every note on a message
    of PyTorch (:data:`torch_pitfalls.messages.NOTE`), rewritten in ``language``.

    The docs build runs each page once, with English messages, and shows its output in both
    languages; on a Chinese page the messages, and the language of their page URLs, are Chinese.
    Anything else in ``text`` is left as it is.

    Raises:
        ValueError: ``language`` is not a site language.

    >>> english = describe("TP102", language="en", base_url="https://x.org")
    >>> localize(f"PitfallWarning: {english}", "zh_CN")  # doctest: +ELLIPSIS
    'PitfallWarning: TP102 F.dropout 及同类函数默认 training=True...→ https://x.org/zh_CN/auto_examples/...'
    """
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    if language == "en" or " → " not in text:
        return text
    for found in RULES:
        pattern = re.compile(
            re.escape(f"{found.id} {found.message['en']} → ") + r"(\S+?)/en/(auto_examples/\S+)"
        )
        replacement = f"{found.id} {found.message[language]} → \\1/{language}/\\2"
        text = pattern.sub(lambda m, r=replacement: m.expand(r), text)
    from torch_pitfalls.messages import NOTE  # imported here: messages imports this module

    pattern = re.compile(re.escape(f"{NOTE['en']} → ") + r"(\S+?)/en/(auto_examples/\S+)")
    replacement = f"{NOTE[language]} → \\1/{language}/\\2"
    return pattern.sub(lambda m: m.expand(replacement), text)


def describe(rule_id: str, *, language: str | None = None, base_url: str | None = None) -> str:
    """The full message of a finding: ``"ID message → URL"`` in the chosen language.

    >>> describe("TP102", language="en", base_url="https://x.org")  # doctest: +ELLIPSIS
    'TP102 F.dropout and its family default to training=True, ... → https://x.org/en/...html'
    """
    found = rule(rule_id)
    lang = resolve_language(language)
    url = page_url(found.slug, language=lang, base_url=base_url)
    return f"{found.id} {found.message[lang]} → {url}"


SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead")
"""The sections of a rule's documentation, in order (ruff's shape), each under
``.. rubric:: <section>`` in the docstring of the rule's module."""

_RUBRIC = re.compile(r"^\.\. rubric:: (.+?)\s*$", re.MULTILINE)


def documentation(
    rule_id: str, *, language: str | None = None, base_url: str | None = None
) -> dict[str, str]:
    """A rule's documentation, from the docstring of its module: each section of
    :data:`SECTIONS`, by name, in order (reST text, dedented, no heading), then ``"Page"``, the
    URL of the rule's page (:func:`torch_pitfalls.catalog.url` of ``RULE.slug``).

    Raises:
        KeyError: no rule has this id.
        ValueError: the docstring lacks a section, or has them out of order.

    >>> documentation("TP102", base_url="https://x.org", language="en")["Page"]
    'https://x.org/en/auto_examples/modules/plot_functional_dropout.html'
    """
    found = rule(rule_id)
    text = inspect.cleandoc(found.module.__doc__ or "")
    parts = _RUBRIC.split(text)
    names = parts[1::2]
    if tuple(names) != SECTIONS:
        raise ValueError(f"{rule_id}: the docstring's sections are {names}, not {list(SECTIONS)}")
    sections = {
        name: textwrap.dedent(body).strip() for name, body in zip(names, parts[2::2], strict=True)
    }
    lang = resolve_language(language)
    sections["Page"] = page_url(found.slug, language=lang, base_url=base_url)
    return sections


def explain(rule_id: str, *, language: str | None = None, base_url: str | None = None) -> str:
    """A rule's documentation as plain text, for a terminal (``--explain``): its id and title,
    its kind (and ``opt-in``, ``fixable`` when its module has a ``fix``: see ``--fix``), then
    each section of :func:`documentation` under its name."""
    found = rule(rule_id)
    lang = resolve_language(language)
    lines = [f"{found.id}: {found.title[lang]} ({found.kind}"
             + ("" if found.default else ", opt-in")
             + (", fixable" if hasattr(found.module, "fix") else "") + ")"]  # fmt: skip
    for name, body in documentation(rule_id, language=lang, base_url=base_url).items():
        body = re.sub(r"^\.\. code-block:: \w+\n\n", "", body, flags=re.MULTILINE)
        body = re.sub(r"(?::\w+:)?``?~?([^`]+)``?", r"\1", body)
        lines += ["", name, "-" * len(name), body]
    return "\n".join(lines)
