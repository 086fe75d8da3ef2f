"""Which claims of other sources a recorded revision supersedes: a claim that still states the old
value of a revision ("deploy: Codeberg → Lumen Pages" after "Lumen Edge (not Pages)").

Invariant: precision first and symmetric. A claim is superseded only when it contains the revision's
old value verbatim (whole words), does not also state the new value, is not itself a revision or a
negation, shares a specific name or identifier with the revising statement (two for a bare number),
beside the value (the name qualifies the value in both statements: "Acme Pages", "Nimbus SDK 12"),
names the value itself, not as the owner of a code-named file or setting ("Pages `_rewrites` file"),
and its source is not newer than the reviser's (by day). Read-only: the writer records the matches.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from ontology.normalize import STOPWORDS, proposition
from ontology.revisions import RevisionRule, revisions, specific_value
from ontology.tokens import fold, words as split_words

LINK_TARGET_RE = re.compile(r"\]\([^)]*\)")  # a markdown link's target: the file name is not the line's words

SELF_PREFIX = "revision:"  # rows a statement records about itself
CROSS_PREFIX = "old-value:"  # rows where another source's claim states a revision's old value
MIN_SHARED_NAMES = 1
MIN_SHARED_NAMES_NUMERIC = 2  # "52" alone says little: two shared names, or the same name right before
# it in both statements ("SDK 52" / "SDK 53 (no 52)")
NEAR_CHARS = 24  # a shared name counts only this close to the value it qualifies

# Rules whose old value is a value (not a whole statement) and can be looked for elsewhere.
_CROSSABLE = frozenset({RevisionRule.FROM_TO, RevisionRule.ARROW, RevisionRule.WAS, RevisionRule.REPLACED,
                        RevisionRule.INSTEAD, RevisionRule.NOT})
_QUOTES = "`\"“”«»「」『』' "
_NAME_RE = re.compile(r"`([^`]{2,80})`|(?<![\w])([A-Za-z][\w.+#/\-]*[\w+#])")
_NUMERIC_RE = re.compile(r"^[\d\s.,:/~≈<>+\-±%]+$")
# Capitalized words that open sentences or name nothing specific.
_COMMON = frozenset(
    "the this that these those it its we our you your they a an and or but if when then now also not no use uses "
    "used using see note new old all any each every one two first last next same other more most some such only "
    "all les la le el los las der die das ein eine und und mit para por pour avec kein keine nicht".split())


@dataclass(frozen=True)
class Match:
    source_id: int  # the reviser (owner of the row)
    artifact_id: int
    newer_id: int
    older_id: int
    older_source_id: int
    rule: str
    old_text: str  # the superseded claim as its source said it
    new_text: str  # the revising statement
    date: str | None  # the day the revising statement states (its `updates.date`)


def rule_name(rule: RevisionRule) -> str:
    return SELF_PREFIX + rule.name.lower()


def _rule_of(name: str) -> RevisionRule | None:
    if not name.startswith(SELF_PREFIX):
        return None
    try:
        return RevisionRule[name[len(SELF_PREFIX):].upper()]
    except KeyError:
        return None


def _core(value: str) -> str:
    return value.strip().strip(_QUOTES).strip()


def _name_spans(text: str) -> list[tuple[int, int, str]]:
    """Specific names of a statement with their places: code spans, and words with an inner capital,
    a digit or `_./`, or a capital not opening the statement or a sentence (a value after `key:` may
open with a name) (casefolded)."""
    out: list[tuple[int, int, str]] = []
    for m in _NAME_RE.finditer(text):
        if m.group(1):
            out.append((m.start(), m.end(), m.group(1).casefold()))
            continue
        word = m.group(2)
        if len(word) < 3 or word.casefold() in _COMMON:
            continue
        inner = any(ch.isupper() for ch in word[1:]) or any(ch.isdigit() or ch in "_./" for ch in word)
        opening = not text[:m.start()].rstrip(" *_\"'“(") or text[:m.start()].rstrip(" *_\"'“(")[-1] in ".!?。！？\n"
        if inner or (word[0].isupper() and not opening):
            out.append((m.start(), m.end(), word.casefold()))
    return out


def _names(text: str) -> set[str]:
    return {name for _, _, name in _name_spans(text)}


_QUALIFIER_RE = re.compile(r"(?:`([^`]+)`|([A-Za-z][\w.+#\-]*))\s*$")


def _qualifier(text: str, start: int) -> str | None:
    """The name right before a number ("SDK" in "Nimbus SDK 12"): a code span or a word with an inner
    capital or a digit, so "version 52" or "the 52" qualify nothing."""
    m = _QUALIFIER_RE.search(text[:start])
    if m is None:
        return None
    word = m.group(1) or m.group(2)
    if m.group(1) or any(ch.isupper() for ch in word[1:]) or any(ch.isdigit() for ch in word):
        return word.casefold()
    return None


def _words(value: str) -> set[str]:
    """Every word and code span of a value, casefolded: never a name shared *beside* it."""
    out = {m.group(1).casefold() if m.group(1) else m.group(2).casefold() for m in _NAME_RE.finditer(value)}
    return out | {_core(value).casefold()}


def _occurrences(text: str, core: str) -> list[tuple[int, int]]:
    """Where `core` occurs in `text` as whole words (as a substring for scripts without spaces)."""
    if not core:
        return []
    if not core.isascii():
        return [(m.start(), m.end()) for m in re.finditer(re.escape(core), text)]
    return [(m.start(), m.end()) for m in re.finditer(rf"(?<![\w/.\-]){re.escape(core)}(?![\w/\-])", text)]


def _near_names(text: str, spans: list[tuple[int, int]]) -> set[str]:
    """The names that start or end within NEAR_CHARS of one of the spans."""
    names = _name_spans(text)
    return {name for start, end in spans for n_start, n_end, name in names
            if n_end >= start - NEAR_CHARS and n_start <= end + NEAR_CHARS}


@dataclass(frozen=True)
class _Revision:
    source_id: int
    artifact_id: int
    newer_id: int
    rule: RevisionRule
    core: str
    new_core: str
    text: str  # the revising statement as its source said it
    names: frozenset[str]  # specific names beside the old or the new value in the revising statement
    day: str
    qualifier: str | None = None  # a number's name right before it ("SDK" in "SDK 53 (no 52)")
    date: str | None = None  # the day the revising statement states


def _revisions(conn: sqlite3.Connection, where: str, args: tuple) -> list[_Revision]:
    out: list[_Revision] = []
    for source_id, artifact_id, newer_id, rule, old, new, text, ts, date in conn.execute(
            "SELECT u.source_id, u.artifact_id, u.newer_id, u.rule, u.old_text, u.new_text, st.text, s.current_ts, u.date "
            "FROM updates u JOIN stances st ON st.assertion_id = u.newer_id AND st.source_id = u.source_id "
            f"JOIN sources s ON s.id = u.source_id WHERE u.older_id IS NULL AND {where} ORDER BY u.id", args):
        parsed = _rule_of(rule)
        core = _core(old)
        if parsed not in _CROSSABLE or not core or not specific_value(core):
            continue
        near = _near_names(text, _occurrences(text, core) + _occurrences(text, _core(new)))
        names = frozenset(near - _words(core))
        qualifier = None
        if _NUMERIC_RE.match(core):
            spots = _occurrences(text, _core(new)) + _occurrences(text, core)
            qualifier = next((q for start, _ in spots if (q := _qualifier(text, start))), None)
        out.append(_Revision(source_id, artifact_id, newer_id, parsed, core, _core(new), text, names, (ts or "")[:10],
                             qualifier, date))
    return out


# The old value right before a code span names the owner of that file or setting ("the Lumen Pages
# `_rewrites` file"): the claim is about the code-named thing, which the revision does not mention.
_OWNS_CODE_RE = re.compile(r"\s?`")


def _supersedes(rev: _Revision, text: str) -> bool:
    found = [(start, end) for start, end in _occurrences(text, rev.core) if not _OWNS_CODE_RE.match(text, end)]
    if not found or (rev.new_core and len(rev.new_core) <= 40 and _occurrences(text, rev.new_core)):
        return False
    numeric = _NUMERIC_RE.match(rev.core) is not None
    shared = rev.names & (_near_names(text, found) - _words(rev.core))
    qualified = numeric and rev.qualifier is not None and any(_qualifier(text, start) == rev.qualifier for start, _ in found)
    if len(shared) < (MIN_SHARED_NAMES_NUMERIC if numeric else MIN_SHARED_NAMES) and not qualified:
        return False
    # A claim that itself revises or denies the old value agrees with the revision.
    return not any(rev.core in r.old or r.old in rev.core for r in revisions(text) if r.old)


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")


def _states(text: str, stance: int, core: str) -> bool:
    """Does the statement state the old value plainly? A negated statement still does when the
    negation sits in another sentence ("SDK 52 fixed. Do not update until …")."""
    if stance > 0:
        return True
    sentence = next((part for part in _SENTENCE_END.split(text) if core in part), "")
    prop = proposition(sentence) if sentence and sentence != text else None
    return prop is not None and prop.polarity > 0


def _match(rev: _Revision, older_id: int, older_source: int, text: str, day: str, stance: int) -> Match | None:
    if older_id == rev.newer_id or (day or "")[:10] > rev.day or not _states(text, stance, rev.core) \
            or not _supersedes(rev, text):
        return None
    return Match(rev.source_id, rev.artifact_id, rev.newer_id, older_id, older_source,
                 CROSS_PREFIX + rev.rule.name.lower(), text, rev.text, rev.date)


def matches(conn: sqlite3.Connection, source_id: int) -> list[Match]:
    """Claims superseded by a revision, in both directions for one source: its revisions against
    every current claim (its own other claims too: a file that says "not Pages" and, in a stale line,
    "Acme Pages"), and other sources' revisions against its current claims."""
    out: list[Match] = []
    for rev in _revisions(conn, "u.source_id = ?", (source_id,)):
        for older_id, older_source, text, ts, stance in conn.execute(
                "SELECT st.assertion_id, st.source_id, st.text, s.current_ts, st.stance FROM stances st JOIN sources s "
                "ON s.id = st.source_id WHERE instr(st.text, ?) > 0 "
                "ORDER BY st.assertion_id, st.source_id", (rev.core,)):
            if (found := _match(rev, older_id, older_source, text, ts, stance)) is not None:
                out.append(found)
    others = _revisions(conn, "u.source_id != ?", (source_id,))
    if others:
        own = conn.execute("SELECT st.assertion_id, st.text, s.current_ts, st.stance FROM stances st JOIN sources s "
                           "ON s.id = st.source_id WHERE st.source_id = ? ORDER BY st.assertion_id",
                           (source_id,)).fetchall()
        for rev in others:
            for older_id, text, ts, stance in own:
                if rev.core in text and (found := _match(rev, older_id, source_id, text, ts, stance)) is not None:
                    out.append(found)
    return out


@dataclass(frozen=True)
class StaleLine:
    """An index line that still states the old value of a revision its own linked file records."""

    newer_id: int  # the file's revising statement
    new_text: str
    date: str | None  # the day the revising statement states


def _content(text: str, drop: set[str]) -> set[str]:
    """Content words: not a stopword, a number or one of `drop`; an ASCII word of 4 letters or more
    (short function words the stopword lists lack, "via", "per", "der", are no echo)."""
    return {tok for tok, is_word in split_words(fold(text)) if len(tok) >= (4 if tok.isascii() else 2)
            and not tok[0].isdigit() and (not is_word or tok not in STOPWORDS) and tok not in drop}


def stale_line(conn: sqlite3.Connection, file_source: int, description: str, line: str,
               line_date: str | None) -> StaleLine | None:
    """Whether an index line about a file (its title and hook) is stale beside a value revision the file
    records ("outbound mail via Acme Relay" beside the file's "… through Acme Direct (current setup, not
    Relay)"):
    the line states the old value by the tests a claim of another file meets (whole words, not the new
    value too, a specific name beside the value in both, not itself a revision or denial, stated
    plainly), echoes the file's description (a content word in common besides the value and its names:
    a line about something else that names the old value, "status page alerts also sent via Acme Relay",
    is not stale), and is not dated after the revision. Only the line's own file counts (ADR 0009,
    "Session 10")."""
    prop = proposition(line)
    stance = 1 if prop is None or prop.polarity > 0 else -1
    for rev in _revisions(conn, "u.source_id = ?", (file_source,)):
        if (line_date is not None and (rev.date or rev.day) and line_date[:10] > (rev.date or rev.day)[:10]) \
                or not _states(line, stance, rev.core) or not _supersedes(rev, line):
            continue
        drop = {tok for tok, _ in split_words(fold(rev.core))} | {
            tok for name in rev.names for tok, _ in split_words(name)}
        if _content(LINK_TARGET_RE.sub("]", line), drop) & _content(description, drop):
            return StaleLine(rev.newer_id, rev.text, rev.date)
    return None
