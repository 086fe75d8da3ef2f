"""Deterministic extraction: an `Artifact` becomes concepts, statements and relations. No LLM.

Invariant: pure and order-preserving; the same artifact always yields the same extraction. Which
existing concept a ledger or document statement belongs to is left to the store, which knows the
graph: a statement carries the concept keys it mentions, in order, and a fallback section concept.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import PurePosixPath
from typing import NamedTuple

from slugify import slugify

from ontology.artifact import Artifact, Kind
from ontology.claims import (BULLET_RE, MD_LINK_RE, NOT_CLAIMS, WIKILINK_RE, LineClassifier, LineKind, is_link_list,
                             label_of, strip_bullet)
from ontology.normalize import (ARTICLES, Proposition, clean_markup, content_words, fact_proposition,
                                is_generic_subject, proposition, stem)
from ontology.removals import IdentifierStance, identifier_stances
from ontology.revisions import Revision, RevisionRule, paired, revisions
from ontology.scope import scoped_slot
from ontology.timeline import IDENTIFIER_SUBJECT, Fact, FactKind, Marker, Status, facts as timed_facts, file_date, \
    file_status, identifier_facts, in_file, later, marker_of, restored_after, reverts, reverts_any, row_fact, statement_date

# Statements longer than this are prose dumps, not claims; shorter than this are fragments.
MAX_STATEMENT_CHARS = 400
MIN_STATEMENT_CHARS = 3
# Bounded work per artifact whatever the input: a file of thousands of bullets keeps its first N.
MAX_STATEMENTS = 1000
MAX_CONCEPT_KEY = 64
# Labels that introduce sections or rationale; `Why: ...` is not a fact "why is ...". The label
# goes, its text is the statement (in the corpus's languages too: `**Why**：…`, `**Por qué:**`).
SECTION_LABELS = frozenset(
    {"why", "how to apply", "key decisions", "open threads", "decisions", "next steps", "notes", "note",
     "context", "summary", "example", "examples", "todo", "status", "outcome", "rationale", "because",
     "how", "reason", "lesson", "rule", "fix", "root cause", "impact", "background", "result", "why it matters",
     "por qué", "cómo aplicar", "pourquoi", "comment appliquer", "warum", "anwendung",
     "为什么", "為什麼", "原因", "怎么用", "如何应用", "如何應用", "理由", "適用", "適用方法", "使い方", "이유", "적용", "적용 방법"}
)
MAX_FACT_KEY_WORDS = 4
_MENTION_NGRAM = 4

_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
# A bold label opening a line: "**Why:** text", "**Why**: text", "**Why**：text" (full-width colon).
_LABEL_PREFIX_RE = re.compile(r"^\s*(?:[*_]{2})([^*_:：]{1,40})[:：](?:[*_]{2})\s*|^\s*(?:[*_]{2})([^*_:：]{1,40})(?:[*_]{2})\s*[:：]\s*")
# `key: value` (ASCII colon and a space, or a full-width colon): a short key in any script.
_FACT_RE = re.compile(r"^([^\s:：`][^:：`]{0,40}?)(?::\s+|：\s*)(\S.*)$")
_QUOTE_RE = re.compile(r"^\s*(?:>\s?)+")
_MARKER_RE = re.compile(r"^\s*(?:[-*+\u2022]|(\d+)[.)])\s+")  # a list marker; group 1: an ordered one's number
# Sentences end at . ! ? before a capital or a digit, and after 。！？ in any case (no space there).
# Sentence ends: ".!?" before a capital, a digit or any non-ASCII letter; the Devanagari danda ।/॥, the
# Arabic question mark ؟, the Urdu ۔, the Armenian ։, the Ethiopic ። and the Myanmar ။ before a space;
# 。！？ in any case (a long Hindi paragraph was one unit and was dropped at MAX_STATEMENT_CHARS); each
# also after the closing quotation mark that ends a quoted sentence (`… "Then commit." Never push`), for
# 。！？ only before a space (「…？」と聞く goes on).
_SENTENCE_SPLIT_RE = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"“”»›」』]))\s+(?=[A-Z0-9`*\"'(\[]|[^\x00-\x7f])"
                                r"|(?<=[।॥؟۔։።။])\s+|(?<=[。！？])\s*(?=\S)|(?<=[。！？][」』”])\s+")
# Quotation marks, opening -> closing. A sentence end inside a balanced quotation ends the quoted
# sentence, not the author's: `ask: "Does it work? Then commit." Never push` is two statements, not three.
# “ closes „ (German) and opens otherwise; " closes the open " and opens otherwise.
_QUOTE_PAIRS = {'"': '"', "\u201c": "\u201d", "\u201e": "\u201c", "\u00ab": "\u00bb", "\u00bb": "\u00ab",
                "\u2039": "\u203a", "\u300c": "\u300d", "\u300e": "\u300f", "\uff02": "\uff02"}
_QUOTE_CHARS_RE = re.compile("[" + "".join(sorted(set(_QUOTE_PAIRS) | set(_QUOTE_PAIRS.values()))) + "]")
# A quotation longer than a statement is a stray mark's reach, not a quote: it holds no split.
MAX_QUOTE_CHARS = 400


_OPENERS = {closing: frozenset(o for o, c in _QUOTE_PAIRS.items() if c == closing)
            for closing in _QUOTE_PAIRS.values()}
_STRAIGHT = frozenset('"\uff02')  # a straight quote opens only after a non-word, closes only before one


def _quoted(text: str) -> list[tuple[int, int]]:
    """(start, end) of each outermost balanced quotation, in order, in linear time: a stack of open
    marks with a count per mark, so a closing mark scans the stack only when its opener is on it, and
    pops what it scans (openers left unmatched in between are dropped)."""
    stack: list[tuple[str, int]] = []
    open_count: dict[str, int] = {}
    spans: list[tuple[int, int]] = []
    for m in _QUOTE_CHARS_RE.finditer(text):
        mark, at = m.group(), m.start()
        straight = mark in _STRAIGHT
        closes = not straight or at + 1 == len(text) or not text[at + 1].isalnum()
        if closes and any(open_count.get(o) for o in _OPENERS.get(mark, ())):
            while True:
                opener, start = stack.pop()
                open_count[opener] -= 1
                if opener in _OPENERS[mark]:
                    break
            if at - start <= MAX_QUOTE_CHARS:
                while spans and spans[-1][0] > start:
                    spans.pop()  # a quotation inside this one
                spans.append((start, at))
        elif mark in _QUOTE_PAIRS and (not straight or at == 0 or not text[at - 1].isalnum()):
            stack.append((mark, at))
            open_count[mark] = open_count.get(mark, 0) + 1
    return spans


def _sentences(text: str) -> list[str]:
    """`text` split at its sentence ends (`_SENTENCE_SPLIT_RE`), except inside a balanced quotation."""
    spans = _quoted(text) if _QUOTE_CHARS_RE.search(text) else []
    if not spans:
        return _SENTENCE_SPLIT_RE.split(text)
    out, last, k = [], 0, 0
    for m in _SENTENCE_SPLIT_RE.finditer(text):
        while k < len(spans) and spans[k][1] < m.start():
            k += 1
        if k < len(spans) and spans[k][0] < m.start():
            continue  # inside a quotation
        out.append(text[last:m.start()])
        last = m.end()
    out.append(text[last:])
    return out


_CLAUSE_SPLIT_RE = re.compile(r"(?<=[;；])\s*(?=\S)")  # a sentence still too long splits at semicolons
_INDEX_LINE_RE = re.compile(r"^\s*[-*+]\s*\[([^\]]+)\]\(([^)\s]+)\)\s*(?:[-\u2013\u2014:]+\s*(.*))?$")


@dataclass(frozen=True)
class ConceptDecl:
    key: str
    name: str
    type: str
    title: str | None = None
    description: str | None = None
    authoritative: bool = True  # False for hints (index lines, section names) that never overwrite


@dataclass(frozen=True)
class Statement:
    text: str  # display form, markup removed
    proposition: Proposition
    concept: str  # fallback concept key
    mentions: tuple[str, ...] = ()  # concept keys named in the statement, in order; first known wins
    identifiers: tuple[tuple[str, IdentifierStance], ...] = ()  # declared removed / named in use (ADR 0009)
    revisions: tuple[Revision, ...] = ()  # changes the statement records (ontology.revisions, ADR 0009)
    facts: tuple[Fact, ...] = ()  # time-varying values it states, with their dates (ontology.timeline)
    links: tuple[str, ...] = ()  # concept keys it links by [[x]] or (x.md), said as current (not history)
    date: str | None = None  # the day it states: its own, else its section's, else its file's (ontology.timeline)


@dataclass(frozen=True)
class Relation:
    src: str
    dst: str
    kind: str  # "link" | "wikilink"


@dataclass(frozen=True)
class Summary:
    """What a memory file's description says about the file as a whole (ADR 0009, supersession)."""

    statement: int | None  # index of the description's statement, None when it made none
    status: Status | None  # pending / done, when the description states one
    marker: tuple[Marker, str | None] | None  # HISTORICAL, or SUPERSEDED (by a successor)
    date: str | None  # the file's date (ontology.timeline.file_date)


@dataclass(frozen=True)
class Hook:
    """An index line about the file it links: its status, marker and time-varying values."""

    target: str  # concept key of the linked file
    text: str  # the line's title and hook, as written
    status: Status | None
    marker: tuple[Marker, str | None] | None
    facts: tuple[Fact, ...]
    revisions: tuple[Revision, ...] = ()  # self-stated revisions of its text (same rules as a claim's)
    line: str = ""  # the index line verbatim


@dataclass(frozen=True)
class Extraction:
    concepts: tuple[ConceptDecl, ...]
    statements: tuple[Statement, ...]
    relations: tuple[Relation, ...]
    truncated: bool = False
    summary: Summary | None = None  # a memory file's description, read for supersession
    hooks: tuple[Hook, ...] = ()  # the index's lines, read for supersession
    index_revisions: tuple[tuple[str, Revision], ...] = ()  # (index prose verbatim, a revision it states)


def _other_script(text: str) -> bool:
    """Does `text` hold a letter of a script other than Latin (Cyrillic, Greek, Han, kana, Hangul …)?"""
    return not text.isascii() and any(
        ch.isalpha() and not ch.isascii() and not unicodedata.name(ch, "").startswith("LATIN") for ch in text)


_HAN_RE = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]")


def _script_key(text: str, keep_case: bool = False) -> str:
    """The key of a name in another script, in that script: lowercased words joined by "-", each Han
    character a word of its own (so n-gram mentions find "部署" in "部署手順" as they found its pinyin
    syllables; a kana or Thai run stays one word, as its transliteration was), combining marks kept on
    their letters (Devanagari vowel signs). `keep_case`: the letters keep their case (`file_key`)."""
    folded = unicodedata.normalize("NFKC", text)
    folded = folded if keep_case else folded.casefold()
    spaced = "".join(f"-{ch}-" if _HAN_RE.match(ch) else ch if ch.isalnum() or unicodedata.category(ch) in ("Mn", "Mc")
                     else "-" for ch in folded)
    words = [w for w in spaced.split("-") if w]
    key = ""
    for word in words:  # whole words up to MAX_CONCEPT_KEY, as slugify's word_boundary cuts
        if len(key) + len(word) + (1 if key else 0) > MAX_CONCEPT_KEY:
            break
        key = f"{key}-{word}" if key else word
    return key or "-".join(words)[:MAX_CONCEPT_KEY]


@lru_cache(maxsize=16_384)  # section names and file stems recur in every ledger entry and link
def concept_key(text: str, keep_case: bool = False) -> str:
    """A slug of the text. A name in another script keeps that script (`_script_key`): transliterated,
    "部署" and "布署" were both "bu-shu", "石", "十" and "時" all "shi", "Мир" was the Latin "mir", so two
    files shared one concept and each topic file showed the other's notes. ASCII names keep their slug;
    Latin ones keep their diacritics. A name with nothing to transliterate ("🚀.md", "🔥.md") is keyed by
    its code points, not one shared "untitled" that merged every such file into one concept."""
    if _other_script(text) and (key := _script_key(text, keep_case)):
        return key
    # A Latin name with diacritics keeps them: "café" and "cafe", "Müller" and "Muller", "résumé" and
    # "resume" are two files, and one key made each topic file list the other's notes. (İ lowercases to
    # i and a combining dot, which would split the word.)
    slug = slugify(text.replace("\u0130", "I"), max_length=MAX_CONCEPT_KEY, word_boundary=True,
                   allow_unicode=not text.isascii(), lowercase=not keep_case)
    if slug:
        return slug
    points = "-".join(f"{ord(ch):x}" for ch in text if not ch.isspace() and ch not in "\ufe0f\u200d")
    return f"u-{points}"[:MAX_CONCEPT_KEY].rstrip("-") if points else "untitled"


def file_key(stem: str) -> str:
    """The concept key of a file named `stem` (a memory file, or a link's target file): the slug, with its
    letters' case kept when the name has a capital ("Deploy" is not "deploy": on a case-sensitive disk they
    are two files, and one key made each file's appendix list the other's notes, harm14). A name without
    capitals keeps the key it always had; a key with a capital never equals one without."""
    return concept_key(stem, keep_case=True) if stem != stem.lower() else concept_key(stem)


def fold_key(key: str) -> str:
    """The lower-cased key a ledger or document heading, a mention or a wikilink names a file by: `file_key`
    with its capitals folded (`Architecture` -> `architecture`; `concept_key(file_key(s)) == concept_key(s)`).
    The store reaches a file whose key keeps capitals through it (ADR 0005, "Session 14 (case14)"). A key
    without capitals is its own (a slug is a fixed point of `concept_key`): no slugify for it."""
    return key if key == key.lower() else concept_key(key)


def _link_target_key(target: str) -> str | None:
    """Concept key for a link to another memory file (`file_key`: it names a file, case and all); None
    for URLs and anchors."""
    if "://" in target or target.startswith(("#", "mailto:")):
        return None
    stem = PurePosixPath(target.split("#", 1)[0]).stem
    return file_key(stem) if stem else None


def _mentions(text: str) -> tuple[str, ...]:
    """Candidate concept keys: wikilinks and links first, then word n-grams as slugs."""
    found: list[str] = [concept_key(m.group(1)) for m in WIKILINK_RE.finditer(text)]
    found += [k for _, t in MD_LINK_RE.findall(text) if (k := _link_target_key(t))]
    words = concept_key(clean_markup(text)).split("-")
    for size in range(_MENTION_NGRAM, 0, -1):
        for i in range(len(words) - size + 1):
            gram = "-".join(words[i : i + size])
            if size > 1 or len(gram) >= 4:
                found.append(gram)
    return tuple(dict.fromkeys(found))


def _relations(src: str, text: str) -> list[Relation]:
    rels = [Relation(src, concept_key(m.group(1)), "wikilink") for m in WIKILINK_RE.finditer(text)]
    rels += [Relation(src, k, "link") for _, t in MD_LINK_RE.findall(text) if (k := _link_target_key(t))]
    return [r for r in rels if r.dst != src]


# A request to forget or delete a memory ("Forget: the user prefers tabs", "Delete from memory: \"X\"", "Vergiss,
# dass …", "…を忘れて"): Codex writes the user's forget and delete requests as ad-hoc notes that name what to drop
# (ADR 0010, "Session 14 (codex14)"). Read as a claim it agreed with the very line it asks to drop. It states
# nothing: no claim, no stance on what it names (a negated "don't forget to …" is a reminder, not matched).
_FORGET_RE = re.compile(
    r"^(?:please\s+|pls\s+|bitte\s+|s'il te plaît,?\s+|por favor,?\s+)?"
    r"(?:(?:the\s+)?user\s+(?:asked|asks|wants|wanted|requested)\s+(?:me\s+|codex\s+|you\s+|us\s+)?(?:to\s+)?)?"
    r"(?:forget\b|stop\s+remembering\b|unremember\b"
    r"|(?:delete|remove|erase|purge)(?:\s+(?:this|that|it|these|the\s+following))?\s+from\s+(?:the\s+|your\s+|codex(?:'s|’s)?\s+)?"
    r"memor(?:y|ies)\b"  # "Delete from memory: …"; with an object only from *your* memory (not "the cache from memory")
    r"|(?:delete|remove|erase|purge)\b[^.!?:;]{0,60}?\bfrom\s+(?:your|codex(?:'s|’s)?)\s+memor(?:y|ies)\b"
    r"|vergiss(?!\s+nicht)\b|vergessen\s*[:：]|aus\s+dem\s+(?:gedächtnis|speicher)\s+(?:löschen|entfernen)"
    r"|oublie[rz]?\b|olvida(?:r|te)?\b|olvídate\b|esque[cç]a\b|esquece(?:r)?\b|dimentica(?:re)?\b"
    r"|забудь(?:те)?\b|забыть\b|請?忘[记記掉]|请忘[记掉]|忘[记記]掉)"
    r"|(?:を|は)?忘れて(?:ください|下さい|おいて)?[。.!！]?$|記憶から(?:削除|消)|잊어\s*(?:줘|주세요|버려)"
    # the request as a label or tag before what to drop: "Delete: X", "Deletion: X", "To forget: X", "[delete] X"
    # (not "Removed:" / "Deleted:", which tell history and are read as such)
    r"|^(?:\[(?:forget|delete|remove)\]|(?:to\s+)?(?:delete|deletion|remove|forget)\s*[:：])",
    re.IGNORECASE)
# A heading or label whose section lists what to drop ("## Remove from memory", "Delete:", "### To forget"):
# the whole name, in the languages above; "Removals" / "Deleted" name history and stay sections like any other.
_FORGET_SECTION_RE = re.compile(
    r"(?:to\s+)?(?:forget|delete|remove|drop|erase)(?:\s+(?:these|this|the\s+following))?"
    r"(?:\s+from\s+(?:the\s+|your\s+|codex(?:'s|’s)?\s+)?memor(?:y|ies))?"
    r"|vergessen|löschen|entfernen|aus\s+dem\s+(?:gedächtnis|speicher)\s+(?:löschen|entfernen)|oublier|à\s+oublier"
    r"|supprimer|olvidar|eliminar|borrar|esquecer|apagar|dimenticare|удалить|забыть|忘れる|忘れて|削除|删除|忘记|삭제|잊기",
    re.IGNORECASE)


# A line whose opening label says that what follows is no longer true ("Obsolete: X", "Wrong: X", "[outdated] X",
# "No longer true: X", "【廃止】X"): a note marking a memory stale, or a feedback file's wrong way beside the right
# one. Read as a claim, the label was one token more and X agreed with a file still saying X (ADR 0010, "Session
# 14 (codex14)"). It states nothing. A label that the file as a whole is superseded ("SUPERSEDED by plan 8",
# "HISTORICAL — …") is read as before (timeline.marker_of): this needs the colon or the brackets.
_NOT_TRUE_LABEL_RE = re.compile(
    r"^[\W_]{0,4}(?:obsolete|outdated|deprecated|superseded|stale|wrong|incorrect|false|invalid|retracted|"
    r"no\s+longer\s+(?:true|valid|current|accurate|applies|the\s+case)|not\s+true|"
    r"veraltet|überholt|falsch|obsolète|périmée?|faux|fausse|obsolet[oa]|desactualizad[oa]|incorrect[oa]|errado|"
    r"устарело|неверно|廃止|古い|誤り|間違い|已废弃|已廢棄|已过时|已過時|错误|錯誤|폐기|틀림)"
    r"\s*(?:[:：]|[\])）】」])\s*\S", re.IGNORECASE)


def forget_request(text: str) -> bool:
    """Does a line ask to forget or delete a memory rather than state one?"""
    return _FORGET_RE.search(text) is not None  # English/European forms open the line; CJK ones may end it


def forget_section(name: str) -> bool:
    """Does a heading or label name a list of memories to drop ("## Remove from memory", "Delete:")?"""
    return _FORGET_SECTION_RE.fullmatch(name.strip().rstrip(":：").strip()) is not None


# Memory restates its lines file after file, and a memory file's description is read twice (as its first
# claim and as its summary): the same line gives the same (immutable) pair, so it is read once. 4,096 lines
# hold the repetitive corpus's recurring statements and slot facts (`fact_proposition` is not cached itself).
@lru_cache(maxsize=4096)
def _statement_from_line(line: str) -> tuple[str, Proposition] | None:
    """One bullet or sentence to (display text, proposition); facts are read as "key is value"."""
    line = strip_bullet(line)
    if is_link_list(line):  # a "See [[x]]." sentence inside a paragraph: a relation, not a claim
        return None
    prefix = _LABEL_PREFIX_RE.match(line)
    if prefix and (prefix.group(1) or prefix.group(2) or "").strip().lower() in SECTION_LABELS:
        line = line[prefix.end():]
    text = clean_markup(line).rstrip(" ;；")
    if forget_request(text) or _NOT_TRUE_LABEL_RE.match(text):
        return None
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    if not MIN_STATEMENT_CHARS <= len(text) <= MAX_STATEMENT_CHARS or label_of(text) is not None:
        return None
    fact = _FACT_RE.match(text)
    if fact:
        key, value = fact.group(1).strip(), fact.group(2).strip()
        if key.lower() in SECTION_LABELS:
            text = value
        elif len(key.split()) <= MAX_FACT_KEY_WORDS:
            prop = fact_proposition(key, value)
            return (text, prop) if prop else None
    prop = proposition(text)
    return (text, prop) if prop else None


class _Unit(NamedTuple):
    """One bullet, sentence or table row of a body. A named tuple, not a dataclass: it is the reading
    cache's key as a whole (`_reading`), hashed and compared field by field in C, so a field added here
    is part of the key without anyone remembering to add it there."""

    section: str | None  # the heading or label it sits under
    text: str
    date: str | None = None  # its section's date ("## Estado al 2026-04-04"), else the file's
    row: Fact | None = None  # a table row keyed by an item with one status (`| 1.6 | ✅ Done |`)
    heading_date: str | None = None  # its section heading's date only (not the file's): dates its identifiers


def _row_cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _body_units(body: str, file_day: str | None = None) -> list[_Unit]:
    """Bullets and sentences, with the heading or label they sit under and its date. Lines that are
    not claims (ontology.claims: headings, labels, link lists, code, formulas, tables) are left out;
    headings and labels still name the section of what follows. A table row keyed by an item with
    one status is the exception: it states that item's status (ontology.timeline.row_fact)."""
    units: list[_Unit] = []
    section: str | None = None
    section_date: str | None = None
    dated: dict[int, str | None] = {}  # heading level -> its date: a sub-heading without one inherits it
    header: list[str] | None = None  # the first row of the table being read
    paragraph: list[str] = []
    classifier = LineClassifier()

    def flush() -> None:
        if paragraph:
            for sentence in _sentences(" ".join(paragraph)):
                units.append(_Unit(section, sentence, section_date or file_day, None, section_date))
            paragraph.clear()

    item_column: int | None = None  # the text column of the list item whose lines are being read
    label_item: tuple[str, str | None] | None = None  # a list item holding only a label, the section before it

    for raw in body.split("\n"):
        quoted = _QUOTE_RE.match(raw)
        line = raw[quoted.end():].rstrip() if quoted else raw.rstrip()
        kind = classifier.classify(line)
        if kind is not LineKind.TEXT:
            item_column = None
        if label_item is not None:
            item, section_before = label_item
            label_item = None
            if kind is LineKind.TEXT and raw[:1] in (" ", "\t") and not _MARKER_RE.match(line):
                # "- Deploy target:" / "  the staging cluster": one item wrapped after its colon, not a
                # label over what follows (claims.LineClassifier reads the second line as its text).
                section = section_before
                units.append(_Unit(section, item + " " + line.strip(), section_date or file_day, None, section_date))
                item_column = _MARKER_RE.match(item).end()
                continue
        if kind is LineKind.HEADING:
            flush()
            heading = _HEADING_RE.match(line)
            section = clean_markup(heading.group(1)) if heading and heading.group(1) else section
            level = len(line.lstrip()) - len(line.lstrip().lstrip("#"))
            dated = {k: v for k, v in dated.items() if k < level}
            dated[level] = statement_date(section) if section else None
            section_date = next((dated[k] for k in sorted(dated, reverse=True) if dated[k]), None)
            continue
        if kind is LineKind.LABEL:
            flush()
            label_item = (line, section) if _MARKER_RE.match(line) else None
            section = clean_markup(label_of(line) or "") or section
            continue
        if kind is LineKind.TABLE and "|" in line.strip()[1:]:
            flush()
            cells = _row_cells(line)
            if header is None:
                header = cells
            elif (fact := row_fact(cells, section_date or file_day, header)) is not None:
                units.append(_Unit(section, " | ".join(c for c in cells if c), fact.date, fact))
            continue
        header = None
        if kind in NOT_CLAIMS:
            flush()
            continue
        marker = _MARKER_RE.match(line)
        if marker and not (item_column is not None and _wrapped_number(line, marker, item_column)):
            flush()
            units.append(_Unit(section, line, section_date or file_day, None, section_date))
            item_column = marker.end()
            continue
        if raw[:1] in (" ", "\t") and units and not paragraph and units[-1].row is None:
            last = units[-1]
            units[-1] = last._replace(text=last.text + " " + line.strip())  # bullet continuation
            continue
        paragraph.append(line.strip())
        item_column = None
    flush()
    return [u._replace(text=sentence) for u in units for sentence in _split_bullet(u.text)]


def _wrapped_number(line: str, marker: re.Match[str], item_column: int) -> bool:
    """A line like "  21. Android stays on 17" right under a list item's text, indented into it: the
    item's text re-wrapped before a number ("moved from Java 17 to Java / 21. ..."), not a new item.
    CommonMark agrees: an ordered list that does not start at 1 cannot interrupt a paragraph."""
    return (marker.group(1) is not None and int(marker.group(1)) != 1
            and len(line) - len(line.lstrip()) >= item_column)


def _split_bullet(unit: str) -> list[str]:
    """A long bullet is split into its sentences; a short one stays whole."""
    if len(unit) <= MAX_STATEMENT_CHARS:
        return [unit]
    return [clause for sentence in _sentences(unit) if sentence.strip()
            for clause in (_CLAUSE_SPLIT_RE.split(sentence) if len(sentence) > MAX_STATEMENT_CHARS else [sentence])
            if clause.strip()]


# A link said as history, not as current: "replaced [[x]]", "[[x]] now historical", "(was [[x]])".
_HISTORY_LINK_RE = re.compile(
    r"\b(?:replac\w*|remov\w*|delet\w*|drop\w*|supersed\w*|obsolete|deprecat\w*|historical|history|legacy|"
    r"was|were|previously|formerly|former|old|older|earlier|no longer|gone|retired|instead|wrong|"
    r"früher|ersetzt|entfernt|antes|reemplaz\w*|anciennement|remplac\w*)\b"
    r"|→|->|旧|以前|之前|原来|替代|取代|替换|改为|改用|删除|廃止|削除|置き換|이전|기존|대체|삭제|폐기", re.IGNORECASE)


def _current_links(unit: str, polarity: int) -> tuple[str, ...]:
    """Concept keys the unit links by [[x]] or (x.md) as current: none when it negates or speaks of
    history (replaced, removed, was, legacy, …)."""
    if polarity < 0 or _HISTORY_LINK_RE.search(clean_markup(unit)):
        return ()
    keys = [concept_key(m.group(1)) for m in WIKILINK_RE.finditer(unit)]
    keys += [k for _, t in MD_LINK_RE.findall(unit) if (k := _link_target_key(t))]
    return tuple(dict.fromkeys(keys))


# What the per-statement rules read in one unit, for `_statements`: in a memory file (`memory`) its
# statement's concept is the file's and its numbered items are made the file's own after this, so the
# same line in two memory files, or in two versions of one, is read once.
_Reading = tuple[str, Proposition, tuple[tuple[str, IdentifierStance], ...], tuple[Revision, ...], tuple[Fact, ...],
                 tuple[Fact, ...], tuple[str, ...], "str | None", tuple[str, ...], "str | None"]


# Memory restates its lines file after file, and a new version of a file repeats most of the old one's:
# a unit gives the same (immutable) reading wherever it stands, so the rules run once per distinct unit.
# The key is the whole unit (every field, structurally) and the kind of file: a key listing fields by
# hand once could leave out one the reading depends on and hand a unit another unit's reading.
@lru_cache(maxsize=4096)
def _reading(unit: _Unit, memory: bool) -> _Reading | None:
    """(text, proposition, identifiers, revisions, timed facts before `in_file`, identifier facts, links,
    date, mentions, section concept) of one unit (its text under its section, dated its date), or None
    when it states nothing."""
    line, section, date, row = unit.text, unit.section, unit.date, unit.row
    if section is not None and forget_section(section):
        return None  # listed to be forgotten or deleted (ADR 0010, "Session 14 (codex14)"): states nothing
    parsed = _statement_from_line(line)
    if parsed is None:
        return None
    text, prop = parsed
    prop = scoped_slot(prop, text, section, memory)  # rivals of one subject only
    identifiers = identifier_stances(text, prop.polarity)
    revised = revisions(text, identifiers)
    found = (row,) if row is not None else timed_facts(text, date)
    links = _current_links(line, prop.polarity) if "[" in line else ()
    when = statement_date(text) or date
    if memory:
        return (text, prop, identifiers, revised, found, identifier_facts(identifiers, text, unit.heading_date), links,
                when, (), None)
    concept = concept_key(section) if section else None
    mentions = _mentions(line)
    if section and section != section.lower():  # "## Deploy" names `Deploy.md` beside `deploy.md` (its key, case
        mentions += (file_key(section),)  # kept): last, after what the line itself names (ADR 0005, case14)
    return (text, prop, identifiers, revised, found, identifier_facts(identifiers, text, unit.heading_date), links, when,
            mentions, concept)


def _statements(units: list[_Unit], fixed_concept: str | None, default: str) -> tuple[list[Statement], bool]:
    out: list[Statement] = []
    memory = fixed_concept is not None
    for unit in units:
        read = _reading(unit, memory)
        if read is None:
            continue
        if len(out) >= MAX_STATEMENTS:
            return _paired(out), True
        text, prop, identifiers, revised, found, named, links, when, mentions, section = read
        if fixed_concept is not None:
            found = (in_file(found, fixed_concept) if found else found) + named
            out.append(Statement(text, prop, fixed_concept, identifiers=identifiers, revisions=revised, facts=found,
                                 links=links, date=when))
        else:
            out.append(Statement(text, prop, default if section is None else section, mentions, identifiers, revised,
                                 found + named, links, when))
    return _paired(_undone_upgrades(_undone_removals(out))), False


def _undone_upgrades(statements: list[Statement]) -> list[Statement]:
    """An upgrade the same file says was undone ("upgraded to Kumo CLI 2.4", then "reverted the Kumo CLI
    upgrade" or "rolled back to Kumo CLI 2.1", dated after it or, undated, written after it) moved
    nothing: its version fact stays, no longer an upgrade, so it supersedes no other value (blind9)."""
    reverting = [(n, s) for n, s in enumerate(statements) if reverts_any(s.text)]
    if not reverting:
        return statements
    out = list(statements)
    for n, statement in enumerate(statements):
        undone = {f for f in statement.facts if f.kind is FactKind.VERSION and f.upgrade and any(
            m != n and reverts(r.text, f.subject) and not later(f.date, r.date)
            and (m > n or later(r.date, f.date)) for m, r in reverting)}
        if undone:
            out[n] = replace(statement, facts=tuple(replace(f, upgrade=False) if f in undone else f
                                                    for f in statement.facts))
    return out


def _undone_removals(statements: list[Statement]) -> list[Statement]:
    """A removal the same file undoes later ("2026-05-02: removed `x`", then "2026-05-04: restored `x`")
    removes nothing: its statement keeps its words but no removal of `x` (no stance, revision or fact)."""
    days: dict[IdentifierStance, dict[str, list[str | None]]] = {s: {} for s in IdentifierStance}
    for statement in statements:
        for ident, stance in statement.identifiers:
            days[stance].setdefault(ident, []).append(statement.date)
    back = {ident for ident, removed in days[IdentifierStance.REMOVED].items()
            if restored_after(removed, days[IdentifierStance.IN_USE].get(ident, []))}
    if not back:
        return statements
    undone = {IDENTIFIER_SUBJECT + ident for ident in back}
    return [replace(s, identifiers=tuple(p for p in s.identifiers if p[0] not in back),
                    revisions=tuple(r for r in s.revisions if not (r.rule is RevisionRule.REMOVED
                                                                    and r.old.strip("`") in back)),
                    facts=tuple(f for f in s.facts if f.subject not in undone))
            if any(i in back and st is IdentifierStance.REMOVED for i, st in s.identifiers) else s
            for s in statements]


def _paired(statements: list[Statement]) -> list[Statement]:
    """Add the revisions two statements of one artifact make together ("Original plan: …" then
    "Current direction: …") to the newer one; `Revision.older` indexes the older statement."""
    for _, newer, revision in paired([s.text for s in statements]):
        statement = statements[newer]
        statements[newer] = replace(statement, revisions=statement.revisions + (revision,))
    return statements


def memory_file_key(filename: str) -> str:
    """A memory file's concept key: its file stem (`name:` is only its title), slugged the way index
    links and wikilinks to it are, so `[x](feedback_x.md)` and `[[feedback-x]]` reach the same concept."""
    return file_key(PurePosixPath(filename).stem)


# A description this short with a generic or document-kind head ("Weekly status", "Sprint notes") names
# what kind of file it is; it states nothing, and the same label in every status file is no agreement.
MAX_LABEL_DESCRIPTION_TOKENS = 3
_DOCUMENT_NOUNS = frozenset("""log logs journal report reports overview plan plans checklist board diary recap retro
    retrospective standup snapshot handoff progress memo minutes agenda backlog roadmap changelog readme draft
    session sessions meeting meetings weekly daily monthly""".split())


def _is_label(description: str) -> bool:
    """Whether a frontmatter description is a bare label: a few plain words, the first or last of which
    is a generic or document-kind noun, with no number, name or `key: value` in it."""
    prop = proposition(description)
    if prop is None or prop.slot or len(prop.tokens) > MAX_LABEL_DESCRIPTION_TOKENS \
            or not all(t.isalpha() for t in prop.tokens) or _FACT_RE.match(clean_markup(description)):
        return False
    words = [w for w in content_words(description) if w not in ARTICLES]
    return bool(words) and any(w in _DOCUMENT_NOUNS or stem(w) in _DOCUMENT_NOUNS or is_generic_subject(w)
                               for w in (words[0], words[-1]))


def _memory(artifact: Artifact) -> Extraction:
    key = memory_file_key(artifact.filename)
    decl = ConceptDecl(key, artifact.name or PurePosixPath(artifact.filename).stem, artifact.memory_type or "memory",
                       title=artifact.name, description=artifact.description)
    day = file_date(artifact.filename, artifact.frontmatter)
    units: list[_Unit] = []
    claims = artifact.description and not _is_label(artifact.description)
    if claims:
        units.append(_Unit(None, artifact.description, day))
    units += _body_units(artifact.body, day)
    statements, truncated = _statements(units, key, key)
    summary = None
    if artifact.description:
        described = _statement_from_line(artifact.description) if claims else None
        first = 0 if described is not None and statements and statements[0].text == described[0] else None
        summary = Summary(first, file_status(artifact.description), marker_of(artifact.description), day)
    return Extraction((decl,), tuple(statements), tuple(_relations(key, artifact.body)), truncated, summary)


_LEADING_LINK_RE = re.compile(r"^\s*[-*+]\s*\[[^\]]+\]\(")
_SEGMENT_SEPARATORS = " ·•,;|/&+-\u2013\u2014:"


def _more_links(line: str, first: int | None) -> list[Hook]:
    """Hooks for the links of an index line past its first (`first`: where the first link's target ends,
    that link already read whole), or for every link of a bullet that opens with one and links several
    files (`first` None). Each file gets its own part of the line: its title and the words up to the next
    link ("- [A](a.md) · [Runners](project_runners.md) — RunnerPool 4 workers": the count is the runners')."""
    if not _LEADING_LINK_RE.match(line) or line.count("](") < 2:
        return []
    links = [(m, key) for m in MD_LINK_RE.finditer(line) if (key := _link_target_key(m.group(2)))]
    if first is not None:
        links = [(m, key) for m, key in links if m.start(2) > first]
    elif len(links) < 2:
        return []
    found: list[Hook] = []
    for i, (m, key) in enumerate(links):
        end = links[i + 1][0].start() if i + 1 < len(links) else len(line)
        hook = clean_markup(line[m.end():end]).strip(_SEGMENT_SEPARATORS)
        title = clean_markup(m.group(1))
        text = f"{title} — {hook}" if hook else title
        found.append(Hook(key, text, file_status(text), marker_of(hook) or marker_of(title),
                          in_file(timed_facts(text), key), revisions(text), line.strip()))
    return found


def _memory_index(artifact: Artifact) -> Extraction:
    """An index line annotates the file it links (the projection shows the index verbatim); it never
    declares a concept, so a file whose `name:` differs from its file name has no empty twin."""
    relations: list[Relation] = []
    hooks: list[Hook] = []
    prose: list[list[str]] = []  # paragraphs, blockquotes and list items that are not link lines
    fenced, open_unit = False, False
    for line in artifact.body.split("\n"):
        match = _INDEX_LINE_RE.match(line)
        if line.lstrip().startswith(("```", "~~~")):
            fenced, open_unit = not fenced, False
        elif match and (key := _link_target_key(match.group(2))):
            relations += _relations(key, match.group(3) or "")
            hook = clean_markup(match.group(3) or "")
            text = f"{clean_markup(match.group(1))} — {hook}" if hook else clean_markup(match.group(1))
            hooks.append(Hook(key, text, file_status(text), marker_of(hook) or marker_of(match.group(1)),
                              in_file(timed_facts(text), key), revisions(text), line.strip()))
            hooks += _more_links(line, first=match.end(2))
            open_unit = False
        elif not fenced and (more := _more_links(line, first=None)):
            hooks += more  # "- [A](a.md) · [B](b.md) — hook": each file its own part of the line
            open_unit = False
        elif fenced or not line.strip(">").strip() or line.lstrip().startswith(("#", "|")) or match:
            open_unit = False
        else:
            if not open_unit or BULLET_RE.match(line.lstrip("> ")):
                prose.append([])
            prose[-1].append(line.rstrip())
            open_unit = True
    found = [("\n".join(unit), revision) for unit in prose
             for revision in revisions(clean_markup(" ".join(part.lstrip("> ") for part in unit)))]
    return Extraction((), (), tuple(relations), hooks=tuple(hooks), index_revisions=tuple(found))


def _sectioned(artifact: Artifact, default: str, default_type: str) -> Extraction:
    units = _body_units(artifact.body, file_date(artifact.filename, artifact.frontmatter))
    statements, truncated = _statements(units, None, default)
    sections = dict.fromkeys(s.concept for s in statements)
    concepts = tuple(ConceptDecl(key, key, default_type if key == default else "section", authoritative=False)
                     for key in sections)
    relations = tuple(r for s in statements for r in _relations(s.concept, s.text))
    return Extraction(concepts, tuple(statements), relations, truncated)


def extract(artifact: Artifact) -> Extraction:
    if artifact.kind is Kind.MEMORY:
        return _memory(artifact)
    if artifact.kind is Kind.MEMORY_INDEX:
        return _memory_index(artifact)
    if artifact.kind is Kind.LEDGER:
        return _sectioned(artifact, "session-notes", "ledger")
    if artifact.kind is Kind.DOCUMENT:
        return _sectioned(artifact, concept_key(PurePosixPath(artifact.filename).stem), "document")
    if artifact.kind is Kind.TOMBSTONE:
        return Extraction((), (), ())  # says nothing: it withdraws what its source said (ontology.store)
    raise AssertionError(f"unhandled kind {artifact.kind}")
