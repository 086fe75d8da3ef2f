"""Ingest one artifact into one ontology: parse, archive, extract, apply; or reject with a reason.

Invariant: one writer per ontology, across threads and processes (a file lock around each artifact);
every input ends as exactly one of new / duplicate / rejected, and a rejection never affects other
artifacts. `rebuild` replays the archive log into a fresh database and swaps it in atomically.
"""

from __future__ import annotations

import enum
import hashlib
import os
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from filelock import FileLock

from ontology.archive import Archive, LogEntry
from ontology.artifact import ArtifactRejected, Channel
from ontology.extract import extract
from ontology.layout import OntologyPaths, UnsafeName, ontology_paths, validate_filename
from ontology.parse import parse_artifact
from ontology.schema import connect
from ontology.store import GraphWriter


class Status(enum.Enum):
    NEW = "new"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"


@dataclass(frozen=True)
class IngestResult:
    status: Status
    filename: str
    sha256: str
    reason: str | None = None
    kind: str | None = None
    version: int | None = None

    def to_json(self) -> dict[str, object]:
        return {"status": self.status.value, "filename": self.filename, "sha256": self.sha256,
                "reason": self.reason, "kind": self.kind, "version": self.version}


class OntologyMissing(LookupError):
    """The ontology has not been activated (its folder does not exist)."""


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Ontology:
    """One ontology on disk: its archive, its graph and its single writer."""

    def __init__(self, root: Path, slug: str, *, create: bool = False) -> None:
        self.paths: OntologyPaths = ontology_paths(root, slug)
        if create:
            self.paths.ingest.mkdir(parents=True, exist_ok=True)
        elif not self.paths.base.is_dir():
            raise OntologyMissing(f"ontology {slug!r} does not exist under {root}")
        self.archive = Archive(self.paths.archive, self.paths.rejected)
        self._thread_lock = threading.Lock()
        self._file_lock = FileLock(str(self.paths.lock))
        self._writer: GraphWriter | None = None

    @property
    def slug(self) -> str:
        return self.paths.slug

    @contextmanager
    def _exclusive(self) -> Iterator[GraphWriter]:
        with self._thread_lock, self._file_lock:
            if self._writer is None:
                self._writer = GraphWriter(connect(self.paths.database))
            yield self._writer

    def close(self) -> None:
        with self._thread_lock:
            if self._writer is not None:
                self._writer.conn.close()
                self._writer = None

    def ingest(self, filename: str, data: bytes, channel: Channel, received_at: str | None = None) -> IngestResult:
        received_at = received_at or utc_now()
        sha = hashlib.sha256(data).hexdigest()
        try:
            validate_filename(filename)
            artifact = parse_artifact(self.slug, filename, data)
        except (ArtifactRejected, UnsafeName) as exc:
            reason = exc.reason if isinstance(exc, ArtifactRejected) else str(exc)
            self.archive.reject(filename, data, reason, received_at, sha)
            return IngestResult(Status.REJECTED, filename, sha, reason=reason)
        extraction = extract(artifact)
        with self._exclusive() as writer:
            if writer.seen(artifact.source_identity, sha):
                return IngestResult(Status.DUPLICATE, artifact.filename, sha, kind=artifact.kind.value)
            self.archive.put(sha, data, LogEntry(sha, filename, channel.value, received_at))
            applied = writer.apply(artifact, extraction, channel.value, received_at)
        return IngestResult(Status.NEW, artifact.filename, sha, kind=artifact.kind.value, version=applied.version)

    def reject(self, filename: str, data: bytes, reason: str) -> IngestResult:
        """Keep an input we refused before parsing (e.g. a symlink) with its reason."""
        sha = hashlib.sha256(data).hexdigest()
        self.archive.reject(filename, data, reason, utc_now(), sha)
        return IngestResult(Status.REJECTED, filename, sha, reason=reason)

    def ingest_path(self, path: Path, channel: Channel = Channel.CLI) -> IngestResult:
        try:
            data = path.read_bytes()
        except OSError as exc:
            return IngestResult(Status.REJECTED, path.name, "", reason=f"cannot read: {exc.strerror}")
        return self.ingest(path.name, data, channel)

    @contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection inside one read transaction: a consistent snapshot."""
        if not self.paths.database.exists():
            with self._exclusive():
                pass  # creates the schema so readers of a new ontology see empty tables
        conn = connect(self.paths.database, readonly=True)
        try:
            conn.execute("BEGIN")
            yield conn
            conn.execute("COMMIT")
        finally:
            conn.close()

    def rebuild(self) -> int:
        """Regenerate the graph from the archive log; returns how many artifacts were applied."""
        target = self.paths.database
        fresh = target.with_name(target.name + ".rebuild")
        for leftover in (fresh, Path(f"{fresh}-wal"), Path(f"{fresh}-shm")):
            leftover.unlink(missing_ok=True)
        with self._thread_lock, self._file_lock:
            writer = GraphWriter(connect(fresh))
            applied = 0
            try:
                for entry in self.archive.entries():
                    artifact = parse_artifact(self.slug, entry.filename, self.archive.read(entry.sha256))
                    if writer.seen(artifact.source_identity, entry.sha256):
                        continue
                    writer.apply(artifact, extract(artifact), entry.channel, entry.received_at)
                    applied += 1
                writer.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                writer.conn.close()
            if self._writer is not None:
                self._writer.conn.close()
                self._writer = None
            for stale in (Path(f"{target}-wal"), Path(f"{target}-shm")):
                stale.unlink(missing_ok=True)
            os.replace(fresh, target)
        return applied


