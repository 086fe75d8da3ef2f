"""Turn one statement into a polarity-free proposition: its key, tokens, stance and slot.

Invariant: two statements that differ only in case, punctuation, markdown emphasis or code ticks,
whitespace, articles, filler words or simple inflection get the same `key`; a negated statement
("never", "not", "no longer", "don't", "avoid", ...) gets the same key with the opposite polarity.
Pure functions, deterministic, no I/O.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer

_STEMMER = snowballstemmer.stemmer("english")

# Words that carry no propositional content for matching: articles, pronouns, modal and auxiliary
# verbs, intensifiers. "Always use X", "We should use X" and "use X" are one proposition.
STOPWORDS = frozenset(
    """a an the this that these those we you i our your it its they their he she one
    always should must shall will would can could may might please just really also actually
    do does did to of for in on at by with from as so very all any some be been being
    and or but then there here when while which who whom what""".split()
)
# Tokens that flip the stance. Contractions ending in n't are handled by rule, not listed.
NEGATORS = frozenset({"not", "never", "no", "cannot", "avoid", "avoids", "avoided", "avoiding", "nor"})
# "X is Y" / "X uses Y" shapes whose value is exclusive: another value for the same subject and
# relation is evidence against this one.
_SLOT_VERBS = {"is": "is", "are": "is", "=": "is", "uses": "uses", "use": "uses", "using": "uses"}
MAX_SLOT_SIDE_TOKENS = 5  # longer sides are prose, not a fact about one subject
# Clauses that only contrast ("use X, not Y", "X instead of Y") or give a reason or purpose ("... to
# speed up CI", "... because it flaked") elaborate a claim; they are not the claim, so they do not
# take part in matching (the display text keeps them).
_ELABORATION_RE = re.compile(
    r"(?:,|;|\s[-\u2013\u2014]\s)\s*(?:not|never|rather than|instead of)\b.*$"
    r"|\s(?:rather than|instead of|because|since|so that|in order to|"
    r"to (?:speed|avoid|keep|make|save|reduce|prevent|ensure|stop|get|allow|help))\b.*$",
    re.IGNORECASE)

_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_WIKILINK_RE = re.compile(r"\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]")
_MARKUP_RE = re.compile(r"[*_`~]+")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|=")


@dataclass(frozen=True)
class Proposition:
    key: str  # stemmed content tokens in order, space-joined; identity of the proposition
    tokens: frozenset[str]  # stemmed content tokens; near-duplicate matching works on these
    polarity: int  # +1 as stated, -1 when the statement negates the proposition
    slot: str | None  # "subject|relation" for exclusive facts, else None
    value: str | None  # the stemmed value within the slot


def clean_markup(text: str) -> str:
    """Display form: markdown links, wikilinks, emphasis and bullets removed, whitespace folded."""
    text = _WIKILINK_RE.sub(lambda m: m.group(1), text)
    text = _LINK_RE.sub(lambda m: m.group(1), text)
    text = _BULLET_RE.sub("", text)
    text = _MARKUP_RE.sub("", text)
    return " ".join(text.split()).strip()


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    return _STEMMER.stemWord(token)


def _tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower().replace("\u2019", "'")
    return _TOKEN_RE.findall(text)


def _strip_negation(tokens: list[str]) -> tuple[list[str], int]:
    """Remove negators, returning the remaining tokens and the polarity they implied."""
    polarity = 1
    kept: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "no" and i + 1 < len(tokens) and tokens[i + 1] == "longer":
            polarity, i = -polarity, i + 2
            continue
        if tok in NEGATORS:
            polarity = -polarity
        elif tok.endswith("n't"):
            polarity = -polarity
            base = {"won't": "will", "can't": "can", "shan't": "shall"}.get(tok, tok[:-3])
            kept.append(base)
        else:
            kept.append(tok.replace("'", ""))
        i += 1
    return kept, polarity


def _slot(words: list[str]) -> tuple[str, str] | None:
    for i, word in enumerate(words):
        relation = _SLOT_VERBS.get(word)
        if relation is None:
            continue
        subject = [t for t in words[:i] if t not in STOPWORDS]
        value = [t for t in words[i + 1 :] if t not in STOPWORDS]
        if 0 < len(subject) <= MAX_SLOT_SIDE_TOKENS and 0 < len(value) <= MAX_SLOT_SIDE_TOKENS:
            return " ".join(map(stem, subject)) + "|" + relation, " ".join(map(stem, value))
        return None
    return None


def proposition(text: str) -> Proposition | None:
    """The proposition a statement asserts, or None when nothing of substance is left."""
    cleaned = _ELABORATION_RE.sub("", clean_markup(text))
    words, polarity = _strip_negation(_tokens(cleaned))
    slot = _slot(words)
    content = [stem(t) for t in words if t not in STOPWORDS and t != "="]
    if not content:
        return None
    if slot is not None:
        subject, relation = slot[0].split("|")
        # Canonical order for facts so "database: postgres" and "the database is Postgres" meet.
        key = f"{subject} {relation} {slot[1]}"
        return Proposition(key, frozenset(content), polarity, slot[0], slot[1])
    return Proposition(" ".join(content), frozenset(content), polarity, None, None)


def fact_proposition(key: str, value: str) -> Proposition | None:
    """A `key: value` fact, read as "key is value" so it meets the prose form of the same fact."""
    return proposition(f"{key} is {value}")
