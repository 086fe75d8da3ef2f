"""WAL checkpoints off the single-ingest path: a thread with its own connection copies committed
WAL frames into the database file while the writer serves the next request (ADR 0007, "Session 9").

Invariant: the writer's own `wal_autocheckpoint` stays the bound (the WAL never grows past it);
this thread only does most of that copying earlier, on the other core, and is stopped (joined, its
connection closed) before the writer's connection closes, so closing still leaves a checkpointed file.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import struct
import threading

log = logging.getLogger(__name__)

# WAL frames not yet copied into the database file that wake the thread. About 40 one-artifact commits
# (~53 frames each): a hot index page is copied once per ~40 commits instead of once per ~300 under
# the writer's autocheckpoint alone, and the writer's autocheckpoint then finds ~2k frames left at
# most (one fsync pair, ~1 ms) instead of up to 16k (up to 80 ms inside one request's COMMIT).
BACKGROUND_FRAMES = 2048
# The wal-index header at the start of the `-shm` file (https://www.sqlite.org/walformat.html, 2.2):
# mxFrame (the last valid frame) at byte 16 of the first header copy, nBackfill (frames already
# copied into the database) at byte 96, the start of WalCkptInfo; native byte order, as SQLite maps it.
_MX_FRAME, _N_BACKFILL, _HEADER_BYTES = 16, 96, 136
_U32 = struct.Struct("=I")


class Checkpointer:
    """PASSIVE checkpoints in a thread of its own, woken by `committed()` once enough frames wait.
    PASSIVE neither waits for nor blocks the writer or readers; frames committed meanwhile are left
    for the next round."""

    def __init__(self, database: str, frames: int | None = None) -> None:
        self._database = database
        self._frames = BACKGROUND_FRAMES if frames is None else frames
        self._shm: int | None = None  # descriptor of the `-shm` file, opened at the first commit
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._stopping = False
        self.checkpoints = 0  # completed rounds, for tests and diagnostics
        self._conn = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
        self._thread = threading.Thread(target=self._run, name="kg-checkpoint", daemon=True)
        self._thread.start()

    def backlog(self) -> int | None:
        """WAL frames committed but not yet in the database file; None when the wal-index cannot be
        read (no `-shm` file: nothing was written yet). A hint: the header may be read mid-update.
        Read with `pread`, not mapped: SQLite may truncate the file, which a mapping answers with SIGBUS."""
        if self._shm is None:
            try:
                self._shm = os.open(f"{self._database}-shm", os.O_RDONLY)
            except OSError:
                return None
        header = os.pread(self._shm, _HEADER_BYTES, 0)
        if len(header) < _HEADER_BYTES:
            return None
        return _U32.unpack_from(header, _MX_FRAME)[0] - _U32.unpack_from(header, _N_BACKFILL)[0]

    def committed(self) -> None:
        """Called by the writer after a COMMIT: wakes the thread when enough frames wait. Costs the
        writer one `pread` of the header (a few microseconds)."""
        backlog = self.backlog()
        if backlog is not None and backlog >= self._frames and self._idle.is_set():
            self._idle.clear()
            self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                self.checkpoints += 1
            except sqlite3.Error as exc:  # the writer's autocheckpoint still bounds the WAL
                log.warning("background checkpoint of %s failed: %s", self._database, exc)
            finally:
                self._idle.set()

    def wait_idle(self, timeout: float) -> bool:
        """True once no round is under way (within `timeout` seconds)."""
        return self._idle.wait(timeout)

    def close(self) -> None:
        """Stop the thread (a round under way finishes first) and close its connection and descriptor."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
        self._conn.close()
        if self._shm is not None:
            os.close(self._shm)
            self._shm = None
