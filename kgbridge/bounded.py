"""Run a call that might hang on a dead filesystem, and give up after a timeout. Stdlib only.

Why a forked child and not a thread: a thread blocked in a FUSE request sleeps uninterruptibly
(state D), and a process cannot finish exiting while any of its threads does, so a hook that used a
thread would hang its harness at exit. The child runs in its own session with /dev/null for stdio,
so nothing the harness waits on (our pid, our pipes) depends on it; a stuck child is orphaned and
ends when the daemon answers or the mount goes away.
"""

from __future__ import annotations

import json
import os
import select
from collections.abc import Callable


class TimedOut(Exception):
    """The call did not finish within its budget; it may still be blocked in an orphaned child."""


class ChildFailed(OSError):
    """The call raised in the child; `errno` is carried over when there was one."""


def call_bounded(fn: Callable[[], object], timeout: float) -> object:
    """`fn()` in a forked child; its JSON-serializable result, `ChildFailed`, or `TimedOut`."""
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
    try:
        chunks: list[bytes] = []
        remaining = timeout
        import time

        deadline = time.monotonic() + timeout
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
    status, *rest = json.loads(b"".join(chunks))
    if status == "ok":
        return rest[0]
    raise ChildFailed(rest[1] or 0, rest[0])
