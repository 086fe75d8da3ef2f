"""Watch every `<root>/ontology/*/ingest/` and feed complete files to the backend, exactly once.

Invariants: a file is ingested only after it has been quiet for `settle` seconds (close-after-write
and renamed-in events mark it; a bare create does not); temporary and dot files are ignored; after a
file is ingested (new, duplicate or rejected — the archive or rejected/ keeps a copy) it is removed
from ingest/, and a crash in between re-ingests it as a duplicate, never twice. If the backend
cannot write (disk full), the file stays and is retried. Each ontology has its own worker thread,
so one ontology's failure never stalls another. A periodic rescan catches events inotify dropped.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import (DirCreatedEvent, FileClosedEvent, FileMovedEvent, FileSystemEvent,
                             FileSystemEventHandler)
from watchdog.observers import Observer

from ontology.artifact import Channel
from ontology.backend import Backend
from ontology.ingest import BATCH_SIZE
from ontology.layout import SLUG_RE

log = logging.getLogger("kgbridge.watcher")

# A file must be quiet this long before it is read: long enough to coalesce a writer's bursts of
# close events, short enough that a hook's drop shows up within a second.
SETTLE_SECONDS = 0.25
# inotify drops events silently when its queue overflows; the rescan is the safety net.
RESCAN_SECONDS = 5.0
# After a write failure (disk full), wait before trying that file again.
RETRY_SECONDS = 2.0
_IGNORED_SUFFIXES = (".tmp", ".part", ".partial", ".swp", "~", ".crdownload")


def is_candidate(name: str) -> bool:
    return not name.startswith(".") and not name.endswith(_IGNORED_SUFFIXES)


@dataclass
class _Queue:
    """Pending files of one ontology: path -> time it becomes due."""

    due: dict[Path, float] = field(default_factory=dict)
    cond: threading.Condition = field(default_factory=threading.Condition)
    thread: threading.Thread | None = None


class DropWatcher(FileSystemEventHandler):
    def __init__(self, backend: Backend, *, settle: float = SETTLE_SECONDS, rescan: float = RESCAN_SECONDS) -> None:
        self.backend = backend
        self.base = backend.root / "ontology"
        self.settle = settle
        self.rescan_every = rescan
        self._queues: dict[str, _Queue] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._observer = Observer()
        self._rescanner = threading.Thread(target=self._rescan_loop, name="kg-rescan", daemon=True)
        self.last_error: str | None = None
        self.last_scan_at: float | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        self._observer.schedule(self, str(self.base), recursive=True)
        self._observer.start()
        self.scan()  # whatever was dropped while the server was down
        self._rescanner.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop watching; each worker finishes the artifact in hand, pending ones stay on disk."""
        self._stop.set()
        self._observer.stop()
        for queue in list(self._queues.values()):
            with queue.cond:
                queue.cond.notify_all()
        for queue in list(self._queues.values()):
            if queue.thread is not None:
                queue.thread.join(timeout)
        self._observer.join(timeout)

    def status(self) -> dict[str, object]:
        alive = self._observer.is_alive() and not self._stop.is_set()
        return {"running": alive, "queue_depth": sum(len(q.due) for q in self._queues.values()),
                "last_error": self.last_error, "last_scan_at": self.last_scan_at}

    @property
    def running(self) -> bool:
        return bool(self.status()["running"])

    # -- events ---------------------------------------------------------------------------------

    def _slug_of(self, path: Path) -> str | None:
        """The slug if `path` is a file directly inside `<base>/<slug>/ingest/`."""
        try:
            rel = path.relative_to(self.base)
        except ValueError:
            return None
        parts = rel.parts
        if len(parts) == 3 and parts[1] == "ingest" and SLUG_RE.match(parts[0]) and is_candidate(parts[2]):
            return parts[0]
        return None

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            if isinstance(event, FileClosedEvent):
                self._enqueue(Path(event.src_path))
            elif isinstance(event, FileMovedEvent):
                self._enqueue(Path(event.dest_path))
            elif isinstance(event, DirCreatedEvent):
                created = Path(event.src_path)
                # A new ontology (or its ingest/) appeared: files may already be inside.
                if created.parent == self.base or (created.name == "ingest" and created.parent.parent == self.base):
                    self._scan_dir(created if created.name == "ingest" else created / "ingest")
        except Exception as exc:  # noqa: BLE001 - watcher callback boundary: never kill the observer
            self.last_error = f"event {event!r}: {exc}"
            log.exception("watcher event failed")

    def _enqueue(self, path: Path, delay: float | None = None) -> None:
        slug = self._slug_of(path)
        if slug is None:
            return
        queue = self._queue(slug)
        with queue.cond:
            queue.due[path] = time.monotonic() + (self.settle if delay is None else delay)
            queue.cond.notify()

    def _queue(self, slug: str) -> _Queue:
        with self._lock:
            queue = self._queues.get(slug)
            if queue is None:
                queue = self._queues[slug] = _Queue()
                queue.thread = threading.Thread(target=self._work, args=(slug, queue), name=f"kg-writer-{slug}",
                                                daemon=True)
                queue.thread.start()
            return queue

    # -- scanning -------------------------------------------------------------------------------

    def _scan_dir(self, ingest: Path) -> None:
        try:
            entries = sorted(ingest.iterdir())
        except OSError:
            return
        for path in entries:
            if (path.is_file() or path.is_symlink()) and is_candidate(path.name):
                queue = self._queues.get(path.parent.parent.name)
                if queue is None or path not in queue.due:
                    self._enqueue(path)

    def scan(self) -> None:
        for slug in self.backend.slugs():
            self._scan_dir(self.base / slug / "ingest")
        self.last_scan_at = time.time()

    def _rescan_loop(self) -> None:
        while not self._stop.wait(self.rescan_every):
            try:
                self.scan()
            except Exception as exc:  # noqa: BLE001 - thread boundary
                self.last_error = f"rescan: {exc}"
                log.exception("rescan failed")

    # -- work -----------------------------------------------------------------------------------

    def _next(self, queue: _Queue) -> list[Path]:
        """The files that are due, oldest first, at most one batch; empty once stopping."""
        with queue.cond:
            while not self._stop.is_set():
                now = time.monotonic()
                ready = sorted((p for p, t in queue.due.items() if t <= now), key=lambda p: (queue.due[p], p.name))
                if ready:
                    batch = ready[:BATCH_SIZE]
                    for path in batch:
                        del queue.due[path]
                    return batch
                wait = min(queue.due.values()) - now if queue.due else None
                queue.cond.wait(wait)
        return []

    def _work(self, slug: str, queue: _Queue) -> None:
        while batch := self._next(queue):
            try:
                self._ingest_files(slug, batch)
            except Exception as exc:  # noqa: BLE001 - worker boundary: log, keep the files, go on
                self.last_error = f"{slug}: {exc}"
                self.backend.record_error(slug, self.last_error)
                log.exception("ingest of %d files into %s failed", len(batch), slug)
                for path in batch:
                    self._enqueue(path, delay=RETRY_SECONDS)

    def _ingest_files(self, slug: str, paths: list[Path]) -> None:
        """Ingest a burst in one batch (one transaction); each file is removed once it is archived or
        kept as rejected, and every file stays where it is if the batch fails."""
        taken: list[tuple[Path, bytes]] = []
        for path in paths:
            if path.is_symlink():  # never follow: it could point out of the knowledge root
                try:
                    target = os.readlink(path)
                except FileNotFoundError:
                    continue
                self.backend.reject_symlink(slug, path.name, target)
                path.unlink(missing_ok=True)
                continue
            try:
                before = path.stat()
                data = path.read_bytes()
                after = path.stat()
            except FileNotFoundError:
                continue  # taken already (a rescan raced an event)
            if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or after.st_size != len(data):
                self._enqueue(path)  # still being written: read it once it is quiet
                continue
            taken.append((path, data))
        if taken:
            self.backend.ingest_many(slug, [(path.name, data, Channel.DROP) for path, data in taken])
            for path, _ in taken:
                path.unlink(missing_ok=True)
