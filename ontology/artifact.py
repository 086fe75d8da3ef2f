"""The parsed shape of one ingested artifact: the boundary type everything past parsing works on.

Invariant: an `Artifact` is frozen and fully valid (decoded text, a known kind, a source identity);
raw dicts and half-valid input never travel past `ontology.parse`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping

from ontology import layout


class Kind(enum.Enum):
    MEMORY = "memory"  # Claude Code auto-memory topic file
    MEMORY_INDEX = "memory_index"  # MEMORY.md: lines of links, no frontmatter
    LEDGER = "ledger"  # session-ledger entry
    DOCUMENT = "document"  # anything else: generic markdown or text
    TOMBSTONE = "tombstone"  # a memory file is gone: its source's stances are withdrawn (ADR 0012)


class Channel(enum.Enum):
    """How an artifact reached the backend; recorded as provenance, never used for identity."""

    DROP = "drop"
    HTTP = "http"
    CLI = "cli"
    MCP = "mcp"


MEMORY_TYPES = frozenset({"user", "feedback", "project", "reference"})

def split_drop_name(name: str) -> tuple[Kind | None, str]:
    """(kind hint, original filename) from a drop-directory name; plain names carry no hint."""
    hint, original = layout.split_drop_name(name)
    return (Kind(hint) if hint in _HINTS else None), original


_HINTS = frozenset(kind.value for kind in Kind)


class ArtifactRejected(ValueError):
    """The artifact cannot be ingested; `reason` says why in words a person can act on."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Artifact:
    filename: str  # original name (drop prefix removed); part of the source identity
    sha256: str
    kind: Kind
    text: str  # decoded, BOM stripped, newlines normalized to \n
    body: str
    frontmatter: Mapping[str, object]
    source_identity: str  # independent source: versions of one artifact share it
    timestamp: str | None  # ISO 8601 from the artifact itself, when it states one
    name: str | None = None
    description: str | None = None
    memory_type: str | None = None
    notes: tuple[str, ...] = field(default=())  # parse warnings (fallbacks used), kept for provenance
    moved_from: str | None = None  # a move: the source identity this memory file carried before (ADR 0012)
    # The bytes as written when they are not the UTF-8 of `text` (a byte-order mark, CRLF line ends, another
    # encoding): the projection serves a memory file as its author wrote it (ADR 0005, "Session 14 (write14)").
    raw: bytes | None = field(default=None, repr=False, compare=False)
