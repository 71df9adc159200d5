"""What the parts of the extension share: the folders, the build's language, files written only
when their bytes change, references to a page's label, and where sphinx-gallery's footer starts."""

from __future__ import annotations

from pathlib import Path

from torch_pitfalls import catalog

DOCS = Path(__file__).resolve().parents[2]
ROOT = DOCS.parent
#: sphinx-gallery's output folder (its ``gallery_dirs``).
GALLERY_DIR = DOCS / catalog.GALLERY
#: The digests of the inputs of generated files (:func:`up_to_date`), out of the published folders.
STAMPS = DOCS / "_build" / "stamps"


def language_of(config) -> str:
    """The site language of a build: ``"en"`` or ``"zh_CN"``."""
    return catalog.resolve_language(config.language or "en")


def gallery_slug(docname: str) -> str | None:
    """``auto_examples/<topic>/plot_<slug>`` → ``<slug>``; ``None`` for other documents."""
    if not docname.startswith(catalog.GALLERY + "/"):
        return None
    return catalog.slug_of(docname)


def write_if_changed(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` unless it holds them already (an unchanged file keeps its
    time, so that nothing that depends on it is rebuilt, and ``nox -s serve`` sees no change)."""
    if not path.exists() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def ref(docname: str, target: str, text: str | None = None):
    """A reference to the label ``target`` (each page's label is its slug), titled by Sphinx."""
    from docutils import nodes
    from sphinx import addnodes

    node = addnodes.pending_xref(
        "", refdomain="std", reftype="ref", reftarget=target,
        refexplicit=text is not None, refwarn=True, refdoc=docname,
    )  # fmt: skip
    node += nodes.inline(text=text or target)
    return node


def gallery_footer(tree):
    """The element that holds sphinx-gallery's download links at the end of a page (its id starts
    with ``sphx-glr-download``), or ``None``."""
    from docutils import nodes

    return next(
        (node for node in tree.findall(nodes.Element)
         if any(i.startswith("sphx-glr-download") for i in node.get("ids", ()))),
        None,
    )  # fmt: skip


#: The terminology glossary: the contributor guide shows it, the Chinese search adds its variants.
GLOSSARY = DOCS / "locale" / "zh_CN" / "glossary.csv"


def split_variants(cell: str) -> list[str]:
    """The variants of a glossary row's ``variants`` cell (``;``-separated)."""
    return [variant.strip() for variant in cell.split(";") if variant.strip()]


def digest_of(paths, *extra: str) -> str:
    """A digest of files (their names and bytes; a missing file counts as missing) and strings."""
    import hashlib

    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path).encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
    for text in extra:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()


def up_to_date(name: str, digest: str, outputs=()) -> bool:
    """Whether the files generated from inputs whose digest is ``digest`` are there already: the
    stamp ``name`` holds that digest (:func:`stamp`) and every path of ``outputs`` exists.
    Generated files are made again only when their inputs change, so that a build does not redo
    them."""
    path = STAMPS / name
    return path.is_file() and path.read_text() == digest and all(p.exists() for p in outputs)


def stamp(name: str, digest: str) -> None:
    """Record that the files of stamp ``name`` are made from inputs whose digest is ``digest``."""
    STAMPS.mkdir(parents=True, exist_ok=True)
    (STAMPS / name).write_text(digest)
