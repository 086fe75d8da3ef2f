"""Render MEMORY.md within budget, by construction (docs/reference.md §8). Pure.

Invariant (render = charge): `render_memory` is the one function that decides what fits; it charges
every line's UTF-8 bytes (plus its newline) as it takes it, reserves the closing line before spending,
and cuts by priority, never by name: user and feedback rules first, then the host's own index in its
order (verbatim, marks appended), then ranked additions. Never more than MAX_LINES lines and MAX_BYTES
UTF-8 bytes, with one exception that adds nothing of ours: an author's index Claude Code would load whole
(`native_load`) that is more than MAX_BYTES is served whole, verbatim. Same snapshot, same bytes.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from projection.hostindex import Block, BlockKind, parse_index

# Claude Code loads the first 200 lines of MEMORY.md (trimmed), then cuts at the last newline within 25,000
# UTF-16 code units (JavaScript's string length: a CJK character is 1 unit and 3 UTF-8 bytes, an emoji 2 units
# and 4 bytes). Our budget is 200 lines and 24,000 UTF-8 bytes (the product's contract: under the harness's cap in
# any script, and within what a harness that counts bytes loads). An author's index the harness loads whole that
# is more than that is served whole, nothing of ours added (harm13, ADR 0005 "Session 13": counted in
# bytes, a Japanese index Claude Code loads whole lost 74 of its 191 lines to MEMORY.full.md).
MAX_LINES = 200
NATIVE_UNITS = 25_000
MAX_BYTES = 24_000
# Without a host index: share of the body kept for disputed claims, what native memory loses first.
DISPUTED_SHARE = 0.4
# With a host index the author's lines come first; the disputed section stays short above them.
INDEX_DISPUTED_MAX = 8
INDEX_DISPUTED_SHARE = 0.15
# One line of ours never takes more than this, so one huge gist cannot starve the rest (the host's
# own index lines are kept whole: they are the author's words).
MAX_LINE_BYTES = 400
RULE_TYPES = frozenset({"user", "feedback"})
RANKED_HEADINGS = ("## Rules: user and feedback memories", "## Memory, most grounded and connected first")
ADDITIONS_HEADING = "## Also in the knowledge graph (not in the index), ranked"
DISPUTED_HEADING = "## Disputed: sources disagree"
# What opens the lines only the projection writes (projection/indexedit.py takes them out of an edit).
HEADER_PREFIX = "> kgbridge ("
RANKED_TITLE_PREFIX = "# Memory: "
FOOTER_PREFIX = "_Not shown: "
FOOTER_TAIL = ("Every memory file is here under its own name (what other sources say about it at its end, where "
               "they say something); search with `kgbridge search` or MCP kg_search / kg_concept / kg_contested._")
# When the author's index does not fit, the whole of it is served under this name too (projection/view.py):
# under the mount MEMORY.md is ours, and an entry left out of it must stay readable, as on disk. An author's
# own file of that name stays theirs (write14): ours then takes the first free name of FULL_INDEX_NAMES, and
# the footer, which names it, is how a write to it is told from a write to the author's file.
FULL_INDEX_NAME = "MEMORY.full.md"
WHOLE_INDEX = "your whole index: "
_WHOLE_INDEX_RE = re.compile(re.escape(WHOLE_INDEX) + r"([^)\n]+\.md)\)")


def full_index_name(names: Iterable[str]) -> str:
    """The name the author's whole index is served under beside a cut MEMORY.md: FULL_INDEX_NAME, unless one of
    the folder's memory files `names` holds it (in any case), then the first of `MEMORY.full.kgbridge.md`,
    `MEMORY.full.kgbridge-2.md`, ... that none holds."""
    taken = {name.casefold() for name in names}
    for n in itertools.count(1):
        name = FULL_INDEX_NAME if n == 1 else "MEMORY.full.kgbridge.md" if n == 2 else f"MEMORY.full.kgbridge-{n - 1}.md"
        if name.casefold() not in taken:
            return name
    raise AssertionError("unreachable")
MARK_OPEN = " ⟨kg: "


@dataclass(frozen=True)
class ConceptLine:
    key: str
    file: str  # the topic file it links: the memory file's own name, else `<key>.md`
    title: str
    gist: str
    type: str  # memory type (user, feedback, project, reference, memory) or section / ledger / document
    marks: str = ""  # what other sources add ("2 disputed · 1 confirmed"); "" when nothing does

    @property
    def rule(self) -> bool:
        return self.type in RULE_TYPES


@dataclass(frozen=True)
class DisputedLine:
    file: str  # topic file of the concept it belongs to
    text: str
    status: str
    sides: str  # "for: a.md 2026-03-01 / against: b.md 2026-03-29": the sources, not their kinds


@dataclass(frozen=True)
class MemorySnapshot:
    ontology: str
    generated: str
    counts: dict[str, int]
    # Rules (user, feedback) first, then the rest, each ranked; with a host index only what it does not link.
    concepts: list[ConceptLine] = field(default_factory=list)
    disputed: list[DisputedLine] = field(default_factory=list)  # real disputes, most conflicted first
    host_index: str | None = None  # the newest MEMORY.md the host wrote, verbatim
    indexed: dict[str, ConceptLine] = field(default_factory=dict)  # file name an index line links -> its concept
    # (file name, index line stripped) -> the marks of that one line, where they are not its concept's
    # ("now says" goes on the line that states the old value only).
    line_marks: dict[tuple[str, str], str] = field(default_factory=dict)
    # How many there are in all, when the lists above were cut to what a MEMORY.md could ever show.
    concepts_total: int | None = None
    disputed_total: int | None = None
    full_index_name: str = FULL_INDEX_NAME  # where a cut MEMORY.md's footer sends the reader (full_index_name)

    @property
    def n_concepts(self) -> int:
        return len(self.concepts) if self.concepts_total is None else self.concepts_total

    @property
    def n_disputed(self) -> int:
        return len(self.disputed) if self.disputed_total is None else self.disputed_total


# Bidi isolates and embeddings the author opened, and what closes each (U+2069 PDI, U+202C PDF).
_BIDI_OPEN = {"\u2066": "\u2069", "\u2067": "\u2069", "\u2068": "\u2069", "\u202a": "\u202c", "\u202b": "\u202c",
              "\u202d": "\u202c", "\u202e": "\u202c"}


def _extends(ch: str) -> bool:
    """Whether `ch` belongs to the character before it as a reader sees it: a combining mark (Devanagari and
    Thai vowel signs, a decomposed accent), a joiner, a variation selector, a skin tone, an emoji tag, or a
    conjoining Hangul vowel or final (Korean saved decomposed, as macOS may)."""
    o = ord(ch)
    return (unicodedata.category(ch) in ("Mn", "Mc", "Me") or o == 0x200D or 0xFE00 <= o <= 0xFE0F
            or 0xE0100 <= o <= 0xE01EF or 0x1F3FB <= o <= 0x1F3FF or 0xE0020 <= o <= 0xE007F
            or 0x1160 <= o <= 0x11FF or 0xD7B0 <= o <= 0xD7FF)


def _binds_next(ch: str) -> bool:
    """Whether `ch` belongs with the character after it: a joiner, a virama, a Thai or Lao vowel written
    before its consonant."""
    o = ord(ch)
    return o == 0x200D or unicodedata.combining(ch) == 9 or 0x0E40 <= o <= 0x0E44 or 0x0EC0 <= o <= 0x0EC4


def _whole(line: str, end: int) -> str:
    """`line[:end]`, moved back to a boundary a reader sees (never inside a conjunct, an emoji sequence or a
    flag), with every bidi isolate or embedding it opens closed, so our text after it keeps its direction."""
    while 0 < end < len(line) and (_extends(line[end]) or _binds_next(line[end - 1])):
        end -= 1
    run = 0
    while run < end and 0x1F1E6 <= ord(line[end - 1 - run]) <= 0x1F1FF:  # regional indicators pair into flags
        run += 1
    end -= run % 2
    kept, closers = line[:end], []
    for ch in kept:
        if ch in _BIDI_OPEN:
            closers.append(_BIDI_OPEN[ch])
        elif closers and ch == closers[-1]:
            closers.pop()
    return kept + "".join(reversed(closers))


def clip(text: str, limit: int = MAX_LINE_BYTES) -> str:
    """One line of at most `limit` UTF-8 bytes, cut where a reader sees a character boundary (blind10: a
    Devanagari conjunct, an emoji sequence or a flag was cut in two, an RTL isolate left open)."""
    line = " ".join(text.split())
    data = line.encode("utf-8")
    if len(data) <= limit:
        return line
    cut = len(data[: limit - 3].decode("utf-8", "ignore"))
    closed = _whole(line, cut)
    while len(closed.encode("utf-8")) > limit - 3:  # the closers we added must fit too
        cut -= 1
        closed = _whole(line, cut)
    return closed + "…"


def utf16_units(text: str) -> int:
    """The length Claude Code measures MEMORY.md in: UTF-16 code units (an astral character counts 2)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


class _Budget:
    """Lines and size spent so far; every line is charged on its size (`measure`) as it is taken."""

    def __init__(self, lines: int, size: int, reserve: str, measure: Callable[[str], int] = utf8_bytes) -> None:
        self.measure = measure
        # The closing line is reserved up front, at its worst-case length.
        self.lines, self.bytes = lines - 1, size - self.cost(reserve)
        self.n_lines = 0
        self.used = 0

    def cost(self, line: str) -> int:
        return self.measure(line) + 1  # the newline that follows it

    def fits(self, lines: list[str] | tuple[str, ...], byte_cap: int | None = None, line_cap: int | None = None) -> bool:
        size = sum(self.cost(line) for line in lines)
        return (self.n_lines + len(lines) <= min(self.lines, line_cap if line_cap is not None else self.lines)
                and self.used + size <= min(self.bytes, byte_cap if byte_cap is not None else self.bytes))

    def take(self, lines: list[str] | tuple[str, ...]) -> None:
        self.n_lines += len(lines)
        self.used += sum(self.cost(line) for line in lines)


def _marks(marks: str) -> str:
    return f"{MARK_OPEN}{marks}⟩" if marks else ""


def _link_destination(name: str) -> str:
    """A file name as a link destination a Markdown reader follows: one with a space, a parenthesis or an
    angle bracket goes in `<…>` (CommonMark), its angle brackets escaped; `[x](release notes.md)` links
    nothing (judge11), and the index parser reads both forms (hostindex.link_targets)."""
    if not any(c.isspace() or c in "()<>" for c in name):
        return name
    return "<" + name.replace("<", "\\<").replace(">", "\\>") + ">"


def _concept_line(c: ConceptLine) -> str:
    gist = f" — {c.gist}" if c.gist else ""
    return clip(f"- [{c.title}]({_link_destination(c.file)}){gist}") + _marks(c.marks)


def _disputed_line(d: DisputedLine) -> str:
    return clip(f"- **{d.status}** “{d.text}” — {d.sides} (topic: {d.file})")


def _footer(hidden_entries: int, hidden_concepts: int, hidden_disputed: int, full_name: str = FULL_INDEX_NAME) -> str:
    """What was left out, if anything (never "0 concepts"), and where the rest is."""
    hidden = ", ".join(part for part, n in (
        (f"{hidden_entries} index entries ({WHOLE_INDEX}{full_name})", hidden_entries),
        (f"{hidden_concepts} concepts", hidden_concepts), (f"{hidden_disputed} disputed claims", hidden_disputed)) if n)
    return f"{FOOTER_PREFIX}{hidden}. {FOOTER_TAIL}" if hidden else f"_{FOOTER_TAIL}"


def _header(snap: MemorySnapshot, indexed: bool) -> list[str]:
    c = snap.counts
    if indexed:
        return [clip(f"{HEADER_PREFIX}{snap.ontology}): your index below, verbatim; ⟨kg: …⟩ marks what other sources "
                     f"add. {c.get('concepts', 0)} concepts, {snap.n_disputed} disputed claims; generated "
                     f"{snap.generated}.")]
    return [
        f"{RANKED_TITLE_PREFIX}{clip(snap.ontology, 120)} (kgbridge)",
        clip(f"{c.get('concepts', 0)} concepts · {c.get('assertions', 0)} claims · {snap.n_disputed} disputed · "
             f"generated {snap.generated}"),
        "Marks ⟨kg: …⟩ say what independent sources add (Dempster–Shafer); disputed claims name both sides.",
    ]


def index_cut(memory: str) -> bool:
    """True when this rendered MEMORY.md left entries of the author's index out (its footer says where)."""
    return full_index_named(memory) is not None


def full_index_named(memory: str) -> str | None:
    """The file a rendered MEMORY.md's footer names as the author's whole index (it left entries out), else None."""
    last = memory.rstrip("\n").rsplit("\n", 1)[-1]
    found = _WHOLE_INDEX_RE.search(last) if last.startswith(FOOTER_PREFIX) and last.endswith(FOOTER_TAIL) else None
    return found.group(1) if found else None


def native_load(memory: str, max_lines: int = MAX_LINES, max_units: int = NATIVE_UNITS) -> list[str]:
    """The lines Claude Code loads of a MEMORY.md it reads itself: the text trimmed, its first `max_lines`
    lines, then cut at the last newline within `max_units` UTF-16 code units (JavaScript's string length)."""
    lines = memory.strip().split("\n")[:max_lines]
    total = 0
    for i, line in enumerate(lines):
        total += utf16_units(line) + (1 if i else 0)
        if total > max_units:
            return lines[:i]
    return lines


def render_memory(snap: MemorySnapshot, max_lines: int = MAX_LINES, max_size: int = MAX_BYTES,
                  measure: Callable[[str], int] = utf8_bytes) -> str:
    """MEMORY.md within `max_lines` and `max_size` (`measure`: UTF-8 bytes unless told). The one exception, only
    for the MEMORY.md budget itself: an author's index Claude Code would load whole (`native_load`) but that is
    over our bytes is served whole, verbatim, with nothing of ours: the agent reads what it would have read
    without kgbridge. An index the harness cuts itself is cut by priority within our budget (rules first)."""
    if snap.host_index is not None and snap.host_index.strip():
        if (max_lines, max_size, measure) == (MAX_LINES, MAX_BYTES, utf8_bytes):
            index = snap.host_index.replace("\r\n", "\n").lstrip("\ufeff").strip()
            loaded = native_load(index)
            if len(loaded) == index.count("\n") + 1 and sum(utf8_bytes(line) + 1 for line in loaded) > max_size:
                return snap.host_index  # as written, to the last byte (write14); the view serves its bytes
        return _render_with_index(snap, max_lines, max_size, measure)
    return _render_ranked(snap, max_lines, max_size, measure)


def _take_disputed(snap: MemorySnapshot, budget: _Budget, shown: int, out: list[str], byte_cap: int,
                   line_cap: int, count_cap: int) -> int:
    """Append disputed lines from `shown` on while they fit the caps; returns how many are shown."""
    if shown == 0 and snap.disputed:
        first = ["", DISPUTED_HEADING, _disputed_line(snap.disputed[0])]
        if not budget.fits(first, byte_cap, line_cap):
            return 0
        budget.take(first)
        out += first
        shown = 1
    while shown < min(len(snap.disputed), count_cap):
        line = _disputed_line(snap.disputed[shown])
        if not budget.fits([line], byte_cap, line_cap):
            break
        budget.take([line])
        out.append(line)
        shown += 1
    return shown


def _take_concepts(concepts: list[ConceptLine], budget: _Budget, out: list[str],
                   headings: tuple[str, str] | None = None) -> int:
    """Take concept lines in order while they fit; a heading opens each run of rules and of the rest
    (the snapshot lists rules first), or one heading for all when `headings` is None."""
    shown = 0
    section = None
    for c in concepts:
        heading = ADDITIONS_HEADING if headings is None else headings[0] if c.rule else headings[1]
        lines = [_concept_line(c)] if heading == section else ["", heading, _concept_line(c)]
        if not budget.fits(lines):
            break
        budget.take(lines)
        out += lines
        section = heading
        shown += 1
    return shown


def _render_ranked(snap: MemorySnapshot, max_lines: int, max_bytes: int, measure: Callable[[str], int]) -> str:
    budget = _Budget(max_lines, max_bytes, _footer(0, snap.n_concepts, snap.n_disputed), measure)
    out: list[str] = []
    for line in _header(snap, indexed=False):
        if budget.fits([line]):
            budget.take([line])
            out.append(line)
    body_bytes, body_lines = budget.bytes - budget.used, budget.lines - budget.n_lines
    # 1. disputed, up to its reserved share
    shown_disputed = _take_disputed(snap, budget, 0, out, budget.used + int(body_bytes * DISPUTED_SHARE),
                                    budget.n_lines + 2 + int(body_lines * DISPUTED_SHARE), len(snap.disputed))
    # 2. rules first, then the rest, ranked, as many as fit
    shown = _take_concepts(snap.concepts, budget, out, RANKED_HEADINGS)
    # 3. leftover space goes back to disputed claims
    if shown == snap.n_concepts:
        shown_disputed = _take_disputed(snap, budget, shown_disputed, out, max_bytes, max_lines, len(snap.disputed))
    out.append(_footer(0, snap.n_concepts - shown, snap.n_disputed - shown_disputed))
    return "\n".join(out) + "\n"


def _entry_lines(block: Block, snap: MemorySnapshot) -> tuple[str, ...]:
    """The block's own lines; an entry whose file the evidence says something about gets a mark. A line
    that links several files names the file each mark is about."""
    if block.kind is not BlockKind.ENTRY:
        return block.lines
    line = block.lines[0].strip()
    marked = [(c, snap.line_marks.get((t, line), c.marks)) for t in block.targets
              if (c := snap.indexed.get(t)) is not None]
    marked = [(c, m) for c, m in marked if m]
    if not marked:
        return block.lines
    several = len(block.targets) > 1
    marks = " · ".join(m if not several or m.startswith(c.file) else f"{c.file}: {m}" for c, m in marked)
    return (block.lines[0] + _marks(marks), *block.lines[1:])


def _is_rule(block: Block, snap: MemorySnapshot) -> bool:
    if block.kind is not BlockKind.ENTRY:
        return False
    concepts = [snap.indexed.get(t) for t in block.targets]
    return block.rule_heading or any(c is not None and c.rule for c in concepts)


def _native_window(blocks: list[Block], max_lines: int, max_bytes: int, measure: Callable[[str], int]) -> int:
    """How many blocks open within the index's first `max_lines` lines and `max_bytes` (in `measure`): what a
    harness reading MEMORY.md itself would show of it."""
    lines = size = 0
    for n, b in enumerate(blocks):
        if lines >= max_lines or size >= max_bytes:
            return n
        lines += len(b.lines)
        size += sum(measure(line) + 1 for line in b.lines)
    return len(blocks)


def _render_with_index(snap: MemorySnapshot, max_lines: int, max_bytes: int, measure: Callable[[str], int]) -> str:
    blocks = parse_index(snap.host_index or "")
    lines = [_entry_lines(b, snap) for b in blocks]
    entries = [i for i, b in enumerate(blocks) if b.kind is BlockKind.ENTRY]
    # Two lines and bytes held back for the blank lines around the host's index (after the disputed
    # section, before the footer), so they are charged too.
    budget = _Budget(max_lines - 2, max_bytes - 2, _footer(len(entries), snap.n_concepts, snap.n_disputed, snap.full_index_name), measure)
    header = _header(snap, indexed=True)
    if budget.fits(header):
        budget.take(header)
    else:
        header = []
    # Each block carries the blank lines right before it; an entry carries its heading, once.
    lead: dict[int, list[int]] = {}
    heading_of: dict[int, int] = {}
    pending: list[int] = []
    last_heading: int | None = None
    for i, b in enumerate(blocks):
        if b.kind is BlockKind.BLANK:
            pending.append(i)
            continue
        lead[i], pending = pending, []
        if b.kind is BlockKind.HEADING:
            last_heading = i
        elif last_heading is not None:
            heading_of[i] = last_heading
    kept: set[int] = set()

    def group(i: int) -> list[int]:
        parts = []
        h = heading_of.get(i)
        if h is not None and h not in kept:
            parts += [*lead[h], h]
        return parts + [*lead[i], i]

    def keep(i: int) -> bool:
        ids = group(i)
        cost = [line for j in ids for line in lines[j]]
        if not budget.fits(cost):
            return False
        budget.take(cost)
        kept.update(ids)
        return True

    head: dict[int, int] = {}  # a block shown in part: how many of its first lines

    def keep_head(i: int) -> bool:
        """The first lines of a block too tall for what is left (a long table, a paragraph): as many as
        fit, whole lines, as a harness reading the file's first lines would show them."""
        ids = group(i)
        before = [line for j in ids[:-1] for line in lines[j]]
        n = 0
        while n < len(lines[i]) and budget.fits([*before, *lines[i][: n + 1]]):
            n += 1
        if n == 0:
            return False
        budget.take([*before, *lines[i][:n]])
        kept.update(ids)
        head[i] = n
        return True

    # 1. the rules an agent must follow, and the author's own lines (linking no file: they are nowhere
    # else) that a harness reading the file's first lines would show, in the index's order; 2. a short
    # disputed section, 3. the rest of the index in its order, 4. what the index does not link, ranked.
    window = _native_window(blocks, max_lines, max_bytes, measure)
    for i in entries:
        if _is_rule(blocks[i], snap) or (not blocks[i].targets and i < window):
            keep(i)
    disputed: list[str] = []
    shown_disputed = _take_disputed(snap, budget, 0, disputed, budget.used + int(max_bytes * INDEX_DISPUTED_SHARE),
                                    max_lines, INDEX_DISPUTED_MAX)
    partial = False  # only the first block that does not fit is shown in part: the index's order holds
    for i, b in enumerate(blocks):
        if i not in kept and b.kind is not BlockKind.BLANK and not keep(i) and not partial:
            partial = keep_head(i)
    additions: list[str] = []
    shown = _take_concepts(snap.concepts, budget, additions)
    body = [line for i in sorted(kept) for line in lines[i][: head.get(i, len(lines[i]))]]
    if blocks and len(blocks) - 1 in kept and len(blocks) - 1 not in head:  # the index shown to its end
        trailing = _trailing_blanks(snap.host_index or "")
        if trailing and budget.fits(trailing):
            budget.take(trailing)
            body += trailing
    hidden_entries = sum(1 for i in entries if i not in kept or i in head)
    footer = _footer(hidden_entries, snap.n_concepts - shown, snap.n_disputed - shown_disputed, snap.full_index_name)
    cut = head or any(i not in kept and b.kind is not BlockKind.BLANK for i, b in enumerate(blocks))
    if cut and _fits_natively(blocks, max_lines, max_bytes, measure):
        return _render_index_first(snap, blocks, lines, max_lines, max_bytes, measure)
    # The blank lines around the author's index are always ours, exactly "", so an edit of this MEMORY.md tells
    # them from the author's own blank or whitespace-only lines (indexedit.strip_projection; write14).
    out = header + disputed + ([""] if disputed and body else []) + body + additions
    if out:
        out.append("")
    return "\n".join([*out, footer]) + "\n"


def _trailing_blanks(index: str) -> list[str]:
    """The blank and whitespace-only lines that end the author's index (its final newline is not a line): kept
    as written after its last entry, not shown as our blank line (write14). `parse_index` leaves them out."""
    lines = index.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: list[str] = []
    while lines and not lines[-1].strip():
        out.append(lines.pop())
    return out[::-1] if lines else []


def _fits_natively(blocks: list[Block], max_lines: int, max_bytes: int, measure: Callable[[str], int]) -> bool:
    """The author's whole index is within our budget (`max_lines`, `max_bytes` in `measure`), so a harness reading
    MEMORY.md itself would show all of it. (One whose native load is over our budget never reaches here:
    `render_memory` serves that load.)"""
    plain = [line for b in blocks for line in b.lines]
    return len(plain) <= max_lines and sum(measure(line) + 1 for line in plain) <= max_bytes


def _render_index_first(snap: MemorySnapshot, blocks: list[Block], lines: list[tuple[str, ...]], max_lines: int,
                        max_bytes: int, measure: Callable[[str], int]) -> str:
    """An index the harness would show whole, but not with our lines around it (a 199-line index): every
    author line stays, since without kgbridge the agent would read them all. Marks are appended in the
    index's order while bytes remain, then our header and footer only if they still fit; no disputed
    section or additions (the footer counts them when it fits)."""
    def cost(line: str) -> int:
        return measure(line) + 1

    room_lines = max_lines - sum(len(b.lines) for b in blocks)
    room_bytes = max_bytes - sum(cost(line) for b in blocks for line in b.lines)  # < 0: the author's lines alone
    body: list[str] = []
    for b, own in zip(blocks, lines):
        extra = sum(cost(line) for line in own) - sum(cost(line) for line in b.lines)
        if own is not b.lines and extra <= room_bytes:
            body += own
            room_bytes -= extra
        else:
            body += b.lines
    header = _header(snap, indexed=True)
    if len(header) <= room_lines and sum(cost(line) for line in header) <= room_bytes:
        room_lines -= len(header)
        room_bytes -= sum(cost(line) for line in header)
    else:
        header = []
    trailing = _trailing_blanks(snap.host_index or "")
    if trailing and len(trailing) <= room_lines and sum(cost(line) for line in trailing) <= room_bytes:
        body += trailing
        room_lines -= len(trailing)
        room_bytes -= sum(cost(line) for line in trailing)
    tail = ["", _footer(0, snap.n_concepts, snap.n_disputed)] if body else [_footer(0, snap.n_concepts, snap.n_disputed)]
    if not (len(tail) <= room_lines and sum(cost(line) for line in tail) <= room_bytes):
        tail = []
    return "\n".join([*header, *body, *tail]) + "\n"
