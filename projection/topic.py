"""Topic files: a memory file's own newest text plus a short evidence appendix, or a generated page
for a concept learned from other channels (ledger, documents). Pure, standard library only.

Invariant: a memory file's topic starts with its newest version exactly as written (and is only that
when no other source speaks to it and it has one version); everything from APPENDIX_MARKER on is
ours, so `strip_appendix` of what the agent saw (edited or not) is the file as the agent means to
save it: an edit through the mount becomes the next version of that same file.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from projection.render import clip

APPENDIX_MARKER = ("<!-- kgbridge: what other sources say, added by the projection. Edits above this line are "
                   "saved as this file's next version. -->")
# The appendix informs, it does not bury the file: at most this many claims of other sources, the
# rest is one MCP call away.
MAX_VOICES = 12
MAX_DROPPED = 6
CLAIM_CHARS = 160


class Stand(enum.Enum):
    """How another source stands to a claim of this file (or of its subject)."""

    AGREES = "agrees"  # states the same claim
    DISPUTES = "disputes"  # states the opposite or another value, on the same day or earlier
    SUPERSEDES = "supersedes"  # states the opposite or another value, on a later day than this file (both stated)
    ADDS = "adds"  # a claim about this subject this file does not make


@dataclass(frozen=True)
class Voice:
    stand: Stand
    claim: str  # the claim as worded in the graph
    said: str  # what the other source said
    source: str  # display name: a file name, `ledger <session>`, a document name
    date: str  # YYYY-MM-DD: the day the source states, else the day it arrived (`stated` False)
    stated: bool = True


def said_on(date: str | None, received: str) -> str:
    """A date as the agent is shown it: the day the source states; else the day it arrived, labelled
    so (a file ingested today says nothing about when it was written: ADR 0009)."""
    return date[:10] if date else f"undated, received {received[:10]}"


@dataclass(frozen=True)
class MemoryTopic:
    filename: str
    key: str  # concept key (MCP kg_concept)
    text: str  # the newest version, as written
    voices: list[Voice] = field(default_factory=list)
    versions: list[tuple[int, str]] = field(default_factory=list)  # (version, date), newest first
    dropped: list[tuple[int, str]] = field(default_factory=list)  # claims earlier versions made, no longer made
    own_claims: int = 0  # claims no other source speaks to
    raw: bytes | None = None  # the file's bytes as written, where they are not the UTF-8 of `text` (BOM, CRLF)


def _quote(text: str) -> str:
    return f"“{clip(text, CLAIM_CHARS)}”"


def render_memory_topic(t: MemoryTopic) -> str:
    """The file as written, then the appendix only when it has something to say: a file no other source
    speaks to, in its only version, is shown exactly as written (a line saying so would be noise)."""
    if not t.voices and len(t.versions) <= 1:
        return t.text
    lines = [APPENDIX_MARKER]
    if t.voices:
        lines.append("## Evidence from other sources (kgbridge)")
    for v in t.voices[:MAX_VOICES]:
        lines.append(f"- {v.source} ({said_on(v.date if v.stated else None, v.date)}) {v.stand.value}: {_quote(v.said)}"
                     + ("" if v.stand is Stand.ADDS or v.said == v.claim else f" on {_quote(v.claim)}"))
    if len(t.voices) > MAX_VOICES:
        lines.append(f"- … {len(t.voices) - MAX_VOICES} more: MCP kg_concept `{t.key}` or `kgbridge search`.")
    if len(t.versions) > 1:
        lines += ["", "## Earlier versions",
                  "- " + " · ".join(f"v{n} {date}" + (" (shown above)" if i == 0 else "")
                                    for i, (n, date) in enumerate(t.versions))]
        # A claim the newest version still states word for word (a line the author extended: "Sam keeps
        # `CoreSync`" -> "Sam keeps `CoreSync` and its Kotlin port") is not one it no longer says.
        withdrawn = [(n, text) for n, text in t.dropped if text not in t.text]
        lines += [f"- no longer says (since v{n}): {_quote(text)}" for n, text in withdrawn[:MAX_DROPPED]]
    # The file's text exactly as written, then one line break before the appendix: a blank line when the file
    # ends with its own, none when it ends without one, so `strip_appendix` gives back exactly the file (write14).
    return t.text + "\n" + "\n".join(lines) + "\n"


def memory_topic_bytes(t: MemoryTopic) -> bytes:
    """The topic file's bytes: the memory file as its author wrote it (a byte-order mark, CRLF line ends and
    a missing final newline kept), then the appendix, in the file's line ends."""
    shown = render_memory_topic(t)
    if t.raw is None:
        return shown.encode("utf-8")
    if shown == t.text:
        return t.raw
    try:
        own = t.raw.decode("utf-8")
    except UnicodeDecodeError:  # another encoding: what it says, in UTF-8, as before
        return shown.encode("utf-8")
    return (own + shown[len(t.text):].replace("\n", "\r\n" if "\r\n" in own else "\n")).encode("utf-8")


def strip_appendix(text: str) -> str | None:
    """The memory file an agent's view of a topic file stands for, or None if it has no appendix: what is
    above the marker but the one line break `render_memory_topic` put there."""
    at = text.rfind(APPENDIX_MARKER)
    if at < 0:
        return None
    head = text[:at]
    return head[:-2] if head.endswith("\r\n") else head[:-1] if head.endswith("\n") else head


def render_topic(concept: dict, files: dict[str, str] | None = None) -> str:
    """A concept without a memory file of its own: frontmatter, assertions by label with evidence,
    shifts, relations (linked by the memory file's own name where the related concept has one)."""
    files = files or {}
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
            for u in a.get("superseded_by", []):
                lines.append(f"  - superseded by: {clip(u['by'], 200)} (`{u['source']}`, {said_on(u['date'], u['received'])})")
            shifts = [h for h in a.get("history", [])]
            if len({(h["source"], h["stance"]) for h in shifts}) > len({h["source"] for h in shifts}):
                lines.append("  - history: " + "; ".join(
                    f"{h['source']} v{h['version']} {h['stance']}" for h in shifts))
        lines.append("")
    rel = concept.get("relations", {})
    links = sorted({r["concept"] for r in rel.get("out", [])} | {r["concept"] for r in rel.get("in", [])})
    if links:
        lines.append("## Related")
        lines += [f"- [{key}]({files.get(key, key + '.md')})" for key in links]
    return "\n".join(lines).rstrip() + "\n"


_LABEL_COUNTS = ("contested:", "contradictory:", "affirmative:", "insufficient_data:")


def _topic_parts(text: str) -> tuple[dict[str, str], list[tuple[str, list[str]]]] | None:
    """(frontmatter, [(assertion text, its indented evidence lines)]) of a generated topic file."""
    if not text.startswith("---\n"):
        return None
    head, sep, body = text[4:].partition("\n---\n")
    if not sep or not all(any(ln.startswith(k) for ln in head.split("\n")) for k in _LABEL_COUNTS):
        return None  # not one of our generated topic files
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
    """What an agent's Edit or Write of a projected topic file saves, as the memory file it stands for.

    A memory file's topic (its own text plus our appendix): the text above the appendix, i.e. the
    file's next version. A generated topic (a concept from other channels): the claims `source` itself
    supported that the edit left alone, plus every claim the edit added or reworded; evidence lines and
    other sources' claims are dropped (restating them would count this file as their source). None when
    `edited` is neither.
    """
    own = strip_appendix(edited)
    if own is not None:
        return own
    before, after = _topic_parts(original), _topic_parts(edited)
    if before is None or after is None:
        return None
    meta, blocks = after
    old_texts = {text for text, _ in before[1]}
    kept = [text for text, evidence in blocks
            if text not in old_texts or any(ln.strip().startswith("- for:") and f"`{source}`" in ln for ln in evidence)]
    head = [f"name: {meta.get('name', '')}", f'description: "{meta.get("description", "")}"', f"type: {meta.get('type', 'project')}"]
    return "---\n" + "\n".join(head) + "\n---\n" + "".join(f"- {text}\n" for text in kept)
