"""Self-stated revisions: statements that record a change of understanding ("switched from X to Y",
"Y (was X)", "X replaced by Y", "X, not Y", "originally X … now Y") and the values they name.

Invariant: pure and precision first. A revision needs an unambiguous change wording of its language;
plans, questions and future forms never count. Old and new values are verbatim spans of the text
(empty where the wording does not give one). ADR 0009, "Updates and supersession".
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from ontology.removals import IdentifierStance
from ontology.tokens import has_unspaced

MAX_VALUE_CHARS = 80  # a longer "old value" is prose, not a value
MAX_VALUE_WORDS = 8
PAIR_REACH = 2  # "originally …" pairs with a "now …" statement at most this many statements later


class RevisionRule(enum.Enum):
    """How a statement says it revises something (shown beside each update)."""

    FROM_TO = "changed from X to Y"  # changed/switched/migrated from X to Y; 从X改为Y; XからYへ転換; X에서 Y로 변경
    ARROW = "X → Y with a change word"  # renamed `a` → `b`; X entfernt → Y; X → Y 변경
    WAS = "Y (was X)"  # (was X), (previously X), (früher X), (antes X), (原为X)
    REPLACED = "X replaced by Y"  # replaced by/with, Y replaces X, remplacé par, ersetzt durch, 被Y取代
    INSTEAD = "Y instead of X"  # with a change cue: now/switched …; au lieu de; statt; en lugar de; 改用
    NOT = "Y, not X"  # (…, not X), (no X), X 아님, 不是X, Xではなく, kein X mehr
    REMOVED = "X removed"  # an identifier the statement declares removed (ontology.removals)
    NO_LONGER = "no longer X"  # no longer, nicht mehr, ya no, ne … plus, 不再, もう…ない, 더 이상
    CORRECTION = "previously thought X, actually Y"  # previously thought, turned out, was wrong, 誤判
    ORIGINAL_NOW = "originally X … now Y"  # in one statement, or a statement and one of the next two


@dataclass(frozen=True)
class Revision:
    rule: RevisionRule
    old: str  # the value that no longer holds, verbatim ("" when the wording does not name it)
    new: str  # the value that holds now, verbatim ("" when the wording does not name it)
    older: int | None = None  # ORIGINAL_NOW across statements: index of the older statement


# Plans, intentions and questions are not revisions (same spirit as ontology.removals).
_FUTURE = re.compile(
    r"\b(?:will|would|should|shall|must|to be|todo|plans? to|planned|planning|need to|needs to|"
    r"going to|consider|considering|maybe|perhaps|if|when we|propose|proposed|wird|werden|soll|sollte|sollen|"
    r"geplant|vielleicht|falls|wenn|será|serán|debería|pendiente|quizás|si|sera|seront|devrait|prévu|peut-être)\b"
    r"|予定|今後|検討|かもしれ|たら|れば|예정|검토|할 것|하자|려고|计划|計劃|打算|准备|準備|考虑|考慮|待定|如果|将来|將來|TODO|\?|？",
    re.IGNORECASE)
# Quoted or code values: `x`, "x", “x”, «x», 「x」, 『x』, 'x'.
_QUOTED = r"(?:`[^`]{1,80}`|\"[^\"]{1,80}\"|“[^”]{1,80}”|«[^»]{1,80}»|「[^」]{1,80}」|『[^』]{1,80}』)"
# A clause ends at these (a value never crosses them).
_STOP = r"[,;:!?()（），；：。！？、]|\.(?=\s|$)|\s[-\u2013\u2014]\s|\s\+\s"
_LATIN_VALUE = rf"(?:{_QUOTED}|[^\s,;:.!?()（），；：。！？、\u2013\u2014]+(?:\s+[^\s,;:.!?()（），；：。！？、\u2013\u2014]+){{0,5}}?)"
_CJK_VALUE = rf"(?:{_QUOTED}|[^,;:.!?()（），；：。！？、「」]{{1,40}}?)"


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_END = rf"(?=\s*(?:$|{_STOP}|\s(?:and|but|because|since|after|in|on|for|y|et|und|pero|mais|aber)\b))"
_FROM_TO = [
    _re(rf"\b(?:changed|switched|migrated|moved|pivoted|upgraded|updated|downgraded|renamed|converted|shifted|"
        rf"went)\s+(?:(?!from\b)[^\s,;.]+\s+){{0,3}}?from\s+(?P<old>{_LATIN_VALUE})"
        rf"\s+to\s+(?P<new>{_LATIN_VALUE}){_END}"),
    _re(rf"\b(?:cambiad[oa]s?|cambió|migrad[oa]s?|migró|pasad[oa]s?|pasó|actualizad[oa]s?|actualizó)\s+"
        rf"(?:(?!de\b)[^\s,;.]+\s+){{0,2}}?de(?:sde)?\s+(?P<old>{_LATIN_VALUE})\s+a\s+(?P<new>{_LATIN_VALUE}){_END}"),
    _re(rf"\b(?:changée?s?|passée?s?|migrée?s?|basculée?s?|mise?s? à jour)\s+(?:(?!de\b)[^\s,;.]+\s+){{0,2}}?"
        rf"d[e']\s*(?P<old>{_LATIN_VALUE})\s+(?:à|vers)\s+(?P<new>{_LATIN_VALUE}){_END}"),
    _re(rf"\bvon\s+(?P<old>{_LATIN_VALUE})\s+(?:auf|zu|nach)\s+(?P<new>{_LATIN_VALUE})\s+"
        r"(?:umgestellt|gewechselt|migriert|geändert|aktualisiert|umgezogen|umbenannt)\b"),
    _re(rf"(?:从|從|由)\s*(?P<old>{_CJK_VALUE})\s*(?:改为|改成|改為|换成|換成|切换到|切換到|切换为|迁移到|遷移到|变为|變為|"
        rf"升级到|升級到|改用)\s*(?P<new>{_CJK_VALUE})(?=$|{_STOP}|[，。的，以])"),
    _re(rf"(?P<old>{_CJK_VALUE})\s*から\s*(?P<new>{_CJK_VALUE})\s*(?:へ|に)\s*(?:の)?(?:転換|変更|移行|切り替え|切替|"
        r"置き換え|置換|乗り換え|移動|アップグレード)"),
    _re(rf"(?P<old>{_QUOTED}|[^\s,;:.!?()（），；：。！？、]+)\s*에서\s*(?P<new>{_QUOTED}|[^\s,;:.!?()（），；：。！？、]+?)"
        r"\s*(?:으로|로)\s*(?:변경|전환|이전|교체|마이그레이션|업그레이드|바꿈|바꿨|바뀜|바뀌었)"),
]
# "改自X" (zh: "changed from X"): the old value only.
_CHANGED_FROM_ONLY = [
    _re(rf"(?:改自|改自于|改自於|变更自|變更自)\s*(?P<old>{_CJK_VALUE})(?=$|{_STOP})"),
    _re(rf"\b(?:actualizad[oa]s?|updated|upgraded|migrated|changed|switched)\s+(?:desde|from)\s+(?P<old>{_LATIN_VALUE}){_END}"),
]

_ARROW_RE = re.compile(r"\s*(?:→|->|=>|⇒|⟶)\s*")
_ARROW_CONDITION = _re(r"(?:\s시|때|하면|으면|場合|の時|时|時|时候|時候|\bif\b.*|\bwhen\b.*|\bwenn\b.*|\bsi\b.*)$")
_ARROW_LEAD = _re(r"^(?:renamed|renames|migrated|moved|switched|changed|umbenannt|umgestellt|verschoben|"
                  r"renombrad[oa]|migrad[oa]|renommée?|migrée?)(?:\s+(?:from|von|de|desde))?\s+(?P<value>.+)$")
_ARROW_TAIL = _re(r"\s*(?:으로|로|に|へ|为|為)?\s*(?:변경|전환|교체|変更|移行|切り替え|改名|更名|改为|改為)"
                  r"(?:함|됨|했다|했음|した|済み|了)?$")
_REMOVAL_END = _re(r"\s+(?:removed|dropped|deleted|entfernt|gelöscht|eliminad[oa]s?|supprimée?s?)$|\s*(?:删除|刪除|移除|削除|삭제)$")

_WAS_RE = _re(
    r"[(（]\s*(?:(?:was|were|previously|formerly|originally|used to be|antes|anteriormente|anciennement|auparavant|"
    r"autrefois|früher|vorher|ehemals|bisher)\b|旧称|旧名|舊名|原名|原为|原為|原来是|原來是|以前は|元は|예전)"
    r"\s*[:：]?\s*(?P<old>[^()（）]{1,80})[)）]")

_REPLACED = [
    # X (was|has been) replaced by/with Y
    # (the old value is never an auxiliary: "The old broker (Celery) has been replaced" named "has")
    _re(rf"(?<!\w)(?P<old>(?!(?:has|have|had|was|were|is|are|been|got)\b){_LATIN_VALUE})\s+"
        rf"(?:(?:was|were|has been|have been|is|are|got|now|since|been|already)\s+)*"
        rf"(?:replaced|superseded|succeeded)\s+(?:by|with)\s+(?P<new>{_LATIN_VALUE}){_END}"),
    # replaced X with/by Y (past tense only: "replace X with Y" is a plan or a rule)
    _re(rf"\breplaced\s+(?P<old>{_LATIN_VALUE})\s+(?:with|by)\s+(?P<new>{_LATIN_VALUE}){_END}"),
    _re(rf"(?P<new>{_QUOTED})\s+(?:now\s+)?(?:replaces|replaced|supersedes|superseded)\s+(?P<old>{_QUOTED}){_END}"),
    _re(rf"(?P<old>{_LATIN_VALUE})\s+(?:(?:a|ont|été|est|sont)\s+)*remplacée?s?\s+par\s+(?P<new>{_LATIN_VALUE}){_END}"),
    _re(rf"(?P<old>{_LATIN_VALUE})\s+(?:(?:wurde|wurden|ist|sind|jetzt)\s+)*ersetzt\s+durch\s+(?P<new>{_LATIN_VALUE}){_END}"),
    _re(rf"(?P<new>{_QUOTED})\s+ersetzt\s+(?P<old>{_QUOTED})"),
    _re(rf"(?P<old>{_LATIN_VALUE})\s+(?:(?:fue|fueron|ha sido|han sido|está|ya)\s+)*(?:reemplazad[oa]s?|sustituid[oa]s?)"
        rf"\s+por\s+(?P<new>{_LATIN_VALUE}){_END}"),
    _re(rf"(?P<old>{_CJK_VALUE})\s*(?:已被|被|已由|由)\s*(?P<new>{_CJK_VALUE})\s*(?:取代|替代|替换|替換|代替)"),
    _re(rf"(?:用|以)\s*(?P<new>{_CJK_VALUE})\s*(?:替换|替換|取代|代替)了?\s*(?P<old>{_CJK_VALUE})(?=$|{_STOP})"),
    _re(rf"(?P<old>{_CJK_VALUE})\s*(?:を|は)\s*(?P<new>{_CJK_VALUE})\s*に\s*(?:置き換え|置換|差し替え|切り替え)"),
    _re(rf"(?P<old>{_QUOTED}|[^\s,;:.!?()（），；：。！？、]+?)(?:을|를|은|는)\s*(?P<new>{_QUOTED}|[^\s,;:.!?()（），；：。！？、]+?)"
        r"\s*(?:으로|로)\s*(?:대체|교체)"),
]
# "Y instead of X" counts only beside a change cue: "use Y instead of X" alone is a rule, not a revision.
_INSTEAD = [
    _re(rf"(?P<new>{_LATIN_VALUE})\s+instead of\s+(?P<old>{_LATIN_VALUE}){_END}"),
    _re(rf"(?P<new>{_LATIN_VALUE})\s+au lieu d[e']\s*(?P<old>{_LATIN_VALUE}){_END}"),
    _re(rf"(?P<new>{_LATIN_VALUE})\s+(?:an)?statt\s+(?P<old>{_LATIN_VALUE}){_END}"),
    _re(rf"(?P<new>{_LATIN_VALUE})\s+en (?:lugar|vez) de\s+(?P<old>{_LATIN_VALUE}){_END}"),
    _re(rf"(?P<old>{_CJK_VALUE})\s*の代わりに\s*(?P<new>{_CJK_VALUE})(?=$|{_STOP}|を|に|で)"),
    _re(rf"(?P<old>{_QUOTED}|[^\s,;:.!?()（），；：。！？、]+)\s*대신\s*(?P<new>{_QUOTED}|[^\s,;:.!?()（），；：。！？、]+)"),
]
_CHANGE_CUE = _re(
    r"\b(?:now|switched|moved|changed|migrated|swapped|replaced|went with|chose|decided|settled|jetzt|nun|inzwischen|"
    r"mittlerweile|umgestellt|gewechselt|ahora|cambiamos|decidimos|maintenant|désormais|décidé)\b"
    r"|改用|改为|改成|现在|現在|目前|已经|今は|今では|変更|이제|지금|현재|변경")
# "Y, not X" forms. A contrast ("own EventBus, not eventemitter3", "不是黑箱") is usually a plain
# description, so it counts only as a correction: beside a word that marks the new side as new or
# current ("(current setup, not X)", "(신형, X 아님)"), between two numbers or versions ("SDK 53 (no
# 52)"), or as an emphasised copula ("X is NOT a Y").
_NEW_CUE = (r"(?:\b(?:new|newer|current|currently|now|today|updated|corrected|neu|neue[rs]?|jetzt|aktuell|nuev[oa]|"
            r"ahora|actual|nouveau|nouvelle|maintenant|actuel(?:le)?)\b|신형|새|현재|지금|이제|新|現在|现在|目前|今は|最新)")
_NOT = [
    _re(rf"[(（][^()（）]*?{_NEW_CUE}[^()（）]*?(?:,|，|;)\s*not\s+(?P<old>[^()（）,;]{{1,60}})[)）]"),  # (new Y, not X)
    _re(rf"{_NEW_CUE}[^,;()]*,\s+not\s+(?P<old>{_LATIN_VALUE})(?=\s*(?:$|[.;!)]))"),  # Y = new …, not X
    _re(rf"[(（][^()（）]*?{_NEW_CUE}[^()（）]*?[,，]\s*(?P<old>[^\s,;:.!?()（），；：。！？、]+(?:\s[^\s,;:.!?()（），；：。！？、]+){{0,2}})"
        r"\s*(?:이|가)?\s*아님[)）]"),  # (신형, X 아님)
    _re(r"(?P<new>\d[\w.]*)\s*[(（]\s*(?:no|not|pas|nicht|kein|nein|非|不是|아님)\s*(?P<old>\d[\w.]*)\s*[)）]"),  # 53 (no 52)
    re.compile(r"\b(?:is|are|was|were|ist|sind)\s+(?:NOT|NICHT|KEIN|KEINE)\s+(?:an?\s+|ein\s+|eine\s+)"
               r"(?P<old>[^\s,;:.!?()]+(?:\s[^\s,;:.!?()]+){0,3}?)(?=\s*(?:$|[,;:.!?()]|\s[-\u2013\u2014]\s))"),  # X is NOT Y
]
_GATE_NOT = _re(_NEW_CUE + r"|아님|아니라|\d\s*[(（]|\bNOT\b|\bNICHT\b|\bKEINE?\b")
_NO_LONGER = [
    _re(rf"(?P<old>{_QUOTED}|[^\s,;:.!?()]+)\s+(?:is|are|was|were)\s+no longer\s+(?:used|needed|supported|valid|true|"
        r"in use|required|maintained|relevant|running|active|available)\b"),
    _re(rf"\bno longer\s+(?:use|uses|used|using|need|needs|run|runs|support|supports|call|calls|depend on|depends on)\s+"
        rf"(?P<old>{_LATIN_VALUE}){_END}"),
    _re(rf"(?P<old>{_QUOTED}|[^\s,;:.!?()]+)\s+(?:wird|werden|ist|sind)\s+nicht mehr\s+(?:genutzt|benutzt|verwendet|"
        r"gebraucht|nötig|aktiv|unterstützt)\b"),
    _re(rf"\bya no\s+(?:se\s+)?(?:usa|usamos|usan|utiliza|necesita|existe)\s+(?P<old>{_LATIN_VALUE}){_END}"),
    _re(rf"(?P<old>{_QUOTED}|[^\s,;:.!?()]+)\s+(?:is|are)\s+now\s+(?:unused|obsolete|deprecated|dead code|dead)\b"),
    _re(r"不再\s*(?:使用|用|需要|依赖|依賴|调用|調用)\s*(?P<old>[^\s,;:.!?()（），；：。！？、]{1,30}?)(?=$|[,;:.!?()（），；：。！？、了])"),
    _re(rf"\bkeine?[nmrs]?\s+(?P<old>{_QUOTED}|[^\s,;.]+(?:\s+[^\s,;.]+)?)\s+mehr\b"),  # kein X mehr
]
# A belief the author corrects: what was thought (old) and, where given, what holds (the rest). Past
# forms only ("was wrong", not "is wrong"), and never inside a condition ("when you were wrong").
_CORRECTION = [
    _re(r"[(（]\s*(?:which\s+)?(?:we|I|they|it was)\s+(?:previously|originally|initially|first|had)\s+"
        r"(?:thought|assumed|believed|suspected)\s+(?P<old>[^()（）]{1,120})[)）]"),
    _re(rf"\b(?:previously|originally|initially|wrongly|mistakenly|erroneously)\s+(?:thought|assumed|believed|"
        rf"reported|showed|shown|described|documented|stated|claimed)\s+(?P<old>{_LATIN_VALUE}){_END}"),
    _re(r"[(（]\s*(?:先前|之前|以前|原先)\s*(?:误判|誤判|误以为|誤以為|以为|以為)\s*(?P<old>[^()（）]{1,40})[)）]"),
    _re(r"(?:先前|之前|以前|原先)\s*(?:误判|誤判|误以为|誤以為)\s*(?P<old>[^\s,;:.!?()（），；：。！？、]{1,30})"),
    _re(r"\b(?:was|were)\s+(?:based on\s+)?(?:an?\s+)?(?:stale|outdated|obsolete|wrong|incorrect|invalid|false|"
        r"unmeasured|unverified)\b|\bturned out to be\b|\b(?:misdiagnosed|misjudged|misread)\b|\bis retracted\b"
        r"|\b(?:war|waren)\s+falsch\b|\bétait (?:faux|fausse|erroné)|\bera (?:incorrect[oa]|falso|falsa)\b"
        r"|勘違いしていた|誤解していた"),
    # zh/ko "misjudged": a record of a past misjudgement (what was actually true, or who corrected it),
    # not a warning that something "may be misjudged" (可能/易/會/否則 …误判, 오판 회피).
    _re(r"^(?!.*(?:可能|容易|易误判|易誤判|會誤|会误|否則|否则|避免|以免|회피|방지)).*(?:误判|誤判|오판|착각)"
        r"(?=.*(?:实际|實際|其实|其實|指正|纠正|糾正|실제로|정정))"),
]
_PROSE_QUOTE = re.compile(r"\"[^\"]*\"|“[^”]*”|«[^»]*»|\*\"[^\n]*$")
_CONDITION = _re(r"\b(?:when|whenever|if|unless|wenn|falls|quand|si|cuando)\b|^\W*(?:correct|check|verify|read|always|never)\b")
# "originally / the original X … now / updated to Y" in one statement.
_ORIGINAL = _re(
    r"\b(?:originally|initially|formerly|previously|at first|the original|original|ursprünglich|anfangs|früher|zuvor|"
    r"originalmente|inicialmente|original|à l'origine|initialement|auparavant)\b|原来|原來|原本|最初|起初|当初|當初|元々|"
    r"もともと|원래|처음에는|기존|旧版|舊版|旧方案|舊方案|原方案")
_NOW = _re(
    r"\b(?:now|currently|updated to|changed to|today|jetzt|nun|inzwischen|mittlerweile|aktualisiert auf|ahora|"
    r"actualizad[oa] a|actualmente|maintenant|désormais|actuellement|mis à jour vers)\b|现在|現在|目前|现已|現已|今は|"
    r"今では|현재|지금|이제|已改版|已改为|已改為")
_ORIGINAL_LEAD = _re(
    r"^\W*(?:(?:the\s+)?original(?:ly)?|initial(?:ly)?|(?:the\s+)?(?:old|previous|first)\s+(?:plan|approach|design|"
    r"idea|version|direction|model|code)|previously|ursprünglich|anfangs|originalmente|inicialmente|à l'origine|"
    r"initialement|原来|原來|原本|最初|起初|当初|當初|元々|もともと|원래|처음에는)\b")
_ORIGINAL_HEADS = ("origin", "initial", "previous", "old ", "first ", "ursprüng", "anfangs", "inicial", "原", "最初", "起初",
                   "当初", "當初", "元々", "もともと", "원래", "처음")
_ORIGINAL_INSIDE = _re(r"\b(?:the\s+original|originally)\b")
_NOW_LEAD = _re(
    r"^\W*(?:now|currently|today|instead|(?:the\s+)?(?:current|new|real|actual|corrected)\s+\w+|jetzt|aktuell|"
    r"derzeit|ahora|actualmente|maintenant|actuellement|désormais|现在|現在|目前|今は|현재|지금|이제)\b"
    r"|\((?:now|currently) (?:implemented|used|in use)\)")


def _clip(value: str) -> str:
    return value.strip().strip(",;:").strip()


def _usable(value: str) -> bool:
    value = _clip(value)
    return 0 < len(value) <= MAX_VALUE_CHARS and len(value.split()) <= MAX_VALUE_WORDS


def _span_before(text: str, end: int) -> str:
    """The value right before position `end`: a quoted or code span, else back to the clause start."""
    head = text[:end].rstrip()
    quoted = re.search(_QUOTED + r"\s*$", head)
    if quoted:
        return quoted.group(0).strip()
    start = max((m.end() for m in re.finditer(_STOP, _mask_code(head))), default=0)
    return _clip(head[start:].strip("*_ "))


# "Set `a` to `b` in `settings.json` (was `c`)": the span the paren follows names where the value lives, the
# one after "to" / "=" the value that was `c` (judge14: the new value was read as the file's path). Only
# when such a span is in the same clause: "`limit` set in `config.yaml` (was `app.ini`)" moved the place.
_WHERE_BEFORE = re.compile(r"\s(?:in|at|inside|within|under|of|from)\s+$", re.IGNORECASE)
_SET_BEFORE = re.compile(r"(?:\sto|=|:=|→|->)\s*$", re.IGNORECASE)


def _set_span(text: str, spans: list[re.Match[str]]) -> str:
    """The code span a "(was `x`)" revises: the last before it, unless that one follows "in"/"at" … and
    an earlier span of the same clause follows "to"/"=" (the value set, of which the last is the place)."""
    last = spans[-1]
    if len(spans) > 1 and _WHERE_BEFORE.search(text[spans[-2].end():last.start()]):
        for span in reversed(spans[:-1]):
            between = _mask_code(text[span.end():last.start()])
            if re.search(_STOP, between):
                break
            before = text[:span.start()]
            if _SET_BEFORE.search(before):
                return span.group(0)
    return last.group(0)


def _span_after(text: str, start: int) -> str:
    """The value right after `start`: up to the clause end, or the quoted span it starts with when
    the clause is longer than a value."""
    tail = text[start:].lstrip()
    stop = re.search(_STOP, _mask_code(tail))
    clause = _clip(tail[:stop.start()] if stop else tail)
    quoted = re.match(_QUOTED, tail)
    return quoted.group(0) if quoted and not _usable(clause) else clause


def _mask_code(text: str) -> str:
    """Code spans blanked (same length), so clause punctuation inside them does not cut a value."""
    return re.sub(r"`[^`]+`", lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", text)


def _add(out: list[Revision], rule: RevisionRule, old: str, new: str) -> None:
    old, new = _clip(old), _clip(new)
    if old and (old == new or not _usable(old)):
        return
    if new and not _usable(new):
        new = ""
    if old and any(r.old and (old in r.old or r.old in old) for r in out):
        return  # one value, read by two rules or two patterns: the first reading stands
    if (old or new) and not any(r.rule is rule and r.old == old and r.new == new for r in out):
        out.append(Revision(rule, old, new))


# Cheap gates: each group of patterns runs only on a statement holding one of its words (most
# statements hold none, and the value patterns backtrack).
_GATE_FROM_TO = _re(
    r"\b(?:chang|switch|migrat|mov|pivot|upgrad|updat|downgrad|renam|convert|shift|went|cambi|migr|pas[aóé]|actualiz|"
    r"bascul|mis à jour|umgestellt|gewechselt|migriert|geändert|aktualisiert|umgezogen|umbenannt)|改|换成|換成|切换|切換|"
    r"迁移|遷移|变为|變為|变更|變更|升级|升級|から|에서")
_GATE_REPLACED = _re(r"replac|supersed|succeeded|remplac|ersetzt|reemplaz|sustitu|取代|替代|替换|替換|代替|置き換え|置換|"
                     r"差し替え|切り替え|대체|교체")
_GATE_INSTEAD = _re(r"instead|au lieu|statt|en lugar|en vez|の代わり|대신")
_GATE_NO_LONGER = _re(r"no longer|nicht mehr|ya no|\bnow\s+(?:unused|obsolete|deprecated|dead)|不再|\bmehr\b")
_GATE_CORRECTION = _re(
    r"thought|assum|believ|previously|originally|initially|wrongly|mistaken|erroneous|stale|outdated|obsolete|wrong|"
    r"incorrect|invalid|false|unmeasured|unverified|turned out|misdiagnos|misjudg|misread|retracted|falsch|faux|fausse|"
    r"erroné|falso|falsa|勘違い|誤解|误判|誤判|오판|착각|误以为|誤以為")


# Before any pattern runs: does the statement hold a word any rule needs? Word prefixes (casefolded)
# for Latin scripts, a regex for the others; most statements hold none and cost a few microseconds.
_STEMS = tuple(sorted(set(
    "chang switch migrat moved moving pivot upgrad updat downgrad renam convert shift went cambi migr pasad pasó actualiz "
    "bascul umgestellt gewechselt migriert geändert aktualisiert umgezogen umbenannt replac supersed succeeded remplac "
    "ersetzt reemplaz sustitu instead statt lieu lugar vez new current now today corrected neu jetzt aktuell nuev ahora "
    "actual nouveau nouvelle maintenant not nicht kein longer mehr ya unused obsolete deprecated dead thought assum "
    "believ previously originally initially wrongly mistaken erroneous stale outdated wrong incorrect invalid false "
    "unmeasured unverified turned misdiagnos misjudg misread retracted falsch faux fausse erroné falso falsa original "
    "initial formerly ursprünglich anfangs früher zuvor originalmente inicialmente origine initialement auparavant was "
    "were used antes anteriormente anciennement autrefois vorher ehemals bisher desde from de von".split())))
_OTHER_TRIGGER = re.compile(
    "→|->|=>|⇒|⟶|\\d\\s*[(（]|改|换成|換成|切换|切換|迁移|遷移|变为|變為|变更|變更|升级|升級|から|에서|取代|替代|替换|替換|代替|"
    "置き換え|置換|差し替え|切り替え|대체|교체|の代わり|대신|신형|새|현재|지금|이제|新|現在|现在|目前|今は|最新|아님|아니라|不再|"
    "勘違い|誤解|误判|誤判|오판|착각|误以为|誤以為|原|最初|起初|当初|當初|元々|もともと|원래|처음에는|기존|旧|舊|不是|ではなく|以前|예전")
_WORD_RE = re.compile(r"\w+")
_STEMS_BY_HEAD: dict[str, tuple[str, ...]] = {}
for _stem in _STEMS:
    _STEMS_BY_HEAD[_stem[:2]] = _STEMS_BY_HEAD.get(_stem[:2], ()) + (_stem,)


def _triggered(text: str) -> bool:
    if _OTHER_TRIGGER.search(text) if not text.isascii() else ("->" in text or "=>" in text or (
            "(" in text and _OTHER_TRIGGER.search(text) is not None)):
        return True
    for word in _WORD_RE.findall(text.casefold()):
        stems = _STEMS_BY_HEAD.get(word[:2])
        if stems is not None and word.startswith(stems):
            return True
    return False


def revisions(text: str, identifiers: tuple[tuple[str, IdentifierStance], ...] = ()) -> tuple[Revision, ...]:
    """The revisions one statement records (its own wording only; see `paired` for two statements)."""
    removed = any(stance is IdentifierStance.REMOVED for _, stance in identifiers)
    if not removed and not _triggered(text) or _FUTURE.search(_mask_code(text)):  # a `bpm?` in code asks nothing
        return ()
    out: list[Revision] = []
    # Someone else's words ("the vendor: \"we migrated from MySQL to Postgres\"") record no change of ours.
    quotes = [q.span() for q in _PROSE_QUOTE.finditer(text)] if '"' in text or "“" in text or "«" in text else []
    def quoted(m: re.Match[str]) -> bool:  # the change word itself (outside the values) is inside a quote
        values = [m.span(g) for g in ("old", "new") if g in m.re.groupindex and m.group(g) is not None]
        word = next((i for i in range(m.start(), m.end())
                     if text[i].isalpha() and not any(a <= i < b for a, b in values)), m.start())
        return any(a <= word < b for a, b in quotes)
    for pattern in _FROM_TO if _GATE_FROM_TO.search(text) else ():
        for m in pattern.finditer(text):
            if not quoted(m):
                _add(out, RevisionRule.FROM_TO, m.group("old"), m.group("new"))
    if not out and _GATE_FROM_TO.search(text):  # "changed from X" alone, when no "from X to Y" was read
        for pattern in _CHANGED_FROM_ONLY:
            for m in pattern.finditer(text):
                if not quoted(m):
                    _add(out, RevisionRule.FROM_TO, m.group("old"), "")
    for m in _ARROW_RE.finditer(text):
        found = _arrow(text, m)
        if found is not None:
            _add(out, RevisionRule.ARROW, *found)
    for m in _WAS_RE.finditer(text):
        old = m.group("old")
        if old.startswith("`"):
            spans = list(re.finditer(r"`[^`]+`", text[:m.start()]))
            new = _set_span(text, spans) if spans else _span_before(text, m.start())
        else:
            new = _span_before(text, m.start())
        _add(out, RevisionRule.WAS, old, new)
    for pattern in _REPLACED if _GATE_REPLACED.search(text) else ():
        for m in pattern.finditer(text):
            if not quoted(m) and not _routine(text, m.group(0)):
                _add(out, RevisionRule.REPLACED, m.group("old"), m.group("new"))
    if _GATE_INSTEAD.search(text) and _CHANGE_CUE.search(text) and not _CONDITION.search(text):
        for pattern in _INSTEAD:
            for m in pattern.finditer(text):
                _add(out, RevisionRule.INSTEAD, m.group("old"), m.group("new"))
    for pattern in _NOT if _GATE_NOT.search(text) else ():  # the negation is the wording itself
        for m in pattern.finditer(text):
            old = m.group("old")
            if specific_value(old):
                new = m.groupdict().get("new") or _span_before(text, _paren_start(text, m.start()))
                _add(out, RevisionRule.NOT, old, new or "")
    unquoted = _PROSE_QUOTE.sub(lambda q: " " * len(q.group(0)), text)
    for pattern in _NO_LONGER if _GATE_NO_LONGER.search(unquoted) else ():
        for m in pattern.finditer(unquoted):
            if specific_value(m.group("old")):
                _add(out, RevisionRule.NO_LONGER, m.group("old"), "")
    for ident, stance in identifiers:
        if stance is IdentifierStance.REMOVED and not any(ident in r.old for r in out):
            _add(out, RevisionRule.REMOVED, f"`{ident}`" if f"`{ident}`" in text else ident, "")
    for pattern in () if _CONDITION.search(text) or not _GATE_CORRECTION.search(unquoted) else _CORRECTION:
        m = pattern.search(unquoted)
        if m:
            old = m.groupdict().get("old") or ""
            new = _PAREN_ANY.sub(" ", text).strip() if old and m.group(0).startswith(("(", "（")) else ""
            new = re.sub(r"\s+", " ", new) if new else ""
            if old and _usable(old):
                _add(out, RevisionRule.CORRECTION, old, new if _usable(new) else "")
            else:  # the wording names no value: the statement itself is the correction
                out.append(Revision(RevisionRule.CORRECTION, "", text))
            break
    original, now = _ORIGINAL.search(text), _NOW.search(text)
    if original and now and now.start() > original.end():
        old = text[original.end():now.start()]
        quoted = re.search(_QUOTED, old)
        old = quoted.group(0) if quoted else _clip(old.strip(" ;,—-"))
        new = _span_after(text, now.end()) or _span_before(text, now.start())
        _add(out, RevisionRule.ORIGINAL_NOW, old if _usable(old) else "", new)
    return tuple(r for r in out if not _old_still_holds(text, r))


# A clause that keeps a value where it was or goes back to it: "laptops stay on Node 18", "Makefiles keep
# tabs", "then back to Heroku in May" (blind7). Said of a revision's old value, the change was scoped or
# undone: nothing was replaced.
_KEEPS = _re(r"\b(?:stay|stays|stayed|keep|keeps|kept|still|remain|remains|remained|unchanged|as before|back to|back on|"
             r"reverted to|returned to|bleib\w*|zurück|de vuelta|de nouveau|"
             r"weiterhin|noch|sigue|siguen|todavía|aún|reste|restent|toujours)\b|まま|그대로|여전히|仍|还是|還是|依然|保留")
_CLAUSE_END = re.compile(r"[;,.!?()（），；。！？]|\s[-\u2013\u2014]\s|\b(?:but|and|while|whereas)\b|但|しかし")


def _old_still_holds(text: str, revision: Revision) -> bool:
    """Whether the statement names the revision's old value again, after its new one, in a clause that
    keeps it: a change in one place that says where the old value still holds replaces nothing."""
    if not revision.old or not revision.new:
        return False
    start = text.find(revision.new, max(text.find(revision.old), 0))
    if start < 0:
        return False
    tail = text[start + len(revision.new):]
    for m in re.finditer(rf"(?<!\w){re.escape(revision.old)}(?!\w)", tail):
        before = [b.end() for b in _CLAUSE_END.finditer(tail, 0, m.start())]
        after = _CLAUSE_END.search(tail, m.end())
        clause = tail[before[-1] if before else 0: after.start() if after else len(tail)]
        if _KEEPS.search(clause):
            return True
    return False


# What a process does over and over ("the cache entry is replaced by a fresh one every 10 minutes", "the
# old key is replaced by the new key every 90 days", "placeholders are replaced with the user's name"):
# a routine, not a change of what holds (blind7).
_RECURRING = _re(r"\b(?:every|each|whenever|daily|nightly|hourly|weekly|automatically|jede[nrs]?|cada|chaque)\b"
                 r"|毎|매번|每")
_PRESENT_PASSIVE = _re(r"\b(?:is|are|gets|get)\s+(?:replaced|superseded)\b")
_NOW_WORD = _re(r"\bnow\b")


def _routine(text: str, wording: str) -> bool:
    return bool(_RECURRING.search(text)) or (bool(_PRESENT_PASSIVE.search(wording)) and not _NOW_WORD.search(text))


def _arrow(text: str, m: re.Match[str]) -> tuple[str, str] | None:
    """(old, new) of "X → Y" when a change word touches the arrow: "renamed X → Y", "moved X → Y",
    "X → Y (renamed)", "X → Y로 변경", "X → Yに変更", or a removal leading to a new count ("X entfernt →
    5 Presets"). Any other arrow is a flow or a consequence, not a revision."""
    old, new = _span_before(text, m.start()), _span_after(text, m.end())
    if not old or not new or _ARROW_CONDITION.search(old):
        return None  # "when X → do Y" is an instruction
    lead = _ARROW_LEAD.match(old)
    if lead:
        return lead.group("value"), new
    tail = _ARROW_TAIL.search(new)
    if tail and tail.start() > 0 and not _ARROW_RE.search(old + new[:tail.start()]):  # "A→B/C→D 전환": a mapping
        return old, new[:tail.start()]
    if re.match(r"\s*[(（]\s*(?:renamed|umbenannt|renombrad[oa]|renommée?|改名|更名|이름 변경)", text[m.end() + len(new):]):
        return old, new
    removed = _REMOVAL_END.search(old)
    if removed and removed.start() > 0 and new[:1].isdigit():
        return old[:removed.start()], new
    return None


_PAREN_ANY = re.compile(r"\s*[(（][^()（）]*[)）]")


def _paren_start(text: str, pos: int) -> int:
    """Where the parenthesis holding `pos` opens (the new value sits before it), else `pos`."""
    if pos < len(text) and text[pos] in "(（":
        return pos
    opened = max(text.rfind("(", 0, pos + 1), text.rfind("（", 0, pos + 1))
    closed = max(text.rfind(")", 0, pos + 1), text.rfind("）", 0, pos + 1))
    return opened if opened > closed else pos


_SPECIFIC = re.compile(r"`|[A-Z]|\d|[_./]")


def specific_value(value: str) -> bool:
    """A short value that names something: a code span, a name with a capital, a number, or a run of a
    script without spaces; a plain lower-case phrase ("local time") is not specific enough."""
    value = _clip(value)
    if not _usable(value) or len(value.split()) > 4:
        return False
    return _SPECIFIC.search(value) is not None or (has_unspaced(value) and len(value) >= 2) or any(
        "\uac00" <= ch <= "\ud7af" for ch in value)


def paired(texts: list[str]) -> list[tuple[int, int, Revision]]:
    """(older index, newer index, revision) for a statement that states an original plan or design
    ("Original plan: …", "the original design used …") and one of the next PAIR_REACH statements that
    states what holds now ("Current direction: …", "Now …", "The actual design (in place now) …")."""
    out: list[tuple[int, int, Revision]] = []
    for i, text in enumerate(texts):
        folded = text.casefold()
        if not any(head in folded for head in _ORIGINAL_HEADS):
            continue  # cheap: most statements name no original anything
        if not (_ORIGINAL_LEAD.search(text) or _ORIGINAL_INSIDE.search(text)) or _FUTURE.search(text):
            continue
        if _NOW.search(text):
            continue  # one statement says both: `revisions` reads it
        for j in range(i + 1, min(len(texts), i + 1 + PAIR_REACH)):
            if _NOW_LEAD.search(texts[j]) and not _FUTURE.search(texts[j]):
                out.append((i, j, Revision(RevisionRule.ORIGINAL_NOW, text, texts[j], older=i)))
                break
    return out
