"""Check that the host serves the site where the detectors' links point (Read the Docs build step).

The detectors link to ``<site_url>/<language>/auto_examples/…``
(:func:`torch_pitfalls.catalog.site_url`), which assumes the host serves the build's
``docs/_build/html`` folder at the site's address.
Read the Docs serves a project under ``/<language>/<version>/`` unless its "URL versioning scheme"
is "Single version without translations"; its build sets ``READTHEDOCS_CANONICAL_URL`` to the
address it will serve the upload at. ``.readthedocs.yaml`` runs this script before building, so
a project set up otherwise fails its build with the fix in the message instead of publishing pages
that every detector message links past.

Usage: ``PYTHONPATH=src python -m tools.published_url [CANONICAL_URL]`` (the catalog, standard
library only: no environment needed); the default is ``$READTHEDOCS_CANONICAL_URL``.
"""

from __future__ import annotations

import os
import sys

from torch_pitfalls.catalog import BASE_URL_ENV, site_url  # standard library only


def mismatch(canonical: str, site: str) -> str | None:
    """Why a host serving the upload at ``canonical`` breaks links to ``site``, or ``None``.

    >>> mismatch("https://torch-pitfalls.readthedocs.io/", "https://torch-pitfalls.readthedocs.io")
    >>> print(mismatch("https://torch-pitfalls.readthedocs.io/en/latest/",
    ...                "https://torch-pitfalls.readthedocs.io"))  # doctest: +ELLIPSIS
    Read the Docs will serve this build at https://torch-pitfalls.readthedocs.io/en/latest/, ...
    """
    if canonical.rstrip("/") == site.rstrip("/"):
        return None
    return (
        f"Read the Docs will serve this build at {canonical}, but the detectors' links and the "
        f"pages' canonical URLs point to {site}/. Set the project's Admin > Settings > "
        '"URL versioning scheme" to "Single version without translations", or publish '
        f"elsewhere and set {BASE_URL_ENV} (or torch_pitfalls.catalog.BASE_URL) to that address."
    )


def main(argv: list[str]) -> int:
    canonical = argv[0] if argv else os.environ.get("READTHEDOCS_CANONICAL_URL", "")
    if not canonical:
        print("no canonical URL given and READTHEDOCS_CANONICAL_URL is not set", file=sys.stderr)
        return 2
    problem = mismatch(canonical, site_url())
    if problem:
        print(problem, file=sys.stderr)
        return 1
    print(f"Read the Docs serves the site at {canonical}: the detectors' links resolve there")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
