"""What a search asks: terms from the user's text, filters from the user's options.

Invariant: pure. Every whitespace-separated chunk is one term (an identifier stays whole), runs of
scripts written without spaces are terms of their own, and any text parses (control characters
never reach FTS5); unreadable filters are a SearchError that says what would be read.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime

from ontology.clock import utc_text
from ontology.errors import BadRequest
from ontology.evidence import Label
from ontology.normalize import NEGATORS, STOPWORDS
from ontology.tokens import mark_class

# Query words beyond normalize's stopwords that only frame a question ("how is X configured").
_QUESTION_WORDS = frozenset("is are was were has have had how why where does doesn".split())
_NOISE = STOPWORDS | NEGATORS | _QUESTION_WORDS
MAX_TERMS = 8  # a query is a question, not a document; more words only slow the AND without sharpening it

# Unicode blocks of scripts written without spaces between words, plus Hangul (particles attach to
# words, so a word is a substring of a space-delimited token): Thai, Hangul Jamo, kana, CJK symbols
# and compatibility Jamo, CJK ideographs (A, unified, compatibility), Hangul syllables, halfwidth kana,
# and the supplementary ideograph planes.
_BOUNDARYLESS = ("\u0e00-\u0e7f\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf"
                 "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f")
_RUN_RE = re.compile(f"[{_BOUNDARYLESS}]+")
# Pictographs: emoji and the symbol blocks memory marks lines with (✅ ❌ ⚠ ⭐ ⏳, Dingbats, Misc Symbols,
# Misc Technical, the emoji planes). No word tokenizer keeps them, so rows holding one go to the trigram
# index too and a query's pictograph is a substring term of its own; a variation selector, skin tone or
# joiner inside a sequence stays with it ("👩‍💻"), a trailing U+FE0F is dropped (the text may lack it).
_PICTOGRAPHS = "\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff"
_PICTOGRAPH_RE = re.compile(f"[{_PICTOGRAPHS}](?:[\ufe0f\u200d\U0001f3fb-\U0001f3ff]*[{_PICTOGRAPHS}])*")
_WORD_RE = re.compile(r"[^\W_]+")  # unicode61's token characters: `_` separates, as in the index
_EDGE_RE = re.compile(r"^[^\w~]+|[^\w]+$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# A decimal digit of another script (Persian ۰-۹, Arabic-Indic ٠-٩, Devanagari ०-९, Bengali, …; NFKC
# leaves them, as it folds only full-width ０-９): the search key holds its ASCII digit, so "۲۰۲۶" finds
# "2026" and the other way round. Not in the scripts written without spaces (Thai ๐-๙): there a digit
# sits inside a run the query cuts as a substring term, and folding it would split that term from its run.
_DIGIT_RE = re.compile(rf"(?![0-9{_BOUNDARYLESS}])\d")


def _ascii_digit(match: re.Match[str]) -> str:
    return chr(0x30 + unicodedata.decimal(match.group()))


def search_key(text: str) -> str:
    """`text` as the indexes hold it and queries are read: NFKC (full-width `ｍａｋｅ` is "make", a
    decomposed "Việt" a composed one) and decimal digits in ASCII. Only the key is folded: what a hit
    shows is the author's text, read from the assertion or concept, never from the index."""
    if text.isascii():
        return text
    return _DIGIT_RE.sub(_ascii_digit, unicodedata.normalize("NFKC", text))


def _word_re(text: str) -> re.Pattern[str]:
    """Word tokens as the index's unicode61 (categories L* N* Co M*) cuts them: a combining mark is part
    of a word ("उपयोग" is one token, not "उपय" + "ग")."""
    return _WORD_RE if text.isascii() else _marked_word_re()


@functools.cache
def _marked_word_re() -> re.Pattern[str]:
    return re.compile(rf"(?:[^\W_]|{mark_class(in_words=False)})+")


@functools.cache
def _marked_edge_re() -> re.Pattern[str]:
    """_EDGE_RE that keeps a word's final vowel sign ("करें" ends with two marks)."""
    mark = mark_class(in_words=False)[1:-1]
    return re.compile(rf"^[^\w~]+|[^\w{mark}]+$")


class SearchError(BadRequest):
    """A search the user can fix: an unknown label, a date that is not one, an unknown concept."""


@dataclass(frozen=True)
class Term:
    literal: str  # as written, outer punctuation aside: the substring the trigram index looks for
    tokens: tuple[str, ...]  # word tokens (empty for a CJK term)

    @property
    def cjk(self) -> bool:
        return not self.tokens

    @property
    def pictograph(self) -> bool:
        """An emoji or symbol run ("✅", "👩‍💻"): found by substring, beside words found as words."""
        return not self.tokens and _PICTOGRAPH_RE.fullmatch(self.literal) is not None

    @property
    def fts(self) -> str:
        """The term as an FTS5 phrase: `snake_case` and `~/a/b` become their tokens in order."""
        return '"' + " ".join(self.tokens) + '"'

    @property
    def substring(self) -> str:
        return '"' + self.literal.replace('"', '""') + '"'


@dataclass(frozen=True)
class Filters:
    status: frozenset[Label] = frozenset()  # empty: any; non-empty: assertions only
    concept: str | None = None
    since: str | None = None  # normalized UTC timestamp, compared as a string like the stored ones


_HAN_RE = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")


# OpenCC conversions a query is also searched in: to Simplified, to Traditional, and the Taiwan forms with
# their own words ("数据库" is "資料庫" in Taiwan, "软件" is "軟體"), which character tables alone miss.
_CONVERSIONS = ("t2s", "s2t", "s2twp", "tw2sp")


@functools.cache
def _converters() -> tuple[object, ...]:
    import opencc  # its dictionaries load once, tens of ms, and only for a query with Han in it

    return tuple(opencc.OpenCC(name) for name in _CONVERSIONS)


def script_variants(text: str) -> tuple[str, ...]:
    """`text`, then its Simplified and Traditional Chinese forms where they differ ("数据库", "數據庫",
    "資料庫" name one thing; notes are written in any): OpenCC's character and phrase tables, no guessing."""
    if not _HAN_RE.search(text):
        return (text,)
    plain = _CONTROL_RE.sub(" ", text)  # OpenCC reads a C string: a NUL would end the text it converts
    return tuple(dict.fromkeys([text, *(c.convert(plain) for c in _converters())]))  # type: ignore[attr-defined]


def has_boundaryless(text: str) -> bool:
    return _RUN_RE.search(text) is not None


def needs_substrings(text: str) -> bool:
    """Whether text goes to the trigram index too: it holds a script without spaces or a pictograph."""
    return _RUN_RE.search(text) is not None or (not text.isascii() and _PICTOGRAPH_RE.search(text) is not None)


def parse_query(text: str) -> tuple[Term, ...]:
    """Terms of a query: whitespace-separated chunks, each kept whole (an identifier is one term);
    runs of CJK/kana/Hangul/Thai are terms of their own. Framing words count only when nothing else
    is left."""
    terms: list[Term] = []
    noise: list[Term] = []
    seen: set[str] = set()
    text = _CONTROL_RE.sub(" ", search_key(text))  # NUL ends an FTS5 string early
    for chunk in text.split():
        found = [Term(run, ()) for run in _RUN_RE.findall(chunk)]
        if not chunk.isascii():
            found += [Term(p, ()) for p in _PICTOGRAPH_RE.findall(chunk)]
            chunk = _PICTOGRAPH_RE.sub(" ", chunk)
        rest = _RUN_RE.sub(" ", chunk).strip()
        rest = _EDGE_RE.sub("", rest) if rest.isascii() else _marked_edge_re().sub("", rest)
        tokens = tuple(t.casefold() for t in _word_re(rest).findall(rest))
        if tokens:
            found.insert(0, Term(rest, tokens))
        for term in found:
            key = term.literal.casefold()
            if key in seen:
                continue
            seen.add(key)
            (noise if term.tokens and set(term.tokens) <= _NOISE else terms).append(term)
    return tuple((terms or noise)[:MAX_TERMS])


def parse_filters(status: list[str] | str | None = None, concept: str | None = None,
                  since: str | None = None) -> Filters:
    """Filters from user input; anything unreadable is a SearchError that says what would be read."""
    names = [status] if isinstance(status, str) else list(status or [])
    labels: set[Label] = set()
    for name in (n.strip().upper() for item in names for n in item.split(",")):
        if not name:
            continue
        if name == "DISPUTED":
            labels |= {Label.CONTESTED, Label.CONTRADICTORY}
            continue
        try:
            labels.add(Label[name])
        except KeyError:
            valid = ", ".join([label.value for label in Label] + ["DISPUTED"])
            raise SearchError(f"unknown status {name!r}; use one of {valid}") from None
    return Filters(frozenset(labels), concept or None, _since(since) if since else None)


def _since(value: str) -> str:
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise SearchError(f"since {value!r} is not a date; use YYYY-MM-DD or an ISO timestamp") from None
    return utc_text(parsed)
