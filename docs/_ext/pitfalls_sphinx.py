"""Sphinx glue for torch-pitfalls: example order, example cache, offline inventories.

Loaded by ``docs/conf.py`` as a Sphinx extension; the string paths in ``sphinx_gallery_conf``
refer to the names defined here.
"""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
GALLERY_DIR = DOCS / "auto_examples"
STAMP = GALLERY_DIR / ".inputs.sha256"

#: Reading order of the pages inside each topic, by slug (the catalog's order).
PAGE_ORDER = [
    # autograd
    "requires-grad-propagation",
    "freezing-layers",
    "no-grad-evaluation",
    "backward-step-zero-grad",
    "data-vs-detach",
    "retain-graph",
    "gradient-accumulation",
]


class CatalogOrder:
    """sphinx-gallery ``within_subsection_order``: pages in :data:`PAGE_ORDER`, then by name."""

    def __init__(self, src_dir: str) -> None:
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[int, str]:
        slug = Path(filename).stem.removeprefix("plot_").replace("_", "-")
        rank = PAGE_ORDER.index(slug) if slug in PAGE_ORDER else len(PAGE_ORDER)
        return rank, filename

    def __repr__(self) -> str:  # sphinx-gallery uses it in its cache key
        return f"CatalogOrder({PAGE_ORDER!r})"


def inputs_digest() -> str:
    """Hash of what example outputs depend on besides the example file itself.

    The helper package's sources, the torch version and the device the examples run on.
    sphinx-gallery only re-runs an example whose own file changed; when this digest changes, every
    example is re-run.
    """
    import torch

    from torch_pitfalls import get_device

    digest = hashlib.sha256()
    for path in sorted((ROOT / "src" / "torch_pitfalls").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    digest.update(torch.__version__.encode())
    digest.update(str(get_device()).encode())
    return digest.hexdigest()


def invalidate_stale_examples() -> bool:
    """Delete sphinx-gallery's per-example checksums when :func:`inputs_digest` changed.

    Returns ``True`` when the examples will be re-run for that reason.
    """
    digest = inputs_digest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return False
    for md5 in GALLERY_DIR.rglob("*.md5"):
        md5.unlink()
    GALLERY_DIR.mkdir(parents=True, exist_ok=True)
    STAMP.write_text(digest)
    return True


def compile_inventory(source: Path, target: Path) -> Path:
    """Compile the plain-text inventory ``source`` into a Sphinx ``objects.inv`` at ``target``.

    ``source`` holds one object per line: ``NAME DOMAIN:ROLE URI`` (``$`` in URI stands for NAME);
    blank lines and ``#`` comments are skipped.

    Raises:
        ValueError: a line does not have three fields.
    """
    lines = []
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 3:
            raise ValueError(f"{source}:{number}: expected 'NAME DOMAIN:ROLE URI', got {line!r}")
        name, role, uri = fields
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


#: Pages whose executed cells report the environment: re-read when :func:`inputs_digest` changes.
ENVIRONMENT_PAGES = ["index"]


def _outdated_environment_pages(app, env, added, changed, removed):
    digest = inputs_digest()
    if getattr(env, "torch_pitfalls_digest", None) == digest:
        return []
    env.torch_pitfalls_digest = digest
    return [page for page in ENVIRONMENT_PAGES if page in env.found_docs]


def setup(app):
    # The first build of a `nox -s docs` run (English) finds the stamp stale and re-runs the
    # examples; the second (Chinese) finds it current and reuses their outputs.
    invalidate_stale_examples()
    app.connect("env-get-outdated", _outdated_environment_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
