"""Bounded I/O for the hook: a call in a forked child with a deadline, a whole-operation alarm, and
reading only regular, size-capped files. Standard library only (the hook imports it).

Why a child process and not a thread: a thread blocked in a FUSE request sleeps uninterruptibly
(state D), and a process cannot finish exiting while any of its threads does, so a hook that used a
thread would hang its harness at exit. The child runs in its own session with /dev/null for stdio,
so nothing the harness waits on depends on it; a stuck child is orphaned and ends when it can.
"""

from __future__ import annotations

import json
import os
import select
import signal
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class TimedOut(Exception):
    """The call did not finish within its budget; it may still be blocked in an orphaned child."""


class ChildFailed(OSError):
    """The call raised in the child; `errno` is carried over when there was one."""


class NotRegular(OSError):
    """Not a regular file (FIFO, device, directory, symlink): never read it."""


class TooLarge(OSError):
    """A regular file over the size cap (a 600 MB sparse file is one): never read it."""


class StillChanging(OSError):
    """Written moments ago or while being read: a write in progress (truncate, then write) read in
    between is content nobody wrote."""


def call_bounded(fn: Callable[[], object], timeout: float) -> object:
    """`fn()` in a forked child; its JSON-serializable result, `ChildFailed`, or `TimedOut`."""
    if timeout <= 0:
        raise TimedOut("no time left")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: detach from everything the parent's waiters watch
        try:
            os.close(read_end)
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            try:
                message = ["ok", fn()]
            except OSError as exc:
                message = ["err", str(exc), exc.errno]
            except BaseException as exc:  # noqa: BLE001 - child boundary: report, never raise
                message = ["err", f"{type(exc).__name__}: {exc}", None]
            os.write(write_end, json.dumps(message).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        remaining = timeout
        while remaining > 0:
            ready, _, _ = select.select([read_end], [], [], remaining)
            if not ready:
                break
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            remaining = deadline - time.monotonic()
    finally:
        os.close(read_end)
    try:
        os.waitpid(pid, os.WNOHANG)  # reap if done; a stuck child is reaped by init after we exit
    except ChildProcessError:
        pass
    if not chunks:
        raise TimedOut(f"no answer within {timeout * 1000:.0f} ms")
    try:
        status, *rest = json.loads(b"".join(chunks))
    except ValueError:
        raise TimedOut(f"partial answer within {timeout * 1000:.0f} ms") from None
    if status == "ok":
        return rest[0]
    raise ChildFailed(rest[1] or 0, rest[0])


@contextmanager
def alarm(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the main thread once `seconds` have passed, whatever the code inside is
    doing in Python or in an interruptible system call (a `/health` trickling one byte per 100 ms
    stays under every per-socket timeout; this bounds the whole exchange). Main thread only."""
    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"no answer within {seconds * 1000:.0f} ms")

    try:
        previous = signal.signal(signal.SIGALRM, expire)
    except ValueError:  # not the main thread: per-socket timeouts are all we have
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def read_regular(path: os.PathLike[str] | str, limit: int, *, quiet_s: float = 0.0) -> bytes:
    """The bytes of a regular file of at most `limit` bytes. Opened with O_NONBLOCK (a FIFO never
    blocks the open) and O_NOFOLLOW (a symlink is not followed); anything else raises `NotRegular`,
    anything larger `TooLarge`, before a byte is read. With `quiet_s`, a file modified less than that
    long ago, or during the read, raises `StillChanging`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(0, "not a regular file", str(path))
        if info.st_size > limit:
            raise TooLarge(0, f"{info.st_size} bytes, over the {limit}-byte artifact limit", str(path))
        if quiet_s and abs(time.time() - info.st_mtime) < quiet_s:
            raise StillChanging(0, "modified moments ago", str(path))
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # grew since fstat
                raise TooLarge(0, f"over the {limit}-byte artifact limit", str(path))
        if quiet_s:
            after = os.fstat(fd)
            if size != info.st_size or (after.st_mtime_ns, after.st_size) != (info.st_mtime_ns, info.st_size):
                raise StillChanging(0, "modified while being read", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _inherited_fds() -> list[int]:
    """Descriptors a child would inherit besides stdio (not close-on-exec): the harness's, if any."""
    import fcntl  # lazily: only a detach pays for it

    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return []
    inherited = []
    for name in names:
        fd = int(name)
        try:
            if fd > 2 and not fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC:
                inherited.append(fd)
        except OSError:
            continue  # the listing's own descriptor, closed by now
    return inherited


def detach(argv: list[str]) -> None:
    """Start `argv` in its own session with stdio on /dev/null and nothing else inherited; returns
    at once and never waits on the child. `posix_spawn` (vfork + exec) rather than fork: by the time
    it returns, the child is already a fresh process holding none of our descriptors, so the
    harness, which reads the hook's stdout to its end, sees that end when the hook exits, not when a
    forked copy of the hook is next scheduled and gets round to closing it (bench/hook.py)."""
    actions = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited_fds()]
    os.posix_spawn(argv[0], argv, os.environ, file_actions=actions, setsid=True)
