"""An agent's Write or Edit of the projected MEMORY.md, as the author's own index it stands for. Pure.

Invariant: only what the projection itself writes is taken out (its header, disputed section, ranked
sections, footer and the ⟨kg: …⟩ marks at the end of index lines); every line the agent wrote or kept
stays as written, in its order, so the next projection shows the author's index once, not ours twice.
"""

from __future__ import annotations

import difflib
import re

from projection.render import (ADDITIONS_HEADING, DISPUTED_HEADING, FOOTER_PREFIX, FOOTER_TAIL, HEADER_PREFIX,
                               MARK_OPEN, RANKED_HEADINGS, RANKED_TITLE_PREFIX)

_MARK = re.compile(re.escape(MARK_OPEN) + r"[^⟩\n]*⟩$")
_OUR_SECTIONS = (DISPUTED_HEADING, ADDITIONS_HEADING, *RANKED_HEADINGS)
_RANKED_LEAD = ("Marks ⟨kg: ", )  # the third line of a MEMORY.md rendered without a host index


def _ours(lines: list[str]) -> set[int]:
    """Indexes of the lines the projection wrote, with the blank line it puts before each section."""
    out: set[int] = set()
    if lines and lines[0].startswith(HEADER_PREFIX):
        out.add(0)
    if lines and lines[0].startswith(RANKED_TITLE_PREFIX) and lines[0].endswith("(kgbridge)"):
        out.update(range(min(3, len(lines))) if len(lines) > 2 and lines[2].startswith(_RANKED_LEAD) else {0})
    i = 0
    while i < len(lines):
        line = lines[i]
        if line in _OUR_SECTIONS:
            if i and lines[i - 1] == "":  # ours is exactly "": an author's whitespace-only line stays theirs
                out.add(i - 1)
            out.add(i)
            entry = "- **" if line == DISPUTED_HEADING else "- ["
            while i + 1 < len(lines) and lines[i + 1].startswith(entry):
                i += 1
                out.add(i)
            if line == DISPUTED_HEADING and i + 1 < len(lines) and lines[i + 1] == "":
                out.add(i + 1)  # the blank line between the disputed section and the index
        elif line.startswith(("_", FOOTER_PREFIX)) and line.endswith(FOOTER_TAIL):
            out.add(i)
            if i and lines[i - 1] == "":  # always ours (render puts one before the footer)
                out.add(i - 1)
        i += 1
    return out


def strip_projection(text: str) -> list[str]:
    """The author's lines of a MEMORY.md as the projection showed it (or as an agent rewrote it)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    ours = _ours(lines)
    return [_MARK.sub("", line) for i, line in enumerate(lines) if i not in ours]


def index_from_view(edited: str, shown: str = "", host: str | None = None) -> str:
    """The index an agent means to save: `edited` without the projection's lines. When the view it
    edited (`shown`) left some of the host's index out (over budget), the edit's changes are applied
    to the whole host index instead, so the entries the agent never saw are kept where they were."""
    own = strip_projection(edited)
    if host is None or not shown:
        return "\n".join(own) + "\n" if own else ""
    whole = host.split("\n")
    if whole and whole[-1] == "":
        whole.pop()
    seen = strip_projection(shown)
    # Where each line the agent saw sits in the whole index (the view keeps the index's order).
    at: list[int] = [-1] * len(seen)
    for block in difflib.SequenceMatcher(None, whole, seen, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            at[block.b + k] = block.a + k
    drop: set[int] = set()
    insert: dict[int, list[str]] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, seen, own, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        mapped = [at[i] for i in range(i1, i2) if at[i] >= 0]
        drop.update(mapped)
        if mapped:
            where = mapped[0]
        elif i1 == len(seen):  # after the last line it saw: at the end, as an agent appends a new entry
            where = len(whole)
        else:
            before = [at[i] for i in range(i1) if at[i] >= 0]
            where = before[-1] + 1 if before else 0
        insert.setdefault(where, []).extend(own[j1:j2])
    out: list[str] = []
    for n, line in enumerate(whole):
        out += insert.get(n, [])
        if n not in drop:
            out.append(line)
    out += insert.get(len(whole), [])
    return "\n".join(out) + "\n" if out else ""
