"""PyTorch's own error and warning messages, each mapped to the page of this site that explains it.

One table, :data:`MESSAGES`, read from the pages' records in the catalog
(:mod:`torch_pitfalls.catalog`), lists every error and warning of PyTorch that a page of the site
shows (with :func:`~torch_pitfalls.expect_raises` or :func:`~torch_pitfalls.expect_warns`): the
class of the exception or warning, a regular expression that PyTorch's message matches, and the
page's slug. The runtime guards (:mod:`torch_pitfalls.guards`) add a note with the page's URL
to a matching error (PEP 678), and issue a :class:`~torch_pitfalls.guards.PitfallWarning` with
the URL after a matching warning; an index of errors in the docs can be built from the same table.

This module imports only the standard library and :mod:`torch_pitfalls.catalog` (no torch), so that
the docs build and the static checker can read it. ``tests/test_messages.py`` makes PyTorch raise
or warn each message, and checks that every message the pages assert has an entry here.

>>> find("RuntimeError", "element 0 of tensors does not require grad and does not have a grad_fn")
... # doctest: +ELLIPSIS
Message(kind='error', category='RuntimeError', pattern='element 0 of tensors does not ...
>>> find("UserWarning", "something else") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torch_pitfalls import catalog as _catalog

KINDS = ("error", "warning")
"""An entry is a PyTorch exception (``error``) or a warning (``warning``)."""


@dataclass(frozen=True)
class Message:
    """One of PyTorch's messages and the page that explains it.

    Attributes:
        kind: ``"error"`` or ``"warning"`` (:data:`KINDS`).
        category: the name of the exception or warning class PyTorch raises (``"RuntimeError"``,
            ``"UnpicklingError"``, ``"UserWarning"``), or an alternation of names
            (``"(IndexError|RuntimeError)"``); a subclass's name does not match.
        pattern: a regular expression searched (:func:`re.search`) in the message.
        slug: the page that explains it (a page of :mod:`torch_pitfalls.catalog`).
        rule: the id of a runtime rule of kind ``note`` whose message is the note, or ``""`` for
            the generic note (:data:`NOTE`).
        until: the last PyTorch release that prints this wording (``"2.6"``) when newer
            releases no longer print it, else ``""``.
    """

    kind: str
    category: str
    pattern: str
    slug: str
    rule: str = ""
    until: str = ""
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        object.__setattr__(self, "regex", re.compile(self.pattern))

    @property
    def topic(self) -> str:
        """The topic of the entry's page, from the catalog."""
        return _catalog.page(self.slug).topic

    def url(self, *, language: str | None = None, base_url: str | None = None) -> str:
        """The URL of the entry's page in ``language`` (:func:`torch_pitfalls.catalog.url`).

        Raises:
            ValueError: ``language`` is not a site language, or the base URL is not a URL.
        """
        return _catalog.url(self.slug, language=language, base_url=base_url)

    def matches(self, category: str, text: str) -> bool:
        """Whether a message of the class named ``category`` with this ``text`` is this entry."""
        names = self.category.strip("()").split("|")
        return category in names and self.regex.search(text) is not None


MESSAGES: tuple[Message, ...] = tuple(
    Message(m["kind"], m["category"], m["pattern"], p.slug, m.get("rule", ""), m.get("until", ""))
    for p in _catalog.pages()
    for m in p.messages
)
"""Every entry, from the pages' records in the catalog (``[[pages.<slug>.messages]]``), in
reading order. The first entry that matches a message is its entry."""

NOTE = {
    "en": "torch-pitfalls: this message of PyTorch is explained, with its fix, on the page",
    "zh_CN": "torch-pitfalls：这条 PyTorch 消息的原因和修正方法见页面",
}
"""The generic note (and warning) text, followed by ``" → "`` and the page's URL, by language."""


NOT_PYTORCH: tuple[tuple[str, str, str], ...] = (
    (
        "IndexError",
        r"indices must be in \[\d+, \d+\) for dim \d+, got",
        "the index-select page's own helper",
    ),
    ("TypeError", r"'float' object is not iterable", "Python's own, list.extend() of a float"),
)
"""Messages that a page prints but that are not PyTorch's (nor Python's for a PyTorch
pitfall): ``(class name, regular expression, why)``. The docs' error index leaves them out."""


GENERIC: tuple[tuple[str, str, str], ...] = (
    (
        "RuntimeError",
        r"The size of tensor a \(\d+\) must match the size of tensor b",
        "any broadcast",
    ),
    ("RuntimeError", r"doesn't match the broadcast shape", "any in-place broadcast"),
    ("RuntimeError", r"mat1 and mat2 shapes cannot be multiplied", "any mismatched matrix product"),
    (
        "IndexError",
        r"Dimension out of range \(expected to be in range of",
        "any dimension past a rank",
    ),
    ("RuntimeError", r"Tensors must have same number of dimensions", "any cat of different ranks"),
    ("ValueError", r"Target size \(.*\) must be the same as input size", "any BCE shape mismatch"),
    (
        "ModuleNotFoundError",
        r"No module named",
        "Python's, for any missing import (from torch.load: a whole model whose module is gone)",
    ),
)
"""PyTorch messages that pages print but that have no entry on purpose: ``(class name, regular
expression, why)``. Each has many causes, so an entry would send every such error, whatever its
cause, to one page; the error index still lists them, with the pages that print them, and the
guards add no note."""


def generic(category: str, text: str) -> bool:
    """Whether a message of class ``category`` is one of :data:`GENERIC`.

    >>> generic("RuntimeError", "mat1 and mat2 shapes cannot be multiplied (4x32 and 8x10)")
    True
    """
    return any(category == name and re.search(pattern, text) for name, pattern, _ in GENERIC)


def not_pytorchs(category: str, text: str) -> bool:
    """Whether a message of class ``category`` is one of :data:`NOT_PYTORCH`.

    >>> not_pytorchs("IndexError", "indices must be in [0, 3) for dim 0, got 0..5")
    True
    """
    return any(category == name and re.search(pattern, text) for name, pattern, _ in NOT_PYTORCH)


def find(category: str, text: str, kind: str | None = None) -> Message | None:
    """The first entry for a message of class ``category`` (its name) and ``text``, or None.

    ``category`` is the class's ``__name__``; an entry whose ``category`` is written as an
    alternation (``"(IndexError|RuntimeError)"``) accepts each name.

    Raises:
        ValueError: ``kind`` is given and is not one of :data:`KINDS`.
    """
    if kind is not None and kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    for entry in MESSAGES:
        if kind is not None and entry.kind != kind:
            continue
        if entry.matches(category, text):
            return entry
    return None
