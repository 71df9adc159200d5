"""Tables built from data: the terminology glossary, the detectors' rules (and, for
:mod:`.releases_section`, the release tables), all through one builder, :func:`table`."""

from __future__ import annotations

from pathlib import Path

from .common import GLOSSARY, split_variants


def table(widths, header, rows, classes, translatable: bool = True):
    """A docutils table: one column per width of ``widths``, a head row and body rows.

    A cell is a list of body elements (kept as they are), an inline node or several (``tuple``),
    put in one paragraph, or a string (a paragraph of it). ``translatable=False`` keeps every
    text of the table out of the catalogs: generated text that is in both languages already, or
    translated with ``sphinx.locale._``.
    """
    from docutils import nodes

    result = nodes.table(classes=classes)
    group = nodes.tgroup(cols=len(widths))
    result += group
    group.extend(nodes.colspec(colwidth=width) for width in widths)

    def row_of(cells):
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            if isinstance(cell, list):
                entry.extend(cell)
            elif isinstance(cell, tuple) or (
                isinstance(cell, nodes.Node) and not isinstance(cell, nodes.Text)
            ):
                entry += nodes.paragraph("", "", *(cell if isinstance(cell, tuple) else (cell,)))
            else:  # a string, or a label translated by sphinx.locale._
                entry += nodes.paragraph(str(cell), str(cell))
            row += entry
        return row

    group += nodes.thead("", row_of(header))
    group += nodes.tbody("", *(row_of(cells) for cells in rows))
    if not translatable:
        untranslatable(result)
    return result


def untranslatable(node):
    """Keep every text of ``node`` out of the pages' catalogs; returns ``node``."""
    from docutils import nodes

    for element in node.findall(nodes.TextElement):
        element["translatable"] = False
    return node


# -- The terminology glossary, shown on the contributor guide ------------------------------------

GLOSSARY_COLUMNS = {
    "english": "English",
    "chinese": "中文",
    "note": "Note · 说明",
    "variants": "Also searched as · 常见写法",
    "avoid": "Avoid · 避免的写法",
}
"""The columns of glossary.csv, with the heading the contributor guide shows for each. ``variants``
are the forms readers search with (the search index adds them); ``avoid`` are forms no translation
may use (tests/test_translations.py fails on them). Both hold ``;``-separated forms, may be empty,
and ``avoid`` may be left out of a row altogether."""


def glossary_cells(row: dict[str, str | None]) -> list[str]:
    """The cells the contributor guide shows for a row of glossary.csv (read by ``csv.DictReader``).

    >>> glossary_cells({"english": "backbone", "chinese": "骨干网络", "note": "",
    ...                 "variants": "主干网络", "avoid": "主干网络"})
    ['backbone', '骨干网络', '', '主干网络', '主干网络']
    >>> glossary_cells({"english": "tensor", "chinese": "张量", "note": "", "variants": "",
    ...                 "avoid": None})
    ['tensor', '张量', '', '', '']
    """
    return [
        "、".join(split_variants(row.get(column) or ""))
        if column in ("variants", "avoid")
        else row.get(column) or ""
        for column in GLOSSARY_COLUMNS
    ]


def glossary_directive():
    import csv

    from sphinx.util.docutils import SphinxDirective

    class Glossary(SphinxDirective):
        """``pitfalls-glossary``: the table of docs/locale/zh_CN/glossary.csv.

        Its cells are terms in both languages already, so they are marked untranslatable and stay
        out of the catalogs.
        """

        def run(self):
            self.env.note_dependency(str(GLOSSARY))
            with GLOSSARY.open(encoding="utf-8") as file:
                rows = [glossary_cells(cells) for cells in csv.DictReader(file)]
            # Out of the search index: readers searching a term want the pages that use it.
            return [
                table(
                    (3, 2, 6, 3, 3),
                    list(GLOSSARY_COLUMNS.values()),
                    rows,
                    ["pitfalls-glossary", "no-search"],
                    translatable=False,
                )
            ]

    return Glossary


# -- The detectors' rule table, from the registry (src/torch_pitfalls/rules.py) -----------------

RULE_TABLE_HEADERS = {
    "en": ["Rule", "Kind", "Default", "What it catches", "Page"],
    "zh_CN": ["规则", "类型", "默认", "检测的问题", "页面"],
}
RULE_KINDS = {
    "en": {"guard": "runtime warning", "note": "note on an error", "lint": "static check"},
    "zh_CN": {"guard": "运行时警告", "note": "错误说明", "lint": "静态检查"},
}
RULE_DEFAULTS = {"en": ("on", "opt-in"), "zh_CN": ("开启", "需显式启用")}


def rule_label(rule_id: str) -> str:
    """The reference label of a rule's row in the rule table: ``rule-tp001``."""
    return f"rule-{rule_id.lower()}"


def rules_directive():
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    from .common import ref

    class Rules(SphinxDirective):
        """``pitfalls-rules``: every rule of the registry, one row each, in the build's language.

        The titles come from the registry in both languages, so the cells stay out of the
        catalogs; each row is a reference target (``{ref}`TP001 <rule-tp001>```), and its page
        column links to the pitfall's page.
        """

        def run(self):
            from torch_pitfalls import rules

            from .common import language_of

            # The registry, and each rule's module when the registry is a package of them.
            for path in [rules.__file__, *Path(rules.__file__).parent.glob("tp*.py")]:
                self.env.note_dependency(str(path))
            language = language_of(self.config)
            std = self.env.get_domain("std")
            rows = []
            for rule in rules.RULES:
                std.note_hyperlink_target(
                    rule_label(rule.id), self.env.docname, rule_label(rule.id), rule.id
                )
                rows.append(
                    [
                        nodes.literal(text=rule.id),
                        nodes.Text(RULE_KINDS[language][rule.kind]),
                        nodes.Text(RULE_DEFAULTS[language][0 if rule.default else 1]),
                        nodes.Text(rule.title[language]),
                        ref(self.env.docname, rule.slug),
                    ]
                )
            result = table(
                (2, 3, 2, 8, 5),
                RULE_TABLE_HEADERS[language],
                rows,
                ["pitfalls-rules"],
                translatable=False,
            )
            body = next(iter(result.findall(nodes.tbody)))
            for row, rule in zip(body.children, rules.RULES, strict=True):
                row["ids"] = [rule_label(rule.id)]
            # titles are half code (--local_rank): no smart quotes or dashes in the table
            result["support_smartquotes"] = False
            return [result]

    return Rules


def rule_modules_directive():
    """``pitfalls-rule-modules``: the documentation of every rule's module, runtime rules then
    static ones, in id order: the rules are discovered, so no page lists their modules by hand."""
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective
    from sphinx.util.nodes import nested_parse_with_titles

    class RuleModules(SphinxDirective):
        has_content = False

        def run(self):
            from docutils import nodes

            from torch_pitfalls import rules

            lines = []
            for kinds, title in (
                (("guard", "note"), "The runtime rules"),
                (("lint",), "The static rules"),
            ):
                lines += [title, "-" * len(title), ""]
                for rule in rules.RULES:
                    if rule.kind in kinds:
                        self.env.note_dependency(rule.module.__file__)
                        lines += [f".. automodule:: {rule.module.__name__}", ""]
            container = nodes.section()
            container.document = self.state.document
            nested_parse_with_titles(
                self.state, StringList(lines, "pitfalls-rule-modules"), container
            )
            return container.children

    return RuleModules
