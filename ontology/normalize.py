"""A statement's display text (the author's words) and its proposition: key, tokens, stance, slot.

Invariant: display text keeps the author's wording byte for byte (identifiers, paths, code spans,
`_`, `~`, numbers); only list markers, wrapping emphasis and link syntax go. Normalization lives
only in matching keys: two statements that differ in case, width, punctuation, emphasis, articles
or simple inflection share a key, in every script (ontology.tokens); a negation the language makes
unambiguous (ontology.language) gives the same key the opposite polarity. Pure, no I/O.
"""

from __future__ import annotations

import enum
import re
import unicodedata
from dataclasses import dataclass, replace
from functools import lru_cache

import snowballstemmer

from ontology.claims import MD_LINK_RE, WIKILINK_RE, strip_bullet
from ontology.language import (ENGLISH_NEGATORS, NEGATION_CUE, Lang, detect, has_unread_negation, strip_negation,
                               unspaced_negation)
from ontology.tokens import Script, fold, has_unspaced, script_counts, words as split_words

_STEMMER = snowballstemmer.stemmer("english")

# Words that carry no propositional content for matching: articles, pronouns, modal and auxiliary
# verbs, intensifiers. "Always use X", "We should use X" and "use X" are one proposition.
STOPWORDS = frozenset(
    """a an the this that these those we you i our your it its they their he she one
    always should must shall will would can could may might please just really also actually
    do does did to of for in on at by with from as so very all any some be been being
    and or but then there here when while which who whom what""".split()
)
# Negators of English, the language of search queries' framing words (ontology.search drops them).
NEGATORS = ENGLISH_NEGATORS
# "X is Y" / "X uses Y" shapes whose value may be exclusive (English prose only).
_SLOT_VERBS = {"is": "is", "are": "is", "=": "is", "uses": "uses", "use": "uses", "using": "uses"}
MAX_SLOT_SIDE_TOKENS = 5  # longer sides are prose, not a fact about one subject
# A rival value is short and atomic: a name, number, date, version, path or yes/no. Longer values
# are descriptions, and two descriptions of one thing are not rivals.
MAX_VALUE_TOKENS = 3
MAX_VALUE_CHARS = 40
# Rivals are compared by exact value (the store keeps per-value sums), so an elaboration must not
# become a second value: only a one-word name or yes/no is a rival ("Postgres" vs "MySQL").
MAX_RIVAL_VALUE_TOKENS = 1
# With its elaboration a fact's value stays short ("removed — migrated to K3s"); a longer one is a
# description under a label ("Design: parseWater(text) → ..."), never a rival of another.
MAX_ELABORATED_VALUE_TOKENS = 6
# Subjects too generic to name one thing: "Related: a" and "Related: b" in two files, or "Status:"
# of two different tasks, are not rival values of one slot.
GENERIC_SUBJECTS = frozenset(
    """related see also nothing everything something anything user users it this that status state
    note notes result results outcome why how todo done next summary example examples context reason
    rule rules fix issue issues problem answer solution current update updated new old tip tips warning
    important key goal goals step steps item items detail details info data value values file files
    change changes source sources link links ref refs reference references other misc general
    statut état résultat estado resultado nota ergebnis hinweis stand cause
    motivo razón ejemplo problema solución objetivo paso causa resumen observación
    raison exemple problème objectif étape remarque grund beispiel lösung ziel schritt ursache notiz
    stato ragione esempio risultato soluzione obiettivo passo dettagli riepilogo
    situação razão exemplo solução detalhes resumo observação obs
    reden voorbeeld resultaat opmerking probleem oplossing doel stap oorzaak samenvatting
    stan powód przykład wynik uwaga rozwiązanie cel krok przyczyna podsumowanie notatka
    durum sebep neden örnek sonuç not sorun çözüm hedef adım özet uyarı
    trạng thái lý ví dụ kết quả ghi chú vấn đề giải pháp mục tiêu bước nguyên nhân tóm tắt lưu ý
    alasan contoh hasil catatan masalah solusi tujuan langkah penyebab ringkasan keadaan
    stare motiv exemplu rezultat notă problemă soluție cauză stav důvod příklad výsledek poznámka
    problém řešení cíl příčina anledning exempel eksempel resultat anteckning merknad lösning løsning
    mål steg orsak årsak årsag""".split()
) | frozenset("状态 状態 상태 관련 연관 相关 相關 関連 参照 결과 结果 結果 原因 注意 备注 備考 참고 메모".split())
# Articles of other languages: "Het probleem is opgelost" (Dutch uses "is" as English does) has the
# generic subject "probleem"; the article alone must not make it specific.
ARTICLES = frozenset("het de een den der die das dem des ein eine einen el la le les los las lo il gli "
                     "un une una uno o os as um uma en ett det".split())
# Clauses that only contrast ("use X, not Y", "X instead of Y") or give a reason or purpose ("... to
# speed up CI", "... because it flaked") elaborate a claim; they are not the claim, so they do not
# take part in matching (the display text keeps them).
_ELABORATION_RE = re.compile(
    r"(?:,|;|\s[-\u2013\u2014]\s)\s*(?:not|never|rather than|instead of)\b.*$"
    r"|\s(?:rather than|instead of|because|since|so that|in order to|"
    r"to (?:speed|avoid|keep|make|save|reduce|prevent|ensure|stop|get|allow|help))\b.*$",
    re.IGNORECASE)
# Where an atomic value ends and its elaboration starts: "removed — migrated to K3s", "True (default
# False)", "52; pinned". The head is the value; the rest agrees with any statement of the head.
_VALUE_END_RE = re.compile(r"\s+[-\u2013\u2014]+\s|\s*[(（\[;；]|\.\s|,\s*(?:but|not|since|because)\b|\s+(?:but|since|because)\s")
_LIST_RE = re.compile(r",|、|，|\s\+\s|\s&\s|\s/\s|\sand\s|\sund\s|\set\s|\sy\s")

_PAREN_RE = re.compile(r"\s*[(（][^()（）]*[)）]")
_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
_HTML_COMMENT_RE = re.compile(r"<!--.*?(?:-->|$)")
# Emphasis delimiters, CommonMark-style: `_` only at word boundaries (never inside snake_case).
_EMPHASIS_RES = (
    re.compile(r"(?<![\\*])\*\*(?=\S)(.+?)(?<=\S)\*\*"),
    re.compile(r"(?<![\w\\])__(?=\S)(.+?)(?<=\S)__(?!\w)"),
    re.compile(r"(?<![\w*\\])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])"),
    re.compile(r"(?<![\w\\])_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)"),
)
_ESCAPE_RE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!~|<>])")


class ValueKind(enum.Enum):
    """What an atomic slot value is; values of different kinds are never rivals."""

    DATE = "date"
    NUMBER = "number"
    VERSION = "version"
    PATH = "path"
    BOOLEAN = "bool"
    NAME = "name"


NOT_RIVAL_KINDS = frozenset({ValueKind.DATE, ValueKind.NUMBER, ValueKind.VERSION, ValueKind.PATH})
_NUMBER_IN_RE = re.compile(r"\d+(?:[.,]\d+)*")
_BOOLEANS = frozenset("true false yes no on off enabled disabled sí si oui non ja nein 是 否 有 无 예 아니오".split())
_DATE_RE = re.compile(r"\d{4}-\d{1,2}(?:-\d{1,2})?|\d{1,2}/\d{1,2}/\d{2,4}")
_VERSION_RE = re.compile(r"^v?\d+(?:\.\d+)+[a-z0-9.\-]*$|^v\d+$", re.IGNORECASE)
_NUMBER_RE = re.compile(r"^[~≈<>≤≥+\-±#]?\s*\d")
_PATH_RE = re.compile(r"[/\\_~]|\.\w{1,5}$|^\.\w")


@dataclass(frozen=True)
class Proposition:
    key: str  # matching tokens in order, space-joined; identity of the proposition
    tokens: frozenset[str]  # matching tokens; near-duplicate matching works on these
    polarity: int  # +1 as stated, -1 when the statement negates the proposition
    slot: str | None  # "subject|relation|value kind" for exclusive facts, else None
    value: str | None  # the value's matching tokens within the slot


def _outside_code(text: str, fn) -> str:
    """Apply `fn` to the parts of text that are not code spans; code spans stay byte for byte."""
    out, last = [], 0
    for m in _CODE_SPAN_RE.finditer(text):
        out.append(fn(text[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(fn(text[last:]))
    return "".join(out)


_MARKUP_CHARS_RE = re.compile(r"[*_\[<\\]")


def _unmark(part: str) -> str:
    if not _MARKUP_CHARS_RE.search(part):
        return part
    part = _HTML_COMMENT_RE.sub("", part)
    part = WIKILINK_RE.sub(lambda m: m.group(2) or m.group(1), part)
    part = MD_LINK_RE.sub(lambda m: m.group(1), part)
    for pattern in _EMPHASIS_RES:
        part = pattern.sub(lambda m: m.group(1), part)
    return _ESCAPE_RE.sub(lambda m: m.group(1), part)


def clean_markup(text: str) -> str:
    """Display form, the author's words: list marker, emphasis delimiters, link syntax and inline
    HTML comments go; identifiers, paths, code spans, `_`, `~` and numbers stay as written."""
    text = strip_bullet(text)
    return " ".join((_outside_code(text, _unmark) if "`" in text else _unmark(text)).split())


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    return _STEMMER.stemWord(token) if token.isascii() and token.isalpha() else token


def _segment(text: str) -> tuple[list[str], list[str], int, Lang]:
    """(all tokens, word tokens, polarity, language) of display text, negators removed."""
    folded = fold(text.replace("`", " "))
    pieces = split_words(folded)
    lang = detect(text, [t for t, is_word in pieces if is_word])
    polarity = 1
    if lang in (Lang.ZH, Lang.JA):
        folded, polarity = unspaced_negation(lang, folded)
        pieces = split_words(folded)
    kept, word_polarity = strip_negation(lang, [t for t, _ in pieces])
    if polarity * word_polarity > 0 and has_unread_negation(lang, folded, [t for t, is_word in pieces if is_word]):
        kept.append(NEGATION_CUE)  # a negation we cannot read: never the near-duplicate of its opposite
        # (one we read already says it: "❌ Never force-push" is "Never force-push")
    # Every unspaced script lies outside ASCII (NEGATION_CUE is no unspaced character either).
    words = kept[:] if folded.isascii() else [t for t in kept if not has_unspaced(t)]
    return kept, words, polarity * word_polarity, lang


def content_key(text: str) -> str:
    """Matching tokens of a phrase: used for slot subjects and values and concept names."""
    return " ".join(stem(t) for t, _ in split_words(fold(text)) if t not in STOPWORDS and t != "=")


def content_words(text: str) -> list[str]:
    """The words of a phrase that are not stopwords, folded, unstemmed, in order."""
    return [t for t, is_word in split_words(fold(text)) if is_word and t not in STOPWORDS]


def _content(tokens: list[str]) -> list[str]:
    return [stem(t) for t in tokens if t not in STOPWORDS and t != "="]


def unlisted_script(text: str) -> bool:
    """Whether `text` has letters of a script we have no word lists for (Cyrillic, Greek, Arabic, Hebrew,
    Indic, Thai …): what its words mean is unknown to every rule."""
    return not text.isascii() and bool((counts := script_counts(text)) and (
        counts.get(Script.OTHER) or counts.get(Script.THAI)))


def is_generic_subject(subject: str) -> bool:
    """Whether a subject may name many things ("Status", "Reason", "Пример"): never a slot. A subject
    in a script we have no word lists for (Cyrillic, Greek, Arabic, Hebrew, Indic, Thai …) counts as
    one, since we cannot tell "Причина" (reason) from "База данных" (database): precision first."""
    if unlisted_script(subject):
        return True
    tokens = [t for t, _ in split_words(fold(subject)) if t not in STOPWORDS and t not in ARTICLES]
    return not tokens or all(t in GENERIC_SUBJECTS or stem(t) in GENERIC_SUBJECTS for t in tokens)


def value_kind(value: str) -> ValueKind:
    head = value.strip().strip("`*\"'")
    if _DATE_RE.search(head):
        return ValueKind.DATE
    if _VERSION_RE.match(head):
        return ValueKind.VERSION
    if _NUMBER_RE.match(head):
        return ValueKind.NUMBER
    if fold(head) in _BOOLEANS:
        return ValueKind.BOOLEAN
    if _PATH_RE.search(head):
        return ValueKind.PATH
    return ValueKind.NAME


def atomic_value(value: str) -> str | None:
    """The atomic head of a fact's value ("removed" of "removed — migrated to K3s"), or None when the
    value is a list or a description rather than one name, number, date, version, path or yes/no."""
    if len(_content([t for t, _ in split_words(fold(value.replace("`", " ")))])) > MAX_ELABORATED_VALUE_TOKENS:
        return None
    head = _VALUE_END_RE.split(value, maxsplit=1)[0].strip().rstrip(".:;,")
    if not head or len(head) > MAX_VALUE_CHARS or _LIST_RE.search(head):
        return None
    if len(_content([t for t, _ in split_words(fold(head.replace("`", " ")))])) > MAX_VALUE_TOKENS:
        return None
    return head


# One product, two names: "Postgres" and "PostgreSQL" in two notes are one value, not rivals (keys are
# stemmed, so are these).
_VALUE_ALIASES = {stem(alias): stem(name) for name, aliases in {
    "postgres": "postgresql pg", "mongo": "mongodb", "kubernetes": "k8s", "node": "nodejs",
    "go": "golang", "javascript": "js", "typescript": "ts", "elasticsearch": "elastic"}.items()
    for alias in aliases.split()}


def slot_of(subject: str, relation: str, head: str, value: str) -> tuple[str, str] | None:
    """(slot, value) of a fact whose values can be rivals, or None. The value's kind is part of the
    slot, so a name never competes with a yes/no. A date, count or version that differs is usually
    a later value of a time-varying fact (a new run, a release), not a disagreement; a path names
    one artifact among many ("Plan: plans/012.md" in one plan file, "plans/008.md" in the next):
    neither is a slot, so neither is ever evidence against another value."""
    kind = value_kind(head)
    if kind in NOT_RIVAL_KINDS or not subject or not value:
        return None
    if len(value.split()) > MAX_RIVAL_VALUE_TOKENS:
        return None  # "REQUIRED and WORKING" elaborates "REQUIRED": longer values are not rivals
    value = " ".join(_VALUE_ALIASES.get(t, t) for t in value.split())
    return f"{subject}|{relation}|{kind.value}", value


def rival(a: str | None, b: str | None) -> bool:
    """Two values of one slot are rivals when they differ (the slot already holds the kind)."""
    return a is not None and b is not None and a != b


def numbers(tokens: frozenset[str] | set[str]) -> frozenset[str]:
    """The numbers a statement states; two wordings with different numbers are different claims."""
    return frozenset(n for t in tokens if t[:1].isdigit() for n in _NUMBER_IN_RE.findall(t))


def _prose_slot(words: list[str]) -> tuple[str, str] | None:
    for i, word in enumerate(words):
        relation = _SLOT_VERBS.get(word)
        if relation is None:
            continue
        subject = [t for t in words[:i] if t not in STOPWORDS]
        value = [t for t in words[i + 1:] if t not in STOPWORDS]
        if not (0 < len(subject) <= MAX_SLOT_SIDE_TOKENS and 0 < len(value) <= MAX_VALUE_TOKENS):
            return None
        if is_generic_subject(" ".join(subject)):
            return None
        return slot_of(" ".join(map(stem, subject)), relation, " ".join(value), " ".join(map(stem, value)))
    return None


# Memory restates its facts file after file ("tests run with pytest"): the same text gives the same
# (immutable) proposition, so it is normalized once. 4,096 texts hold a project's recurring statements
# in about 3 MiB; bench.ingest's repetitive corpus spends ~9 % fewer instructions per artifact.
@lru_cache(maxsize=4096)
def proposition(text: str) -> Proposition | None:
    """The proposition a statement asserts, or None when nothing of substance is left."""
    display = clean_markup(text)
    cleaned = _ELABORATION_RE.sub("", display)
    tokens, words, polarity, lang = _segment(cleaned)
    content = _content(tokens)
    if not content:
        return None
    slot = None
    if lang in (Lang.EN, Lang.UNKNOWN) and len(words) == len(tokens):  # "X is Y": English prose only
        # A parenthesis elaborates the value ("=True (default False)" states "=True").
        bare = _PAREN_RE.sub("", cleaned)
        slot = _prose_slot(_segment(bare)[0] if bare != cleaned else tokens)
    if slot is not None:
        subject, relation, _ = slot[0].split("|")
        # Canonical order for facts so "database: postgres" and "the database is Postgres" meet.
        key = f"{subject} {relation} {slot[1]}"
        return Proposition(key, frozenset(content), polarity, slot[0], slot[1])
    return Proposition(" ".join(content), frozenset(content), polarity, None, None)


VALUE_MARK = "\u2254"  # "≔": a token no text yields, naming the value of a fact that is no slot


# A swapped word shorter than this that starts the other one is its short form ("prod"/"production",
# "config"/"configur"), not another name.
_SHORT_FORM_MIN = 3


def swap(a: frozenset[str], b: frozenset[str]) -> tuple[str, str] | None:
    """(a's word, b's word) when two token sets differ by one word put in place of another and nothing
    else, else None. A short form ("prod"/"production") or an alias ("k8s"/"kubernetes") is the same word;
    bigrams of scripts without spaces are parts of words, never whole ones."""
    ours, theirs = a - b, b - a
    if len(ours) != 1 or len(theirs) != 1:
        return None
    (x,), (y,) = ours, theirs
    if has_unspaced(x) or has_unspaced(y) or _VALUE_ALIASES.get(x, x) == _VALUE_ALIASES.get(y, y):
        return None
    short, long = sorted((x, y), key=len)
    return None if len(short) >= _SHORT_FORM_MIN and long.startswith(short) else (x, y)


# The near-duplicate lookup checks a statement against each candidate one word apart (one swap check per
# candidate, ~2 per artifact at 20k Zipf artifacts, and growing with the graph): the statement's words and
# a recurring candidate's are read once, not once per check (ADR 0007, "Session 13").
@lru_cache(maxsize=4096)
def _place_words(text: str) -> tuple[str, ...]:
    """The words of `text` as `_places` reads them: folded, stopwords kept, in order."""
    return tuple(w for w, is_word in split_words(fold(clean_markup(text).replace("`", " "))) if is_word)


def _places(text: str, token: str) -> set[tuple[str | None, str | None]]:
    """(word before, word after) of each place where `token` (stemmed) stands in `text`, stopwords kept."""
    words = _place_words(text)
    return {(words[i - 1] if i else None, words[i + 1] if i + 1 < len(words) else None)
            for i, w in enumerate(words) if stem(w) == token}


def swapped_in_place(text_a: str, a: frozenset[str], text_b: str, b: frozenset[str]) -> bool:
    """Do two near wordings state two facts: one word put in place of another between the same words,
    and nothing else changed? "Deploy the web package first …" / "… the api package …", "… in the
    Mumbai region" / "… in the Delhi region": a name, an identifier or a term swapped one for one. A word
    that replaced a phrase ("(all approaches):" / ": TERRIBLE (") or stands elsewhere rewords the same fact."""
    pair = swap(a, b)
    return pair is not None and not _places(text_a, pair[0]).isdisjoint(_places(text_b, pair[1]))


# A statement this short is all its words: one name more or less changes what it says.
SHORT_STATEMENT_TOKENS = 4


def _is_plain(token: str) -> bool:
    """A plain word: letters only (a stem, a CJK bigram), with the combining marks of the scripts that
    write vowels as marks ("उपयोग", a Thai bigram)."""
    return token.isalpha() or (not token.isascii() and all(
        ch.isalpha() or unicodedata.category(ch) in ("Mn", "Mc") for ch in token))


def _is_name(token: str) -> bool:
    """An identifier, path or code name ("block_k", "shard3/shard7", "settings.json"): letters with digits or
    punctuation. A bare number has no letter."""
    return not _is_plain(token) and token[0] not in (VALUE_MARK, NEGATION_CUE) and any(c.isalpha() for c in token)


_CODE_SPAN_RE = re.compile(r"`([^`]+)`")
_NAME_WORD_RE = re.compile(r"[^\W_]+")
_INNER_CAPITAL_RE = re.compile(r"^.+[A-Z]")
# A statement that may name something in code: a code span, or a word with a capital after its first letter.
NAMES_IN_CODE_RE = re.compile(r"`|[^\W_][^\W_]*[A-Z]")


def _code_names(text: str) -> dict[str, set[str]]:
    """Case-folded word -> its spellings, for the words of `text` that are names in code: inside a code
    span, or in mixed case with a capital after the first letter (`secId`, `JSONPath`; not "API" in prose)."""
    spans = set(_NAME_WORD_RE.findall(" ".join(_CODE_SPAN_RE.findall(text))))
    out: dict[str, set[str]] = {}
    for word in set(_NAME_WORD_RE.findall(text)):
        if (_INNER_CAPITAL_RE.search(word) and word != word.upper()) or (word in spans and not word.isdigit()):
            out.setdefault(word.casefold(), set()).add(word)
    return out


def case_apart(a: str, b: str) -> bool:
    """Whether two statements name a thing in code spelled differently only in case (`secId` in one,
    `secID` in the other, neither spelling in both): to code they are two names, so the statements are
    not one claim whatever else they share (judge12 for the projection, judge14 for the grouping).
    Prose capitals ("Deploy" opening a sentence) are no name."""
    words_a, words_b = set(_NAME_WORD_RE.findall(a)), set(_NAME_WORD_RE.findall(b))
    for folded in _code_names(a).keys() | _code_names(b).keys():
        seen_a = {w for w in words_a if w.casefold() == folded}
        seen_b = {w for w in words_b if w.casefold() == folded}
        if seen_a and seen_b and seen_a.isdisjoint(seen_b):
            return True
    return False


def names_apart(a: frozenset[str], b: frozenset[str]) -> bool:
    """Do two near wordings say different things about the same names? When they share no plain word,
    all they share is names and numbers, and what each says of them is in the words that differ
    ("block_k: [32, 64]" is a setting, "block_k=64 same as block_k=32" a finding). In short ones,
    a name more or less is another claim ("shard3: FAIL checksum" / "shard3/shard7: FAIL checksum")."""
    if not any(_is_plain(t) for t in a & b):
        return True
    return min(len(a), len(b)) <= SHORT_STATEMENT_TOKENS and any(_is_name(t) for t in a ^ b)


def value_marks(tokens: frozenset[str]) -> frozenset[str]:
    """The value tokens of a fact that is no slot: two such facts with other values are two claims."""
    return frozenset(t for t in tokens if t[0] == VALUE_MARK)


def _with_value(prop: Proposition | None, head: str) -> Proposition | None:
    """A fact whose key is no slot subject ("Status: done", "ฐานข้อมูล: MySQL") still has one value: it
    is never the near-duplicate of the same key with another value (in a script compared by bigrams
    the key alone makes two such facts 80 % alike)."""
    content = _content(_segment(head)[0])
    if prop is None or not content:
        return prop
    return replace(prop, tokens=prop.tokens | {VALUE_MARK + "\u00b7".join(content)})


def fact_proposition(key: str, value: str) -> Proposition | None:
    """A `key: value` fact. It is a slot ("key is value", meeting the prose form of the same fact)
    only for a specific subject and an atomic value; otherwise it is a plain statement."""
    head = atomic_value(value)
    if head is None:
        return proposition(f"{key}: {value}")
    if is_generic_subject(key):
        return _with_value(proposition(f"{key}: {value}"), head)
    full = proposition(f"{key}: {value}")
    subject = content_key(key)
    if full is None or not subject:
        return full
    tokens, _, polarity, _ = _segment(head)  # "Redis: not used" denies "Redis: used"
    slot = slot_of(subject, "is", head, " ".join(_content(tokens)))
    if slot is None:
        return full
    # The key holds only subject and head: "removed" and "removed — migrated to K3s" are one claim.
    return Proposition(f"{subject} is {slot[1]}", full.tokens, polarity, slot[0], slot[1])
