"""The host's own MEMORY.md index, read into blocks the renderer can keep or cut whole. Pure.

Invariant: joining every block's lines gives the index back line for line (nothing reworded); a block
is a heading, a blank line, or an entry (a bullet with its indented continuation lines, or a run of
plain text), and knows the local file it links, if any, and the heading it sits under.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s")
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
# A link's destination: `<any name>` (CommonMark's form for a name with spaces), else a run with
# balanced parentheses (`report (1).md`), maybe followed by a title (`(a.md "About a")`).
_LINK_RE = re.compile(r"\[[^\]]*\]\((?:<([^<>\n]+)>|((?:[^()\n]|\([^()\n]*\))*))\)")
_TITLED = re.compile(r"(\S+)\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\))")
_WIKILINK_RE = re.compile(r"\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]")
# Headings (and file-name prefixes) under which an index lists the rules an agent must follow.
_RULE_WORDS = ("user", "feedback")


class BlockKind(enum.Enum):
    HEADING = "heading"
    BLANK = "blank"
    ENTRY = "entry"


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    lines: tuple[str, ...]
    target: str | None  # file name of the first local link (`feedback_x.md`), None when it links none
    heading: str  # the nearest heading above it ("" before the first)
    # Every local file it links, in order: one line may list several (`[a](a.md) · [b](b.md)`).
    targets: tuple[str, ...] = ()

    @property
    def rule_heading(self) -> bool:
        return any(word in self.heading.lower() for word in _RULE_WORDS)


def link_targets(line: str) -> tuple[str, ...]:
    """The local file names a line links to, markdown links first, then wikilinks, each once."""
    out: list[str] = []
    for angled, plain in _LINK_RE.findall(line):
        target = angled.strip() or _destination(plain.strip())
        if not target or "://" in target or target.startswith(("#", "mailto:")):
            continue
        name = PurePosixPath(target.split("#", 1)[0]).name
        if name:
            out.append(name if "." in name else f"{name}.md")
    out += [f"{wiki.strip()}.md" for wiki in _WIKILINK_RE.findall(line)]
    return tuple(dict.fromkeys(out))


def _destination(text: str) -> str:
    """A bare link destination: its first word when a title follows it; a name with spaces only when it
    names a markdown file (`[Release](🚀 release.md)`, as authors write it), since prose in parentheses
    after a bracket is no file."""
    titled = _TITLED.fullmatch(text)
    if titled:
        return titled.group(1)
    return text if not any(c.isspace() for c in text) or text.lower().endswith(".md") else ""


def link_target(line: str) -> str | None:
    """The file name a line links to first (markdown link to a local file, else a wikilink)."""
    targets = link_targets(line)
    return targets[0] if targets else None


def parse_index(text: str) -> list[Block]:
    blocks: list[Block] = []
    heading = ""
    current: list[str] = []

    def close() -> None:
        if current:
            targets = link_targets(" ".join(current))
            blocks.append(Block(BlockKind.ENTRY, tuple(current), targets[0] if targets else None, heading, targets))
            current.clear()

    for line in text.split("\n"):
        if not line.strip():
            close()
            blocks.append(Block(BlockKind.BLANK, (line,), None, heading))
        elif _HEADING_RE.match(line):
            close()
            heading = line.strip().lstrip("#").strip()
            blocks.append(Block(BlockKind.HEADING, (line,), None, heading))
        elif _BULLET_RE.match(line) or (current and not line[:1].isspace() and _BULLET_RE.match(current[0])):
            close()  # a new bullet, or plain text after a bullet: a new entry either way
            current.append(line)
        else:
            current.append(line)  # continuation of a wrapped bullet, or more of a plain paragraph
    close()
    while blocks and blocks[-1].kind is BlockKind.BLANK:  # the file's final newline is not a line
        blocks.pop()
    return blocks
