"""Ingest artifacts into one ontology: parse, archive, extract, apply; or reject with a reason.

Invariant: one writer per ontology, across threads and processes (a file lock around each batch);
every input ends as exactly one of new / duplicate / rejected, and a rejection never affects other
artifacts. A batch is one transaction with a savepoint per artifact, archived (synced) before it
commits; opening the writer replays any archived artifact the graph lacks. `rebuild` replays the
whole archive log into a fresh database and swaps it in atomically.
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import hashlib
import itertools
import logging
import operator
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ontology.archive import Archive, ArchiveCorrupt, Incoming, LogEntry, PendingAppend
from ontology.artifact import Artifact, ArtifactRejected, Channel
from ontology.checkpoint import Checkpointer
from ontology.clock import utc_now
from ontology.errors import NotFound, Unavailable
from ontology.extract import Extraction, extract
from ontology.layout import ROOT_ENV, OntologyPaths, UnsafeName, ontology_paths, validate_filename
from ontology.parse import parse_artifact
from ontology.schema import SchemaMismatch, connect
from ontology.store import GraphWriter, newest_sha

log = logging.getLogger(__name__)

# Artifacts per transaction in bulk work. One commit writes each dirty page once, so a batch shares
# the B-tree pages its artifacts touch (bench/ingest.py: the commit was the largest single cost);
# 256 keeps a batch's parsed artifacts small in memory and the writer lock held well under a second.
BATCH_SIZE = 256
# How long a single caller (an HTTP or MCP ingest) waits for the writer before it is told to come
# back (503 Retry-After): a group commit takes well under a second; a rebuild can take minutes.
# KG_WRITER_WAIT_S sets it for a server (0.1-3600 s; read once, at import): the tests use it to make
# callers wait until the test lets go of the writer instead of racing a clock.
WRITER_WAIT_ENV = "KG_WRITER_WAIT_S"
WRITER_WAIT_DEFAULT_S = 10.0


def _writer_wait_seconds() -> float:
    try:
        seconds = float(os.environ.get(WRITER_WAIT_ENV, WRITER_WAIT_DEFAULT_S))
    except ValueError:
        return WRITER_WAIT_DEFAULT_S
    return min(max(seconds, 0.1), 3600.0) if seconds == seconds else WRITER_WAIT_DEFAULT_S


WRITER_WAIT_SECONDS = _writer_wait_seconds()
# Callers that may wait for one ontology's writer at once. Each holds a server worker thread, so
# one held writer can occupy at most this many of them, never the pool every ontology shares.
MAX_WAITING_CALLERS = 16


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
        # A refused name may hold lone surrogates (not UTF-8): shown escaped, never a failed reply.
        filename = self.filename.encode("utf-8", "backslashreplace").decode("utf-8")
        return {"status": self.status.value, "filename": filename, "sha256": self.sha256,
                "reason": self.reason, "kind": self.kind, "version": self.version}


class OntologyMissing(NotFound, LookupError):
    """The ontology has not been activated (its folder does not exist)."""

    kind = "no-ontology"


class RootMissing(OntologyMissing):
    """The knowledge root itself does not exist: nothing was ever activated or ingested there."""

    kind = "no-knowledge-root"


class WriterBusy(Unavailable, RuntimeError, kind="writer-busy"):
    """The ontology's writer stayed held (a rebuild, a bulk ingest) past the wait a single caller
    may spend, or too many callers already wait for it: nothing was taken; retry after a moment."""

    retry_after = 2  # seconds: a rebuild or a bulk batch of BATCH_SIZE artifacts takes about this

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class WriterLockTimeout(TimeoutError):
    """Another process held the ontology's writer lock past the wait."""


class _WriterLock:
    """The cross-process half of the single writer: `flock` on `.writer.lock` through a descriptor
    kept open for the life of the object, so taking and releasing it per batch costs two system
    calls, not an open and a close (each also an inotify event for the watcher). Callers serialize
    through the thread lock; nested acquires are counted."""

    POLL_SECONDS = 0.01

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._depth = 0

    def acquire(self, timeout: float | None = None) -> None:
        """Take the lock, waiting at most `timeout` seconds (None: as long as it takes)."""
        if self._depth:
            self._depth += 1
            return
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        if timeout is None:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise WriterLockTimeout(f"{self.path} is held by another process") from None
                    time.sleep(self.POLL_SECONDS)
        self._depth = 1

    def release(self) -> None:
        self._depth -= 1
        if not self._depth and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Drop the descriptor (only while not held); the next acquire reopens it."""
        if not self._depth and self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(frozen=True)
class _Parsed:
    index: int
    filename: str
    data: bytes
    sha256: str
    channel: Channel
    received_at: str
    artifact: Artifact
    extraction: Extraction | None  # None: its source's newest version when read (see `_prepare`)


def _incoming(item: _Parsed) -> Incoming:
    return Incoming(item.sha256, item.filename, item.channel.value, item.received_at, item.data)


def _is_newest(conn: sqlite3.Connection | None, identity: str, sha256: str) -> bool:
    """A hint for skipping extraction: False whenever the graph cannot say."""
    if conn is None:
        return False
    try:
        return newest_sha(conn, identity) == sha256
    except sqlite3.Error:
        return False


@dataclass(eq=False)  # compared by identity: two callers may send the same bytes
class _Ticket:
    """One caller's artifact waiting for a group commit, and what became of it."""

    item: _Parsed
    done: bool = False
    result: IngestResult | None = None
    error: BaseException | None = None


class Ontology:
    """One ontology on disk: its archive, its graph and its single writer."""

    def __init__(self, root: Path, slug: str, *, create: bool = False) -> None:
        self.paths: OntologyPaths = ontology_paths(root, slug)
        if create:
            self.paths.ingest.mkdir(parents=True, exist_ok=True)
        elif not Path(root).is_dir():
            raise RootMissing(f"knowledge root {root} does not exist: pass --root or set {ROOT_ENV} to "
                              "the one you use, or start one with `kgbridge activate`")
        elif not self.paths.base.is_dir():
            raise OntologyMissing(f"ontology {slug!r} does not exist under {root}: activate it with "
                                  "`kgbridge activate` (or POST /ontologies), or name another with --ontology")
        self.archive = Archive(self.paths.archive, self.paths.rejected)
        self._thread_lock = threading.Lock()
        self._file_lock = _WriterLock(self.paths.lock)
        self._writer: GraphWriter | None = None
        # Copies the single path's WAL frames into the database file on another thread, so a POST's
        # COMMIT does not run the writer's autocheckpoint (ADR 0007, "Session 9"); lives with the writer.
        self._checkpointer: Checkpointer | None = None
        # (source, sha256) archived but never acknowledged (the commit failed; a reopen replayed them):
        # the sender retries those, and a retry is a duplicate even after a newer version came.
        self._unacknowledged: set[tuple[str, str]] = set()
        self._writer_identity: tuple[int, int] | None = None
        self._queue: list[_Ticket] = []  # single artifacts waiting for the writer (group commit)
        self._queue_lock = threading.Lock()
        self._waiting = 0  # single callers inside ingest(), under _queue_lock
        self._caught_up = False  # readers apply what the archive holds once, when the writer is free
        # Stat once per commit (`_database_identity`): as a string, not three Path joins per request.
        self._database_path = str(self.paths.database)

    @property
    def slug(self) -> str:
        return self.paths.slug

    @contextmanager
    def _exclusive(self) -> Iterator[GraphWriter]:
        with self._thread_lock, self._file_lock:
            try:
                yield self._open_writer()
            except BaseException:
                self._discard_writer()
                raise

    def _discard_writer(self) -> None:
        """After a failed batch the archive may hold entries the graph lacks (appended, then the
        commit failed). The next `_open_writer` replays them, so a retry finds them applied (a
        duplicate) instead of archiving them twice: live graph == rebuild, always."""
        if self._writer is not None:
            with contextlib.suppress(sqlite3.Error):
                self._close_writer()
            self._writer = None

    def _close_writer(self) -> None:
        """Close the writer's connection, the background checkpointer first: the writer's close is
        then the last one, which checkpoints the WAL into the file."""
        assert self._writer is not None
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
        self._writer.conn.close()

    def _open_writer(self) -> GraphWriter:
        """The writer, opened (and caught up with the archive) if needed; callers hold both locks."""
        if self._writer is not None and self._database_identity() != self._writer_identity:
            # Another process rebuilt (replaced) the database: writing on would go to the old file.
            self._close_writer()
            self._writer = None
        if self._writer is None:
            self._remove_rebuild_leftovers()  # a rebuild killed midway; none runs while we hold the lock
            try:
                conn = connect(self.paths.database)
            except SchemaMismatch as exc:  # written by another version: the archive regenerates it
                log.warning("ontology %s: %s; rebuilding the graph from the archive", self.slug, exc)
                self._rebuild_locked()
                conn = connect(self.paths.database)
            writer = GraphWriter(conn)
            try:
                self._recover_log()
                self._replay(writer, writer.applied_log_offset(), self._unacknowledged)
            except BaseException:
                writer.conn.close()
                raise
            self._writer, self._writer_identity = writer, self._database_identity()
        return self._writer

    def catch_up(self) -> bool:
        """Apply archived artifacts the graph lacks, if the writer is free right now; never waits
        for it (a busy writer catches up itself). Returns False only when the writer was busy; a
        failure (read-only disk, full disk) is logged and readers go on with the graph as it is."""
        if not self._thread_lock.acquire(blocking=False):
            return False
        try:
            try:
                self._file_lock.acquire(timeout=0)
            except WriterLockTimeout:
                return False
            try:
                self._open_writer()
            finally:
                self._file_lock.release()
        except (OSError, sqlite3.Error) as exc:
            log.warning("ontology %s: could not catch up with the archive: %s", self.slug, exc)
        finally:
            self._thread_lock.release()
        return True

    def _database_identity(self) -> tuple[int, int] | None:
        try:
            stat = os.stat(self._database_path)
        except FileNotFoundError:
            return None
        return stat.st_dev, stat.st_ino

    def close(self) -> None:
        with self._thread_lock:
            if self._writer is not None:
                self._close_writer()
                self._writer = None
            self.archive.close()
            self._file_lock.close()

    # -- ingest ---------------------------------------------------------------------------------

    def ingest(self, filename: str, data: bytes, channel: Channel, received_at: str | None = None) -> IngestResult:
        """Ingest one artifact. Concurrent callers share transactions (group commit): whoever takes
        the writer applies every artifact queued so far, so N parallel POSTs cost about one commit
        and one archive fsync instead of N. A storage failure raises in every caller of that group."""
        prepared = self._prepare(0, filename, data, channel, received_at)
        if isinstance(prepared, IngestResult):
            return prepared
        ticket = _Ticket(prepared)
        with self._queue_lock:
            if self._waiting >= MAX_WAITING_CALLERS:
                raise WriterBusy(f"{self._waiting} callers already wait for the writer of {self.slug!r}")
            self._waiting += 1
            self._queue.append(ticket)
        try:
            self._lead_group(ticket)
        finally:
            with self._queue_lock:  # the writer could not be opened: do not leave it for another caller
                self._waiting -= 1
                if ticket in self._queue:
                    self._queue.remove(ticket)
        if ticket.error is not None:
            raise ticket.error
        assert ticket.result is not None
        return ticket.result

    def _acquire_bounded(self, ticket: _Ticket) -> None:
        """Take both writer locks within WRITER_WAIT_SECONDS, else give up (`WriterBusy`) if no
        leader has taken the ticket yet; once one has, wait for it: its commit is under way."""
        deadline = time.monotonic() + WRITER_WAIT_SECONDS
        if not self._thread_lock.acquire(timeout=WRITER_WAIT_SECONDS):
            self._give_up_or_wait(ticket)
            self._thread_lock.acquire()
        try:
            self._file_lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
        except WriterLockTimeout:
            try:
                self._give_up_or_wait(ticket)
                self._file_lock.acquire()
            except BaseException:
                self._thread_lock.release()
                raise
        except BaseException:
            self._thread_lock.release()
            raise

    def _give_up_or_wait(self, ticket: _Ticket) -> None:
        with self._queue_lock:
            if ticket in self._queue:
                self._queue.remove(ticket)
                raise WriterBusy(f"the writer of {self.slug!r} is busy (held over {WRITER_WAIT_SECONDS:g} s)")

    def _lead_group(self, ticket: _Ticket) -> None:
        self._acquire_bounded(ticket)
        try:
            self._lead_group_locked(ticket)
        finally:
            self._file_lock.release()
            self._thread_lock.release()

    def _lead_group_locked(self, ticket: _Ticket) -> None:
        if ticket.done:  # an earlier leader took it along
            return
        writer = self._open_writer()
        while not ticket.done:  # oldest first, a batch at a time, until this caller's is in
            with self._queue_lock:
                group, self._queue = self._queue[:BATCH_SIZE], self._queue[BATCH_SIZE:]
            try:
                outcomes = self._apply_batch(writer, [t.item for t in group])
            except BaseException as exc:
                for member in group:
                    member.error, member.done = exc, True
                self._discard_writer()
                if not ticket.done:
                    writer = self._open_writer()
            else:
                for member, (_, result) in zip(group, outcomes):
                    member.result, member.done = result, True
                self._checkpoint_behind()

    def _checkpoint_behind(self) -> None:
        """After a single path's commit: wake the background checkpointer if enough WAL frames wait.
        Bulk batches leave checkpoints to the writer's autocheckpoint (one per ~16k frames, each page
        copied once; a batch's caller waits for hundreds of artifacts, not one). Never fails the
        commit it follows: without the thread, the writer's autocheckpoint still bounds the WAL."""
        try:
            if self._checkpointer is None:
                self._checkpointer = Checkpointer(self._database_path)
            self._checkpointer.committed()
        except (OSError, sqlite3.Error, RuntimeError) as exc:
            log.warning("ontology %s: no background checkpoint: %s", self.slug, exc)

    def ingest_many(self, items: Iterable[tuple[str, bytes, Channel]], *,
                    received_at: str | None = None) -> list[IngestResult]:
        """Ingest many artifacts, BATCH_SIZE per transaction; results in input order. A storage
        failure (disk full) raises and leaves the failed batch unapplied and unarchived."""
        results: list[IngestResult] = []
        numbered = enumerate(items)
        while chunk := list(itertools.islice(numbered, BATCH_SIZE)):
            results.extend(self._ingest_batch(chunk, received_at))
        return results

    def _prepare(self, index: int, filename: str, data: bytes, channel: Channel, received_at: str | None,
                 current: sqlite3.Connection | None = None) -> _Parsed | IngestResult:
        """Parse and extract outside the writer lock; a refusal is kept with its reason right away. Bytes
        that are already their source's newest version in the graph as `current` sees it are not
        extracted: a remount or a rescan re-reads thousands of unchanged files, and the writer decides
        again under its lock anyway (extracting then if a newer version came in between)."""
        stamp = received_at or utc_now()
        sha = hashlib.sha256(data).hexdigest()
        try:
            validate_filename(filename)
            artifact = parse_artifact(self.slug, filename, data)
            extraction = None if _is_newest(current, artifact.source_identity, sha) else extract(artifact)
        except (ArtifactRejected, UnsafeName) as exc:
            reason = exc.reason if isinstance(exc, ArtifactRejected) else str(exc)
        except Exception as exc:  # noqa: BLE001 - per-artifact boundary: a defect met on this input
            # (e.g. an integer too long to print) refuses this artifact with its reason; the rest of
            # its batch goes on. One log line, no traceback: hostile input must not flood the log.
            log.warning("could not parse %r: %s: %s", filename, type(exc).__name__, exc)
            reason = f"could not be parsed ({type(exc).__name__}: {str(exc)[:200]}); kept for a retry after a fix"
        else:
            return _Parsed(index, filename, data, sha, channel, stamp, artifact, extraction)
        self.archive.reject(filename, data, reason, stamp, sha)
        return IngestResult(Status.REJECTED, filename, sha, reason=reason)

    def _ingest_batch(self, chunk: list[tuple[int, tuple[str, bytes, Channel]]],
                      received_at: str | None) -> list[IngestResult]:
        results: dict[int, IngestResult] = {}
        parsed: list[_Parsed] = []
        with contextlib.ExitStack() as stack:
            try:
                current = stack.enter_context(self.reader())
            except (OSError, sqlite3.Error):  # the graph cannot be read now: extract all, the writer decides
                current = None
            for index, (filename, data, channel) in chunk:
                prepared = self._prepare(index, filename, data, channel, received_at, current)
                if isinstance(prepared, IngestResult):
                    results[index] = prepared
                else:
                    parsed.append(prepared)
        if parsed:
            with self._exclusive() as writer:
                for item, result in self._apply_batch(writer, parsed):
                    results[item.index] = result
        return [results[index] for index, _ in chunk]

    def _apply_batch(self, writer: GraphWriter, batch: list[_Parsed]) -> list[tuple[_Parsed, IngestResult]]:
        """One transaction. The frames of the artifacts that look new go to the pack first and its
        fsync runs while the graph applies them; the COMMIT waits for it (ADR 0007, "Single POST
        path"), so the graph never holds what the archive lacks. If the batch came out otherwise (a
        merge failed, a revert inside the batch), the frames are cut off and the right ones written."""
        out: list[tuple[_Parsed, IngestResult]] = []
        applied: list[_Parsed] = []
        with writer.transaction():
            framed = self._likely_new(writer, batch)
            pending = self.archive.begin([_incoming(item) for item in framed]) if framed else None
            # One artifact alone (a POST): the guess above is the answer (nothing was applied since),
            # and it needs no savepoint of its own (GraphWriter.apply).
            alone = len(batch) == 1
            try:
                for item in batch:
                    result = self._apply_one(writer, item, new=bool(framed) if alone else None)
                    out.append((item, result))
                    if result.status is Status.NEW:
                        applied.append(item)
            except BaseException:
                if pending is not None:
                    self._withdraw(pending)
                raise
            if pending is not None and len(applied) == len(framed) and all(map(operator.is_, applied, framed)):
                writer.record_log_offset(self.archive.complete(pending))  # the COMMIT follows the sync
            else:
                if pending is not None:
                    self.archive.withdraw(pending)
                if applied:
                    writer.record_log_offset(self.archive.put_many([_incoming(item) for item in applied]))
        return out

    def _likely_new(self, writer: GraphWriter, batch: list[_Parsed]) -> list[_Parsed]:
        """The artifacts the batch will apply, as the graph reads before it: not the newest version
        of their source, not already in the batch. `_apply_batch` checks the guess afterwards."""
        keys: set[tuple[str, str]] = set()
        out = []
        for item in batch:
            key = (item.artifact.source_identity, item.sha256)
            if key not in self._unacknowledged and key not in keys and not writer.seen(*key):
                keys.add(key)
                out.append(item)
        return out

    def _withdraw(self, pending: PendingAppend) -> None:
        """Cut a failed batch's frames off the pack; if even that fails, the next open's
        `recover_log` may replay them, which is what a failed commit after the archive leaves."""
        try:
            self.archive.withdraw(pending)
        except OSError as exc:
            log.warning("ontology %s: could not cut a failed batch's frames off the pack: %s", self.slug, exc)

    def _apply_one(self, writer: GraphWriter, item: _Parsed, new: bool | None = None) -> IngestResult:
        """`new`: whether the artifact is new, when the caller already knows it (the only artifact
        of its transaction, read under the same lock a moment ago), which also means it is alone."""
        artifact = item.artifact
        try:
            key = (artifact.source_identity, item.sha256)
            duplicate = (key in self._unacknowledged or writer.seen(*key)) if new is None else not new
            if duplicate:  # `seen` also sees this batch's own rows
                self._unacknowledged.discard(key)
                return IngestResult(Status.DUPLICATE, artifact.filename, item.sha256, kind=artifact.kind.value)
            # None: a duplicate when read, no longer one (another version came in meanwhile)
            extraction = item.extraction if item.extraction is not None else extract(artifact)
            applied = writer.apply(artifact, extraction, item.channel.value, item.received_at, alone=new is not None)
        except (sqlite3.OperationalError, OSError):
            raise  # the disk or database refused: the whole batch waits for a retry
        except Exception as exc:  # a defect met on this input: keep it, go on with the rest
            log.exception("could not merge %s", item.filename)
            reason = f"could not be merged ({type(exc).__name__}: {str(exc)[:200]}); kept for a retry after a fix"
            self.archive.reject(item.filename, item.data, reason, item.received_at, item.sha256)
            return IngestResult(Status.REJECTED, item.filename, item.sha256, reason=reason)
        return IngestResult(Status.NEW, artifact.filename, item.sha256, kind=artifact.kind.value,
                            version=applied.version)

    def reject(self, filename: str, data: bytes, reason: str) -> IngestResult:
        """Keep an input we refused before parsing (e.g. a symlink) with its reason."""
        sha = hashlib.sha256(data).hexdigest()
        self.archive.reject(filename, data, reason, utc_now(), sha)
        return IngestResult(Status.REJECTED, filename, sha, reason=reason)

    def ingest_path(self, path: Path, channel: Channel = Channel.CLI) -> IngestResult:
        return self.ingest_paths([path], channel)[0]

    def ingest_paths(self, paths: Iterable[Path], channel: Channel = Channel.CLI) -> list[IngestResult]:
        """Ingest files in batches; a file that cannot be read is reported, the rest go on."""
        results: list[IngestResult] = []
        readable: list[tuple[str, bytes, Channel]] = []
        slots: list[int] = []
        for path in paths:
            try:
                data = path.read_bytes()
            except OSError as exc:
                results.append(IngestResult(Status.REJECTED, path.name, "", reason=f"cannot read: {exc.strerror}"))
                continue
            slots.append(len(results))
            results.append(IngestResult(Status.REJECTED, path.name, ""))  # placeholder, replaced below
            readable.append((path.name, data, channel))
        for slot, result in zip(slots, self.ingest_many(readable)):
            results[slot] = result
        return results

    # -- read and regenerate --------------------------------------------------------------------

    @contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection inside one read transaction: a consistent snapshot."""
        if not self.paths.database.exists():
            with self._exclusive():
                pass  # creates the schema (and replays the archive) so readers see a graph
        elif not self._caught_up:
            self._caught_up = self.catch_up()
        conn = connect(self.paths.database, readonly=True)
        try:
            conn.execute("BEGIN")
            yield conn
            conn.execute("COMMIT")
        finally:
            conn.close()

    def _replay(self, writer: GraphWriter, start: int, applied_keys: set[tuple[str, str]] | None = None) -> int:
        """Apply archive log entries from byte `start` that the graph lacks, BATCH_SIZE per
        transaction; returns how many were applied (their (source, sha256) go to `applied_keys`).
        Replaying an applied entry is a no-op."""
        applied = 0
        entries = self.archive.entries(start)
        while chunk := list(itertools.islice(entries, BATCH_SIZE)):
            with writer.transaction():
                for entry, end in chunk:
                    artifact = self._replayable(entry)
                    if artifact is not None and not writer.seen(artifact.source_identity, entry.sha256) \
                            and self._reapply(writer, artifact, entry):
                        applied += 1
                        if applied_keys is not None:
                            applied_keys.add((artifact.source_identity, entry.sha256))
                writer.record_log_offset(chunk[-1][1])
        if applied:
            log.info("ontology %s: applied %d archived artifacts the graph lacked", self.slug, applied)
        return applied

    def _reapply(self, writer: GraphWriter, artifact: Artifact, entry: LogEntry) -> bool:
        """Apply an archived artifact again; one that fails to merge (a defect met on its input; its
        savepoint is rolled back) is skipped with a warning, so it cannot keep the writer from opening."""
        try:
            writer.apply(artifact, extract(artifact), entry.channel, entry.received_at)
        except (sqlite3.OperationalError, OSError):
            raise
        except Exception as exc:  # noqa: BLE001 - per-artifact boundary, as in _apply_one
            log.warning("ontology %s: archived %s could not be merged, skipped: %s: %s", self.slug, entry.filename,
                        type(exc).__name__, exc)
            return False
        return True

    def _recover_log(self) -> None:
        """Log lines a power cut lost (the log is appended unsynced; the pack frames are synced) are
        written again before anything reads the log; callers hold both locks."""
        recovered = self.archive.recover_log()
        if recovered:
            log.warning("ontology %s: wrote %d archive log lines again from their pack frames", self.slug, recovered)

    def _replayable(self, entry: LogEntry) -> Artifact | None:
        try:
            return parse_artifact(self.slug, entry.filename, self.archive.read(entry))
        except (ArchiveCorrupt, ArtifactRejected, UnsafeName) as exc:
            log.warning("ontology %s: archived %s skipped: %s", self.slug, entry.filename, exc)
            return None

    def rebuild(self) -> int:
        """Regenerate the graph from the archive log; returns how many artifacts were applied."""
        with self._thread_lock, self._file_lock:
            return self._rebuild_locked()

    def _rebuild_path(self) -> Path:
        return self.paths.database.with_name(self.paths.database.name + ".rebuild")

    def _remove_rebuild_leftovers(self) -> None:
        fresh = self._rebuild_path()
        for leftover in (fresh, Path(f"{fresh}-wal"), Path(f"{fresh}-shm"), Path(f"{fresh}-journal")):
            leftover.unlink(missing_ok=True)

    def _rebuild_locked(self) -> int:
        """Replay the whole archive into a fresh file, then swap it in; callers hold both locks."""
        target = self.paths.database
        fresh = self._rebuild_path()
        self._remove_rebuild_leftovers()
        self._recover_log()
        writer = GraphWriter(connect(fresh))
        try:
            applied = self._replay(writer, 0)
            writer.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            writer.conn.close()
        if self._writer is not None:
            self._close_writer()
            self._writer = None
        for stale in (Path(f"{target}-wal"), Path(f"{target}-shm")):
            stale.unlink(missing_ok=True)
        os.replace(fresh, target)
        return applied
