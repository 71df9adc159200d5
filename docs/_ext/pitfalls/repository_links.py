"""Links from every page to the repository, when one is configured: "Open in Colab", "Edit on
GitHub" (the page's source, or its catalog on a translated page) and "Report a problem".

Set :data:`REPOSITORY_ENV` at build time; the template ``_templates/repository-links.html`` shows
the links that :func:`links_in_context` puts into the page's context.
"""

from __future__ import annotations

import re
from pathlib import Path

from torch_pitfalls import catalog

from .common import language_of

# -- Links to the repository (when one is configured) --------------------------------------------

REPOSITORY_ENV = "TORCH_PITFALLS_REPOSITORY"
"""The one setting of the repository links: ``https://github.com/<owner>/<name>`` (its default
branch ``main``) or ``https://github.com/<owner>/<name>/tree/<branch>``. Unset: no such links."""

#: The branch that the GitHub workflow publishes the downloads to (Colab opens notebooks from it).
NOTEBOOKS_BRANCH = "notebooks"

LINK_WORDS = {
    "en": {"colab": "Open in Colab", "edit": "Edit on GitHub", "report": "Report a problem",
           "edit_translation": "Edit the translation on GitHub", "issue": "Problem on the page"},
    "zh_CN": {"colab": "在 Colab 中打开", "edit": "在 GitHub 上编辑", "report": "报告问题",
              "edit_translation": "在 GitHub 上编辑译文", "issue": "页面问题"},
}  # fmt: skip


def repository(setting: str | None = None) -> tuple[str, str, str, str] | None:
    """``(url, owner, name, branch)`` of the configured GitHub repository, or ``None``.

    >>> repository("https://github.com/someone/torch-pitfalls/tree/dev")
    ('https://github.com/someone/torch-pitfalls', 'someone', 'torch-pitfalls', 'dev')
    >>> repository("")
    """
    import os

    value = (os.environ.get(REPOSITORY_ENV, "") if setting is None else setting).strip()
    if not value:
        return None
    match = re.fullmatch(
        r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?(?:/tree/(.+))?/?", value
    )
    if not match:
        raise ValueError(f"{REPOSITORY_ENV} must be https://github.com/OWNER/NAME, got {value!r}")
    owner, name, branch = match[1], match[2], match[3] or "main"
    return f"https://github.com/{owner}/{name}", owner, name, branch


def repository_links(
    pagename: str, source: str, language: str, title: str, page: str, setting: str | None = None
) -> list[tuple[str, str]]:
    """``(label, URL)`` of the links a page offers to the repository: none when unconfigured.

    ``source`` is the page's source file relative to the repository root; ``page`` its address.
    """
    from urllib.parse import quote, urlencode

    found = repository(setting)
    if not found:
        return []
    url, owner, name, branch = found
    words = LINK_WORDS[language]
    links = []
    slug = catalog.slug_of(pagename) if pagename.startswith(catalog.GALLERY + "/") else None
    if slug:
        record = catalog.page(slug)  # not `page`: that is the page's address, for the report
        notebook = f"{language}/{record.docname}.ipynb"
        links.append(
            (words["colab"],
             f"https://colab.research.google.com/github/{owner}/{name}/blob/"
             f"{NOTEBOOKS_BRANCH}/{notebook}")
        )  # fmt: skip
        source = record.example(Path("examples")).as_posix()
    if language != "en":
        catalog_path = f"docs/locale/{language}/LC_MESSAGES/{pagename}.po"
        links.append((words["edit_translation"], f"{url}/edit/{branch}/{catalog_path}"))
    links.append((words["edit"], f"{url}/edit/{branch}/{quote(source)}"))
    query = urlencode({"title": f"{words['issue']}: {title}", "body": page})
    links.append((words["report"], f"{url}/issues/new?{query}"))
    return links


def links_in_context(app, pagename, templatename, context, doctree) -> None:

    language = language_of(app.config)
    source = app.env.doc2path(pagename, False) if pagename in app.env.all_docs else None
    if source is None:
        context["pitfalls_repository_links"] = []
        return
    title = re.sub(r"<[^>]+>", "", context.get("title") or pagename)
    page = catalog.document_url(pagename, language=language)
    context["pitfalls_repository_links"] = repository_links(
        pagename, f"docs/{Path(source).as_posix()}", language, title, page
    )
