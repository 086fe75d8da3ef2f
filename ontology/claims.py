"""What is a claim: which lines of a markdown body can state something (ADR 0009).

Invariant: pure, line by line with a small amount of block state (fences, `$$`, indented code,
multi-line HTML comments).
Headings, label-only lines, link lists, code, formulas, table rows and HTML comments are never
claims; link lists still yield relations. Everything else is handed to extraction as text.
"""

from __future__ import annotations

import enum
import re


class LineKind(enum.Enum):
    TEXT = "text"  # may state something
    HEADING = "heading"
    LABEL = "label"  # "**How to apply:**", "Why：", "Done items:"
    LINK_LIST = "link list"  # "Related: [[a]], [[b]]", bare "[[a]] [[b]]", "- [[a]] — what a holds": relations
    FENCE = "fence"  # opens or closes a code block or a $$ block
    CODE = "code"  # inside a fence, an indented block, or a command line
    FORMULA = "formula"
    TABLE = "table"
    COMMENT = "comment"
    BLANK = "blank"
    TODO = "todo"  # an open task box ("- [ ] Switch writes"), with its wrapped lines: to do, not a fact


NOT_CLAIMS = frozenset(LineKind) - {LineKind.TEXT}
# A prose line this long that stops without a sentence end was cut at a wrap column: the next line goes on.
WRAPPED_LINE_CHARS = 40
_SENTENCE_ENDS = tuple(".!?:;。！？：；")

# Markdown shapes shared by extraction and display text (one definition each).
BULLET_RE = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")  # list marker, task box
# An open task box says the thing is still to do: "- [ ] Status page live" beside "- [x] Status page live"
# of a later session is no agreement, and a plan's open items are no facts (blind11).
_OPEN_TASK_RE = re.compile(r"^\s*(?:[-*+\u2022]|\d+[.)])\s+\[ \](?:\s|$)")
WIKILINK_RE = re.compile(r"\[\[([^\]|#]+)(?:[#|]([^\]]*))?\]\]")  # target, alias
MD_LINK_RE = re.compile(r"!?\[([^\]]*)\]\(([^)\s]*)[^)]*\)")  # title, target
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}(?:\s|$)")
_CODE_SPAN_RE = re.compile(r"(`+).+?\1")  # "`<!--`" names a comment marker, it opens none
_FENCE_RUN_RE = re.compile(r"`{3,}|~{3,}")  # a fence closes only on a bare run as long (CommonMark)
# A label: a short phrase ending in an ASCII or full-width colon, emphasis around either side.
_LABEL_RE = re.compile(r"^(?:\*\*|__)?\s*(?P<label>[^:：]{1,60}?)\s*(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*$")
_LINK_RE = re.compile(r"\[\[[^\]]*\]\]|!?\[[^\]]*\]\([^)]*\)|<https?://[^>]+>|https?://\S+")
# Words that introduce a list of links, in the corpus's languages.
_LINK_LEAD_RE = re.compile(
    r"^(?:\*\*|__)?\s*(?:related(?: notes?| memories| files?)?|see(?: also)?|also see|refs?|references?|links?|"
    r"voir(?: aussi)?|siehe(?: auch)?|ver(?: también)?|véase|relacionad[oa]s?|"
    r"相关|相關|关联|關聯|参见|參見|参照|関連|参考|관련|연관|참고)\s*(?:\*\*|__)?\s*[:：]?\s*(?:\*\*|__)?",
    re.IGNORECASE)
_LINK_FILLER_RE = re.compile(r"\b(?:and|or|et|und|y|e|also)\b|[\s,;、，/&+·|()\-–—.:：*_]+", re.IGNORECASE)
MIN_PROSE_CHARS = 12  # a link line with fewer word characters of its own is a list of links
# In any language: a short label ("Vedi anche:", "Zobacz też:", "Xem thêm:", "İlgili notlar:") and then
# only links to other notes ([[x]], x.md): the label is a lead word we do not know, not a subject.
_ANY_LEAD_RE = re.compile(r"^(?:\*\*|__)?[^\W\d][^:：\[\]()`.!?。]{0,38}?(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*(?=\[)")
_NOTE_LINK_RE = re.compile(r"\[\[[^\]]*\]\]|\[[^\]]*\]\((?!\w+:)[^)\s]*\.md(?:#[^)\s]*)?\)")
_FORMULA_RE = re.compile(r"\\(?:frac|sum|int|sqrt|cdot|times|leq|geq|mathbb|mathrm|mathcal|left|right|begin|end|"
                         r"alpha|beta|gamma|delta|lambda|sigma|theta|partial|infty|prod|hat|bar|vec)\b|\$\$")
_COMMAND_WORDS = ("sudo git npm npx pnpm yarn pip pip3 uv uvx cd ls cat python python3 bash sh zsh curl wget docker "
                  "kubectl ssh scp rsync chmod chown mkdir rm cp mv brew apt apt-get make cargo go node deno "
                  "systemctl journalctl export source gh az aws gcloud terraform ansible ansible-playbook").split()
_COMMAND_RE = re.compile(r"^(?:\$|PS>)\s+\S|^(?:" + "|".join(map(re.escape, _COMMAND_WORDS)) +
                         r")\s+(?=.*(?:\s--?[\w-]|\s&&\s|\s\|\s|\s>\s))")
_ONLY_CODE_RE = re.compile(r"^(`+)[^`]+\1[.;,]?$")


def strip_bullet(line: str) -> str:
    """`line` without its list marker: `BULLET_RE.sub("", line, count=1)`, read as one `match` (the pattern
    starts with `^` and has no MULTILINE, so only position 0 can match; `sub` tries every position)."""
    marker = BULLET_RE.match(line)
    return line[marker.end():] if marker is not None else line


def links_in(text: str) -> list[str]:
    """`_LINK_RE.findall(text)`: every branch of the pattern holds "[" or "http", so text with neither
    has none, and is not scanned position by position (this runs twice for every line)."""
    return _LINK_RE.findall(text) if "[" in text or "http" in text else []


def label_of(line: str) -> str | None:
    """The label of a label-only line ("**How to apply:**" -> "How to apply"), else None."""
    if ":" not in line and "：" not in line:
        return None  # the pattern needs one; most lines are prose, and its lazy scan is not cheap
    match = _LABEL_RE.match(strip_bullet(line).strip())
    if not match:
        return None
    label = match.group("label").strip().strip("*_").strip()
    if not label or label.count(" ") > 8 or label.endswith((".", "!", "?", "。")):
        return None
    return label


def is_link_list(line: str) -> bool:
    """A line that is mostly links or wikilinks (optionally after "Related:"/"相关："): relations."""
    text = strip_bullet(line).strip()
    links = links_in(text)
    if not links:  # a lead alone ("See also:") lists no link
        return False
    lead = _LINK_LEAD_RE.match(text)
    rest = _LINK_RE.sub(" ", text[lead.end():] if lead and lead.end() else text)
    prose = _LINK_FILLER_RE.sub("", rest)
    if lead and lead.end() and links:
        return len(prose) < MIN_PROSE_CHARS
    if links and (label := _ANY_LEAD_RE.match(text)) and len(label.group().split()) <= 4:
        after = text[label.end():]
        return len(_LINK_FILLER_RE.sub("", _NOTE_LINK_RE.sub(" ", after))) < 4
    return bool(links) and len(prose) < 4


_POINTER_SEPARATOR_RE = re.compile(r"\s*(?:[-\u2013\u2014]+|[:：])\s*\S")


def is_note_pointer(line: str) -> bool:
    """A list item that opens with a link to another note and says what that note holds ("- [[deploy-notes]]
    — how deploys run", a "Related" section): the other note's own words say it, as an index line's hook
    does in MEMORY.md. A relation, not a claim: two notes pointing at a third agreed with each other, and
    a reader learned nothing from it (judge11)."""
    if not BULLET_RE.match(line):
        return False
    text = strip_bullet(line)
    link = _NOTE_LINK_RE.match(text)
    return link is not None and _POINTER_SEPARATOR_RE.match(text, link.end()) is not None


def is_formula(line: str) -> bool:
    s = line.strip()
    return s.startswith(("\\[", "\\]", "\\(", "\\begin{", "\\end{")) or _FORMULA_RE.search(s) is not None


def is_command(line: str) -> bool:
    text = strip_bullet(line).strip()
    return _ONLY_CODE_RE.match(text) is not None or _COMMAND_RE.match(text) is not None


class LineClassifier:
    """Classifies the lines of one body in order (fences and indented blocks carry state)."""

    def __init__(self) -> None:
        self._fence: str | None = None  # "```", "~~~" or "$$" while inside such a block
        self._blank_before = True
        self._in_list = False
        self._in_indented_code = False
        self._in_comment = False  # inside a multi-line HTML comment (`<!--` … `-->` on a later line)
        self._open_sentence = False  # the line before was prose cut at a wrap column, mid-sentence
        self._label_item = False  # the line before was a list item holding only a label ("- Deploy target:")
        self._in_task = False  # inside an open task item: its indented lines go on with it

    def classify(self, raw: str) -> LineKind:
        kind = self._classify(raw)
        if kind is not LineKind.BLANK:
            self._in_task = kind is LineKind.TODO
            self._in_list = kind is LineKind.TEXT and (BULLET_RE.match(raw) is not None or
                                                       ((self._in_list or self._label_item) and raw[:1] in (" ", "\t")))
        self._blank_before = kind is LineKind.BLANK
        self._label_item = kind is LineKind.LABEL and BULLET_RE.match(raw) is not None
        tail = raw.strip().rstrip("*_`")
        self._open_sentence = kind is LineKind.TEXT and (  # a list item's text goes on on its indented lines
            self._in_list or (len(tail) >= WRAPPED_LINE_CHARS and not tail.endswith(_SENTENCE_ENDS)))
        return kind

    def _classify(self, raw: str) -> LineKind:
        line = raw.rstrip()
        stripped = line.strip()
        if self._in_comment:  # an author's hidden note, a commented-out setting: never a claim
            self._in_comment = "-->" not in stripped
            return LineKind.COMMENT
        if self._fence is None and "<!--" in stripped:
            bare = _CODE_SPAN_RE.sub("", stripped)
            opened = bare.rfind("<!--")
            self._in_comment = opened >= 0 and "-->" not in bare[opened:]
            if self._in_comment and not bare.startswith("<!--"):
                return LineKind.TEXT if bare[:opened].strip() else LineKind.COMMENT
        if self._fence is not None:
            closes = (stripped.endswith("$$") if self._fence == "$$" else  # CommonMark: the same character,
                      stripped.startswith(self._fence) and not stripped.strip(self._fence[0]))  # as long, bare
            if closes:
                self._fence = None
                return LineKind.FENCE
            return LineKind.FORMULA if self._fence == "$$" else LineKind.CODE
        if stripped.startswith(("```", "~~~")):
            self._fence = _FENCE_RUN_RE.match(stripped).group()  # "````md" holds "```" lines as its text
            return LineKind.FENCE
        if stripped.startswith("$$"):
            if not (len(stripped) > 2 and stripped.endswith("$$")):
                self._fence = "$$"
            return LineKind.FORMULA
        if not stripped:
            return LineKind.BLANK
        indented = line.startswith(("    ", "\t"))
        if self._in_indented_code and indented:
            return LineKind.CODE
        self._in_indented_code = False
        if indented and self._blank_before and not self._in_list and not BULLET_RE.match(line):
            self._in_indented_code = True
            return LineKind.CODE
        if _OPEN_TASK_RE.match(line) or (self._in_task and line[:1] in (" ", "\t") and not BULLET_RE.match(line)):
            return LineKind.TODO
        if _HEADING_RE.match(line):
            return LineKind.HEADING
        if stripped.startswith("|"):
            return LineKind.TABLE
        if stripped.startswith("<!--") or stripped.startswith("-->"):
            return LineKind.COMMENT
        if self._open_sentence and not BULLET_RE.match(line) and (not self._in_list or line[:1] in (" ", "\t")):
            # The rest of a hard-wrapped sentence ("... based on a stale" / "premise that was already
            # invalid. Instead:"), not a label, a command or a link list of its own (bench.metamorphic).
            return LineKind.TEXT
        if self._label_item and line[:1] in (" ", "\t") and not BULLET_RE.match(line):
            # A list item wrapped right after its colon ("- Deploy target:" / "  the staging cluster"):
            # CommonMark reads one paragraph, so the indented line is the item's value, not a label.
            return LineKind.TEXT
        if is_formula(stripped):
            return LineKind.FORMULA
        if is_link_list(stripped) or is_note_pointer(stripped):
            return LineKind.LINK_LIST
        if label_of(stripped) is not None:
            return LineKind.LABEL
        if is_command(stripped):
            return LineKind.CODE
        return LineKind.TEXT
