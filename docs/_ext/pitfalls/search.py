"""Search: every piece of the site's search, on Sphinx's own machinery.

- **Index entries** (:func:`index_entries`): the phrases a page's catalog record declares
  (``search``; the Chinese ones on the Chinese build) become index entries of the page, which
  Sphinx's search ranks above full-text matches; :func:`keep_index_entries_in_search` keeps those
  of the pages a build does not write again.
- **Scorer** (:func:`write_scorer`, ``html_search_scorer``, one per language, written once every
  page is read): Sphinx's default scores plus a bonus for the page a query names, a declared
  phrase or a message the page printed (:mod:`.indexes`); contributors' pages rank lower.
- **Ranked retrieval** (``RANKED_SEARCH_JS``, in the scorer's file): replaces Sphinx's full-text
  step, which keeps only the pages holding every word of the query. A page ranks by the share of
  the query it explains (words weighted by inverse document frequency, title words double,
  BM25's length normalisation, pages that gather every summary lower, a Chinese bigram that is
  not a word of the site less); a word no page holds is left out, so a pasted line with the
  reader's own names still finds its page. The catalog's phrases rank the same way. Measured by
  ``tests/browser/test_findability.py``.
- **Languages** (:func:`search_languages`, the one ``add_search_language``): each language's query
  splitter reads a pasted message by its stable beginning (:func:`message_aware`); the Chinese one
  also indexes and queries overlapping CJK bigrams, and a glossary term under its variants too
  (:func:`chinese_search`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path

from torch_pitfalls import catalog

from .common import DOCS, GLOSSARY, gallery_slug, language_of, split_variants
from .indexes import Printed, all_printed, message_head

#: Pages kept low in search results: for contributors, not for readers with a problem.
LOW_PAGES = ["contributing", "changes", "api", "detectors-api"]
#: Pages that gather every page's summary (the answer is one click further; the topics' indexes
#: too): their full-text matches weigh 0.6 of a pitfall page's (with 0.75, the cheat sheet, which
#: holds every page's words, came first for some symptom queries: English rank 1 was 89.1% of 239
#: queries, 90.0% with 0.6).
HUB_PAGES = ["cheatsheet", "symptoms", "errors", "index", "auto_examples/index", "detectors"]


def search_phrases(slug: str, language: str) -> tuple[str, ...]:
    """What readers search for to find the page ``slug``: English phrases on both builds, the
    Chinese ones on the Chinese build."""
    page = catalog.page(slug)
    return page.search + (page.search_zh if language == "zh_CN" else ())


# -- Chinese: bigrams and glossary variants ----------------------------------------------------
#
# Sphinx's search splits a query at spaces and punctuation only, and Chinese is written without
# spaces: a reader types 梯度累积, not 梯度 累积. So both sides use overlapping character bigrams of
# every run of CJK characters (plus jieba's words in the index): the query 梯度累积 becomes
# 梯度 / 度累 / 累积, and Sphinx returns the pages that contain all three, i.e. the phrase.

CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def cjk_bigrams(text: str) -> list[str]:
    """Overlapping two-character terms of every CJK run; a lone character stays as it is.

    >>> cjk_bigrams("用 PyTorch 做梯度累积")
    ['用', '做梯', '梯度', '度累', '累积']
    """
    terms = []
    for run in CJK_RUN.findall(text):
        terms.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return terms


def chinese_words(texts: list[str]) -> list[str]:
    """The two-character words of ``texts``: their bigrams that jieba's dictionary lists.

    A query's bigrams that are not words (加求 and 和结 of 累加求和结果) straddle two words;
    rare in the pages, they would weigh more than the words themselves, so the ranked search
    (``RANKED_SEARCH_JS``) weighs them less.

    >>> chinese_words(["累加求和结果不对"])
    ['不对', '求和', '累加', '结果']
    """
    import jieba

    jieba.initialize()
    bigrams = {term for text in texts for term in cjk_bigrams(text) if len(term) == 2}
    return sorted(term for term in bigrams if jieba.dt.FREQ.get(term, 0) > 0)


def site_chinese_words() -> list[str]:
    """:func:`chinese_words` of the Chinese site: its catalogs' translations and the catalog's
    Chinese search phrases (read from the files: the scorer is written on every build)."""
    texts = [
        path.read_text(encoding="utf-8")
        for path in sorted((DOCS / "locale" / "zh_CN" / "LC_MESSAGES").rglob("*.po"))
    ]
    texts += [phrase for page in catalog.pages() for phrase in page.search_zh]
    return chinese_words(texts)


#: ``splitQuery`` for the search page: the same bigrams as :func:`cjk_bigrams`, plus every
#: non-CJK word, as Sphinx's default splitter returns it.
CJK_SPLIT_QUERY_JS = r"""
var splitQuery = (query) => {
  const cjk = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/gu;
  const terms = [];
  for (const part of query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)) {
    if (!part) continue;
    const runs = part.match(cjk) || [];
    for (const run of runs) {
      if (run.length === 1) terms.push(run);
      else for (let i = 0; i + 2 <= run.length; i++) terms.push(run.slice(i, i + 2));
    }
    for (const latin of part.split(cjk)) if (latin) terms.push(latin);
  }
  return terms;
};
"""


def search_variants(path: Path = GLOSSARY) -> dict[str, list[str]]:
    """Glossary term → the other ways readers write it (its ``variants`` column).

    The site writes each term one way (清空梯度); readers search with the variant they know
    (梯度清零). The Chinese search index gives a page that holds a term the variants too.
    """
    import csv

    with path.open(encoding="utf-8") as file:
        return {
            row["chinese"]: split_variants(row["variants"])
            for row in csv.DictReader(file)
            if split_variants(row.get("variants") or "")
        }


def variant_terms(text: str, variants: dict[str, list[str]]) -> list[str]:
    """The other forms of every glossary term that ``text`` holds in any of its forms, each once.

    A form counts only as a whole word: where jieba's segmentation of ``text`` has a word
    boundary at both of its ends, so that 续训 is not found in 继续训练 (继续 | 训练).

    >>> table = {"清空梯度": ["梯度清空", "梯度清零"], "断点续训": ["续训"]}
    >>> variant_terms("用 zero_grad() 清空梯度", table)
    ['梯度清空', '梯度清零']
    >>> variant_terms("一个训练步与梯度清空", table)
    ['清空梯度', '梯度清零']
    >>> variant_terms("加载检查点后继续训练", table), variant_terms("如何续训", table)
    ([], ['断点续训'])
    """
    found: list[str] = []
    table = tuple((term, tuple(others)) for term, others in variants.items())
    starts = _terms_by_first_character(table)
    # Only the terms with a form that starts with a character of the text can be in it: the
    # search index calls this for every text of every page.
    candidates = {i for character in set(text) for i in starts.get(character, ())}
    boundaries: set[int] | None = None
    for i in sorted(candidates):
        term, others = table[i]
        forms = [term, *others]
        if not any(form in text for form in forms):
            continue
        if boundaries is None:  # segment only a text that holds a form
            boundaries = _word_boundaries(text)
        if any(_as_word(text, form, boundaries) for form in forms):
            found.extend(form for form in forms if form not in text and form not in found)
    return found


def _word_boundaries(text: str) -> set[int]:
    """The positions between jieba's words of ``text`` (its default, non-overlapping cut)."""
    import jieba

    return {end for _, _, end in jieba.tokenize(text)} | {0}


def _as_word(text: str, form: str, boundaries: set[int]) -> bool:
    start = text.find(form)
    while start != -1:
        if start in boundaries and start + len(form) in boundaries:
            return True
        start = text.find(form, start + 1)
    return False


@functools.lru_cache(maxsize=4)
def _terms_by_first_character(table: tuple[tuple[str, tuple[str, ...]], ...]) -> dict:
    """First character of a form → the positions of the terms in ``table`` with such a form."""
    starts: dict[str, set[int]] = {}
    for i, (term, others) in enumerate(table):
        for form in (term, *others):
            if form:
                starts.setdefault(form[0], set()).add(i)
    return starts


def reindex_when_variants_change(app, env, added, changed, removed):
    """Re-read every page when the glossary changes: its variants are in every page's index."""
    digest = hashlib.sha256(GLOSSARY.read_bytes()).hexdigest()
    if getattr(env, "torch_pitfalls_glossary", None) == digest:
        return []
    env.torch_pitfalls_glossary = digest
    return sorted(env.found_docs)


def chinese_search():
    from sphinx.search.zh import SearchChinese

    variants = search_variants()

    class SearchChineseBigrams(SearchChinese):
        """Sphinx's Chinese search (jieba words) plus CJK bigrams, in the index and the query;
        a text that holds a glossary term is indexed under the term's variants too."""

        js_splitter_code = CJK_SPLIT_QUERY_JS
        # Sphinx 9.0's Chinese search ships the English stemmer but writes
        # `window.Stemmer = ChineseStemmer`, which is undefined: search then fails in the browser.
        language_name = "English"

        def split(self, input: str) -> list[str]:
            # The same texts come back on many pages (headings, labels, code): split each once.
            if input not in self._pitfalls_split:
                terms = super().split(input) + cjk_bigrams(input)
                for variant in variant_terms(input, variants):
                    terms += super().split(variant) + cjk_bigrams(variant)
                self._pitfalls_split[input] = terms
            return list(self._pitfalls_split[input])

        _pitfalls_split: dict[str, list[str]] = {}

    return SearchChineseBigrams


# -- Index entries for the declared phrases -------------------------------------------------------


def index_entries(app, doctree) -> None:
    """Give each gallery page an index entry per declared search phrase.

    CJK phrases only on the Chinese build, so that the English index lists English terms.
    """
    from docutils import nodes
    from sphinx import addnodes

    slug = gallery_slug(app.env.docname)
    phrases = search_phrases(slug, language_of(app.config)) if slug else ()
    section = next(iter(doctree.findall(nodes.section)), None)
    if not phrases or section is None:
        return
    target_id = f"search-{slug}"
    index = addnodes.index(entries=[("single", p, target_id, "main", None) for p in phrases])
    target = nodes.target("", "", ids=[target_id])
    position = 1 if section.children and isinstance(section[0], nodes.title) else 0
    section.insert(position, index)
    section.insert(position, target)
    domain = app.env.domains.index_domain
    domain.entries.setdefault(app.env.docname, []).extend(index["entries"])


def keep_index_entries_in_search(app, env) -> None:
    """Give Sphinx's search the index entries of the pages this build does not write again.

    Sphinx collects them for the search index while writing a page and keeps them on the
    environment, which is saved before the pages are written: on the next build, a page that is
    not written again drops out of the search's index entries. The index domain keeps them all.
    """
    from sphinx.util.index_entries import split_index_msg

    stored = env._search_index_index_entries
    for docname, entries in env.domains.index_domain.entries.items():
        if docname in stored:
            continue
        found = set()
        for entry_type, value, target_id, main, _key in entries:
            try:
                terms = split_index_msg(entry_type, value)
            except ValueError:
                continue
            found |= {(term, target_id or "", main) for term in terms}
        stored[docname] = sorted(found)


# -- Search scorer --------------------------------------------------------------------------------

SCORER_JS = r"""
// Generated by docs/_ext/pitfalls/search.py: Sphinx's default scores, plus a bonus for the page
// that a query names (a phrase of a page's record in the catalog or a message the page printed).
var PITFALLS_PHRASES = __PHRASES__;
var PITFALLS_LOW = __LOW__;
var PITFALLS_HUBS = __HUBS__;
var PITFALLS_WORDS = __WORDS__; // the Chinese site's two-character words (null in English)
var pitfallsNormal = (text) => text.toLowerCase()
  .replace(/^\s*[\w.]*(error|warning|exception):\s*/, "")
  .replace(/\d+/g, "0").replace(/\s+/g, " ")
  .replace(/ ?([\u3400-\u9fff\uff00-\uffef]) ?/g, "$1") // "loss不降" is "loss 不降"
  .trim();
// A phrase is compared as the query is: without the values of the reader's own run (shapes,
// sizes, paths), which a printed message holds too; a message whose shapes have the ranks of the
// query's (torch.Size([64]) and torch.Size([64, 1]), not torch.Size([1]) and torch.Size([]))
// comes before one that only shares its words.
var pitfallsShapes = (text) =>
  (text.match(/torch\.Size\(\[[\d, ]*\]\)|\[[\d, ]*\]/g) || [])
    .map((shape) => (shape.match(/\d+/g) || []).length)
    .join(",");
var pitfallsNormalCache = new Map();
var pitfallsNormalPhrase = (phrase) => {
  if (!pitfallsNormalCache.has(phrase))
    pitfallsNormalCache.set(phrase, [
      pitfallsNormal(pitfallsClean(phrase)),
      pitfallsShapes(phrase),
    ]);
  return pitfallsNormalCache.get(phrase);
};
var PITFALLS_PREFIX = 40; // a pasted beginning of a message at least this long names its page
var Scorer = {
  score: (result) => {
    const [docname, title, anchor, descr, score, filename, kind] = result;
    const typed = new URLSearchParams(window.location.search).get("q") || "";
    const query = pitfallsNormal(pitfallsClean(typed));
    const shapes = pitfallsShapes(typed);
    let bonus = 0;
    for (const [phrase, weight] of PITFALLS_PHRASES[docname] || []) {
      const [norm, phraseShapes] = pitfallsNormalPhrase(phrase);
      if (norm.length < 3) continue;
      let value = 0;
      if (query === norm) value = 150 + weight + 2 * norm.length;
      else if (query.includes(norm))
        // a phrase that is a small part of a long query names the page less surely
        value = (50 + weight + 2 * norm.length) * Math.min(1, (2 * norm.length) / query.length);
      else if (
        norm.includes(query)
        && (2 * query.length >= norm.length
          // a message pasted up to where the reader's copy ended
          || (norm.startsWith(query) && query.length >= PITFALLS_PREFIX))
      )
        value = 50 + weight + 2 * query.length;
      if (value > 0 && shapes && phraseShapes)
        if (shapes.startsWith(phraseShapes) || phraseShapes.startsWith(shapes)) value += 5;
      bonus = Math.max(bonus, value);
    }
    if (PITFALLS_LOW.includes(docname)) bonus -= 10;
    return score + bonus;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15, // a page title that holds the query (full-text scores: RANKED_SEARCH_JS)
};
"""

#: Ranked full-text search, replacing Sphinx's ``Search.performTermsSearch`` (which keeps only the
#: pages that hold every word of the query). Part of the scorer file, which the search page loads
#: after searchtools.js.
RANKED_SEARCH_JS = r"""
// Ranked retrieval (docs/_ext/pitfalls/search.py): Sphinx's full-text search keeps a page only
// when it holds every word of the query, so one word of a pasted message that no page holds (a
// path, a layer name, an older wording) empties the results. Here a page ranks by the share of
// the query it explains: each query word weighs its inverse document frequency (rare words
// count more), a word in a title counts double, a word no page holds is left out, and a page
// must explain at least PITFALLS_SHARE of what the query says. The declared phrases and printed
// messages of the catalog (PITFALLS_PHRASES) rank by the share of their words the query has.
var pitfallsStemmer = null;
var pitfallsWords = (text) => {
  if (!pitfallsStemmer) pitfallsStemmer = new Stemmer();
  const words = new Set();
  for (const term of pitfallsSplitQuery(text.toLowerCase())) {
    if (stopwords.has(term) || /^\d+$/.test(term)) continue;
    words.add(pitfallsStemmer.stemWord(term));
  }
  return words;
};
var pitfallsFiles = (table, word) => {
  if (!Object.prototype.hasOwnProperty.call(table, word)) return [];
  const files = table[word];
  return files.length === undefined ? [files] : files;
};
var PITFALLS_SHARE = 0.35; // the least share of the query a page must explain
// A Chinese query is split into overlapping bigrams: one that is not a word of the site straddles
// two words (加求 in 累加求和) and says less than its rarity suggests.
var PITFALLS_WORDS_SET = PITFALLS_WORDS && new Set(PITFALLS_WORDS);
var PITFALLS_STRADDLING = 0.6;
var pitfallsWordness = (word) =>
  PITFALLS_WORDS_SET && /^[\u3400-\u9fff]{2}$/.test(word) && !PITFALLS_WORDS_SET.has(word)
    ? PITFALLS_STRADDLING
    : 1;
var pitfallsLengthCache = null;
var pitfallsLengths = (index) => {
  // each page's number of distinct words, over the average page's
  if (pitfallsLengthCache) return pitfallsLengthCache;
  const counts = new Array(index.filenames.length).fill(0);
  for (const term of Object.keys(index.terms))
    for (const file of pitfallsFiles(index.terms, term)) counts[file] += 1;
  const average = counts.reduce((a, b) => a + b, 0) / Math.max(1, counts.length);
  pitfallsLengthCache = counts.map((count) => count / Math.max(1, average));
  return pitfallsLengthCache;
};
var pitfallsPhraseCache = new Map();
var pitfallsPhraseWords = (phrase) => {
  if (!pitfallsPhraseCache.has(phrase))
    pitfallsPhraseCache.set(phrase, [...pitfallsWords(pitfallsClean(phrase))]);
  return pitfallsPhraseCache.get(phrase);
};
var pitfallsRank = (searchTerms, excludedTerms) => {
  const index = Search._index;
  const count = index.filenames.length;
  const docFile = new Map(index.docnames.map((name, file) => [name, file]));
  const weight = new Map(); // word -> inverse document frequency
  const perFile = new Map(); // file -> Map(word -> 1 text, 2 title)
  const add = (file, word, value) => {
    if (!perFile.has(file)) perFile.set(file, new Map());
    const words = perFile.get(file);
    words.set(word, Math.max(words.get(word) || 0, value));
  };
  for (const word of searchTerms) {
    let text = pitfallsFiles(index.terms, word);
    let title = pitfallsFiles(index.titleterms, word);
    let partial = 1;
    if (!text.length && !title.length && word.length > 3) {
      // no exact word: words that contain it (a prefix of a longer identifier)
      for (const [table, out] of [[index.terms, (text = [])], [index.titleterms, (title = [])]])
        for (const term of Object.keys(table))
          if (term.includes(word)) out.push(...pitfallsFiles(table, term));
      partial = 0.5;
    }
    const files = new Set([...text, ...title]);
    if (!files.size) continue; // a word no page holds says nothing about which page
    weight.set(word, partial * pitfallsWordness(word) * Math.log(1 + count / files.size));
    text.forEach((file) => add(file, word, 1));
    title.forEach((file) => add(file, word, 2));
  }
  const total = [...weight.values()].reduce((a, b) => a + b, 0);
  const excluded = (file) =>
    [...excludedTerms].some(
      (term) =>
        pitfallsFiles(index.terms, term).includes(file)
        || pitfallsFiles(index.titleterms, term).includes(file),
    );
  const scores = new Map(); // file -> score
  const sections = new Map(); // file -> the id of the section a result opens
  const length = pitfallsLengths(index); // file -> its length over the average page's
  if (total > 0)
    for (const [file, words] of perFile) {
      let share = 0;
      let score = 0;
      for (const [word, where] of words) {
        share += weight.get(word);
        // BM25 (k1 = 1.2, b = 0.25) with one occurrence, over its best (a title word on a page
        // of no length): a long page (an index, the API) holding a word says less
        const norm = (1 + 1.2 * 0.75) / (1 + 1.2 * (0.75 + 0.25 * length[file]));
        score += weight.get(word) * (where / 2) * norm;
      }
      if (share / total < PITFALLS_SHARE || excluded(file)) continue;
      const docname = index.docnames[file];
      const hub = PITFALLS_HUBS.includes(docname) || docname.endsWith("/index") ? 0.6 : 1;
      scores.set(file, 2 * hub * (share / total) ** 2 * (score / total)); // up to 2
    }
  // The catalog's phrases: the best share of a phrase's words that the query holds.
  const queryWords = searchTerms;
  for (const [docname, phrases] of Object.entries(PITFALLS_PHRASES)) {
    const file = docFile.get(docname);
    if (file === undefined) continue;
    let best = 0;
    let bestSection = "";
    for (const [phrase, , section] of phrases) {
      const words = pitfallsPhraseWords(phrase);
      if (words.length < 2) continue;
      const held = words.filter((word) => queryWords.has(word)).length;
      const covered = held / words.length; // of the phrase, in the query
      const explained = held / Math.max(1, queryWords.size); // of the query, by the phrase
      const value = covered * (0.5 + 0.5 * Math.min(1, 3 * explained));
      if (covered >= 0.6 && value > best) [best, bestSection] = [value, section || ""];
    }
    if (best > 0) scores.set(file, Math.max(scores.get(file) || 0, 0.2 + 0.8 * best));
    // the query holds a message the page printed: the result opens the section that printed it
    if (bestSection) sections.set(file, bestSection);
  }
  return [...scores].map(([file, score]) => [
    index.docnames[file],
    index.titles[file],
    sections.has(file) ? "#" + sections.get(file) : "",
    null,
    Math.round(100 * score),
    index.filenames[file],
    SearchResultKind.text,
  ]);
};
if (typeof Search !== "undefined") Search.performTermsSearch = pitfallsRank;
"""


#: A pasted message names paths, ranks, addresses, shapes and operations of the reader's code, not
#: the page's: the query splitter drops that noise (``pitfallsClean``), and a query that is a
#: message (``SomeError: ...``, or a long line) is searched by its stable beginning, cut where
#: :func:`message_head` cuts. The scorer still sees the whole query.
MESSAGE_QUERY_JS = r"""
var pitfallsNoise = [
  /File "[^"]*", line \d+(, in \S+)?/g, // a traceback's frame
  /(?:[A-Za-z]:)?(?:[\w.~-]*[\\/])+[\w.-]+\.py(?::\d+)?:?/g, // a path, with its line
  /\[rank\d+\]:?/gi, // torchrun's prefix
  /\b0x[0-9a-f]+\b/gi, // addresses
  /\[torch\.[\w.]+ \[[\d, ]*\]\]/g, // [torch.cuda.FloatTensor [64, 128]]
  /torch\.Size\(\[[\d, ]*\]\)/g,
  /\[[\d, ]+\]/g, // shapes
];
var pitfallsClean = (query) => {
  let text = query;
  for (const pattern of pitfallsNoise) text = text.replace(pattern, " ");
  return text.replace(/\s+/g, " ").trim();
};
var pitfallsMessageHead = (query) => {
  const message = query.match(/^\s*[\w.]*(?:error|warning|exception):\s*(\S[\s\S]*)$/i);
  const text = message ? message[1] : query;
  if (!message && text.length < 60) return query;
  const head = text.split(/\. |: \[| \(|\.$|:$|\n/)[0].trim();
  return head.length >= 12 ? head : query;
};
"""
#: Sphinx's own splitter (searchtools.js), for a language that has no splitter of its own.
DEFAULT_SPLITTER_JS = r"""
var splitQuery = (query) =>
  query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).filter((term) => term);
"""
WRAP_SPLITTER_JS = r"""
var pitfallsSplitQuery = splitQuery;
splitQuery = (query) => pitfallsSplitQuery(pitfallsMessageHead(pitfallsClean(query)));
"""


def message_aware(language_class):
    """A subclass of a Sphinx search language whose query splitter reads pasted messages."""
    code = language_class.js_splitter_code or DEFAULT_SPLITTER_JS
    return type(
        language_class.__name__,
        (language_class,),
        {"js_splitter_code": MESSAGE_QUERY_JS + code + WRAP_SPLITTER_JS},
    )


def search_languages(app) -> None:
    """Register the site's search languages: English and Chinese, both message-aware, Chinese
    with bigrams and glossary variants (the one call of ``add_search_language``)."""
    from sphinx.search import languages
    from sphinx.util import import_object

    for lang in ("en", "zh"):
        base = chinese_search() if lang == "zh" else languages[lang]
        if isinstance(base, str):
            base = import_object(base)
        app.add_search_language(message_aware(base))


def scorer_path(language: str) -> Path:
    """Where the scorer of one language is written (``html_search_scorer``)."""
    return DOCS / "_build" / "search-scorer" / f"{language}.js"


#: The weight of a printed message on the page that the registry of PyTorch's messages names for
#: it (:mod:`torch_pitfalls.messages`), over a message no entry names.
EXPLAINING_PAGE_WEIGHT = 10


def scorer_phrases(printed: list[Printed], language: str = "zh_CN") -> dict[str, list]:
    """docname → ``[phrase, weight]``, and ``[message, weight, section id]`` for a message the
    page printed (a search result for it opens that section): declared phrases weigh most, then
    a message printed on the page the registry names for it, then one that no entry names.

    A message that the registry names for another page is printed here in passing, and is no
    phrase of this page (its words are still in the page's text): since the CUDA recordings,
    four pages print "Expected all tensors to be on the same device", and the pasted message
    found register-buffer's recording, which printed its exact wording, before
    device-agnostic-code, the page that explains it."""
    from torch_pitfalls import messages

    phrases: dict[str, list] = {}
    for page in catalog.pages():
        declared = search_phrases(page.slug, language)
        phrases.setdefault(page.docname, []).extend([p, 20] for p in declared)
    for item in printed:
        known = phrases.setdefault(item.docname, [])
        owner = messages.find(item.kind.rsplit(".", 1)[-1], item.message)
        if owner is not None and catalog.docname(owner.slug) != item.docname:
            continue
        weight = EXPLAINING_PAGE_WEIGHT if owner is not None else 0
        for text in (item.message, message_head(item.message)):
            same = [entry for entry in known if entry[0] == text]
            if not same:
                known.append([text, weight, item.section])
            elif len(same[0]) == 2:  # a declared phrase: it opens the section too
                same[0].append(item.section)
    return phrases


def write_scorer(app, env) -> None:
    """Write this language's scorer once every page is read (Sphinx reads it when writing)."""
    phrases = scorer_phrases(all_printed(env), language_of(app.config))
    text = SCORER_JS.replace("__PHRASES__", json.dumps(phrases, ensure_ascii=False, sort_keys=True))
    text = text.replace("__LOW__", json.dumps(LOW_PAGES))
    text = text.replace("__HUBS__", json.dumps(HUB_PAGES))
    words = site_chinese_words() if language_of(app.config) == "zh_CN" else None
    text = text.replace("__WORDS__", json.dumps(words, ensure_ascii=False)) + RANKED_SEARCH_JS
    path = Path(app.config.html_search_scorer)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def configure_scorer(app, config) -> None:
    config.html_search_scorer = str(scorer_path(language_of(config)))
    path = Path(config.html_search_scorer)
    if not path.exists():  # read before any page is: written for real by _write_scorer
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")
