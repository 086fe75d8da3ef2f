"""The running backend's view of a knowledge root: which ontologies exist, one writer each, and the
observable state (/health) of every writer.

Invariant: every method is blocking and thread-safe; async callers run it in a worker thread. One
`Ontology` object (and so one writer) per slug for the life of the process. A writer's failure
(disk full, corrupt file) is recorded against that ontology only and cleared by its next success.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ontology.artifact import Channel
from ontology.errors import Conflict, Unavailable
from ontology.ingest import IngestResult, Ontology, OntologyMissing, Status
from ontology.layout import list_ontologies, ontology_paths

log = logging.getLogger(__name__)


@dataclass
class WriterState:
    ingested: int = 0
    duplicates: int = 0
    rejected: int = 0
    last_error: str | None = None
    last_error_at: float | None = None
    last_success_at: float | None = None


class OntologyExists(Conflict, FileExistsError):
    """Creating an ontology that already exists (HTTP 409)."""


class StorageUnavailable(Unavailable, OSError):
    """The ontology's disk refused a write (full, read-only): the artifact was not taken; retry later."""


@dataclass
class Backend:
    root: Path
    _ontologies: dict[str, Ontology] = field(default_factory=dict)
    _states: dict[str, WriterState] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _bases: dict[str, str] = field(default_factory=dict)  # slug -> its folder, for `exists`

    def __post_init__(self) -> None:
        (self.root / "ontology").mkdir(parents=True, exist_ok=True)

    def slugs(self) -> list[str]:
        return list_ontologies(self.root)

    def exists(self, slug: str) -> bool:
        """Whether the ontology's folder exists now. Called on the event loop for every request that
        names one, so an existing one's folder is remembered as a string: one `stat`, no Path objects
        (building its `OntologyPaths` was about 8 % of the loop's time per POST)."""
        base = self._bases.get(slug)
        if base is None:
            base = str(ontology_paths(self.root, slug).base)
            if not os.path.isdir(base):
                return False
            self._bases[slug] = base  # only existing ones: names that were never there are not kept
        return os.path.isdir(base)

    def get(self, slug: str) -> Ontology:
        """The ontology's single `Ontology` object; `OntologyMissing` if it was never activated."""
        with self._lock:
            onto = self._ontologies.get(slug)
            if onto is None:
                onto = Ontology(self.root, slug)  # validates the slug, raises OntologyMissing
                self._ontologies[slug] = onto
                self._states[slug] = WriterState()
            return onto

    def create(self, slug: str) -> Ontology:
        paths = ontology_paths(self.root, slug)
        with self._lock:
            if paths.base.is_dir():
                raise OntologyExists(f"ontology {slug!r} already exists")
            onto = Ontology(self.root, slug, create=True)
            self._ontologies[slug] = onto
            self._states[slug] = WriterState()
            return onto

    def ingest(self, slug: str, filename: str, data: bytes, channel: Channel) -> IngestResult:
        """One artifact (HTTP, MCP): concurrent callers share commits (group commit) and wait for a
        held writer a bounded time (`WriterBusy`), so they never pile up on one ontology."""
        return self._accounted(slug, lambda onto: [onto.ingest(filename, data, channel)])[0]

    def ingest_many(self, slug: str, items: list[tuple[str, bytes, Channel]]) -> list[IngestResult]:
        """Ingest a burst in batches; `StorageUnavailable` if the disk refused (nothing of the failed
        batch was taken)."""
        return self._accounted(slug, lambda onto: onto.ingest_many(items))

    def _accounted(self, slug: str, run: Callable[[Ontology], list[IngestResult]]) -> list[IngestResult]:
        onto = self.get(slug)
        state = self._states[slug]
        try:
            results = run(onto)
        except (OSError, sqlite3.Error) as exc:  # disk full, read-only fs: the artifacts stay where they were
            state.last_error, state.last_error_at = f"{type(exc).__name__}: {exc}", time.time()
            raise StorageUnavailable(f"cannot store artifacts in {slug!r}: {exc}") from exc
        state.last_success_at = time.time()
        state.last_error = None
        for result in results:
            if result.status is Status.NEW:
                state.ingested += 1
            elif result.status is Status.DUPLICATE:
                state.duplicates += 1
            else:
                state.rejected += 1
        return results

    def catch_up_in_background(self) -> threading.Thread:
        """Bring every ontology's graph up to its archive (a crash before commit, a deleted or
        outdated graph.db) without holding up start-up; writers that arrive meanwhile wait for it."""
        def run() -> None:
            for slug in self.slugs():
                try:
                    self.get(slug).catch_up()
                except Exception as exc:  # noqa: BLE001 - thread boundary: one ontology's failure is its own
                    self.record_error(slug, f"catch-up: {type(exc).__name__}: {exc}")
                    log.exception("catch-up of %s failed", slug)

        thread = threading.Thread(target=run, name="kgbridge-catch-up", daemon=True)
        thread.start()
        return thread

    def reject_drop(self, slug: str, name: str, kept: bytes, reason: str) -> None:
        """A drop file refused before parsing (symlink, FIFO, hard link, oversized, unreadable): its
        reason and a bounded prefix are kept as rejected."""
        self.get(slug).reject(name, kept, reason)
        self._states[slug].rejected += 1

    def record_error(self, slug: str, message: str) -> None:
        state = self._states.setdefault(slug, WriterState())
        state.last_error, state.last_error_at = message, time.time()

    def states(self) -> dict[str, WriterState]:
        with self._lock:
            return dict(self._states)

    def degraded_writers(self) -> list[str]:
        return sorted(slug for slug, state in self.states().items() if state.last_error)

    def close(self) -> None:
        with self._lock:
            for onto in self._ontologies.values():
                onto.close()


__all__ = ["Backend", "OntologyExists", "OntologyMissing", "WriterState"]
