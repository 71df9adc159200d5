"""Asserting the errors and warnings a page demonstrates, and showing their real text.

Every example shows PyTorch's own messages through these helpers: the message printed on the page
is the one raised at build time, and if PyTorch stops raising (or changes the message so that the
pattern no longer matches) the example fails, and with it the docs build and the tests.
Introduced on the "data-vs-detach" page and used on every page that shows an error.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Caught:
    """What :func:`~torch_pitfalls.expect_raises` or :func:`~torch_pitfalls.expect_warns` caught.

    Attributes:
        exception: the exception raised in the block (``expect_raises``), else ``None``.
        warnings: the matching :class:`warnings.WarningMessage` records (``expect_warns``).
    """

    exception: BaseException | None = None
    warnings: list[warnings.WarningMessage] = field(default_factory=list)

    @property
    def message(self) -> str:
        """The text of the exception, or of the first matching warning (``str``)."""
        if self.exception is not None:
            return str(self.exception)
        return str(self.warnings[0].message) if self.warnings else ""


def _check_args(kind: type | tuple[type, ...], match: str, base: type) -> re.Pattern[str]:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not kinds or not all(isinstance(k, type) and issubclass(k, base) for k in kinds):
        raise TypeError(f"expected a subclass of {base.__name__} or a tuple of them, got {kind!r}")
    if not isinstance(match, str):
        raise TypeError(f"match must be a regular expression string, got {type(match).__name__}")
    try:
        return re.compile(match)
    except re.error as err:
        raise ValueError(f"match is not a valid regular expression: {err}") from None


@contextmanager
def expect_raises(
    kind: type[BaseException] | tuple[type[BaseException], ...],
    match: str = "",
    *,
    show: bool = True,
) -> Iterator[Caught]:
    """Assert that the block raises ``kind`` with a message matching ``match``, and print it.

    Args:
        kind: the exception class expected (a subclass matches too), or a tuple of classes.
        match: a regular expression searched (:func:`re.search`) in ``str(exception)``.
        show: print ``"<ExceptionName>: <message>"`` so that the page shows the real message,
            then each note of the exception (PEP 678: :meth:`BaseException.add_note`) on a line of
            its own, as a traceback shows them.

    Yields:
        A :class:`~torch_pitfalls.expect.Caught`; its ``exception`` is set when the block ends.

    Raises:
        AssertionError: the block raised nothing, or the message does not match ``match``.
        TypeError: ``kind`` is not an exception class, or ``match`` is not a string.
        ValueError: ``match`` is not a valid regular expression.

    An exception of another class than ``kind`` is not caught: it propagates unchanged.

    >>> with expect_raises(ZeroDivisionError, "division by zero"):
    ...     1 / 0
    ZeroDivisionError: division by zero
    >>> with expect_raises(ZeroDivisionError):
    ...     pass
    Traceback (most recent call last):
    ...
    AssertionError: expected ZeroDivisionError, but nothing was raised
    """
    pattern = _check_args(kind, match, BaseException)
    caught = Caught()
    names = "/".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
    try:
        yield caught
    except kind as exc:
        caught.exception = exc
    else:
        raise AssertionError(f"expected {names}, but nothing was raised")
    message = str(caught.exception)
    if not pattern.search(message):
        raise AssertionError(
            f"{type(caught.exception).__name__} was raised, but its message does not match "
            f"{match!r}:\n{message}"
        )
    if show:
        print(f"{type(caught.exception).__name__}: {message}")
        for note in getattr(caught.exception, "__notes__", ()):
            print(note)  # PEP 678 notes, as the traceback shows them


@contextmanager
def expect_warns(
    category: type[Warning] | tuple[type[Warning], ...],
    match: str = "",
    *,
    show: bool = True,
) -> Iterator[Caught]:
    """Assert that the block warns with ``category`` and a message matching ``match``; print it.

    Warnings are recorded with the ``"always"`` filter, so a warning PyTorch issues only once per
    process is still seen here (the examples run in one process per build).

    Args:
        category: the warning class expected (a subclass matches too), or a tuple of classes.
        match: a regular expression searched in the warning's message.
        show: print ``"<WarningName>: <message>"`` for each matching warning.

    Yields:
        A :class:`~torch_pitfalls.expect.Caught`; its ``warnings`` holds the matching records when
        the block ends.

    Raises:
        AssertionError: no matching warning was issued.
        TypeError: ``category`` is not a warning class, or ``match`` is not a string.
        ValueError: ``match`` is not a valid regular expression.

    >>> import warnings
    >>> with expect_warns(UserWarning, "old"):
    ...     warnings.warn("old API")
    UserWarning: old API
    """
    pattern = _check_args(category, match, Warning)
    caught = Caught()
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        yield caught
    caught.warnings = [
        r for r in records if issubclass(r.category, category) and pattern.search(str(r.message))
    ]
    if not caught.warnings:
        seen = "; ".join(f"{r.category.__name__}: {r.message}" for r in records) or "none"
        names = getattr(category, "__name__", str(category))
        raise AssertionError(f"expected a {names} matching {match!r}; warnings seen: {seen}")
    if show:
        for record in caught.warnings:
            print(f"{record.category.__name__}: {record.message}")
