"""Which language a statement is written in, and whether it negates what it says: precision first.

Invariant: a negator flips a stance only when the statement's language is known and the word is a
negator in that language (Spanish "no" is one, Portuguese "no" = "in the" is not). When unsure the
statement keeps its stated polarity: a plain statement is never evidence against anything.
"""

from __future__ import annotations

import enum
import re

from ontology.tokens import Script, script_counts


class Lang(enum.Enum):
    EN = "en"
    ES = "es"
    FR = "fr"
    DE = "de"
    PT = "pt"
    ZH = "zh"
    JA = "ja"
    KO = "ko"
    UNKNOWN = "unknown"


# Function words that mark a Latin-script language. Each list leaves out words shared with the
# others ("de", "la", "a", "que", "en"), so a hit is a vote for one language only.
_FUNCTION_WORDS: dict[Lang, frozenset[str]] = {
    Lang.EN: frozenset("the is are was were and of to in for with this that it be by from on an or "
                       "not never don't doesn't isn't we you should must when use used".split()),
    Lang.ES: frozenset("el los las del y es un una para por con se al está están son lo como pero "
                       "más sin hasta nunca también".split()),
    Lang.FR: frozenset("le les des du et est une pour dans sur pas avec au aux ce cette sont ne "
                       "n' qui jamais plus être".split()),
    Lang.DE: frozenset("der die das und ist nicht ein eine mit für auf den dem zu im von wird "
                       "sind kein keine auch noch bei nach".split()),
    Lang.PT: frozenset("o os do da dos é não um uma com em na ao à são foi "
                       "mais também".split()),  # not "no": it is Spanish for "not" as well
}
MIN_VOTES = 2  # fewer function-word hits than this and the language is not known
_MARGIN = 2  # the winner needs this many votes more than the runner-up

# Negators per language. English ones are not words in the other Latin languages of the corpus, so
# they also count when no other language is evident; "no" is ambiguous (pt/it "in the") and counts
# only where the language is known to use it as a negator.
_EN_ONLY = frozenset({"not", "never", "cannot", "nor", "avoid", "avoids", "avoided", "avoiding"})
ENGLISH_NEGATORS = _EN_ONLY | {"no"}
_NEGATORS: dict[Lang, frozenset[str]] = {
    Lang.EN: ENGLISH_NEGATORS,
    Lang.ES: frozenset({"no", "nunca", "jamás", "tampoco"}),
    Lang.FR: frozenset({"pas", "jamais", "aucun", "aucune"}),  # with "ne"/"n'", which is dropped too
    Lang.DE: frozenset({"nicht", "nie", "niemals", "kein", "keine", "keinen", "keinem", "keiner", "keines"}),
    Lang.PT: frozenset({"não", "nunca", "jamais"}),
}
_FR_NE = frozenset({"ne", "n'"})
# Multi-character cues for scripts written without spaces. Only forms that are negators wherever
# they occur: single characters such as 不/別/未 also sit inside non-negated words (不同 "different",
# 特别 "special", 未来 "future"), so they are left alone.
_UNSPACED_NEGATORS: dict[Lang, tuple[str, ...]] = {
    Lang.ZH: ("不要", "不再", "不能", "不会", "不會", "不得", "不可", "不用", "禁止", "没有", "沒有", "无需", "無需",
              "请勿", "請勿", "别再", "別再"),
    Lang.JA: ("しない", "しません", "ではない", "じゃない", "禁止", "してはいけない"),
}
_KO_NEGATORS = ("않", "금지")  # 하지 않다 "do not", 금지 "forbidden": inside a word, never elsewhere


# Negation words of languages this module has no rules for (Italian, Slavic, Nordic, Dutch, Romanian,
# Hungarian, Finnish, Turkish, Indonesian, Vietnamese, Greek, Arabic, Persian, Hebrew, Indic, Georgian,
# Basque). They never flip a stance (we cannot tell "not" from a homograph without the language's
# rules), but a statement holding one is never the near-duplicate of one without it: "Không dùng Redis"
# must not agree with "Dùng Redis" (NEGATION_CUE). A homograph only costs a merge, never a label.
_UNREAD_NEGATORS = frozenset(
    "non mai "  # it
    "не ни нет нельзя никогда ні ніколи немає нема "  # ru, uk, be, bg, sr, mk
    "nie nigdy ne nikdy nikad nikada nikoli nu niciodată "  # pl, cs, sk, hr, sr, sl, ro
    "niet geen nooit inte aldrig ej ikke aldri ei älä eivät nem soha "  # nl, sv, da, no, fi, hu
    "değil yok asla tidak tak bukan jangan không chưa đừng chẳng "  # tr, id, ms, vi
    "δεν μην όχι ποτέ لا ليس لم لن ممنوع نه نہیں مت לא אל אין אסור "  # el, ar, fa, ur, he
    "नहीं मत न नाही ना না নয় নেই இல்லை வேண்டாம் కాదు లేదు არ ნუ ez".split())  # hi, mr, bn, ta, te, ka, eu
# Turkish negates inside the verb ("kullanılmıyor", "yapmamalı", "gelmedi").
_UNREAD_SUFFIX_RE = re.compile(r"\w(?:m[ıiuü]yor|m[ae]mal[ıi]|m[ae]d[ıi]|m[ae]y[ıi]n)(?:\w*)$")
# Scripts written without spaces: Thai ไม่ "not", ห้าม "forbidden", อย่า "don't"; Lao; Khmer; Myanmar.
_UNREAD_UNSPACED = ("ไม่", "ห้าม", "อย่า", "ບໍ່", "ຫ້າມ", "ຢ່າ", "មិន", "កុំ", "ហាម", "မဟုတ်", "ဘူး")
# Signs that mark a line as not done, not to do, or retracted, in any language: a cross or prohibition
# emoji ("❌ Squash merges" in a don't-list) and a ~~struck-through~~ span. Read like an unread negator:
# never a stance, never the near-duplicate of the same words without it.
_NEGATIVE_SIGN_RE = re.compile("[\u274c\u274e\u2715\u2716\u2717\u2718\u26d4\U0001f6ab\U0001f645]|~~[^~\n]+~~")
# The same for the corpus languages, beyond the unambiguous cues that flip a stance above: a bare
# Chinese negator character, Japanese ない/ません/ず, Korean 안/못 as words, 없-, 마세요/말고.
_ZH_SIGNS = frozenset("不没沒别別未无無非勿")
_JA_CUES = ("ない", "ません", "ず", "ぬ")
_KO_WORDS = frozenset({"안", "못"})
_KO_PREFIXES = ("마세요", "말고", "말것", "말아")
NEGATION_CUE = "\u00ac"  # "¬": a token no text yields (not a word character), added by has_unread_negation


_VOTER: dict[str, Lang] = {w: lang for lang, fw in _FUNCTION_WORDS.items() for w in fw}
assert len(_VOTER) == sum(map(len, _FUNCTION_WORDS.values())), "a function word votes for one language"


def detect(text: str, words: list[str]) -> Lang:
    """The statement's language from its scripts, else from function-word votes (folded words)."""
    if not text.isascii():
        counts = script_counts(text)
        if counts.get(Script.KANA):
            return Lang.JA
        if counts.get(Script.HANGUL, 0) >= 2:
            return Lang.KO
        if counts.get(Script.HAN, 0) >= 2:
            return Lang.ZH
    votes: dict[Lang, int] = {}
    for word in words:
        lang = _VOTER.get(word)
        if lang is not None:
            votes[lang] = votes.get(lang, 0) + 1
    if not votes:
        return Lang.UNKNOWN
    ranked = sorted(votes.values(), reverse=True) + [0]
    if ranked[0] >= MIN_VOTES and ranked[0] - ranked[1] >= _MARGIN:
        return max(votes, key=lambda k: votes[k])
    return Lang.UNKNOWN


def has_unread_negation(lang: Lang, folded: str, words: list[str]) -> bool:
    """Whether a statement negates in a way the rules above do not read (`folded` text, its words
    after `strip_negation`): a negator of a language without rules, whatever the detected language
    (Italian with two Spanish-looking words is read as Spanish), a Thai/Lao/Khmer/Myanmar cue, or a
    negative sign (❌, 🚫, ~~struck~~) in any language."""
    if ("~~" in folded or not folded.isascii()) and _NEGATIVE_SIGN_RE.search(folded):
        return True
    if lang is Lang.ZH:  # a bare 不/没/未 … (不使用, 没备份) is no stance (不同, 未来), but keeps two apart
        return any(ch in _ZH_SIGNS for ch in folded)
    if lang is Lang.JA:
        return any(cue in folded for cue in _JA_CUES)
    if lang is Lang.KO:
        return any(w in _KO_WORDS or "없" in w or w.startswith(_KO_PREFIXES) for w in words)
    if folded.isascii():  # its words are ASCII: no suffix or unspaced cue to look for
        return not _UNREAD_NEGATORS.isdisjoint(words)
    if any(w in _UNREAD_NEGATORS or (not w.isascii() and _UNREAD_SUFFIX_RE.search(w)) for w in words):
        return True
    return any(cue in folded for cue in _UNREAD_UNSPACED)


def strip_negation(lang: Lang, words: list[str]) -> tuple[list[str], int]:
    """Words without their negators and the polarity they imply (+1 when nothing is negated)."""
    if lang in (Lang.ZH, Lang.JA):
        return words, 1  # handled on the folded text before segmentation (unspaced_negation)
    if lang is Lang.KO:
        kept = [w for w in words if not any(cue in w for cue in _KO_NEGATORS)]
        return kept, (-1 if len(kept) != len(words) else 1)
    negators = _NEGATORS.get(lang, _EN_ONLY if lang is Lang.UNKNOWN else frozenset())
    english = lang in (Lang.EN, Lang.UNKNOWN)
    # Most statements negate nothing: no negator, no "no" (longer), no word holding "n't". Then every word
    # is kept as `_stripped` keeps it (a Python step per word, for every statement).
    if english and "no" not in words and negators.isdisjoint(words):
        joined = "".join(words)
        if "'" not in joined:
            return words[:], 1
        if "n't" not in joined:
            return [word.replace("'", "") for word in words], 1
    return _stripped(lang, words, negators)


def _stripped(lang: Lang, words: list[str], negators: frozenset[str]) -> tuple[list[str], int]:
    """`strip_negation` for a Latin-script language, word by word."""
    english = lang in (Lang.EN, Lang.UNKNOWN)
    polarity, kept, i = 1, [], 0
    while i < len(words):
        word = words[i]
        if english and word == "no" and i + 1 < len(words) and words[i + 1] == "longer":
            polarity, i = -polarity, i + 2
            continue
        if lang is Lang.ES and word == "ya" and i + 1 < len(words) and words[i + 1] == "no":
            polarity, i = -polarity, i + 2
            continue
        if word in negators:
            polarity = -polarity
        elif english and word.endswith("n't"):
            polarity = -polarity
            kept.append({"won't": "will", "can't": "can", "shan't": "shall"}.get(word, word[:-3]))
        elif lang is Lang.FR and word in _FR_NE:
            pass  # the first half of ne ... pas; "pas"/"jamais" decides
        else:
            kept.append(word.replace("'", "") if english else word)
        i += 1
    return kept, polarity


def unspaced_negation(lang: Lang, folded: str) -> tuple[str, int]:
    """For Chinese and Japanese: the text without its unambiguous negation cues, and the polarity."""
    polarity = 1
    for cue in _UNSPACED_NEGATORS.get(lang, ()):
        if cue in folded:
            polarity = -1
            folded = folded.replace(cue, " ")
    return folded, polarity
