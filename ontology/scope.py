"""Which slot a memory file's fact fills: rival values only where two files speak of one thing (ADR 0009).

Invariant: precision first. A generic key in a topic file ("Owner: dana", "The test runner is Jest")
describes that file's subject, so its slot is the file's own; only a key that names its subject
(a code span, an inner capital, an acronym, a digit, `_./-`) competes across files, and then only
under the same heading. Questions, placeholders and conditional values fill no slot. Pure, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ontology.normalize import Proposition, content_key

# "Queue: RabbitMQ?", "Does the app use GraphQL?": a question states no value.
_QUESTION_RE = re.compile(r"[?？]\s*\)?\s*$")
# Template placeholders: "<name>", "TBD", "___", "X.Y.Z", "…".
_PLACEHOLDER_RE = re.compile(
    r"[:：]\s*(?:<[^>]*>|\{[^}]*\}|tb[dc]|todo|n/?a|_{2,}|\.{3}|…|x(?:\.[xyz]){1,2}|\?+|none yet|unknown)\s*$",
    re.IGNORECASE)
# A value said only under a condition or for a while: "disabled (on CI only)", "none (benchmarking
# without it today)", "yes when CI=true", "3 on CI, 0 locally".
_CONDITION_RE = re.compile(
    r"\b(?:if|when|whenever|unless|except|only|locally|today|for now|temporarily|on ci|in ci|during|while|"
    r"depending|per|otherwise|si|cuando|solo|sauf|quand|wenn|nur|falls)\b|場合|时|時|경우|만",
    re.IGNORECASE)
# A subject that names its thing: a code span, camelCase or an inner capital, an acronym, a digit, `_./-`
# inside a word, or a capitalised word that does not open the subject.
_SPECIFIC_RE = re.compile(r"`[^`]+`|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]*[A-Z]\w*|\b[A-Z]{2,}\b|\w*\d\w*|\w[_./-]\w"
                          r"|(?<=\w )[A-Z][a-z]+")
_PROSE_VERB_RE = re.compile(r"\s(?:is|are|uses|use|using|=)\s", re.IGNORECASE)


def _cut(text: str) -> int:
    """Where a fact's subject ends: at its colon, or at the verb of an "X is Y" sentence."""
    colon = re.search(r"[:：]", text)
    verb = _PROSE_VERB_RE.search(text)
    return min((m.start() for m in (colon, verb) if m is not None), default=len(text))


def specific(subject: str) -> bool:
    return _SPECIFIC_RE.search(subject) is not None


def memory_slot(prop: Proposition, text: str, section: str | None, concept: str) -> Proposition:
    """The proposition with the slot it fills when a memory file (`concept`) states it under `section`."""
    if prop.slot is None:
        return prop
    cut = _cut(text)
    subject, value = text[:cut], text[cut:]
    if _QUESTION_RE.search(text) or _PLACEHOLDER_RE.search(text) or _CONDITION_RE.search(value):
        return replace(prop, slot=None, value=None)
    scope = content_key(section) if section else ""
    if not specific(subject):
        scope = f"{concept}#{scope}"
    return replace(prop, slot=f"{scope}/{prop.slot}") if scope else prop
