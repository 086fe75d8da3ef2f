"""`kgbridge serve` as a child process on a free loopback port, started once it answers /health.

For the test suite and the benchmarks, which both need the real server on a real socket and may not
import each other (import-linter contracts in pyproject.toml). Stopping sends SIGTERM, so what is
measured or tested includes the graceful shutdown.

A server must not outlive what started it: a start that fails or is interrupted (it did not answer in
time, a test timeout, Ctrl-C) kills it before raising, and the child asks the kernel for SIGTERM when
its parent dies (`die_with_parent`), so even a SIGKILLed test run or benchmark leaves none behind.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from kgbridge.detect import TOKEN_ENV

KGBRIDGE = [sys.executable, "-m", "kgbridge.cli"]
_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM):  # noqa: ANN201 - a preexec_fn
    """A `preexec_fn` for Popen: the child gets `sig` when the thread that started it ends (Linux
    prctl PR_SET_PDEATHSIG, kept across exec), and exits at once if that parent is already gone.
    Call it in the parent: it returns the function the child runs between fork and exec."""
    parent = os.getpid()
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: nothing to ask for
        return None

    def in_child() -> None:
        prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # the parent died between fork and prctl
            os._exit(1)

    return in_child


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    def __init__(self, root: Path, *, port: int | None = None, token: str | None = None,
                 extra: list[str] | None = None, env: dict[str, str] | None = None) -> None:
        self.root, self.port, self.token = root, port or free_port(), token
        self.extra = extra or []
        self.env = env or {}  # added to (or replacing) this process's environment
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root.parent / f"server-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def start(self, timeout: float = 20.0) -> "ServerProcess":
        env = {**os.environ, **self.env}
        env.pop(TOKEN_ENV, None)  # the token is passed explicitly, or not at all
        cmd = [*KGBRIDGE, "serve", "--root", str(self.root), "--port", str(self.port), *self.extra]
        if self.token:
            cmd += ["--token", self.token]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True, preexec_fn=die_with_parent())
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited: {self.log.read_text()[-2000:]}")
                try:
                    if httpx.get(f"{self.url}/health", headers=self.headers(), timeout=1).status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
                time.sleep(0.1)
            raise RuntimeError(f"server did not come up: {self.log.read_text()[-2000:]}")
        except BaseException:  # nobody will stop a server whose start raised: `with` never entered
            self.kill()
            raise

    def kill(self) -> None:
        """SIGKILL the server's whole process group (its own session) and reap it."""
        assert self.proc is not None
        if self.proc.poll() is None:  # never a group whose leader was reaped: its id may be reused
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.proc.wait()
        except BaseException:  # interrupted while waiting (a test timeout, Ctrl-C): still no leftover
            self.kill()
            raise

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop(signal.SIGKILL if self.proc and self.proc.poll() is None and exc[0] else signal.SIGTERM)


def wait_drained(ingest: Path, timeout: float = 60.0) -> None:
    """Until the drop directory holds no candidate file."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not [p for p in ingest.iterdir() if not p.name.startswith(".")]:
            return
        time.sleep(0.1)
    raise TimeoutError(f"{ingest} still holds {sorted(p.name for p in ingest.iterdir())[:5]}...")


def artifact_rows(db: Path) -> list[tuple[str, str]]:
    """(source identity, sha256) of every artifact in a graph, read-only: what a run took in."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT s.identity, a.sha256 FROM artifacts a JOIN sources s ON s.id = a.source_id").fetchall()
    finally:
        conn.close()
