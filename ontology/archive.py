"""The archive: every accepted artifact verbatim in append-only pack files, an append-only log that
says where each one is, and every rejected artifact kept beside the reason it was refused.

Invariant: the archive is the source of truth. A batch goes to a pack as frames (each artifact's log
line, then its bytes) with one fsync (under way in another thread while the graph applies the batch),
then its lines to the log, and only then does the graph commit; a crash can leave pack bytes no line
points to (ignored), or lines the graph lacks (replayed on the next open), and a power cut can lose
unsynced log lines (written again from the frames on the next open), never a graph row the archive
cannot regenerate. Bytes are checked against their sha256 on read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from ontology.atomic import atomic_write

_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
# rejected/ is where a person looks up why inputs were refused, not an archive: hostile or runaway
# input must not fill the disk through it. An input up to the artifact limit is kept whole, a
# larger one as its first 64 KiB (enough to see what it was); the oldest entries go past the bounds.
KEEP_WHOLE_BYTES = 1024 * 1024
PREFIX_BYTES = 64 * 1024
REJECTED_MAX_ENTRIES = 5_000
REJECTED_MAX_BYTES = 256 * 1024 * 1024
REASON_SUFFIX = ".reason.json"
# A new pack starts once the current one passes this size: small enough to copy or inspect with
# ordinary tools, large enough that an ontology rarely holds more than a handful.
PACK_LIMIT_BYTES = 256 * 1024 * 1024


class ArchiveCorrupt(RuntimeError):
    """An archived artifact is missing or its bytes no longer match its sha256."""


@dataclass(frozen=True)
class LogEntry:
    sha256: str
    filename: str  # as received (a drop name keeps its kind hint)
    channel: str
    received_at: str
    # Where the bytes are: pack number, byte offset, length. None for entries written before packs
    # existed, whose bytes live in objects/<aa>/<sha256>.
    pack: int | None = None
    offset: int | None = None
    length: int | None = None


@dataclass(frozen=True)
class Incoming:
    """An accepted artifact waiting to be archived."""

    sha256: str
    filename: str
    channel: str
    received_at: str
    data: bytes


def safe_component(name: str, limit: int = 120) -> str:
    """A name from outside made safe to use as one file name inside our folders."""
    cleaned = _UNSAFE_CHARS.sub("_", name).strip("._") or "unnamed"
    return cleaned[:limit]


def _append(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# A pack frame: magic, the byte offset of the artifact's line in log.jsonl, a space, that line (JSON
# ending in a newline, whose offset field points just past it), then the artifact's bytes.
_FRAME_MAGIC = b"\x00kgframe "
_FRAME_OVERHEAD = 512  # bytes a frame's head and line add, at most, for sizing a pack
_TAIL_BYTES = 64 * 1024  # read from the end of the log to find its last entry
_MAX_LINE = 16 * 1024


def _framed_line(item: Incoming, pack: int, after_head: int) -> bytes:
    """The log line of `item`, whose offset (just past the line itself) depends on its own length:
    one `json.dumps` with offset 0, then the offset's digits are settled arithmetically."""
    entry = LogEntry(item.sha256, item.filename, item.channel, item.received_at, pack, 0, len(item.data))
    template = json.dumps(vars(entry), sort_keys=True) + "\n"  # vars: asdict deep-copies
    rest = len(template.encode("utf-8")) - 1  # the line without the offset's one digit
    offset = after_head + rest + 1
    while after_head + rest + len(str(offset)) != offset:
        offset = after_head + rest + len(str(offset))
    # The first `"offset": 0,` is the key itself: quotes inside JSON strings are escaped.
    return template.replace('"offset": 0,', f'"offset": {offset},', 1).encode("utf-8")


def _frames(tail: bytes, base: int, pack: int) -> list[tuple[int, bytes]]:
    """(log offset, line) of each valid frame in `tail`, which starts at byte `base` of the pack."""
    found, at = [], tail.find(_FRAME_MAGIC)
    while at >= 0:
        end = _frame_end(tail, at, base, pack, found)
        at = tail.find(_FRAME_MAGIC, end if end is not None else at + 1)
    return found


def _frame_end(tail: bytes, at: int, base: int, pack: int, found: list[tuple[int, bytes]]) -> int | None:
    """Check the frame starting at `tail[at]`; if valid, record it in `found` and return where it ends."""
    head_end = at + len(_FRAME_MAGIC)
    space = tail.find(b" ", head_end, head_end + 24)
    newline = tail.find(b"\n", space + 1, space + 1 + _MAX_LINE) if space > 0 else -1
    if newline < 0 or not tail[head_end:space].isdigit():
        return None
    line = tail[space + 1:newline + 1]
    try:
        entry = LogEntry(**json.loads(line))
    except (ValueError, TypeError):
        return None
    data_start = newline + 1
    if entry.pack != pack or entry.offset != base + data_start or entry.length is None:
        return None
    data = tail[data_start:data_start + entry.length]
    if len(data) != entry.length or hashlib.sha256(data).hexdigest() != entry.sha256:
        return None
    found.append((int(tail[head_end:space]), line))
    return data_start + entry.length


@dataclass
class _Appender:
    """A file kept open for appending between batches (no open, close or directory listing per
    artifact). Reopened when the file was removed or replaced underneath (its link count is 0)."""

    path: Path
    fd: int

    @classmethod
    def open(cls, path: Path) -> _Appender:
        return cls(path, os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600))

    def current(self) -> _Appender:
        if os.fstat(self.fd).st_nlink:
            return self
        os.close(self.fd)
        return _Appender.open(self.path)

    def close(self) -> None:
        os.close(self.fd)


@dataclass(frozen=True)
class PendingAppend:
    """A batch's frames, written to the pack, whose fsync runs in another thread (fsync releases the
    GIL) while the caller applies the batch to the graph; `Archive.complete` waits for it."""

    batch: tuple[Incoming, ...]
    pack_fd: int
    pack_start: int  # the pack's size before these frames: where `withdraw` cuts them off again
    log_fd: int
    log_bytes: bytes  # the lines (after a newline that seals a torn last line, if needed)
    log_end: int  # the log's size once they are appended
    synced: Future[None]


class Archive:
    """One ontology's archive folder. Writes happen under the ontology's writer lock only."""

    def __init__(self, base: Path, rejected: Path) -> None:
        self.base = base
        self.rejected_dir = rejected
        self.log_path = base / "log.jsonl"
        self.packs_dir = base / "packs"
        self._rejected_lock = threading.Lock()  # rejections are kept outside the writer lock
        self._rejected_usage: tuple[int, int] | None = None  # (entries, bytes), counted once, then kept
        # Open for appending between batches, under the writer lock: (pack number, file) and the log.
        self._pack: tuple[int, _Appender] | None = None
        self._log_appender: _Appender | None = None
        self._syncer: ThreadPoolExecutor | None = None  # the pack's fsync, beside the graph's work

    def pack_path(self, number: int) -> Path:
        return self.packs_dir / f"{number:06d}.pack"

    def legacy_blob_path(self, sha256: str) -> Path:
        return self.base / "objects" / sha256[:2] / sha256

    def _pack_for(self, incoming_bytes: int) -> tuple[int, _Appender]:
        """The pack to append to, kept open between batches; the directory is listed only when no
        pack is open yet or the open one is full (another writer process may have rolled meanwhile)."""
        if self._pack is not None:
            number, appender = self._pack
            appender = appender.current()
            self._pack = (number, appender)
            size = os.fstat(appender.fd).st_size
            if not size or size + incoming_bytes <= PACK_LIMIT_BYTES:
                return self._pack
            appender.close()
            self._pack = None
        self.packs_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        numbers = [int(p.stem) for p in self.packs_dir.glob("*.pack") if p.stem.isdigit()]
        number = max(numbers, default=1)
        try:
            size = self.pack_path(number).stat().st_size
        except FileNotFoundError:
            size = 0
        if size and size + incoming_bytes > PACK_LIMIT_BYTES:
            number += 1
        self._pack = (number, _Appender.open(self.pack_path(number)))
        return self._pack

    def _log(self) -> _Appender:
        if self._log_appender is None:
            self.base.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._log_appender = _Appender.open(self.log_path)
        else:
            self._log_appender = self._log_appender.current()
        return self._log_appender

    def put_many(self, batch: Sequence[Incoming]) -> int:
        """Archive a batch durably with one fsync (`begin`, then `complete`); returns the log's size
        after the batch (the offset the graph records as applied)."""
        if not batch:
            return self.log_size()
        return self.complete(self.begin(batch))

    def begin(self, batch: Sequence[Incoming]) -> PendingAppend:
        """Write each artifact to the pack as a frame (its log line, where that line goes in the
        log, then its bytes) and start the pack's fsync in another thread. Nothing points at the
        frames until `complete` appends their lines; `withdraw` cuts them off again."""
        log_fd = self._log().fd
        log_at = os.fstat(log_fd).st_size
        prefix = b"" if not log_at or os.pread(log_fd, 1, log_at - 1) == b"\n" else b"\n"  # seal a torn line
        log_at += len(prefix)
        number, pack = self._pack_for(sum(len(item.data) + _FRAME_OVERHEAD for item in batch))
        start = position = os.fstat(pack.fd).st_size
        frames, lines = [], []
        for item in batch:
            head = _FRAME_MAGIC + b"%d " % log_at
            line = _framed_line(item, number, position + len(head))
            frames += [head, line, item.data]
            lines.append(line)
            position += len(head) + len(line) + len(item.data)
            log_at += len(line)
        try:
            _append(pack.fd, b"".join(frames))
        except OSError:  # a full disk tore the frames: cut them off, so no whole frame outlives the batch
            os.ftruncate(pack.fd, start)
            raise
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(1, thread_name_prefix="kg-pack-sync")
        synced = self._syncer.submit(os.fsync, pack.fd)
        return PendingAppend(tuple(batch), pack.fd, start, log_fd, prefix + b"".join(lines), log_at, synced)

    def complete(self, pending: PendingAppend) -> int:
        """Wait for the frames' fsync (an error in it raises here), then append their lines to the
        log unsynced: a power cut that loses them leaves the frames, from which `recover_log` writes
        them again. Returns the log's size after the batch."""
        pending.synced.result()
        _append(pending.log_fd, pending.log_bytes)
        return pending.log_end

    def withdraw(self, pending: PendingAppend) -> None:
        """Cut a batch's frames off the pack again (its graph work failed or came out otherwise),
        synced, so neither the log nor `recover_log` ever holds them. Callers hold the writer lock:
        nothing was appended after them."""
        try:
            pending.synced.result()
        except OSError:
            pass  # the cut below is synced on its own
        os.ftruncate(pending.pack_fd, pending.pack_start)
        os.fsync(pending.pack_fd)

    def recover_log(self) -> int:
        """Write again the log lines a power cut lost after their frames were synced (the log is
        appended unsynced); returns how many. Frames are looked for after the log's last entry only,
        each checked (its own position, its bytes' sha256), so torn or stray bytes are passed over.
        Callers hold the writer lock."""
        last = self._last_entry()
        number, position = (last.pack, last.offset + last.length) if last and last.pack is not None \
            and last.offset is not None and last.length is not None else (1, 0)
        found: list[tuple[int, bytes]] = []
        while True:
            try:
                with open(self.pack_path(number), "rb") as handle:
                    handle.seek(position)
                    found += _frames(handle.read(), position, number)
            except FileNotFoundError:
                break
            number, position = number + 1, 0
        if not found:
            return 0
        fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o600)  # not O_APPEND: pwrite at each line's place
        try:
            for log_at, line in found:
                size = os.fstat(fd).st_size
                if size < log_at:  # the lost seal of a torn line: empty lines, which readers skip
                    os.pwrite(fd, b"\n" * (log_at - size), size)
                os.pwrite(fd, line, log_at)
            os.ftruncate(fd, found[-1][0] + len(found[-1][1]))
            os.fsync(fd)
        finally:
            os.close(fd)
        return len(found)

    def _last_entry(self) -> LogEntry | None:
        """The log's last complete entry, read from its tail (the whole log only if the tail has none)."""
        try:
            with open(self.log_path, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                start = max(0, size - _TAIL_BYTES)
                handle.seek(start)
                lines = handle.read().split(b"\n")[1 if start else 0:-1]
        except FileNotFoundError:
            return None
        for raw in reversed(lines):
            try:
                return LogEntry(**json.loads(raw))
            except (ValueError, TypeError):
                continue
        last = None
        if start:
            for last, _ in self.entries():
                pass
        return last

    def close(self) -> None:
        """Close the files kept open for appending (the next batch reopens them)."""
        if self._syncer is not None:
            self._syncer.shutdown()
            self._syncer = None
        if self._pack is not None:
            self._pack[1].close()
            self._pack = None
        if self._log_appender is not None:
            self._log_appender.close()
            self._log_appender = None

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size
        except FileNotFoundError:
            return 0

    def read(self, entry: LogEntry) -> bytes:
        """The artifact's bytes, verified against its sha256."""
        try:
            if entry.pack is None or entry.offset is None or entry.length is None:
                data = self.legacy_blob_path(entry.sha256).read_bytes()
            else:
                with open(self.pack_path(entry.pack), "rb") as handle:
                    handle.seek(entry.offset)
                    data = handle.read(entry.length)
        except FileNotFoundError as exc:
            raise ArchiveCorrupt(f"archived bytes of {entry.filename} ({entry.sha256[:12]}) are missing") from exc
        if hashlib.sha256(data).hexdigest() != entry.sha256:
            raise ArchiveCorrupt(f"archived bytes of {entry.filename} ({entry.sha256[:12]}) do not match their sha256")
        return data

    def entries(self, start: int = 0) -> Iterator[tuple[LogEntry, int]]:
        """(entry, offset just past its line) in log order from byte `start`; a torn or unreadable
        line (crash mid-append) is skipped, not fatal."""
        try:
            handle = open(self.log_path, "rb")
        except FileNotFoundError:
            return
        with handle:
            handle.seek(start)
            offset = start
            for raw in handle:
                offset += len(raw)
                if not raw.endswith(b"\n"):
                    break  # still being written, or torn: the next append seals it
                try:
                    yield LogEntry(**json.loads(raw)), offset
                except (ValueError, TypeError):
                    continue

    def reject(self, filename: str, data: bytes, reason: str, received_at: str, sha256: str) -> Path:
        """Keep a refused artifact (whole up to KEEP_WHOLE_BYTES, else its first PREFIX_BYTES)
        beside a file that says why; returns the kept artifact's path. rejected/ stays bounded:
        past REJECTED_MAX_ENTRIES or REJECTED_MAX_BYTES the oldest entries go."""
        stamp = received_at.replace(":", "").replace("-", "")[:15]
        kept = self.rejected_dir / f"{stamp}-{sha256[:12]}-{safe_component(filename)}"
        body = data if len(data) <= KEEP_WHOLE_BYTES else data[:PREFIX_BYTES]
        why = json.dumps({"filename": filename, "reason": reason, "received_at": received_at, "sha256": sha256,
                          "size": len(data), "kept_bytes": len(body)}, indent=2).encode()
        atomic_write(kept, body)
        atomic_write(kept.with_name(kept.name + REASON_SUFFIX), why)
        self._account_rejected(len(body) + len(why))
        return kept

    def _account_rejected(self, size: int) -> None:
        with self._rejected_lock:
            if self._rejected_usage is None:
                self._rejected_usage = self._rejected_entries()[1:]
            count, total = self._rejected_usage[0] + 1, self._rejected_usage[1] + size
            if count > REJECTED_MAX_ENTRIES or total > REJECTED_MAX_BYTES:
                count, total = self._evict_rejected()
            self._rejected_usage = (count, total)

    def _rejected_entries(self) -> tuple[list[tuple[Path, int]], int, int]:
        """(kept artifacts oldest first with their bytes incl. reason, count, total bytes)."""
        sizes: dict[str, int] = {}
        try:
            listing = list(os.scandir(self.rejected_dir))
        except FileNotFoundError:
            return [], 0, 0
        for entry in listing:
            if entry.name.startswith("."):
                continue
            key = entry.name.removesuffix(REASON_SUFFIX)
            try:
                sizes[key] = sizes.get(key, 0) + entry.stat(follow_symlinks=False).st_size
            except FileNotFoundError:
                continue
        entries = [(self.rejected_dir / name, size) for name, size in sorted(sizes.items())]  # names start with the time
        return entries, len(entries), sum(sizes.values())

    def _evict_rejected(self) -> tuple[int, int]:
        """Remove the oldest kept rejections until 90 % of each bound is left; returns (count, bytes)."""
        entries, count, total = self._rejected_entries()
        for path, size in entries:
            if count <= REJECTED_MAX_ENTRIES * 0.9 and total <= REJECTED_MAX_BYTES * 0.9:
                break
            path.unlink(missing_ok=True)
            path.with_name(path.name + REASON_SUFFIX).unlink(missing_ok=True)
            count, total = count - 1, total - size
        return count, total
