"""Offline link check of the built site (the end of ``nox -s browser``).

Three passes over both languages:

1. LinkChecker, starting from the root page: every internal link must resolve to a file.
2. Every internal link with an anchor (``page.html#section``): the anchor must be an ``id`` (or an
   ``<a name>``) of the page it points to. LinkChecker's own anchor check (its ``AnchorCheck``
   plugin) is not used: it caches results per URL *with* its anchor, so it parses a page again for
   every anchor that any page links to, and it took 19 of CI's 46 minutes for 1 527 links; here
   each page is parsed once.
3. Every external link, read from the HTML itself (the build machine has no network, so they are
   not fetched): none may hold a placeholder (``$``), links into PyTorch's docs must have the shape
   those docs give the object (:func:`torch_uri_problem`, which
   the docs build applies to its inventory of PyTorch's objects too), and none may be a bare
   URL (a link whose text is its own address). The links are printed counted by host.

Exit status 1 when any check fails.
"""

from __future__ import annotations

import collections
import csv
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

#: Where PyTorch's documentation lives: the ``torch`` inventory's URIs are relative to it.
TORCH_DOCS = "https://docs.pytorch.org/docs/stable/"


def torch_uri_problem(name: str, role: str, uri: str) -> str | None:
    """What is wrong with the URI of a PyTorch object, or ``None`` when it has PyTorch's shape.

    PyTorch's docs give most objects a page of their own, ``generated/<name>.html#<name>``; a
    method documented on its class's page is ``generated/<class>.html#<class>.<method>``; objects
    documented with ``autoclass``/``autofunction`` on a topic page are ``<page>.html#<name>``; a
    module is ``<page>.html#module-<module>``. The anchor is always the documented name (which is
    ``name`` itself, or the name PyTorch documents an alias under); the one exception is an
    attribute PyTorch describes only in prose, linked to that section
    (``autograd.html#autograd-graph`` for ``Tensor.grad_fn``).

    >>> name, role = "torch.nn.Linear", "py:class"
    >>> torch_uri_problem(name, role, "generated/torch.nn.Linear.html#torch.nn.Linear")
    >>> torch_uri_problem(name, role, "generated/$.html#torch.nn.Linear")
    "placeholder '$' left in 'generated/$.html#torch.nn.Linear'"
    >>> print(torch_uri_problem(name, role, "generated/torch.nn.Conv2d.html#torch.nn.Linear"))
    anchor 'torch.nn.Linear' is not on the page of 'torch.nn.Conv2d' (generated/<name>.html#<name>)
    >>> print(torch_uri_problem("torch.nn", "py:module", "generated/torch.nn.html#torch.nn"))
    a module is '<page>.html#module-torch.nn', got 'generated/torch.nn.html#torch.nn'

    """
    if "$" in uri or "%24" in uri:
        return f"placeholder '$' left in {uri!r}"
    page, hash_, anchor = uri.partition("#")
    if not hash_ or not anchor or not page.endswith(".html") or "://" in page:
        return f"expected 'PAGE.html#ANCHOR' relative to {TORCH_DOCS}, got {uri!r}"
    if role == "py:module":
        if anchor != f"module-{name}" or page.startswith("generated/"):
            return f"a module is '<page>.html#module-{name}', got {uri!r}"
        return None
    if page.startswith("generated/"):
        documented = page.removeprefix("generated/").removesuffix(".html")
        if anchor != documented and not anchor.startswith(documented + "."):
            return (
                f"anchor {anchor!r} is not on the page of {documented!r} "
                "(generated/<name>.html#<name>)"
            )
        return None
    if "." not in anchor:  # a section: only for an attribute PyTorch describes in prose
        if role != "py:attribute":
            return f"{role} {name} needs an object anchor, got {uri!r}"
        return None
    if not anchor.startswith("torch."):
        return f"anchor {anchor!r} is not a PyTorch name"
    return None


CONFIG = """\
[checking]
threads=4
[filtering]
ignore=
  ^https?://
checkextern=0
"""


@dataclass(frozen=True)
class Link:
    """One ``<a href>`` of the built site: its address, its text and the page it is on."""

    url: str
    text: str
    page: str


class _Anchors(HTMLParser):
    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page, self.links, self._open = page, [], []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._open.append([dict(attrs).get("href") or "", ""])

    def handle_data(self, data):
        for link in self._open:
            link[1] += data

    def handle_endtag(self, tag):
        if tag == "a" and self._open:
            href, text = self._open.pop()
            if href.startswith(("http://", "https://")):
                self.links.append(Link(href, " ".join(text.split()), self.page))


class _Targets(HTMLParser):
    """The anchors a page defines (``id`` and ``<a name>``) and its internal links with one."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if attributes.get("id"):
            self.ids.add(attributes["id"])
        if tag == "a" and attributes.get("name"):
            self.ids.add(attributes["name"])
        href = attributes.get("href") or ""
        if tag == "a" and "#" in href and not href.startswith(("http:", "https:", "mailto:")):
            self.links.append(href)


def broken_anchors(html: Path) -> tuple[int, list[tuple[str, str, str]]]:
    """Check every internal link with an anchor under ``html``, each page parsed once.

    Returns:
        The number of such links, and ``(page, link, problem)`` for each broken one.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     site = Path(tmp)
    ...     _ = (site / "a.html").write_text('<h2 id="why">Why</h2><a href="b.html#fix">b</a>')
    ...     _ = (site / "b.html").write_text('<a href="a.html#why">a</a><a href="#nowhere">x</a>')
    ...     broken_anchors(site)
    (3, [('a.html', 'b.html#fix', "no id 'fix' in b.html"), \
('b.html', '#nowhere', "no id 'nowhere' in b.html")])
    """
    pages = {}
    for path in sorted(html.rglob("*.html")):
        parser = _Targets()
        parser.feed(path.read_text(encoding="utf-8"))
        pages[path.relative_to(html).as_posix()] = parser
    count, broken = 0, []
    base = "file:///"
    for name in sorted(pages):
        for href in pages[name].links:
            target = urlsplit(urljoin(base + name, href))
            if target.scheme != "file":
                continue
            page = unquote(target.path).lstrip("/") or name
            anchor = unquote(target.fragment)
            if not anchor:
                continue
            count += 1
            if page not in pages:
                if not (html / page).exists():
                    broken.append((name, href, f"no page {page}"))
                continue
            if anchor not in pages[page].ids:
                broken.append((name, href, f"no id {anchor!r} in {page}"))
    return count, broken


def check_anchors(html: Path) -> int:
    """Print and count the broken anchors of internal links (:func:`broken_anchors`)."""
    count, broken = broken_anchors(html)
    print(f"{count} internal links with an anchor checked, {len(broken)} broken:")
    for page, href, problem in broken[:50]:
        print(f"  {href} (in {page}): {problem}")
    return len(broken)


def external_links(html: Path) -> list[Link]:
    """Every external ``<a href>`` of the HTML pages under ``html``, in file order."""
    links = []
    for path in sorted(html.rglob("*.html")):
        parser = _Anchors(path.relative_to(html).as_posix())
        parser.feed(path.read_text(encoding="utf-8"))
        links.extend(parser.links)
    return links


def link_problem(link: Link) -> str | None:
    """What is wrong with one external link, or ``None``.

    >>> link_problem(Link("https://docs.pytorch.org/docs/stable/generated/$.html#torch.nn.ReLU",
    ...                   "ReLU", "x.html"))
    "placeholder '$' left in 'generated/$.html#torch.nn.ReLU'"
    >>> link_problem(Link("https://github.com/pytorch/pytorch/pull/1",
    ...                   "https://github.com/pytorch/pytorch/pull/1", "x.html"))
    'bare URL: name the link'
    >>> link_problem(Link("https://docs.pytorch.org/docs/stable/generated/torch.nn.ReLU.html"
    ...                   "#torch.nn.ReLU", "ReLU", "x.html"))
    """
    if "$" in link.url or "%24" in link.url:
        if link.url.startswith(TORCH_DOCS):
            return torch_uri_problem("", "", link.url.removeprefix(TORCH_DOCS))
        return f"placeholder '$' left in {link.url!r}"
    text = link.text.rstrip("/")
    if text.startswith(("http://", "https://", "www.")) or text == link.url.rstrip("/"):
        return "bare URL: name the link"
    if link.url.startswith(TORCH_DOCS):
        relative = unquote(link.url.removeprefix(TORCH_DOCS))
        page, _, anchor = relative.partition("#")
        if page.startswith("generated/") and anchor:
            return torch_uri_problem(anchor, "py:object", relative)
        if page.startswith("generated/"):
            return f"a generated page needs its object's anchor: {relative!r}"
    return None


def check_external(html: Path) -> int:
    """Check and count the external links of the site under ``html``; the number of problems."""
    links = external_links(html)
    problems = [(link, link_problem(link)) for link in links]
    problems = [(link, problem) for link, problem in problems if problem]
    hosts = collections.Counter(urlsplit(link.url).netloc for link in links)
    print(f"{len(links)} external links, not fetched (offline), by host:")
    for host, count in hosts.most_common():
        print(f"  {count:6d}  {host}")
    print(f"{len(problems)} external links with a wrong shape:")
    for link, problem in problems[:50]:
        print(f"  {link.url} (in {link.page}): {problem}")
    if len(problems) > 50:
        print(f"  … and {len(problems) - 50} more")
    return len(problems)


def check_internal(html: Path) -> int:
    """LinkChecker over the internal links and anchors; the number of broken ones (or 1 when
    LinkChecker itself failed)."""
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o777)  # as root, LinkChecker runs as user nobody, who must write here
        config, report = Path(tmp) / "linkcheckerrc", Path(tmp) / "links.csv"
        config.write_text(CONFIG)
        command = ["linkchecker", "--config", str(config), "--no-status", "--verbose"]
        command += ["--output=none", f"--file-output=csv/utf-8/{report}", str(html / "index.html")]
        result = subprocess.run(command, check=False)
        with report.open(encoding="utf-8") as file:
            lines = [line for line in file if not line.startswith("#")]
    rows = list(csv.DictReader(lines, delimiter=";"))
    internal = [r for r in rows if not r["urlname"].startswith(("http:", "https:"))]
    broken = [r for r in rows if r["valid"] == "False"]
    print(f"{len(internal)} internal links checked, {len(broken)} broken:")
    for row in broken:
        print(f"  {row['urlname']} (in {row['parentname']}): {row['result']}")
    return len(broken) or (1 if result.returncode else 0)


def main(html: Path) -> int:
    external = check_external(html)
    anchors = check_anchors(html)
    internal = check_internal(html)
    return 1 if external or anchors or internal else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
