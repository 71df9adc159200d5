"""Notes (PEP 678) on PyTorch's errors, and pointers after its warnings, from the registry of
PyTorch's messages (:mod:`torch_pitfalls.messages`)."""

from __future__ import annotations

from torch_pitfalls import messages as _messages
from torch_pitfalls.guards._common import _STATE, Finding, PitfallWarning, _user_place


class Notes:
    """The part of :class:`~torch_pitfalls.guards.Guards` that notes PyTorch's own messages."""

    def add_note(self, error: BaseException, func=None, args=(), kwargs=None) -> None:
        """A note with the page's URL on an error whose message is in the registry of PyTorch's
        messages: the rule's message for an entry with a runtime rule of kind ``note`` (a
        finding), else the generic note. A rule whose module has ``claims(error, func, args,
        kwargs)`` (TP006) takes only the errors it claims, of the functions it watches; the others
        get the generic note. Once per error."""
        try:
            text = str(error)
        except Exception:  # an exception whose __str__ fails is none of PyTorch's messages
            return
        entry = _messages.find(type(error).__name__, text, "error")
        if entry is None:
            return
        url = entry.url(language=self.language, base_url=self.base_url)
        if any(url in note for note in getattr(error, "__notes__", ()) if isinstance(note, str)):
            return
        rule_id = entry.rule
        claims = self._claims.get(rule_id)
        if claims is not None and not (
            func in self._error_targets.get(rule_id, ()) and claims(error, func, args, kwargs or {})
        ):
            rule_id = ""  # not the error the rule explains: the generic note
        if not rule_id:
            error.add_note(f"{_messages.NOTE[self.language]} → {url}")
            return
        if self._silenced(rule_id):
            return
        note = self.message(rule_id)
        error.add_note(note)
        # A stack without a frame of the user's code (seen on CUDA with PyTorch 2.11 for an error
        # raised by a backward: TP009's fixture was placed nowhere): the backward being run.
        place = _user_place() or getattr(self, "backward_place", None)
        filename, lineno = (place.filename, place.lineno) if place else ("", 0)
        if (rule_id, filename, lineno) not in self._seen:  # the rule's check may have found it
            self._seen.add((rule_id, filename, lineno))
            self.found.append(Finding(rule_id, filename, lineno, note))

    def point_to_page(self, entry: _messages.Message, filename: str, lineno: int) -> None:
        """A PitfallWarning with the page's URL, at the place of a PyTorch warning just shown."""
        import warnings

        key = (entry.slug, filename, lineno)
        if key in self._seen:
            return
        self._seen.add(key)
        url = entry.url(language=self.language, base_url=self.base_url)
        warning = PitfallWarning(f"{_messages.NOTE[self.language]} → {url}")
        _STATE.suspended += 1
        try:
            warnings.warn_explicit(warning, PitfallWarning, filename, lineno, registry={})
        finally:
            _STATE.suspended -= 1
