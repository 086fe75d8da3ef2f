"""The archive: every accepted artifact verbatim (content-addressed) plus an append-only log, and
every rejected artifact with the reason it was refused.

Invariant: the archive is the source of truth. The log line of an artifact is written (and synced)
before the graph commits it, so a crash can only leave a line the graph lacks, which replaying the
log re-applies idempotently; it can never leave a graph row the archive cannot regenerate.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class LogEntry:
    sha256: str
    filename: str  # as received (a drop name keeps its kind hint)
    channel: str
    received_at: str


def atomic_write(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write via a uniquely named temporary file in the same directory, fsync, rename: readers see
    all or nothing, and concurrent writers never share a temporary file. Stdlib only (the hook uses it)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".tmp-{os.getpid()}-{time.monotonic_ns()}-{path.name}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def safe_component(name: str, limit: int = 120) -> str:
    """A name from outside made safe to use as one file name inside our folders."""
    cleaned = _UNSAFE_CHARS.sub("_", name).strip("._") or "unnamed"
    return cleaned[:limit]


class Archive:
    def __init__(self, base: Path, rejected: Path) -> None:
        self.base = base
        self.rejected_dir = rejected
        self.log_path = base / "log.jsonl"

    def blob_path(self, sha256: str) -> Path:
        return self.base / "objects" / sha256[:2] / sha256

    def put(self, sha256: str, data: bytes, entry: LogEntry) -> None:
        blob = self.blob_path(sha256)
        if not blob.exists():
            atomic_write(blob, data)
        self.base.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps(asdict(entry), sort_keys=True) + "\n")
            log.flush()
            os.fsync(log.fileno())

    def read(self, sha256: str) -> bytes:
        return self.blob_path(sha256).read_bytes()

    def entries(self) -> Iterator[LogEntry]:
        """Log entries in order; a torn last line (crash mid-append) is skipped, not fatal."""
        try:
            handle = open(self.log_path, encoding="utf-8")
        except FileNotFoundError:
            return
        with handle:
            for line in handle:
                try:
                    yield LogEntry(**json.loads(line))
                except (ValueError, TypeError):
                    continue

    def reject(self, filename: str, data: bytes, reason: str, received_at: str, sha256: str) -> Path:
        """Keep a refused artifact beside a file that says why; returns the kept artifact's path."""
        stamp = received_at.replace(":", "").replace("-", "")[:15]
        kept = self.rejected_dir / f"{stamp}-{sha256[:12]}-{safe_component(filename)}"
        atomic_write(kept, data)
        atomic_write(kept.with_name(kept.name + ".reason.json"),
                     json.dumps({"filename": filename, "reason": reason, "received_at": received_at,
                                 "sha256": sha256}, indent=2).encode())
        return kept
