"""Time-varying facts and which of two sources is newer: the pure half of cross-source supersession.

Invariant: precision first (ADR 0009, "Supersession across sources"). A fact is a version of a named
product, a count of a named thing, a status of a specific item or a metric with a named subject; its
date is the statement's own, else its section's, else its file's. One value supersedes another only
when it is strictly later by date, or by a progression the kind itself has (pending -> done, a lower
version -> a higher one); anything else says nothing. Pure, no I/O.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Mapping

from ontology.tokens import Script, fold, script_counts, words as split_words


class FactKind(enum.Enum):
    VERSION = "version"  # "Nimbus SDK 12", "Quarto v3", "React Native 0.83.4"
    COUNT = "count"  # "BotFleet 6 agents"
    STATUS = "status"  # "S1.6 pendiente", "| 1.6 | ✅ Completa |"
    METRIC = "metric"  # "public best stays at 0.9120", "Public best: 0.9088"
    RANK = "rank"  # "GEMM: 16.2μs (rank 151)", `| GEMM | … | ~130th |` under a "Rank" column
    IDENTIFIER = "identifier"  # a dated "`x` removed" / a dated plain mention of `x` (ontology.removals)


class Status(enum.IntEnum):
    """A status progresses one way: work pending now is done later, rarely the other way round."""

    PENDING = 0
    DONE = 1


@dataclass(frozen=True)
class Fact:
    subject: str  # matching key of the specific subject
    kind: FactKind
    value: str  # normalized value ("52", "9", "done", "0.8534")
    date: str | None  # YYYY-MM-DD the statement (or its section, or its file) carries
    upgrade: bool = False  # the statement says the subject was moved to this value ("updated to SDK 55")


class Marker(enum.Enum):
    """A file-level marker: the file is kept for history, or replaced by another."""

    HISTORICAL = "historical"  # its claims describe a past state; links to it as current are stale
    SUPERSEDED = "superseded"  # replaced by a successor (named after "by", when it is)


# -- dates -------------------------------------------------------------------------------------------

_ISO_DATE_RE = re.compile(r"(?<![\d.])(20\d{2})[-/.](\d{1,2})[-/.](\d{1,2})(?![\d])")
_CJK_DATE_RE = re.compile(r"(20\d{2})年(\d{1,2})月(\d{1,2})日")
_MONTHS = {m: i for i, names in enumerate((
    "jan january enero janvier januar", "feb february febrero février februar", "mar march marzo mars märz",
    "apr april abril avril", "may mayo mai", "jun june junio juin juni", "jul july julio juillet juli",
    "aug august agosto août", "sep sept september septiembre septembre", "oct october octubre octobre oktober",
    "nov november noviembre novembre", "dec december diciembre décembre dezember"), 1) for m in names.split()}
_MONTH_NAME = "|".join(sorted(_MONTHS, key=len, reverse=True))
# "Mar 28 2026", "March 28, 2026", "28 Mar 2026", "28. März 2026": a day, a month name and a year.
_NAMED_DATE_RE = re.compile(rf"\b(?:(?P<m1>{_MONTH_NAME})\.?\s+(?P<d1>\d{{1,2}}),?\s+(?P<y1>20\d{{2}})|"
                            rf"(?P<d2>\d{{1,2}})\.?\s+(?:de\s+)?(?P<m2>{_MONTH_NAME})\.?,?\s+(?:de\s+)?(?P<y2>20\d{{2}}))\b",
                            re.IGNORECASE)
_COMPACT_DATE_RE = re.compile(r"(?<!\d)(20\d{2})(\d{2})(\d{2})(?!\d)")
# A date that is a deadline or a plan ("until 2026-06-01", "~2026-06-20", "bis 1.6.") says nothing
# about when the statement was true.
_NOT_AS_OF_RE = re.compile(r"(?:~|≈|\b(?:until|till|by|before|due|deadline|eta|target|hasta|antes de|bis|vor|"
                           r"jusqu'au|avant|d'ici)\s*)$|(?:まで|까지|前|之前|以前)$", re.IGNORECASE)
_DEADLINE_AFTER_RE = re.compile(r"^\s*(?:まで|까지|前|之前|截止|までに|期限)")
# Frontmatter fields that say when the file was written, most trusted first.
_WRITTEN_FIELDS = ("modified", "updated", "last_updated", "lastUpdated", "last-updated")
_DATED_FIELDS = ("date", "created", "timestamp")


def _valid(y: str, m: str, d: str) -> str | None:
    month, day = int(m), int(d)
    return f"{y}-{month:02d}-{day:02d}" if 1 <= month <= 12 and 1 <= day <= 31 else None


def dates_in(text: str) -> list[str]:
    """The as-of dates a text states (ISO, CJK 年月日), leaving out deadlines and plan dates."""
    out: list[str] = []
    if "20" not in text:
        return out  # every date this reads has a 20xx year: most statements end here
    for pattern in (_ISO_DATE_RE, _CJK_DATE_RE):
        for m in pattern.finditer(text):
            if _NOT_AS_OF_RE.search(text[max(0, m.start() - 12):m.start()]) or _DEADLINE_AFTER_RE.match(text[m.end():]):
                continue
            if (date := _valid(*m.groups())) is not None:
                out.append(date)
    for m in _NAMED_DATE_RE.finditer(text):
        if _NOT_AS_OF_RE.search(text[max(0, m.start() - 12):m.start()]):
            continue
        month = _MONTHS[(m.group("m1") or m.group("m2")).lower()]
        if (date := _valid(m.group("y1") or m.group("y2"), str(month), m.group("d1") or m.group("d2"))) is not None:
            out.append(date)
    return out


def statement_date(text: str) -> str | None:
    """A statement's own date: the latest as-of date it states ("as of 2026-06-25", "al 2026-03-29",
    "(2026-06-25)", "2026-07-24 停掉 …"), or None."""
    found = dates_in(text)
    return max(found) if found else None


def file_date(filename: str, meta: Mapping[str, object]) -> str | None:
    """When a file was written: its `modified:`/`updated:` field, else the latest of its `date:`/
    `created:` field, a date in its file name (`status_20260510`, `session_2026-04-21_x`) and one in
    its `name:` ("status as of 2026-05-12"), else None."""
    nested = meta.get("metadata")
    fields = {**nested, **meta} if isinstance(nested, Mapping) else meta
    for key in _WRITTEN_FIELDS:
        value = fields.get(key)
        if value is not None and (found := dates_in(str(value))):
            return max(found)
    found = [d for key in _DATED_FIELDS if (value := fields.get(key)) is not None for d in dates_in(str(value))]
    stem = filename.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if "20" in stem:
        found += dates_in(stem)
        found += [d for m in _COMPACT_DATE_RE.finditer(stem) if (d := _valid(*m.groups()))]
    name = fields.get("name")
    if isinstance(name, str):
        found += dates_in(name)
    return max(found) if found else None


def later(a: str | None, b: str | None) -> bool:
    """Is date a strictly later day than date b? Unknown dates are never later."""
    return a is not None and b is not None and a[:10] > b[:10]


# -- status ------------------------------------------------------------------------------------------

# Pending first: "未完成" holds "完成", "incomplete" is not "complete", "not done" is not done.
_PENDING_RE = re.compile(
    r"\b(?:pending|deferred|in[- ]flight|in[- ]progress|wip|(?-i:TODO)(?!\s+(?:lo|el|la|los|las|de|en|es)\b)|not (?:yet )?(?:done|started|complete[d]?|finished)|"
    r"on hold|unfinished|incomplete|partial(?:ly)?|pendientes?|parcial(?:mente)?|aplazad[oa]|en curso|"
    r"en progreso|sin terminar|en cours|à faire|en attente|inachevée?|ausstehend|unvollständig|in arbeit|offen)\b"
    r"|⏳|🚧|未完了|未完成|未着手|進行中|対応中|保留|待办|待處理|待处理|进行中|未解决|未解決|진행\s?중|미완료|보류|대기\s?중",
    re.IGNORECASE)
_DONE_RE = re.compile(
    r"\b(?:done|complete[d]?|finished|resolved|shipped|merged|completad[oa]s?|complet[oa]s?|terminad[oa]s?|"
    r"resuelt[oa]s?|hech[oa]|mergead[oa]|terminée?s?|achevée?s?|résolue?s?|erledigt|abgeschlossen|fertig|gelöst)\b"
    r"|✅|✔|完了|済み|解決済|已完成|完成|已解决|已解決|已修|완료|해결(?:됨|완료)?",
    re.IGNORECASE)


def status_of(text: str) -> Status | None:
    """The one status a short text states: pending or done, None when it states neither or both."""
    pending = _PENDING_RE.search(text) is not None
    done = _DONE_RE.search(_PENDING_RE.sub(" ", text)) is not None
    if pending == done:
        return None
    return Status.PENDING if pending else Status.DONE


# -- subjects and facts ------------------------------------------------------------------------------

# Words that number a sequence of work, not a product: "Plan 018", "Round 2", "Sesión 1.6".
_SEQUENCE_WORDS = frozenset(
    """plan plans phase phases round rounds session sessions step steps stage stages wave waves iter iteration
    sprint sprints part parts chapter week weeks day days level tier item items task tasks issue issues
    pr pull commit run runs test tests epoch epochs fold folds layer layers page pages line lines row rows
    section figure table option options case cases rule rules point points priority p q v version
    fase fases sesión sesion paso pasos ronda etapa semana día tarea punto
    étape séance semaine jour tâche phase
    schritt runde woche tag aufgabe stufe
    the a an and or of in on at to for with from by is was are were be as not no""".split())
# "<Name> [Name] SDK|API|v|version <n>" or "<Name> <n.n[.n]>": a version of a named product; a
# two-word name starts with a capital ("React Native"), a one-word name may be any ("ioredis v5").
_VERSION_RE = re.compile(
    r"(?<![A-Za-z0-9_.\-/])(?P<name>(?:[A-Z][\w+#\-]*\s+)?[A-Za-z][\w+#\-]*)\s+"
    r"(?:(?P<sdk>SDK|API|version|Version|ver\.?)\s*v?(?P<n1>\d+(?:\.\d+){0,3})|v(?P<n2>\d+(?:\.\d+){0,3})|"
    r"(?P<n3>\d+\.\d+(?:\.\d+){0,2}))(?![A-Za-z0-9_.\-/%])(?!\s*(?:x\b|×|[-–~]\s*\d))")
# "<Name> <n> <plural noun>": a count of a named thing ("BotFleet 6 agents", "Hetzner 3 nodes").
_COUNT_RE = re.compile(
    rf"(?<![A-Za-z0-9_.\-/])(?P<name>[A-Z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*|[A-Z][a-z]+[A-Z][A-Za-z0-9]*)\s+(?P<n>\d+)\s+"
    r"(?P<noun>[a-z]{3,}s)\b")
# A metric: a subject of 2-3 words, then ":", "=", "is", "stays at", "at", then a decimal number.
_METRIC_RE = re.compile(
    r"(?<![A-Za-z0-9_.\-/])(?P<subject>[A-Za-z][A-Za-z\-]+(?:\s+[A-Za-z][A-Za-z\-]+){1,2})\s*"
    r"(?::|=|\bis\b|\bstays at\b|\bremains(?: at)?\b|\bat\b|\bnow\b)\s*[`*]*\s*(?P<n>\d+\.\d+)(?![A-Za-z0-9_.%])")
_METRIC_STOP = frozenset("the a an of in on at to for with and or is was are were be it its this that our my "
                         "previous prior old earlier former last before expected target goal baseline".split())
# An item named by a dotted number or an id ("S1.6", "1.10", "DEF-087"), with a status beside it.
_ITEM_RE = re.compile(r"(?<![A-Za-z0-9_.\-/])(?P<item>[A-Z]{0,3}\d+(?:\.\d+)+[a-z]?|[A-Z]{2,}-\d{2,})(?![A-Za-z0-9_.\-/])")
_ITEM_STATUS_WINDOW = 24
# A version written with dots is a version when it has two dots or a small minor part ("0.83.4",
# "3.12", "2.3"); "0.065" and "0.8534" are measurements.
_DOTTED_VERSION_RE = re.compile(r"\d+\.\d+\.\d+(?:\.\d+)?|[1-9]\d*\.\d{1,2}")
# The statement moves the subject to this value: "updated to Nimbus SDK 14", "actualizado a", "升级到".
_UPGRADE_BEFORE_RE = re.compile(
    r"\b(?:updated|upgraded|migrated|bumped|moved|switched|raised|pinned)\s+(?:\w+\s+){0,2}?(?:to|onto)\s+$"
    r"|\b(?:actualizad[oa]|migrad[oa]|subid[oa]|pasad[oa])\s+(?:\w+\s+){0,2}?a\s+$"
    r"|\b(?:mis à jour|migrée?|passée?)\s+(?:\w+\s+){0,2}?(?:vers|à|en)\s+$"
    r"|\b(?:aktualisiert|migriert|umgestellt|angehoben)\s+auf\s+$"
    r"|(?:升级到|升級到|更新到|更新为|更新為|升级至|升級至|迁移到|遷移到)\s*$", re.IGNORECASE)
_UPGRADE_AFTER_RE = re.compile(
    r"\s*(?:に|へ)(?:アップデート|アップグレード|更新|移行|上げ)|\s*(?:으로|로)\s*(?:업그레이드|업데이트|올림|이전)"
    r"|\s*(?:に|へ)(?:した|しました)", re.IGNORECASE)
# The statement moves the subject back down: "rolled back to Kumo CLI 2.1", "went back to", "reverted to",
# "downgraded to", "volvimos a", "zurück auf", "回滚到", "に戻した". An upgrade it follows is undone.
_BACK_BEFORE_RE = re.compile(
    r"\b(?:back|reverted|downgraded)\s+(?:\w+\s+){0,2}?(?:to|onto)\s+$"
    r"|\b(?:revertid[oa]|volv\w*|regresad[oa]|rebajad[oa])\s+(?:\w+\s+){0,2}?a\s+$"
    r"|\b(?:revenue?s?|rétrogradée?s?|retour)\s+(?:\w+\s+){0,2}?(?:vers|à|en)\s+$"
    r"|\bzurück\w*\s+(?:\w+\s+){0,2}?auf\s+$"
    r"|(?:回滚到|回滾到|降级到|降級到|退回到|回退到)\s*$", re.IGNORECASE)
# Words that undo a change: "upgraded to 2.4 but rolled back the same day", "reverted the Kumo CLI upgrade".
_REVERT_RE = re.compile(r"\b(?:roll(?:ed|ing)?\s+(?:it\s+|that\s+|this\s+)?back|revert(?:ed|ing|s)?|undid|undone|backed\s+out|"
                        r"downgrad\w*|back\s+(?:to|onto)|zurück\w*|revertid[oa]|volv\w*\s+a|annulée?|rétrograd\w*)\b"
                        r"|回滚|回滾|回退|退回|降级|降級|戻し|戻す|ロールバック|롤백|되돌", re.IGNORECASE)
_BACK_AFTER_RE = re.compile(r"\s*(?:に|へ)(?:戻|ダウングレード|ロールバック)|\s*(?:으로|로)\s*(?:롤백|다운그레이드|되돌)")
_DIGIT_RE = re.compile(r"\d")
_SENTENCE_RE = re.compile(r"(?<=[.!?;。！？；])\s+")
# Plans and intentions say nothing about the current value.
_FUTURE_RE = re.compile(
    r"\b(?:will|should|would|could|might|going to|plan(?:ned)? to|next (?:week|session|time)|later|someday|próxim[oa]|"
    r"hasta que|until|when .* required|wird|werden|soll|prévu|sera|"
    # A condition or a goal is not the value either: "5 agents if the budget passes", "0.73 — target".
    r"if|unless|target(?:ed|s)?|goal|aim(?:ing)? (?:at|for)|wenn|falls|jeśli|jeżeli|eğer|nếu|indien|qualora)\b"
    r"|予定|今後|예정|计划|計劃|打算",
    re.IGNORECASE)  # characters after the item in which its own status must start


def _subject_words(name: str) -> list[str]:
    return [w for w in fold(name).split() if w not in _SEQUENCE_WORDS]


def item_key(item: str) -> str:
    """An item's matching key: "S1.6" and "1.6" (a session column) are one item; "DEF-087" itself."""
    folded = fold(item)
    core = re.fullmatch(r"[a-z]{0,3}(\d+(?:\.\d+)+[a-z]?)", folded)
    return core.group(1) if core else folded


_NUMBERED_ITEM_RE = re.compile(r"\d+(?:\.\d+)+[a-z]?")


def in_file(found: tuple[Fact, ...], owner: str) -> tuple[Fact, ...]:
    """A memory file's facts with its numbered items ("1.2", "S2.4") made its own: every plan numbers
    its steps from 1.1, so "1.2 pending" in one plan and "Milestone 1.2 done" in another are two items.
    An index line about the file (owner: the file it links) shares them; an id (`BUG-042`) stays global."""
    return tuple(Fact(f"{owner}:{f.subject}", f.kind, f.value, f.date, f.upgrade)
                 if f.kind is FactKind.STATUS and _NUMBERED_ITEM_RE.fullmatch(f.subject) else f for f in found)


def _decimal(value: str) -> str:
    """A decimal's canonical form: "0.710" and "0.71" are one value."""
    return value.rstrip("0").rstrip(".") if "." in value else value


def version_key(value: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", value)[:4])


def facts(text: str, date: str | None = None) -> tuple[Fact, ...]:
    """The time-varying facts one statement states about specific subjects (precision first); `date`
    is the statement's section or file date, used when the statement states none itself."""
    if _DIGIT_RE.search(text) is None:
        return ()  # every fact has a number: most statements end here
    out: dict[tuple[str, FactKind], Fact] = {}
    when = statement_date(text) or date
    for sentence in _SENTENCE_RE.split(re.sub(r"[`*]", "", text)):
        if _unreadable(sentence):
            continue  # a plan or a condition in a language we have no words for looks like a value
        if not _FUTURE_RE.search(sentence):  # "upgrade to SDK 55 next week" is a plan, not a value
            for fact in _sentence_facts(sentence, when):
                out.setdefault((fact.subject, fact.kind), fact)
    return tuple(out.values())


def moved_back(text: str, value: str) -> bool:
    """Does the statement say a product was moved back down to version `value` ("rolled back to Kumo
    CLI 2.1")? Read as `facts` reads a version, so the value is the one a fact of it holds."""
    for sentence in _SENTENCE_RE.split(re.sub(r"[`*]", "", text)):
        for m in _VERSION_RE.finditer(sentence):
            if (m.group("n1") or m.group("n2") or m.group("n3")) == value and (
                    _BACK_BEFORE_RE.search(sentence[max(0, m.start() - 40):m.start()]) is not None
                    or _BACK_AFTER_RE.match(sentence, m.end()) is not None):
                return True
    return False


def reverts_any(text: str) -> bool:
    """Does the statement hold a word that undoes a change ("reverted", "rolled back", "回滚")?"""
    return _REVERT_RE.search(text) is not None


def reverts(text: str, subject: str) -> bool:
    """Does the statement say a change to `subject` (a version fact's subject) was undone: "reverted the
    Kumo CLI upgrade", "rolled back to Kumo CLI 2.1"? Its words must name the subject."""
    if not reverts_any(text):
        return False
    have = set(fold(text).replace("`", " ").split())
    return all(w in have for w in subject.removesuffix(" sdk").split())


def _unreadable(sentence: str) -> bool:
    """Whether a sentence holds words of a script we have no plan or condition words for (Cyrillic,
    Greek, Arabic, Hebrew, Indic, Thai …): "PollenFleet 5 agents, если бюджет утвердят" ("if the budget
    is approved") must not say the index's "3 agents" is out of date."""
    if sentence.isascii():
        return False
    counts = script_counts(sentence)
    return counts.get(Script.OTHER, 0) + counts.get(Script.THAI, 0) >= 3  # not a unit: "16.2μs", "5 Ω"


def _sentence_facts(plain: str, when: str | None) -> list[Fact]:
    out: dict[tuple[str, FactKind], Fact] = {}
    for m in _VERSION_RE.finditer(plain):
        name = m.group("name")
        words = _subject_words(name)
        if not words or not any(c.isupper() for c in name) or _negated_before(plain, m.start("name")):
            continue  # "plan 018", "round 2": a sequence, not a product; "(no SDK 52)"
        value = m.group("n1") or m.group("n2") or m.group("n3")
        if m.group("n3") and not _DOTTED_VERSION_RE.fullmatch(value):
            continue  # "MAD 0.065", "MAE 0.31": a measurement, not a version
        subject = " ".join(words) + (" sdk" if (m.group("sdk") or "").upper() == "SDK" else "")
        upgrade = (_UPGRADE_BEFORE_RE.search(plain[max(0, m.start() - 40):m.start()]) is not None
                   or _UPGRADE_AFTER_RE.match(plain, m.end()) is not None) \
            and _REVERT_RE.search(plain, m.end()) is None  # "… but rolled back to 2.1 the same day"
        out.setdefault((subject, FactKind.VERSION), Fact(subject, FactKind.VERSION, value, when, upgrade))
    label = _LABEL_RE.match(plain)
    for m in _COUNT_RE.finditer(plain):
        subject = f"{fold(m.group('name'))} {fold(m.group('noun'))}"
        if label is not None and m.start() >= label.end():  # "Staging: PaymentsService 2 replicas"
            subject = f"{fold(label.group(1).strip())}/{subject}"
        out.setdefault((subject, FactKind.COUNT), Fact(subject, FactKind.COUNT, m.group("n") + _qualifier(plain, m.end()),
                                                       when))
    for m in _METRIC_RE.finditer(plain):
        words = [w for w in fold(m.group("subject")).split() if w not in _METRIC_STOP]
        if len(words) < 2 or words[0] in _SEQUENCE_WORDS:
            continue
        subject = " ".join(words[-2:])
        out.setdefault((subject, FactKind.METRIC), Fact(subject, FactKind.METRIC, m.group("n") + _qualifier(plain, m.end()),
                                                        when))
    if (rank := _rank_fact(plain, when)) is not None:
        out.setdefault((rank.subject, FactKind.RANK), rank)
    for m in _ITEM_RE.finditer(plain):
        status = status_of(_item_window(plain, m.end()))
        if status is not None:
            key = item_key(m.group("item"))
            out.setdefault((key, FactKind.STATUS), Fact(key, FactKind.STATUS, status.name.lower(), when))
    return list(out.values())


# A scope right after a value: "0.71 on the public split", "2 agents in staging", "0.70 with the baseline
# features" (a value of that scope or setup).
_QUALIFIER_RE = re.compile(r"\s*(?:on|in|for|under|per|at|with|without|before|after|using|en|sur|dans|auf|im|für|mit|ohne|con|sin|avec|sans)"
                           r"\s+(?:the\s+|la\s+|le\s+|el\s+|der\s+|dem\s+|den\s+)?"
                           r"(?P<q>[A-Za-z][\w\-]*)", re.IGNORECASE)


def _qualifier(plain: str, end: int) -> str:
    """"@public" of "0.71 on the public split": kept with the value, so two values of different scopes are
    never ordered (`comparable`), while a value without one still meets either."""
    m = _QUALIFIER_RE.match(plain, end)
    return f"@{fold(m.group('q'))}" if m else ""


def _number(value: str) -> str:
    return _decimal(value.split("@", 1)[0])


def comparable(a: str, b: str) -> bool:
    """Two values of one count or metric that may be compared: not scoped to two different things."""
    qa, qb = a.partition("@")[2], b.partition("@")[2]
    return not qa or not qb or qa == qb


# A scope opening a sentence: "Staging: …", "On canary: …" (a count after it is the scope's own).
_LABEL_RE = re.compile(r"^\s*([^:：\d]{1,30})[:：]\s")


# "<Subject>: … (rank 151)", "<Subject> … ranked #12": a standing of the subject that opens the line.
_RANK_RE = re.compile(r"^(?P<subject>[A-Za-z][\w\-. ]{0,30}?)\s*:.*?\b(?:rank(?:ed)?|place[d]?)\s*[#~≈]?\s*(?P<n>\d{1,6})(?![\d.,]|\s*(?:[µμ%]|(?:us|ms|s|x|days?|hours?|min(?:utes)?|times)\b))"
                      r"|^(?P<subject2>[A-Za-z][\w\-.]{0,30})\s*:.*?(?:順位|순위|排名)\s*[#~≈]?\s*(?P<n2>\d{1,6})(?![\d.,])", re.IGNORECASE)
_RANK_HEADER_RE = re.compile(r"\b(?:rank(?:ing)?|place|position|posición|rang|classement|platz)\b|順位|순위|排名|名次",
                             re.IGNORECASE)
_RANK_CELL_RE = re.compile(r"^[#~≈]?\s*(\d{1,6})(?:st|nd|rd|th|位|위|名)?\b", re.IGNORECASE)


def _rank_fact(plain: str, when: str | None) -> Fact | None:
    m = _RANK_RE.search(plain.strip())
    if m is None:
        return None
    subject = m.group("subject") or m.group("subject2")
    words = [w for w in fold(subject).split() if w not in _SEQUENCE_WORDS]
    if not words or len(words) > 3 or is_generic(words):
        return None
    return Fact(" ".join(words) + " rank", FactKind.RANK, str(int(m.group("n") or m.group("n2"))), when)


def is_generic(words: list[str]) -> bool:
    from ontology.normalize import GENERIC_SUBJECTS  # one list of subjects too generic to name one thing
    return all(w in GENERIC_SUBJECTS for w in words)


def _item_window(text: str, end: int) -> str:
    """The words right after an item up to its clause's end: "S1.6 pendiente al …" -> "pendiente al …"."""
    rest = text[end:end + _ITEM_STATUS_WINDOW]
    return re.split(r"[,;，；、()\[\]|]|\.\s", rest, maxsplit=1)[0]


def _negated_before(text: str, start: int) -> bool:
    return re.search(r"\b(?:no|not|kein|nicht|pas)\s*$|[(（]no\s*$", text[max(0, start - 8):start], re.IGNORECASE) is not None


def row_fact(cells: list[str], date: str | None, header: list[str] | None = None) -> Fact | None:
    """A table row keyed by its first cell whose other cells state one status (`| 1.6 | ✅ Completa |`),
    or a rank under a "Rank" column of the header (`| GEMM | 16.2μs | ~130th |`)."""
    if len(cells) < 2 or not cells[0].strip():
        return None
    key_cell = re.sub(r"[`*]", "", cells[0]).strip()
    if header and len(header) == len(cells):
        ranks = [i for i, h in enumerate(header) if i > 0 and _RANK_HEADER_RE.search(h)]
        words = [w for w in fold(key_cell).split() if w not in _SEQUENCE_WORDS]
        if len(ranks) == 1 and words and len(words) <= 3 and not is_generic(words) and not key_cell[:1].isdigit() \
                and (cell := _RANK_CELL_RE.match(cells[ranks[0]].strip())) is not None:
            when = statement_date(" ".join(cells)) or date
            return Fact(" ".join(words) + " rank", FactKind.RANK, str(int(cell.group(1))), when)
    item = _ITEM_RE.fullmatch(key_cell)
    if item is None:
        return None
    statuses = {s for cell in cells[1:3] if (s := status_of(cell)) is not None}
    if len(statuses) != 1:
        return None
    when = statement_date(" ".join(cells)) or date
    return Fact(item_key(key_cell), FactKind.STATUS, statuses.pop().name.lower(), when)


# -- ordering ----------------------------------------------------------------------------------------

def supersedes(newer: Fact, older: Fact, newer_date: str | None, older_date: str | None) -> bool:
    """Does `newer` replace `older` (same subject and kind, another value)? By date when both sides
    have one and the days differ; else by the kind's own progression (pending -> done, a higher
    version); counts and metrics without dates are never ordered here."""
    if newer.subject != older.subject or newer.kind is not older.kind or newer.value == older.value:
        return False
    if newer_date is not None and older_date is not None and newer_date[:10] != older_date[:10]:
        return newer_date[:10] > older_date[:10]
    if newer.kind is FactKind.STATUS:
        return newer.value == Status.DONE.name.lower() and older.value == Status.PENDING.name.lower()
    if newer.kind is FactKind.VERSION:
        return version_key(newer.value) > version_key(older.value)
    return False


# -- file-level markers ------------------------------------------------------------------------------

# A loud marker anywhere in the head ("plan 017 — SUPERSEDED by plan 018", "HISTORICAL — …"), or a
# marker word of any case or script opening the text ("Obsolete: …", "【廃止】…", "[已废弃] …").
_LOUD_MARKER_RE = re.compile(r"(?<![\w-])(?P<word>HISTORICAL|SUPERSEDED|OBSOLETE|DEPRECATED|OUTDATED)(?![\w-])"
                             r"(?=\s*(?:[:：.,;!()（）\[\]【】「」\-\u2013\u2014*_]|$)|\s+(?:by|in favou?r of|since)\b)")
_OPENING_MARKER_RE = re.compile(
    r"^[\W_]{0,4}(?P<word>historical|superseded|obsolete|deprecated|outdated|no longer current|veraltet|überholt|"
    r"obsolet[oa]|obsolète|périmée?|desactualizad[oa]|廃止|已废弃|已廢棄|已过时|已過時|已作废|已作廢|폐기됨|폐기)"
    r"(?=\s*[:：\-\u2013\u2014(（)）\]】」]|\s+by\b|\s*$)", re.IGNORECASE)
MARKER_HEAD_CHARS = 80
# A loud marker opens the text or follows a dash, colon or bracket ("plan 017 — SUPERSEDED by …"); after a
# word it is that word's predicate or adjective ("which ones are OBSOLETE", "DEPRECATED flags").
_MARKER_LEAD_RE = re.compile(r"(?:^|[\-\u2013\u2014:：(（\[【|,;])[\s*_`]*$")
_SUCCESSOR_RE = re.compile(r"\b(?:superseded|replaced|obsoleted)\s+by\s+(?P<by>[^;,.()（）\n\u2014]{2,60})", re.IGNORECASE)


def marker_of(text: str) -> tuple[Marker, str | None] | None:
    """A file-level marker in a description, title or index hook: the file is HISTORICAL, or
    SUPERSEDED (by the successor named, when one is). Only a loud marker in the head or a marker word
    opening the text counts: "the contacts deprecation (폐기) phase" is about something else."""
    head = text.strip()[:MARKER_HEAD_CHARS]
    loud = next((m for m in _LOUD_MARKER_RE.finditer(head) if _MARKER_LEAD_RE.search(head[:m.start()])), None)
    m = loud or _OPENING_MARKER_RE.match(head)
    if m is None:
        return None
    if m.group("word").lower() == "historical":
        return Marker.HISTORICAL, None
    successor = _SUCCESSOR_RE.search(text)
    return Marker.SUPERSEDED, (successor.group("by").strip().rstrip("*_ ") if successor else None)


# "All done except step 2.4", "done but for the UI": a summary with an exception states no one status.
_EXCEPT_RE = re.compile(r"\b(?:except|but for|but not|apart from|other than|besides|save for|excepto|salvo|menos|"
                        r"sauf|hormis|außer|bis auf|ausgenommen)\b|除了|以外|を除|제외|빼고", re.IGNORECASE)


def file_status(*texts: str | None) -> Status | None:
    """The status a file's summary states (its description): one of pending and done, else None."""
    found = {s for t in texts if t and not _EXCEPT_RE.search(t) and (s := status_of(t)) is not None}
    return found.pop() if len(found) == 1 else None


# -- what supersedes what, over everything said about one subject -----------------------------------

class Rule(enum.Enum):
    """Why one statement supersedes another (the `updates.rule` of a cross-source supersession)."""

    VALUE = "supersede:value"  # a later value of the same version, count or status
    INDEX = "supersede:index"  # an index line's value or status, stale beside its own file
    HISTORICAL_LINK = "supersede:historical-link"  # a claim that links a HISTORICAL/SUPERSEDED file as current
    SUCCESSOR = "supersede:successor"  # a SUPERSEDED file's summary, by its successor's


@dataclass(frozen=True)
class Said:
    """One row of the index of time-varying things sources said (the store's `timed_facts`)."""

    kind: str  # a FactKind value, or "summary" / "marker" / "link" / REVISION / LINE for file-level rows
    value: str
    date: str | None
    upgrade: bool
    source: int
    assertion: int | None  # None for an index line
    owner: str | None  # concept key of the memory file it is about (its own, or the one a hook links)
    text: str
    hook: bool
    extra: str = ""  # a marker's successor phrase; a summary's name and description, for matching


FILE_SUBJECT = "file:"
IDENTIFIER_SUBJECT = "ident:"
REMOVED, IN_USE = "removed", "in_use"
REVISION = "revision"  # an index line's self-stated revision: value is its rule, extra "old\nnew\nline"
LINE = "line"  # an index line about a file (title and hook), read against the file's own revisions; extra: the line


def identifier_facts(stances: tuple[tuple[str, int], ...], text: str, date: str | None = None) -> tuple[Fact, ...]:
    """A dated statement's removals and uses of identifiers, as facts ordered by its date: its own, else
    its section heading's (`date`: "### Changes (2026-04-09)" dates the bullets under it, harm14), never
    its file's (a file edited on a later day keeps older lines: a use in it is no restore); undated ones
    stay with the removed-vs-in-use dispute rule."""
    when = (statement_date(text) or date) if stances else None
    if when is None:
        return ()
    return tuple(Fact(IDENTIFIER_SUBJECT + ident, FactKind.IDENTIFIER, REMOVED if stance < 0 else IN_USE, when)
                 for ident, stance in stances)


def removal_is_later(removal_days: list[str | None], use_days: list[str | None]) -> bool:
    """Every use of an identifier dated strictly before every removal of it (each by its statement's date,
    `identifier_facts`): the uses are history the removal supersedes, not a dispute with it."""
    if not removal_days or not use_days or None in removal_days or None in use_days:
        return False
    return max(use_days) < min(removal_days)  # type: ignore[type-var]


def restored_after(removal_days: list[str | None], use_days: list[str | None]) -> bool:
    """Whether a file brings back what it removed: every removal of an identifier dated, and a use of it
    dated strictly after the last ("2026-05-04: restored `x`" after "2026-05-02: removed `x`")."""
    if not removal_days or None in removal_days:
        return False
    last = max(d[:10] for d in removal_days if d is not None)
    return any(d is not None and d[:10] > last for d in use_days)


def _claim_supersedes(newer: Said, older: Said) -> bool:
    if newer.kind != older.kind or newer.value == older.value or newer.assertion == older.assertion:
        return False
    if newer.kind in (FactKind.COUNT.value, FactKind.METRIC.value) and (
            not comparable(newer.value, older.value) or _number(newer.value) == _number(older.value)):
        return False
    kind = FactKind(newer.kind)
    dated = newer.date is not None and older.date is not None and newer.date != older.date
    if kind is FactKind.VERSION:
        # A version is named in passing in history ("the v2.3 migration"); only a statement that says
        # the subject moved to it ("updated to SDK 55") supersedes another value, and never back.
        return newer.upgrade and version_key(newer.value) > version_key(older.value) and not later(older.date, newer.date)
    if kind is FactKind.IDENTIFIER:  # a removal dated after a use: the use is history, not a dispute
        return newer.value == REMOVED and older.value == IN_USE and later(newer.date, older.date)
    if kind in (FactKind.COUNT, FactKind.RANK) and newer.source == older.source:
        return False  # a log's dated entries count what each day did: the reader sees both, dated
    if dated:
        return kind in (FactKind.STATUS, FactKind.COUNT, FactKind.RANK) and later(newer.date, older.date)
    return kind is FactKind.STATUS and newer.value == Status.DONE.name.lower() \
        and older.value == Status.PENDING.name.lower()


def _undone(upgrade: Said, backs: list[Said]) -> bool:
    """Whether a move back to a lower version, not dated before the upgrade, follows it."""
    return upgrade.kind == FactKind.VERSION.value and upgrade.upgrade and any(
        b.assertion != upgrade.assertion and version_key(b.value) < version_key(upgrade.value)
        and not later(upgrade.date, b.date) for b in backs)


def _scope_named(claim: Said, hook: Said) -> bool:
    """Whether a file's scoped value speaks of what its index line does: "9 agents sur cluster Nord" of
    a line about "BotFleet 10 agents cluster Nord", yes; "0.701 with the baseline features" of "Best
    score: 0.742", no: that is another setup's score, not a newer value of the line (blind7)."""
    scope = claim.value.partition("@")[2]
    return not scope or scope == hook.value.partition("@")[2] or scope in fold(hook.text).split()


def value_updates(said: list[Said]) -> list[tuple[Said, Said, Rule]]:
    """(newer, older, rule) over everything said about one subject: a claim superseded by the newest
    claim that replaces it; an index line's count, metric or item status by its own file's value."""
    claims = [s for s in said if not s.hook and s.assertion is not None]
    out: list[tuple[Said, Said, Rule]] = []
    # An upgrade the author undid ("upgraded to 2.4", then "rolled back to 2.1", not dated before it)
    # supersedes nothing: the value that holds now is theirs to say, in their words (blind9).
    backs = [c for c in claims if c.kind == FactKind.VERSION.value and moved_back(c.text, c.value)]
    # The newest claims (none supersedes them), once: O(n²) per subject, never O(n³).
    top = [c for c in claims if not any(_claim_supersedes(o, c) for o in claims) and not _undone(c, backs)]
    for older in claims:
        newest = [c for c in top if _claim_supersedes(c, older)]
        if newest:
            out.append((min(newest, key=lambda s: (s.assertion or 0, s.source)), older, Rule.VALUE))
    for hook in (s for s in said if s.hook and s.kind != FactKind.VERSION.value):
        own = [c for c in claims if c.owner == hook.owner and c.kind == hook.kind and comparable(c.value, hook.value)
               and _scope_named(c, hook)]
        values = {_number(c.value) for c in own}
        if len(values) != 1 or _number(hook.value) in values:
            continue  # the file states the hook's value too, or several: nothing plainly stale
        fresh = [c for c in own if not later(hook.date, c.date)]
        if fresh:
            out.append((min(fresh, key=lambda s: (s.assertion or 0, s.source)), hook, Rule.INDEX))
    return out


def successor_matches(phrase: str, summary: str) -> int:
    """How well a summary names a successor phrase ("plan 018"): 2 when it opens with it, 1 when it
    holds it as words, else 0."""
    want, have = fold(phrase).split(), fold(summary).split()
    if not want:
        return 0
    have = [re.sub(r"^\W+|\W+$", "", w) for w in have]
    if have[:len(want)] == want:
        return 2
    return int(any(have[i:i + len(want)] == want for i in range(len(have))))


def successor_of(phrase: str, summaries: list[Said], exclude: str | None) -> Said | None:
    """The one summary that names the successor phrase best, or None when none or several do."""
    scored = [(successor_matches(phrase, s.extra), s) for s in summaries if s.owner != exclude]
    best = max((score for score, _ in scored), default=0)
    top = [s for score, s in scored if score == best]
    return top[0] if best and len({s.owner for s in top}) == 1 else None


def hook_revisions(said: list[Said]) -> list[tuple[Said | None, Said]]:
    """(summary, hook) for each revision an index line states about its file: the update is the index's,
    shown against the file's own summary claim (the index itself makes no claims); summary None when
    the linked file is not in the folder (the update then carries the index line alone)."""
    summary = next((s for s in said if s.kind == "summary" and s.assertion is not None), None)
    return [(summary, s) for s in said if s.hook and s.kind == REVISION]


# A numbered part of the work: "phase 2", "step 2.4", "S1.6", "BUG-042".
_PART_RE = re.compile(r"\b(?:phase|step|stage|task|milestone|part|wave|sprint|round|session|fase|paso|etapa|"
                      r"sesión|étape|schritt|stufe|teil)\s*#?(\d+(?:\.\d+)*)|段階\s*(\d+)|阶段\s*(\d+)|(\d+)\s*단계",
                      re.IGNORECASE)


def _parts(text: str) -> set[str]:
    found = {next(g for g in m.groups() if g) for m in _PART_RE.finditer(text)}
    return found | {item_key(m.group("item")) for m in _ITEM_RE.finditer(text)}


def _same_items(summary: str, hook: str) -> bool:
    """A summary that names parts of the work ("phase 1 done") says nothing of another part the index
    line names ("phase 2 pending"), nor of the whole: the line is stale only for the parts it names."""
    named = _parts(summary)
    return not named or named == _parts(hook)


_LINK_TARGET_RE = re.compile(r"\]\([^)]*\)")


def _content_words(text: str) -> set[str]:
    from ontology.normalize import STOPWORDS  # normalize is heavy and imports no timeline: read it lazily
    return {tok for tok, is_word in split_words(fold(_LINK_TARGET_RE.sub("]", text)))
            if len(tok) > 1 and not tok[0].isdigit() and (not is_word or tok not in STOPWORDS)}


def _speaks_of(summary: str, hook: str) -> bool:
    """An index line is stale beside its file's description only when both speak of one thing (share a
    content word): a file merged from two notes is linked by the other note's line too, and its
    description ("… cleanup done") says nothing of that line's own plan ("… on hold")."""
    return not _content_words(summary).isdisjoint(_content_words(hook))


def _without_name(text: str, key: str | None) -> str:
    """`text` without the linked file's own name ("see [[player-cube-placeholder]]" names the file, it
    says nothing of what the file says was replaced)."""
    parts = [re.escape(p) for p in re.split(r"[-_\s]+", key or "") if p]
    return re.sub(r"[-_\s]*".join(parts), " ", text, flags=re.IGNORECASE) if parts else text


# What a HISTORICAL/SUPERSEDED note's summary says took over, after what it replaced: "the cube placeholder
# was replaced by the DFF character", "stub, which gave way to the controller", "cube removed, player is now
# the DFF mesh", "旧方案 → 新方案". The words after it name the successor, not the replaced thing.
_SUCCESSOR_LEAD_RE = re.compile(
    r"\b(?:(?:was|were|is|are|been|got)\s+)?(?:replaced|superseded|succeeded|obsoleted|overtaken|displaced)\s+(?:by|with)\b"
    r"|\bgave\s+way\s+to\b|\bgives\s+way\s+to\b|\bin\s+favou?r\s+of\b|\bmoved\s+to\b|\bswitched\s+to\b|\bis\s+now\b"
    r"|\bare\s+now\b|\bnow\s+(?:uses?|is|are)\b|→|->|⇒|=>|ersetzt\s+durch|remplacée?s?\s+par|reemplazad[oa]s?\s+por"
    r"|改为|改成|替换为|换成|取代为|に置き換え|로\s*대체|으로\s*대체", re.IGNORECASE)
# The marker's own words say nothing of what was replaced.
_MARKER_WORDS = frozenset({"historical", "superseded", "obsolete", "deprecated", "outdated", "replaced", "removed",
                           "resolved", "gone", "retired", "note", "kept"})


def _replaced_words(summary: str) -> set[str] | None:
    """The content words a marked note's summary gives to what it says was replaced (before "replaced
    by", "gave way to", "is now", "→" …) and not to its successor ("tile" in "the tile cache stub gave
    way to the tile server"), without the marker's own words; None when the summary names no successor
    that way, or nothing but the successor's words before it (then the whole summary is read, as before)."""
    lead = _SUCCESSOR_LEAD_RE.search(summary)
    if lead is None:
        return None
    words = _content_words(summary[:lead.start()]) - _content_words(summary[lead.end():]) - _MARKER_WORDS
    return words or None


def _speaks_of_replaced(summary: str, link: str) -> bool:
    """A claim linking a marked note as current is superseded only when it speaks of the thing the note
    says was replaced: "spawn the first player (TEMP cube, see [[cube-note]])" of "the cube placeholder
    was replaced by the DFF character", yes; "remaining: the overlay check; the first character spawn is
    its own plan (see [[cube-note]])", no: it shares only the successor's words ("character", "plan") and
    is about other work (harm14, a real folder's status and out-of-scope lines)."""
    replaced = _replaced_words(summary)
    if replaced is None:
        return _speaks_of(summary, link)
    return not replaced.isdisjoint(_content_words(link))


def file_updates(said: list[Said], summaries: list[Said]) -> list[tuple[Said, Said, Rule]]:
    """(newer, older, rule) for one file: an index line that says it is pending while its own
    description says done; claims elsewhere that link it as current when it is marked HISTORICAL or
    SUPERSEDED and speak of what its summary says was replaced (a content word besides the link: "Dana
    owns the export; background in [[old-plan]]" is not superseded by the old plan's replacement,
    judge11); and a SUPERSEDED file's summary, by the successor it names. `summaries` are every
    file's summary (for the successor)."""
    summary = next((s for s in said if s.kind == "summary" and s.assertion is not None), None)
    out: list[tuple[Said, Said, Rule]] = []
    if summary is not None and summary.value == Status.DONE.name.lower():
        for hook in said:
            if hook.hook and hook.kind == FactKind.STATUS.value and hook.value == Status.PENDING.name.lower() \
                    and not later(hook.date, summary.date) and _same_items(summary.text, hook.text) \
                    and _speaks_of(summary.text, hook.text):
                out.append((summary, hook, Rule.INDEX))
    markers = [s for s in said if s.kind == "marker"]
    if not markers:
        return out
    owner = markers[0].owner
    successor = next((found for m in markers if m.value == Marker.SUPERSEDED.value and m.extra
                      and (found := successor_of(m.extra, summaries, owner)) is not None), None)
    own_marker = summary is not None and any(not m.hook for m in markers)
    current = summary if own_marker else successor
    if current is not None:
        for link in said:
            if link.kind == "link" and link.owner != owner and link.assertion is not None \
                    and _speaks_of_replaced(current.text, _without_name(link.text, owner)):
                out.append((current, link, Rule.HISTORICAL_LINK))
    if successor is not None and summary is not None:
        out.append((successor, summary, Rule.SUCCESSOR))
    return out
