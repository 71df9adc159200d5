"""The offline inventory of PyTorch's objects (``docs/_inventories/torch.txt``).

Compiled into the ``objects.inv`` that intersphinx reads (:func:`compile_inventory`, called by
docs/conf.py), and read as name → URL by the downloads (:func:`torch_inventory`). The shape every
URI must have is checked by :func:`tools.linkcheck.torch_uri_problem`, which the link check of the
built site applies to the links too.
"""

from __future__ import annotations

import functools
import zlib
from pathlib import Path

from tools.linkcheck import TORCH_DOCS, torch_uri_problem

from .common import DOCS

SOURCE = DOCS / "_inventories" / "torch.txt"

__all__ = ["SOURCE", "TORCH_DOCS", "compile_inventory", "torch_inventory", "torch_uri_problem"]


def compile_inventory(source: Path, target: Path) -> Path:
    """Compile the plain-text inventory ``source`` into a Sphinx ``objects.inv`` at ``target``.

    ``source`` holds one object per line: ``NAME DOMAIN:ROLE URI``; blank lines and ``#`` comments
    are skipped. Every ``$`` in URI is replaced by NAME here (Sphinx itself expands a ``$`` only
    at the end of a URI, so ``generated/$.html#$`` would reach readers as it is).

    Raises:
        ValueError: a line does not have three fields, lists an object already listed, or has a
            URI that does not have the shape of PyTorch's docs (:func:`torch_uri_problem`).
    """
    lines, seen = [], set()
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 3:
            raise ValueError(f"{source}:{number}: expected 'NAME DOMAIN:ROLE URI', got {line!r}")
        name, role, uri = fields
        if (name, role) in seen:
            raise ValueError(f"{source}:{number}: {name} ({role}) is listed twice")
        seen.add((name, role))
        uri = uri.replace("$", name)
        problem = torch_uri_problem(name, role, uri)
        if problem:
            raise ValueError(f"{source}:{number}: {name}: {problem}")
        lines.append(f"{name} {role} 1 {uri} -")
    header = (
        "# Sphinx inventory version 2\n"
        "# Project: PyTorch\n"
        "# Version: stable\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    body = zlib.compress(("\n".join(lines) + "\n").encode("utf-8"))
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_bytes() != header.encode() + body:
        target.write_bytes(header.encode() + body)
    return target


@functools.lru_cache(maxsize=1)
def torch_inventory() -> dict[str, str]:
    """PyTorch names → their documentation URL, from docs/_inventories/torch.txt."""
    found = {}
    for line in SOURCE.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if len(fields) == 3 and not line.startswith("#"):
            name, _, uri = fields
            found[name] = TORCH_DOCS + uri.replace("$", name)
    return found
