"""Script-aware tokens for matching keys, near-duplicate sets and search: every script, one rule.

Invariant: pure and deterministic. Text is NFKC-normalized and casefolded; space-delimited scripts
are split into Unicode words (identifiers such as `snake_case`, dates and versions stay one token);
scripts written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar) become character bigrams, so a
mixed-script sentence is compared on all of its text, never on its ASCII part alone.
"""

from __future__ import annotations

import enum
import functools
import re
import sys
import unicodedata

# Scripts that do not separate words with spaces: compared by overlapping character bigrams.
_UNSPACED = ("\u0e00-\u0eff"  # Thai, Lao
             "\u1000-\u109f"  # Myanmar
             "\u1780-\u17ff"  # Khmer
             "\u3040-\u30ff\u31f0-\u31ff"  # hiragana, katakana (NFKC folds half-width kana here)
             "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff")  # Han
_UNSPACED_RE = re.compile(f"[{_UNSPACED}]")
# One piece of text: a run of unspaced-script characters, a dotted/dashed number (date, version,
# time), a word (letters, digits, `_`, inner apostrophe), or "=" (a slot verb in `x=y`).
_W = rf"[^\W{_UNSPACED}]"  # a word character of a space-delimited script
_PIECE_RE = re.compile(
    rf"(?P<run>[{_UNSPACED}]+)"
    # A path or file name is one token: "~/.claude/hooks/lint-gate.sh", "C:\\x\\y", "cart.blade.php".
    rf"|(?P<path>~?(?:{_W}|[-.~])*[/\\](?:{_W}|[-./\\~])*{_W}|{_W}+(?:[-.]{_W}+)*\.[a-z][a-z0-9]{{0,4}}\b)"
    r"|(?P<num>\d+(?:[.:/\-]\d+)+)"
    rf"|(?P<word>[^\W{_UNSPACED}]+(?:'[^\W{_UNSPACED}]+)?)"
    r"|(?P<eq>=)")
# The same pieces for text without `/`, `\\` or `.`, where no path can start: the path branch scans each
# word twice before failing, and most statements have none of the three.
_PIECE_NO_PATH_RE = re.compile(
    rf"(?P<run>[{_UNSPACED}]+)"
    r"|(?P<num>\d+(?:[.:/\-]\d+)+)"
    rf"|(?P<word>[^\W{_UNSPACED}]+(?:'[^\W{_UNSPACED}]+)?)"
    r"|(?P<eq>=)")


def _ascii_pieces(pattern: str) -> re.Pattern[str]:
    """`pattern` for ASCII text, where `findall` gives each piece's text without a match object per token:
    no named groups, no unspaced run (no ASCII character is one) and `\\w` for `_W` (the same on ASCII).
    ASCII-only, it compiles in 0.3 ms instead of ~10 ms for each Unicode one, at every process start."""
    flat = re.sub(r"\(\?P<\w+>", "(?:", pattern).replace(f"(?:[{_UNSPACED}]+)|", "", 1).replace(_W, r"\w")
    assert flat.isascii()
    return re.compile(flat)


_PIECE_FLAT_RE = _ascii_pieces(_PIECE_RE.pattern)
_PIECE_NO_PATH_FLAT_RE = _ascii_pieces(_PIECE_NO_PATH_RE.pattern)
_PATH_CHARS = frozenset("/\\.")
# The path branch fails at each start inside a long run with no path ("a-a-a-…b.", 4 KB in 4 s): the
# engine scans the rest of the run again from every word in it. Text with no run of this many non-space
# characters bounds that scan (no piece crosses a space); longer runs go through `_pieces`.
_LONG_RUN_RE = re.compile(r"\S{64}")
_PATH_A_RE = re.compile(rf"~?(?:{_W}|[-.~])*[/\\](?:{_W}|[-./\\~])*{_W}")
_PATH_B_RE = re.compile(rf"{_W}+(?:[-.]{_W}+)*\.[a-z][a-z0-9]{{0,4}}\b")
_A_RUN_RE = re.compile(rf"(?:{_W}|[-./\\~])+")  # where a failed path start fails for every later start too
_B_CHAIN_RE = re.compile(rf"{_W}+(?:[-.]{_W}+)*")  # where a failed file-name start fails for every later one
_PATH_START_RE = re.compile(rf"{_W}|[-./\\~]")
_W_RE = re.compile(_W)


def _pieces(text: str) -> list[tuple[str, int, int]]:
    """(group, start, end) of each `_PIECE_RE` match of `text`, the same as its `finditer`, in linear time:
    where a path or file-name branch fails, it fails for every later start in the same run (its tail
    holds no more than the run did), so the run is marked and those branches are not tried there again."""
    out: list[tuple[str, int, int]] = []
    n, pos, a_dead, b_dead = len(text), 0, -1, -1
    while pos < n:
        other = _PIECE_NO_PATH_RE.search(text, pos)
        upto = other.start() if other else n  # a path may start before the next other piece, or at it
        found = None
        at = pos
        while found is None and (start := _PATH_START_RE.search(text, at, min(upto + 1, n))) is not None:
            at = start.start()
            if at >= a_dead:
                if (found := _PATH_A_RE.match(text, at)) is None:
                    a_dead = _A_RUN_RE.match(text, at).end()  # type: ignore[union-attr]
            if found is None and at >= b_dead and _W_RE.match(text, at):
                if (found := _PATH_B_RE.match(text, at)) is None:
                    b_dead = _B_CHAIN_RE.match(text, at).end()  # type: ignore[union-attr]
            at += 1
        if found is not None:
            out.append(("path", found.start(), found.end()))
            pos = found.end()
        elif other is not None:
            out.append((other.lastgroup or "", other.start(), other.end()))
            pos = other.end()
        else:
            break
    return out


def _spans(text: str, pieces: re.Pattern[str]) -> list[tuple[str, int, int]]:
    if pieces is _PIECE_RE and _LONG_RUN_RE.search(text):
        return _pieces(text)
    return [(m.lastgroup or "", m.start(), m.end()) for m in pieces.finditer(text)]


@functools.cache
def mark_class(*, in_words: bool = True) -> str:
    """A regex character class of the combining marks (Mn, Mc; with `in_words` False also Me and every
    variation selector, as SQLite's unicode61 `M*` category has them). Built on first use (~25 ms)."""
    cats = ("Mn", "Mc") if in_words else ("Mn", "Mc", "Me")
    marks = [cp for cp in range(0x300, 0x20000) if unicodedata.category(chr(cp)) in cats
             and not (in_words and (0xFE00 <= cp <= 0xFE0F or _UNSPACED_RE.match(chr(cp))))]
    if not in_words and sys.maxunicode >= 0xE01EF:
        marks += range(0xE0100, 0xE01F0)  # the supplementary variation selectors (Mn)
    ranges, start = [], marks[0]
    for prev, cp in zip(marks, marks[1:] + [-1]):
        if cp != prev + 1:
            lo, hi = (f"\\u{c:04x}" if c <= 0xFFFF else f"\\U{c:08x}" for c in (start, prev))
            ranges.append(lo if prev == start else f"{lo}-{hi}")
            start = cp
    return "[" + "".join(ranges) + "]"


@functools.cache
def _mark_run() -> re.Pattern[str]:
    return re.compile(mark_class() + "+")


class Script(enum.Enum):
    LATIN = "Latin"
    HAN = "Han"
    KANA = "Kana"
    HANGUL = "Hangul"
    THAI = "Thai"
    OTHER = "Other"


# Characters that change how text looks, never which word it is: zero-width spaces and joiners, the soft
# hyphen, bidi marks and controls (RTL notes wrap code in them), Hebrew points and Arabic harakat (a
# vocalised "שָׁלוֹם" is "שלום"), and the dot a Turkish "İ" leaves after casefolding ("i̇stanbul").
_INVISIBLE_RE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
                           "\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u064b-\u065f\u0670]|(?<=i)\u0307")


# A decimal digit of any other script (Devanagari ८, Persian ۸, Arabic-Indic ٨, Thai ๘, Bengali …; NFKC folds
# only the full-width ８): the same number written in two scripts is one number, so "पोर्ट ८०००" and
# "पोर्ट 8000" are one claim, and "Port: ۸۰۸۰" and "Port: 8080" one value, not two rivals.
_DIGIT_RE = re.compile(r"(?![0-9])\d")


def _ascii_digit(match: re.Match[str]) -> str:
    return chr(0x30 + unicodedata.decimal(match.group()))


def fold(text: str) -> str:
    """The matching form of text: NFKC (full-width to ASCII, composed accents), casefolded, without
    the invisible characters and optional vowel points above, decimal digits in ASCII."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("\u2019", "'")
    return folded if folded.isascii() else _DIGIT_RE.sub(_ascii_digit, _INVISIBLE_RE.sub("", folded))


def bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a run; a single character stands for itself."""
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


def words(text: str) -> list[tuple[str, bool]]:
    """(token, is_word) pairs in order for already folded text: words as they are, unspaced runs as
    bigrams (is_word False, so callers do not stem or drop them as stopwords)."""
    out: list[tuple[str, bool]] = []
    pieces = _PIECE_RE if not _PATH_CHARS.isdisjoint(text) else _PIECE_NO_PATH_RE
    if not text.isascii() and _mark_run().search(text):
        return _with_marks(text, pieces)
    if pieces is _PIECE_RE and _LONG_RUN_RE.search(text):
        for group, start, end in _pieces(text):
            out.extend(((gram, False) for gram in bigrams(text[start:end])) if group == "run" else ((text[start:end], True),))
        return out
    if text.isascii():  # no unspaced run: every piece is a word
        return [(piece, True) for piece in (_PIECE_FLAT_RE if pieces is _PIECE_RE else _PIECE_NO_PATH_FLAT_RE).findall(text)]
    for m in pieces.finditer(text):
        if m.lastgroup == "run":
            out.extend((gram, False) for gram in bigrams(m.group()))
        else:
            out.append((m.group(), True))
    return out


def _with_marks(text: str, pieces: re.Pattern[str]) -> list[tuple[str, bool]]:
    """words() for text with combining marks: Devanagari and the other Indic scripts write vowels as
    marks (Mn/Mc) that `\\w` does not match, so "उपयोग" came out as "उपय" and "ग". A mark continues the
    word it follows (and joins it to the word piece right after it); it never starts a word, and a
    variation selector (an emoji's U+FE0F) is no mark of a word. Linear: the same pieces, then a pass."""
    marks = _mark_run()
    out: list[tuple[str, bool]] = []
    word_end = -1  # where the last word piece (with its marks) ended, -1 if the last piece was no word
    for group, start, end in _spans(text, pieces):
        if group == "run":
            out.extend((gram, False) for gram in bigrams(text[start:end]))
            word_end = -1
            continue
        if group == "eq":
            out.append((text[start:end], True))
            word_end = -1
            continue
        if (tail := marks.match(text, end)) is not None:
            end = tail.end()
        if word_end == start and out:  # "उपय" + "ो" + "ग": one word
            out[-1] = (out[-1][0] + text[start:end], True)
        else:
            out.append((text[start:end], True))
        word_end = end
    return out


def tokens(text: str) -> list[str]:
    """Matching tokens of any text (not stemmed): what search and near-duplicate tests share."""
    return [t for t, _ in words(fold(text))]


_SCRIPT_RES = (
    (Script.KANA, re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")),
    (Script.HANGUL, re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")),
    (Script.HAN, re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]")),
    (Script.THAI, re.compile("[\u0e00-\u0e7f]")),
    (Script.LATIN, re.compile("[A-Za-z\u00c0-\u024f\u1e00-\u1eff]")),
)


def script_counts(text: str) -> dict[Script, int]:
    """Letters per script; regexes, since this runs per statement."""
    if text.isascii():
        letters = sum(ch.isalpha() for ch in text)
        return {Script.LATIN: letters} if letters else {}
    counts = {script: n for script, pattern in _SCRIPT_RES if (n := len(pattern.findall(text)))}
    rest = sum(ch.isalpha() for ch in text) - sum(counts.values())
    if rest > 0:
        counts[Script.OTHER] = rest
    return counts


def has_unspaced(text: str) -> bool:
    return _UNSPACED_RE.search(text) is not None
