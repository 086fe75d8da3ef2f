"""Watch every `<root>/ontology/*/ingest/` and feed complete files to the backend, exactly once.

Invariants: a file is ingested only after it has been quiet for `settle` seconds (close-after-write
and renamed-in events mark it; a bare create does not); temporary and dot files are ignored; after a
file is ingested (new, duplicate or rejected — the archive or rejected/ keeps a copy) it is removed
from ingest/ unless it changed after the read, and a crash in between re-ingests it as a
duplicate, never twice. If the backend cannot write (disk full), the file stays and is retried.
Each ontology has its own worker thread, so one ontology's failure never stalls another. A periodic
rescan catches events inotify dropped, reading only files quiet for `QUIET_SECONDS`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import (DirCreatedEvent, FileClosedEvent, FileMovedEvent, FileSystemEvent,
                             FileSystemEventHandler)
from watchdog.observers import Observer

from ontology.artifact import Channel
from ontology.backend import Backend
from ontology.dropfile import DropRead, DropRefused, read_drop
from ontology.ingest import BATCH_SIZE
from ontology.layout import is_slug

log = logging.getLogger("kgbridge.watcher")

# A file must be quiet this long before it is read: long enough to coalesce a writer's bursts of
# close events, short enough that a hook's drop shows up within a second.
SETTLE_SECONDS = 0.25
# inotify drops events silently when its queue overflows; the rescan is the safety net.
RESCAN_SECONDS = 5.0
# A file the rescan finds without a close-after-write or rename event may still be open for writing
# (a writer pausing mid-file): it is read only once it has been quiet this long, two rescan ticks.
QUIET_SECONDS = 2 * RESCAN_SECONDS
# After a write failure (disk full), wait before trying that file again.
RETRY_SECONDS = 2.0
# The events the watcher acts on (see `on_any_event`); inotify is asked for these only.
HANDLED_EVENTS = (FileClosedEvent, FileMovedEvent, DirCreatedEvent)
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
    def __init__(self, backend: Backend, *, settle: float = SETTLE_SECONDS, rescan: float = RESCAN_SECONDS,
                 quiet: float = QUIET_SECONDS) -> None:
        self.backend = backend
        self.quiet = quiet
        self.base = backend.root / "ontology"
        self.settle = settle
        self.rescan_every = rescan
        self._queues: dict[str, _Queue] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._observer = Observer()
        self._rescanner = threading.Thread(target=self._rescan_loop, name="kg-rescan", daemon=True)
        self._refused: set[tuple[Path, int, int]] = set()  # unreadable files already reported
        self.last_error: str | None = None
        self.last_scan_at: float | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)
        # Only the events `on_any_event` acts on reach inotify's mask: the writers' own files below the
        # same root (graph WAL, archive, locks) change on every ingest, and each event would otherwise
        # wake this process's observer threads (bench/server.py: a fifth of the server's CPU per POST).
        self._observer.schedule(self, str(self.base), recursive=True, event_filter=list(HANDLED_EVENTS))
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

    # -- events ---------------------------------------------------------------------------------

    def _slug_of(self, path: Path) -> str | None:
        """The slug if `path` is a file directly inside `<base>/<slug>/ingest/`."""
        try:
            rel = path.relative_to(self.base)
        except ValueError:
            return None
        parts = rel.parts
        if len(parts) == 3 and parts[1] == "ingest" and is_slug(parts[0]) and is_candidate(parts[2]):
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

    def _scan_dir(self, ingest: Path, *, quiet: float = 0.0) -> None:
        """Enqueue the candidate files of one ingest/. `quiet`: how long a file must have gone
        unmodified before it is read (the periodic rescan, which has no event saying a writer is
        done); files found at start or in a directory that just appeared only wait the settle time."""
        try:
            entries = sorted(ingest.iterdir())
        except OSError:
            return
        now = time.time()
        for path in entries:
            if not is_candidate(path.name):
                continue
            try:
                st = path.lstat()
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                continue
            queue = self._queues.get(path.parent.parent.name)
            if queue is None or path not in queue.due:
                # No event says the writer is done: wait until the file has been quiet long enough.
                self._enqueue(path, delay=max(self.settle, st.st_mtime + quiet - now))

    def scan(self, *, quiet: float = 0.0) -> None:
        for slug in self.backend.slugs():
            self._scan_dir(self.base / slug / "ingest", quiet=quiet)
        self.last_scan_at = time.time()

    def _rescan_loop(self) -> None:
        while not self._stop.wait(self.rescan_every):
            try:
                self.scan(quiet=self.quiet)
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
        kept as rejected, and every file stays where it is if the batch fails. Files are opened
        relative to ingest/ opened without following links, so a symlinked ingest/ is never read."""
        ingest = self.base / slug / "ingest"
        try:
            dir_fd = os.open(ingest, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        except OSError as exc:  # ELOOP / ENOTDIR: ingest/ is a symlink (or not a directory)
            message = f"{slug}: {ingest} is not a plain directory ({exc.strerror}); its files are left alone"
            self.last_error = message
            self.backend.record_error(slug, message)
            return
        try:
            taken: list[tuple[Path, DropRead]] = []
            for path in paths:
                read = self._read_one(slug, path, dir_fd)
                if read is not None:
                    taken.append((path, read))
            if taken:
                self.backend.ingest_many(slug, [(path.name, read.data, Channel.DROP) for path, read in taken])
                for path, read in taken:
                    self._remove_if_unchanged(path, read, dir_fd)
        finally:
            os.close(dir_fd)

    def _read_one(self, slug: str, path: Path, dir_fd: int) -> DropRead | None:
        """The file's bytes if it is ready to ingest; a refused file is kept as rejected (bounded)
        and removed, a file still being written is queued again, a vanished one is skipped."""
        try:
            read = read_drop(path, dir_fd=dir_fd)
        except FileNotFoundError:
            return None  # taken already (a rescan raced an event)
        except DropRefused as exc:
            self.backend.reject_drop(slug, path.name, exc.prefix, exc.reason)
            with contextlib.suppress(OSError):  # a directory stays; it is never enqueued again
                os.unlink(path.name, dir_fd=dir_fd)
            return None
        except OSError as exc:  # EACCES, EIO: not ours to delete; say so once per version of it
            key = (path, *self._identity(path, dir_fd))
            if key not in self._refused:
                self._refused.add(key)
                self.backend.reject_drop(slug, path.name, b"", f"cannot read: {exc.strerror}")
            return None
        if self._identity(path, dir_fd) != (read.size, read.mtime_ns) or len(read.data) != read.size:
            self._enqueue(path)  # still being written: read it once it is quiet
            return None
        return read

    @staticmethod
    def _identity(path: Path, dir_fd: int) -> tuple[int, int]:
        try:
            st = os.stat(path.name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return (-1, -1)
        return st.st_size, st.st_mtime_ns

    def _remove_if_unchanged(self, path: Path, read: DropRead, dir_fd: int) -> None:
        """Unlink an ingested file unless it changed after we read it: a writer that paused and went
        on owns a newer version, which its next close (or the rescan) brings in."""
        if self._identity(path, dir_fd) == (read.size, read.mtime_ns):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path.name, dir_fd=dir_fd)
        else:
            log.warning("%s changed after it was read; kept for the next read", path)
            self._enqueue(path)
