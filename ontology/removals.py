"""Identifiers a statement declares removed, and identifiers it names as a plain (in use) statement.

Invariant: precision first. A removal needs an unambiguous removal word of its language in the same
clause as the identifier and no future or plan form anywhere in the statement; a use needs a
statement that negates nothing and an identifier clause with no removal, history or migration word.
Anything else says nothing about the identifier (ADR 0009, "Removed vs in use").
"""

from __future__ import annotations

import enum
import re
import unicodedata

from ontology.language import Lang, detect
from ontology.tokens import fold, words as split_words


class IdentifierStance(enum.IntEnum):
    REMOVED = -1  # the statement declares the identifier removed
    IN_USE = 1  # the statement names it plainly


MIN_IDENTIFIER_CHARS = 4
MAX_IDENTIFIER_CHARS = 80
MAX_COMMAND_WORDS = 4

_CODE_SPAN_RE = re.compile(r"`([^`\n]+)`")
# Bare (unquoted) identifiers: camelCase with a real lower-case head, or snake_case / CONSTANT_CASE.
_BARE_RE = re.compile(r"(?<![\w/.`])(?:[a-z]{2,}[A-Z][A-Za-z0-9]*|[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9])"
                      r"(?:/(?:[a-z]{2,}[A-Z][A-Za-z0-9]*|[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]))*(?![\w`(\-]|\.\w)")
_PAREN_RE = re.compile(r"[(（]([^()（）]*)[)）]")
_TOKEN_RE = re.compile(r"[A-Za-z0-9_./:\-]+")
_COMMAND_HEAD_RE = re.compile(r"[a-z][a-z0-9_\-]*")
_SIGNAL_RE = re.compile(r"[_/.]|::|[a-z][A-Z]|\(\)$|[A-Za-z]-[A-Za-z]")
_NUMERIC_RE = re.compile(r"^[v~≈<>#+\-]?\d|^\d|^[\d\s.:/\-]+$", re.IGNORECASE)
# Clauses end at sentence and clause punctuation (outside code spans, which are masked first).
_CLAUSE_RE = re.compile(r"[，；。、！？,;]|\s[-\u2013\u2014]+\s|[:：]\s*")

# Removal, precision first: the removal word must sit right after the identifier (or its enclosing
# parenthesis), with at most an auxiliary between, and end its phrase; English, German, Spanish and
# French count only when the statement's language is that language or unknown.
_GAP = r"[^A-Za-z0-9_+/、·・,，;；=&|]{0,6}?"
# A removal word ends its phrase: "`x` removed." yes; "`x`: dropped `y`" (y left x) no.
_PHRASE_END = (r"(?=\s*$|\s*[.,;:!?()\[\]\u2014\u2013*]|\s+-|\s+(?:in|on|at|since|entirely|completely|and|but|"
               r"because|after|when|im|am|seit|und|en|el|desde|y|le|depuis|et)\b)")
_AFTER_LATIN: dict[Lang, str] = {
    Lang.EN: r"\s*(?:[:\u2014\u2013-]\s*)?(?:(?:is|was|were|has|have|been|got|now|fully|entirely|completely)\s+)*"
             r"(?:removed|deleted|dropped(?!\s+(?:to|by|from)\b)(?!\s*[~≈]?\d)|no longer exists?)" + _PHRASE_END,
    Lang.DE: r"\s*(?:[:\u2014\u2013-]\s*)?(?:(?:ist|wurde|wurden|sind|komplett|ganz|jetzt)\s+)*(?:entfernt|gelöscht)"
             + _PHRASE_END,
    Lang.ES: r"\s*(?:[:\u2014\u2013-]\s*)?(?:(?:fue|fueron|ha|han|sido|está|ya)\s+)*(?:eliminad[oa]s?|borrad[oa]s?)"
             + _PHRASE_END,
    Lang.FR: r"\s*(?:[:\u2014\u2013-]\s*)?(?:(?:a|ont|été|est|sont)\s+)*supprimée?s?" + _PHRASE_END,
}
_AFTER_LATIN_RES = {lang: re.compile(pattern, re.IGNORECASE) for lang, pattern in _AFTER_LATIN.items()}
_BEFORE_LATIN: dict[Lang, str] = {
    Lang.EN: r"\b(?:removed|deleted|dropped)\s+$",
    Lang.DE: r"\bkeine?[nmrs]?\s+$",  # "kein `x` mehr" (the "mehr" is checked after)
}
_CJK_CUE = r"(?:已删除|已移除|删除|移除|停掉|削除|廃止|삭제|제거|폐기)"
# One artifact noun may sit between the identifier and a CJK removal word: "(`x` cron 移除)".
_ARTIFACT_NOUN = r"(?:\s+(?:cron|job|jobs|hook|hooks|task|table|column|field|script|flag|route|endpoint|command|env))?"
_CJK_AFTER = re.compile(_ARTIFACT_NOUN + _GAP + _CJK_CUE + r"(?:了|됨|했다|했음|함|완료|되었다|됐다|済み|した|しました|された)?(?=$|[\s，,；;。.、(（)）:：!！—\-*])")
# The statement forms whose negation is itself the removal ("no longer exists", "kein X mehr").
_NEGATED_REMOVAL = re.compile(r"\bno longer exists?\b|\bkeine?[nmrs]?\s+\S+\s+mehr\b", re.IGNORECASE)
# Future and plan forms: a removal that is intended is not a removal.
_FUTURE = re.compile(
    r"\b(?:will|would|should|shall|must|to be|todo|plan|plans|planned|planning|need to|needs to|going to|"
    r"later|soon|next|pending|wird|werden|soll|sollte|geplant|später|será|serán|pendiente|sera|seront|prévu)\b"
    r"|予定|今後|예정|할 것|하자|计划|計劃|待|需|要删|将|準備|准备|打算|未来|以后|之后|TODO", re.IGNORECASE)
# A routine ("`tmp/` is deleted after each run") or an undone removal ("deleted `x` by mistake, then
# restored it") removes nothing for good (session 6, trap set).
_NOT_FOR_GOOD = re.compile(
    r"\b(?:each|every|whenever|always|automatically|routinely|by default|restored|recovered|re-?added|"
    r"brought back|undeleted|reverted|rolled back|put back|jede[nrs]?|immer|cada|siempre|chaque|toujours|"
    r"restaurad[oa]|restauré|wiederhergestellt)\b|每次|恢复|復元|毎回|복원|매번", re.IGNORECASE)
# Any word about removing, in any form: a statement using one names nothing as in use.
_REMOVAL_ANY = re.compile(
    r"\b(?:remov\w*|delet\w*|drop\w*|entfern\w*|lösch\w*|gelösch\w*|elimin\w*|borr\w*|supprim\w*|"
    r"kill\w*|disabled?|abandon\w*|deprecat\w*|retir\w*|gone|went away|got rid|decommission\w*|sunset\w*)\b|删|移除|停掉|弃|退役|下线|停用|淘汰|削除|廃止|삭제|제거|폐기|중단",
    re.IGNORECASE)
# A mention in an iteration log ("Iter 1: …", "Phase 2 DONE: …") records a past or passing state, not a use.
_RECORD = re.compile(r"^\W*(?:iter(?:ation)?|phase|step|stage|wave|sprint|round|milestone)\s*\d", re.IGNORECASE)
# A migration arrow beside an identifier ("`a` → `b`", "a.py→b.py") makes that mention a change, not a
# use; an arrow elsewhere in the clause is a flow ("reads `x` … BSR→report→LINE") and says nothing of it.
_ARROW = re.compile(r"→|->|⇒|=>")
ARROW_REACH = 4  # characters on either side of the identifier
# A mention under a condition ("If you see `x` in a stack trace, the image is stale") says what to do
# should it turn up, not that it is in use (blind7).
_IF = re.compile(r"\b(?:if|unless|in case|whenever|should you|wenn|falls|si|cuando|quand|se)\b|如果|假如|場合|なら|경우|으면",
                 re.IGNORECASE)
# A catalogue of what a tool offers ("Supported events: `a`, `b`, `c`", "valid values") names
# what exists, not what this project uses: a removal of one of them elsewhere is no dispute with it.
_CATALOGUE = re.compile(
    r"\b(?:available|supported|possible|valid|allowed|accepted|options?|choices|one of|verfügbar|unterstützt|"
    r"disponibles?|compatibles?|admitid[oa]s|posibles)\b|可用|可选|可選|支持的|利用可能|指定可能|사용\s?가능|지원되는",
    re.IGNORECASE)
# Words that make a mention historical or a migration, so it is not a statement of use.
_HISTORY = re.compile(
    r"\b(?:was|were|previously|formerly|used to|replaced|replaces|instead|legacy|deprecated|obsolete|old|"
    r"migrated|retired|früher|ehemals|ersetzt|anciennement|remplacé|antes|reemplazad[oa])\b"
    r"|旧|以前|之前|原来|曾|替代|取代|替换|改为|改用|이전|기존|대체|폐지|以前の|置き換"
    # blind10's languages: formerly, no longer, instead of (a clause naming what was replaced names no use)
    r"|\b(?:раньше|ранее|прежде|раніше|больше не|уже не|більше не|вже не|вместо|замість|trước đây|không còn|"
    r"thay vì|eskiden|yerine|dawniej|zamiast|dříve|em vez de|ao invés de|em lugar de)\b|قبلاً|به جای|เดิม|के बजाय",
    re.IGNORECASE)


# "Now Y …, formerly X" in one statement: X is what it replaced, so X is declared out of use (blind10's
# languages: "теперь `nats`, раньше был `rabbitmq`", "अब हम `uv` …, पहले `pip-tools` था", "از این به بعد
# `podman` …؛ قبلاً `docker` بود", "Hiện nay dùng `axum` …, trước đây là `actix-web`"). Both cues are needed:
# a "now" anywhere before, and a "formerly" word (with at most a copula or "used") right before the
# identifier. "पहले" alone is also "first" ("पहले `migrate --plan` देखें"), which is why the "now" is required.
_NOW_CUE = re.compile(r"\b(?:now|теперь|тепер|agora|hiện nay|bây giờ)\b|अब\s|ตอนนี้|از این به بعد|اکنون|الان",
                      re.IGNORECASE)
_FORMERLY_BEFORE = re.compile(
    r"(?:\b(?:previously|formerly|раньше|ранее|прежде|раніше|trước đây|eskiden|dawniej|dříve)\b|पहले|เดิม|قبلاً)"
    r"\s*(?:(?:был|была|было|были|був|була|було|були|là|was|were|used|ใช้|dùng)\s*)?[`']?$", re.IGNORECASE)


# "now also Y, previously only X", "X still works": an addition, not a replacement.
_ADDITION = re.compile(r"\b(?:also|too|as well|still|only|тоже|также|ещё|еще|теж|також|também|ainda|cũng|vẫn|chỉ)\b"
                       r"|\sभी\s", re.IGNORECASE)


def _formerly_at(text: str, start: int) -> bool:
    """Is the identifier at `start` what a "now …, formerly X" statement says it replaced?"""
    head = text[:start] if text.isascii() else unicodedata.normalize("NFC", text[:start])  # NFD Vietnamese
    if _ADDITION.search(unicodedata.normalize("NFC", text)):
        return False
    now = _NOW_CUE.search(head)
    return now is not None and _FORMERLY_BEFORE.search(head, now.end()) is not None


def _identifier(span: str) -> str | None:
    """The identifier a code span names, or None for prose, numbers, dates and versions."""
    text = span.strip()
    if not MIN_IDENTIFIER_CHARS <= len(text) <= MAX_IDENTIFIER_CHARS or _NUMERIC_RE.search(text):
        return None
    words = text.split()
    if len(words) == 1:
        plain = not _TOKEN_RE.fullmatch(text.replace("()", "")) or not _SIGNAL_RE.search(text)
        return None if plain else text.rstrip("/") or None
    if len(words) <= MAX_COMMAND_WORDS and _COMMAND_HEAD_RE.fullmatch(words[0]) and all(
            _TOKEN_RE.fullmatch(w) for w in words):
        return " ".join(words)
    return None


def _identifiers(clause: str) -> list[str]:
    return list(dict.fromkeys(ident for _, _, idents in _occurrences(clause) for ident in idents))


# A source file named by its path also names its module: `pkg/chip_push.py` and `chip_push` are one thing.
_MODULE_STEM_RE = re.compile(r"(?:^|/)([A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]|[a-z]{2,}[A-Z][A-Za-z0-9]*)"
                             r"\.(?:py|ts|tsx|js|jsx|mjs|rb|go|rs|java|kt|swift|sh|php|cs)$")


def _with_stem(ident: str) -> tuple[str, ...]:
    stem = _MODULE_STEM_RE.search(ident)
    return (ident, stem.group(1)) if stem and len(stem.group(1)) >= MIN_IDENTIFIER_CHARS else (ident,)


def _occurrences(text: str) -> list[tuple[int, int, tuple[str, ...]]]:
    """(start, end, identifiers) of each code span naming an identifier (a source file's path also
    names its module stem) and each bare identifier group (`a/b_c` names both parts)."""
    out = [(m.start(), m.end(), _with_stem(ident)) for m in _CODE_SPAN_RE.finditer(text)
           if (ident := _identifier(m.group(1)))]
    bare = _CODE_SPAN_RE.sub(lambda m: " " * len(m.group(0)), text)
    out += [(m.start(), m.end(), parts) for m in _BARE_RE.finditer(bare)
            if (parts := tuple(p for p in m.group(0).split("/") if len(p) >= MIN_IDENTIFIER_CHARS))]
    return sorted(out)


def _clauses(text: str) -> list[str]:
    """Clauses split outside code spans, so a path or a command stays whole."""
    masked = _CODE_SPAN_RE.sub(lambda m: "`" + "x" * len(m.group(1)) + "`", text)
    out, start = [], 0
    for m in _CLAUSE_RE.finditer(masked):
        out.append(text[start:m.start()])
        start = m.end()
    out.append(text[start:])
    return [c for c in out if c.strip()]


def _removed_at(text: str, start: int, end: int, lang: Lang) -> bool:
    """Does a removal word of a known language follow (or, for a few forms, precede) the identifier
    at text[start:end]? After an identifier inside a parenthesis, the word may follow the parenthesis
    ("旧层(`x` + …)整层删除": the layer the parenthesis lists is removed)."""
    ends = [end]
    close = text.find(")", end)
    opened = text.rfind("(", 0, start)
    if opened >= 0 and close >= 0 and "(" not in text[end:close] and ")" not in text[opened:start]:
        ends.append(close + 1)
    for pos in ends:
        if _CJK_AFTER.match(text, pos):
            return True
        for cue_lang, after in _AFTER_LATIN_RES.items():
            if _latin_ok(lang, cue_lang) and after.match(text, pos):
                return True
    for cue_lang, before in _BEFORE_LATIN.items():
        if _latin_ok(lang, cue_lang) and re.search(before, text[:start], re.IGNORECASE):
            if cue_lang is Lang.DE and not re.match(r"\s+mehr\b", text[end:], re.IGNORECASE):
                continue
            if _FROM_PLACE.match(text, end):
                continue  # "removed `node_modules` from the Docker context": it stays everywhere else
            return True
    return False


# "removed `x` from <a place>" takes x out of that place only (blind7: "removed `node_modules` from the
# Docker context" disputed a file installing it in the build stage); from the whole code it is gone.
_FROM_PLACE = re.compile(r"[`'\")\s]*from\s+(?!(?:the\s+|our\s+)?(?:codebase|code\s?base|code|repo|repository|project|"
                         r"source tree|tree|everywhere|main|master)\b)", re.IGNORECASE)


def _latin_ok(lang: Lang, cue_lang: Lang) -> bool:
    return lang in (cue_lang, Lang.UNKNOWN, Lang.ZH, Lang.JA, Lang.KO)


def identifier_stances(text: str, polarity: int) -> tuple[tuple[str, IdentifierStance], ...]:
    """(identifier, stance) pairs a statement supports: removed where it says so, in use where it
    names an identifier plainly; an identifier both removed and named is removed."""
    if "`" not in text and not _BARE_RE.search(text):
        return ()
    lang = detect(text, [t for t, is_word in split_words(fold(text.replace("`", " "))) if is_word])
    out: dict[str, IdentifierStance] = {}
    if not _FUTURE.search(text) and not _NOT_FOR_GOOD.search(text) and (polarity > 0 or _NEGATED_REMOVAL.search(text)):
        for start, end, idents in _occurrences(text):
            if _removed_at(text, start, end, lang) or _formerly_at(text, start):
                out.update(dict.fromkeys(idents, IdentifierStance.REMOVED))
    if polarity < 0 or _RECORD.search(text):
        return tuple(out.items())
    for unit in _paren_units(text):  # a parenthesis is its own unit: "需删除(… `x` …)" names x plainly
        if _REMOVAL_ANY.search(unit) or _FUTURE.search(unit) or _IF.search(unit) or _CATALOGUE.search(unit):
            continue
        for clause in _clauses(unit):
            if not _HISTORY.search(clause if clause.isascii() else unicodedata.normalize("NFC", clause)):
                for start, end, idents in _occurrences(clause):
                    if not _ARROW.search(clause[max(0, start - ARROW_REACH):end + ARROW_REACH]):
                        for ident in idents:
                            out.setdefault(ident, IdentifierStance.IN_USE)
    return tuple(out.items())


def _paren_units(text: str) -> list[str]:
    """The statement without its parentheses, and each parenthesis's content."""
    groups = [m.group(1) for m in _PAREN_RE.finditer(text)]
    return [_PAREN_RE.sub(" ", text), *groups]
