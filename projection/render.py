"""Render MEMORY.md within budget, by construction (CONTRACT §8), and the topic files. Pure.

Invariant (render = charge): `render_memory` is the one function that decides what fits; it charges
every line's UTF-8 bytes (plus its newline) against the budget as it appends it, reserves the
closing line before spending, and keeps a reserved share for disputed (CONTESTED / CONTRADICTORY)
assertions even when concepts crowd in. The result never exceeds MAX_LINES lines and MAX_BYTES
bytes. Same snapshot, same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Claude Code loads the first 200 lines or 25,000 characters of MEMORY.md; 24,000 bytes leaves
# margin for multi-byte characters and a harness that counts bytes.
MAX_LINES = 200
MAX_BYTES = 24_000
# Share of the body kept for disputed assertions: they are what native memory loses first.
DISPUTED_SHARE = 0.4
# One entry never takes more than this, so one huge gist cannot starve the rest.
MAX_LINE_BYTES = 400


@dataclass(frozen=True)
class ConceptLine:
    key: str
    title: str
    gist: str
    label: str  # dominant label of its assertions
    belief: float
    assertions: int


@dataclass(frozen=True)
class DisputedLine:
    concept: str
    text: str
    status: str
    n_for: int
    n_against: int
    belief: float
    plausibility: float
    sides: str  # short "for: a, b / against: c"


@dataclass(frozen=True)
class MemorySnapshot:
    ontology: str
    generated: str
    counts: dict[str, int]
    concepts: list[ConceptLine] = field(default_factory=list)  # ranked, best first
    disputed: list[DisputedLine] = field(default_factory=list)  # most conflicted first
    # How many there are in all, when the lists above were cut to what a MEMORY.md could ever show.
    concepts_total: int | None = None
    disputed_total: int | None = None

    @property
    def n_concepts(self) -> int:
        return len(self.concepts) if self.concepts_total is None else self.concepts_total

    @property
    def n_disputed(self) -> int:
        return len(self.disputed) if self.disputed_total is None else self.disputed_total


def clip(text: str, limit: int = MAX_LINE_BYTES) -> str:
    """One line of at most `limit` UTF-8 bytes, cut at a character boundary."""
    line = " ".join(text.split())
    data = line.encode("utf-8")
    if len(data) <= limit:
        return line
    return data[: limit - 3].decode("utf-8", "ignore") + "…"


class _Budget:
    """Lines and bytes spent so far; every line is charged on its encoded size as it is added."""

    def __init__(self, lines: int, size: int) -> None:
        self.lines, self.bytes = lines, size
        self.out: list[str] = []
        self.used = 0

    @staticmethod
    def cost(line: str) -> int:
        return len(line.encode("utf-8")) + 1  # the newline that follows it

    def fits(self, line: str, keep_lines: int = 0, keep_bytes: int = 0) -> bool:
        return len(self.out) + 1 + keep_lines <= self.lines and self.used + self.cost(line) + keep_bytes <= self.bytes

    def add(self, line: str) -> None:
        self.out.append(line)
        self.used += self.cost(line)


def _concept_line(c: ConceptLine) -> str:
    return clip(f"- [{c.title}]({c.key}.md) — {c.gist} · {c.label} · bel {c.belief:.2f} · {c.assertions} claims")


def _disputed_line(d: DisputedLine) -> str:
    return clip(f"- **{d.status}** {d.text} — {d.n_for} for / {d.n_against} against "
                f"(bel {d.belief:.2f}, pl {d.plausibility:.2f}; {d.sides}) → [{d.concept}]({d.concept}.md)")


def _footer(hidden_concepts: int, hidden_disputed: int) -> str:
    return (f"_Not shown: {hidden_concepts} concepts, {hidden_disputed} disputed claims. Every concept has a "
            f"topic file here (<key>.md); search with `kgbridge search` or MCP kg_search / kg_concept / kg_contested._")


def render_memory(snap: MemorySnapshot, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> str:
    budget = _Budget(max_lines, max_bytes)
    c = snap.counts
    header = [
        f"# Memory: {clip(snap.ontology, 120)} (kgbridge)",
        clip(f"{c.get('concepts', 0)} concepts · {c.get('assertions', 0)} claims · {c.get('CONTESTED', 0)} contested · "
             f"{c.get('CONTRADICTORY', 0)} contradictory · {c.get('AFFIRMATIVE', 0)} affirmed · generated {snap.generated}"),
        "Labels come from independent sources (Dempster–Shafer); disputed claims keep both sides.",
    ]
    footer_worst = _footer(snap.n_concepts, snap.n_disputed)
    keep_lines, keep_bytes = 1, budget.cost(footer_worst)
    for line in header:
        if budget.fits(line, keep_lines, keep_bytes):
            budget.add(line)

    shown_disputed = 0
    shown_concepts = 0
    section_cost = 2  # a blank line and a heading per section

    def add_disputed(limit_bytes: int, limit_lines: int) -> None:
        nonlocal shown_disputed
        if shown_disputed == 0 and snap.disputed:
            for line in ("", "## Disputed: the evidence disagrees"):
                if budget.fits(line, keep_lines, keep_bytes):
                    budget.add(line)
        while shown_disputed < len(snap.disputed):
            line = _disputed_line(snap.disputed[shown_disputed])
            if budget.used + budget.cost(line) > limit_bytes or len(budget.out) + 1 > limit_lines:
                return
            if not budget.fits(line, keep_lines, keep_bytes):
                return
            budget.add(line)
            shown_disputed += 1

    body_bytes = max_bytes - budget.used - keep_bytes
    body_lines = max_lines - len(budget.out) - keep_lines
    # 1. disputed, up to its reserved share
    add_disputed(budget.used + int(body_bytes * DISPUTED_SHARE), len(budget.out) + section_cost + int(body_lines * DISPUTED_SHARE))
    # 2. concepts, as many as fit in what is left
    if snap.concepts:
        for line in ("", "## Concepts, most grounded and connected first"):
            if budget.fits(line, keep_lines + 1, keep_bytes):
                budget.add(line)
        while shown_concepts < len(snap.concepts):
            line = _concept_line(snap.concepts[shown_concepts])
            if not budget.fits(line, keep_lines, keep_bytes):
                break
            budget.add(line)
            shown_concepts += 1
    # 3. leftover space goes back to disputed claims
    if shown_concepts == snap.n_concepts:
        add_disputed(max_bytes, max_lines)
    budget.out.append(_footer(snap.n_concepts - shown_concepts, snap.n_disputed - shown_disputed))
    return "\n".join(budget.out) + "\n"


def render_topic(concept: dict) -> str:
    """One concept's topic file: frontmatter, assertions by label with evidence, shifts, relations."""
    labels = ("CONTESTED", "CONTRADICTORY", "AFFIRMATIVE", "INSUFFICIENT_DATA")
    by_label: dict[str, list[dict]] = {label: [] for label in labels}
    for a in concept["assertions"]:
        by_label.setdefault(a["status"], []).append(a)
    desc = (concept.get("description") or concept.get("title") or concept["key"]).replace('"', "'")
    lines = ["---", f"name: {concept['key']}", f'description: "{clip(desc, 300)}"', f"type: {concept['type']}"]
    lines += [f"{label.lower()}: {len(by_label[label])}" for label in labels]
    lines += ["---", f"# {concept.get('title') or concept['name']}", ""]
    if concept.get("description"):
        lines += [concept["description"], ""]
    for label in labels:
        if not by_label[label]:
            continue
        lines.append(f"## {label} ({len(by_label[label])})")
        for a in by_label[label]:
            lines.append(f"- {a['text']}  ")
            lines.append(f"  bel {a['belief']:.2f} · pl {a['plausibility']:.2f} · conflict {a['conflict']:.2f} · "
                         f"{a['n_for']} for / {a['n_against']} against")
            for s in a["sources"]:
                implied = " (implied by an alternative)" if s["implied"] else ""
                lines.append(f"  - {s['stance']}: {s['source_kind']} `{s['source']}` v{s['version']} "
                             f"{s['timestamp'][:10]}{implied}: {clip(s['text'], 200)}")
            shifts = [h for h in a.get("history", [])]
            if len({(h["source"], h["stance"]) for h in shifts}) > len({h["source"] for h in shifts}):
                lines.append("  - history: " + "; ".join(
                    f"{h['source']} v{h['version']} {h['stance']}" for h in shifts))
        lines.append("")
    rel = concept.get("relations", {})
    links = sorted({r["concept"] for r in rel.get("out", [])} | {r["concept"] for r in rel.get("in", [])})
    if links:
        lines.append("## Related")
        lines += [f"- [{key}]({key}.md)" for key in links]
    return "\n".join(lines).rstrip() + "\n"


_LABEL_COUNTS = ("contested:", "contradictory:", "affirmative:", "insufficient_data:")


def _topic_parts(text: str) -> tuple[dict[str, str], list[tuple[str, list[str]]]] | None:
    """(frontmatter, [(assertion text, its indented evidence lines)]) of a rendered topic file."""
    if not text.startswith("---\n"):
        return None
    head, sep, body = text[4:].partition("\n---\n")
    if not sep or not all(any(ln.startswith(k) for ln in head.split("\n")) for k in _LABEL_COUNTS):
        return None  # not one of our topic files
    meta = {k.strip(): v.strip().strip('"') for k, _, v in (ln.partition(":") for ln in head.split("\n"))}
    blocks: list[tuple[str, list[str]]] = []
    section = ""
    for line in body.split("\n"):
        if line.startswith("## "):
            section = line
        elif line.startswith("- ") and section and not section.startswith("## Related"):
            blocks.append((line[2:].rstrip(), []))
        elif line.startswith("  ") and blocks:
            blocks[-1][1].append(line)
    return meta, blocks


def topic_to_memory(original: str, edited: str, source: str) -> str | None:
    """An edit made to a projected topic file, as the memory file its source now says.

    Keeps the claims `source` itself supported that the edit left alone, plus every claim the edit
    added or reworded; drops the evidence lines and other sources' claims (they are not this file's
    to restate), so saving through the projection neither inflates evidence nor loses the change.
    None when `original` is not a rendered topic file.
    """
    before, after = _topic_parts(original), _topic_parts(edited)
    if before is None or after is None:
        return None
    meta, blocks = after
    old_texts = {text for text, _ in before[1]}
    kept = [text for text, evidence in blocks
            if text not in old_texts or any(ln.strip().startswith("- for:") and f"`{source}`" in ln for ln in evidence)]
    head = [f"name: {meta.get('name', '')}", f'description: "{meta.get("description", "")}"', f"type: {meta.get('type', 'project')}"]
    return "---\n" + "\n".join(head) + "\n---\n" + "".join(f"- {text}\n" for text in kept)
