"""Which slot a fact fills: rival values only where two sources speak of one thing (ADR 0009).

Invariant: precision first. A question, a placeholder, a conditional value or an example's verdict
fills no slot. A generic key in a topic file ("Owner: dana", "The test runner is Jest") describes that
file's subject: its slot is marked generic, where a memory file's value denies no other (ontology.
aggregate), while a ledger's still does. A specific key in a memory file is scoped by its heading.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ontology.aggregate import GENERIC_SLOT
from ontology.normalize import Proposition, content_key, is_generic_subject, unlisted_script
from ontology.tokens import fold

# Keys that introduce an example, a verdict on one or a quoted message, never a value of a slot.
_VERDICT_KEY_RE = re.compile(
    r"^\W*(?:wrong|right|bad|good|correct|incorrect|ok|not ok|example|e\.g|counter-?example|do|don't|dont|avoid|"
    r"prefer|before|after|symptom|error|cause|fix|workaround|output|expected|actual|input|usage|command|message|"
    r"log|trace|exception|warning|stderr|stdout|q|a|incorrecto|correcto|ejemplo|faux|vrai|exemple|falsch|richtig|"
    r"beispiel|誤|正|错误|正确|例|오류|예)\W*$", re.IGNORECASE)
# Labels that introduce rationale, not a scope ("**How to apply:**", "Key decisions:").
_RHETORICAL_LABELS = frozenset(
    "why|how to apply|key decisions|decisions|open threads|next steps|notes|context|summary|details|overview|"
    "background|rationale|how|rule|rules|lesson|lessons|fix|root cause|impact|result|outcome|todo".split("|"))

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
    r"depending|per|otherwise|cuando|solo|sauf|quand|wenn|nur|falls)\b|場合|时|時|경우|만",
    re.IGNORECASE)
# A subject that names its thing: a code span, camelCase or an inner capital, an acronym, a digit, `_./-`
# inside a word, or a capitalised word that does not open the subject.
_SPECIFIC_RE = re.compile(r"`[^`]+`|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z]*[A-Z]\w*|\b[A-Z]{2,}\b|\w*\d\w*|\w[_./-]\w"
                          r"|(?<=\w )[A-Z][a-z]+")
# A value's closing parenthetical of a few words and no digit says where (or for what) it holds:
# "Postgres (production)", "SQLite (máy dev)", "MySQL (本番)". The slot is that qualifier's, so values said
# for two places are no rivals, in any language; "Postgres (prod)" and "MySQL (prod)" still are (blind10:
# every language, English included, disputed "Orders DB: Postgres (production)" with "… SQLite (local)").
_QUALIFIER_RE = re.compile(r"[(（]([^()（）\d]+)[)）][\s.。]*$")
_QUALIFIER_WORDS = 3
_PROSE_VERB_RE = re.compile(r"\s(?:is|are|uses|use|using|=)\s", re.IGNORECASE)


def _cut(text: str) -> int:
    """Where a fact's subject ends: at its colon, or at the verb of an "X is Y" sentence."""
    colon = re.search(r"[:：]", text)
    verb = _PROSE_VERB_RE.search(text)
    return min((m.start() for m in (colon, verb) if m is not None), default=len(text))


# Acronyms of a kind of thing, a role each project fills, not of one thing: "CI: Jenkins" and "API
# framework: Django" in one project's file, "CI: Codemagic" and "API framework: FastAPI" in another's, name
# two things (blind7). Beside a word that names which one ("Orders DB", "Search API") they still name one.
_CATEGORY_ACRONYM_RE = re.compile(
    r"\b(?:API|CI|CD|DB|RDBMS|ORM|UI|UX|OS|SDK|CLI|CDN|DNS|VM|IDE|CMS|CRM|ETL|VCS|SCM|MQ|LB|HTTP|SQL|CSS|JS|TS|"
    r"HTML|IaC|PaaS|SaaS|LLM|ML|AI|QA|E2E)s?(?:[/&-](?:CI|CD|UX|UI|DB|ML|AI|QA))*\b")
# A word that only opens the subject or qualifies nothing ("The CI pipeline", "Our API framework").
_OPENERS = frozenset("the a an our my your their this that its default main primary current".split())


def specific(subject: str) -> bool:
    if _SPECIFIC_RE.search(subject) is None:
        return False
    rest = _CATEGORY_ACRONYM_RE.sub(" ", subject)
    if rest == subject or _SPECIFIC_RE.search(rest) is not None:
        return True
    # Only category acronyms made it specific: it names one thing when a capitalised word says which.
    return any(w[:1].isupper() and w.lower() not in _OPENERS for w in re.findall(r"[^\W\d_]+", rest))


_KEY_VALUE_RE = re.compile(r"^[*_]*(?P<key>[^:：`]{1,40}?)[*_]*\s*(?::[*_]*\s+|：[*_]*\s*)\S")
_KEY_WORDS = 4
_BARE_VALUE_WORDS = 1
# A value that names an artifact (a code span, a path, a URL) is about that artifact wherever it is said.
_ARTIFACT_VALUE_RE = re.compile(r"`[^`]+`|\w/\w|/\w|\w\.(?:md|py|ts|js|json|ya?ml|toml|sh|sql|csv)\b|https?://")


def own_subject_fact(text: str) -> bool:
    """Whether `text` is a `Key: value` line whose key names no specific thing and whose value names no
    artifact ("Owner: search team", "Replicas in prod: 2"): a memory file states it of that file's own
    subject, so two files that say the same words of two services agree on nothing (blind11)."""
    text = text.strip()
    if len(text.split()) <= _BARE_VALUE_WORDS and ":" not in text and not specific(text):
        return True  # the value left of "Status: active" once its generic key is dropped: "active"
    m = _KEY_VALUE_RE.match(text)
    return m is not None and len(m.group("key").split()) <= _KEY_WORDS and not specific(_uncapitalised(m.group("key"))) \
        and _ARTIFACT_VALUE_RE.search(text, m.end("key")) is None


def _uncapitalised(key: str) -> str:
    """A key written in title case ("Primary Owner", "Replicas In Prod") in lower case: capitals on every
    word are the key's style, not a name, so it is as generic as "Primary owner" (judge12). A key with a
    word of another shape (an acronym, camelCase, a digit, `On-Call`) is kept as written."""
    words = key.strip(" *_").split()
    if words and all(w.isalpha() and w[1:].islower() and w[:1].isupper() for w in words):
        return key.lower()
    return key


def scoped_slot(prop: Proposition, text: str, section: str | None, memory: bool) -> Proposition:
    """The proposition with the slot it fills: none for a question, a placeholder, a conditional value or
    an example's verdict; a generic subject's slot marked `~` (a memory file's value there implies no
    denial: `GENERIC_SLOT`). In a memory file, a statement under a heading that names a scope ("## Staging",
    "## macOS", not "## Why") is that scope's: its key (so "Auto-deploy is not enabled" under Production
    denies nothing said under Staging; the same words still agree as near-duplicates) and a specific
    subject's slot carry the heading."""
    # A heading in a script we have no word lists for ("## Продакшен", "## ייצור") may name a scope as well
    # as anything else: it scopes (two headings' values are then no rivals; precision first, blind10).
    scope = content_key(section) if memory and section and (
        unlisted_script(section) or not is_generic_subject(section)) and fold(section) not in _RHETORICAL_LABELS \
        else ""
    if scope:
        prop = replace(prop, key=f"{scope} / {prop.key}")
    if prop.slot is None:
        return prop
    cut = _cut(text)
    subject, value = text[:cut], text[cut:]
    if _QUESTION_RE.search(text) or _PLACEHOLDER_RE.search(text) or _CONDITION_RE.search(value) \
            or _VERDICT_KEY_RE.match(subject):
        return replace(prop, slot=None, value=None)
    qualifier = _QUALIFIER_RE.search(value)
    if qualifier and len(qualifier.group(1).split()) <= _QUALIFIER_WORDS:
        prop = replace(prop, slot=f"{prop.slot}@{fold(qualifier.group(1).strip())}")
    if not specific(subject):
        return replace(prop, slot=GENERIC_SLOT + prop.slot)
    return replace(prop, slot=f"{scope}/{prop.slot}") if scope else prop
