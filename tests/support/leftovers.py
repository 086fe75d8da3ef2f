"""Nothing a test starts outlives it (a pytest plugin, loaded by tests/conftest.py).

Servers, mount daemons, passthrough filesystems, fake models, agents and the hook's detached workers
all run under the test's own `tmp_path`: it is in their command line, working directory or
environment. After each test that has a `tmp_path`, and after its own fixtures are torn down, every
mount still under it is unmounted and every process still naming it is stopped (SIGTERM, then
SIGKILL), whatever way the test ended: passed, failed, an exception between a start and the
teardown that should have stopped it, or a pytest-timeout. At the end of the run the same sweep
covers the whole base temp directory (session-scoped fixtures). What was stopped is listed in the
terminal summary and, as a `LeftBehind` warning, under the test's id in pytest's warnings summary,
so a test that leaks can be found and fixed.

Processes started by these helpers also ask the kernel for SIGTERM when the test run itself dies
(kgbridge.server_process.die_with_parent): a SIGKILLed pytest leaves no server or passthrough mount.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import warnings
from pathlib import Path

import pytest

from projection.mounts import mount_points

class LeftBehind(pytest.PytestWarning):
    """A test ended with a process or a mount of its own still there: fix its teardown."""


_found: list[tuple[str, str]] = []  # (test id, what was left) for the summary
STOP_WAIT_S = 5.0


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                pid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _alive(pid: int) -> bool:
    """Running (a zombie has exited; its parent reaps it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def processes_under(base: Path) -> dict[int, str]:
    """{pid: command line} of live processes whose command line, working directory or environment
    names `base` or a path inside it (never this process or its ancestors)."""
    text = str(base)
    named = re.compile(re.escape(text).encode() + rb"(?=[/\x00:]|$)")
    skip = _ancestors()
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in skip:
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
            try:
                cwd = os.readlink(f"/proc/{pid}/cwd").encode()
            except OSError:
                cwd = b""
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue  # gone, or not ours to read
        if any(named.search(field) for field in (cmdline, cwd, environ)) and _alive(pid):
            found[pid] = cmdline.replace(b"\x00", b" ").decode(errors="replace").strip()[:160]
    return found


def mounts_under(base: Path) -> list[str]:
    prefix = str(base).rstrip("/") + "/"
    return sorted((p for p in mount_points() if p.startswith(prefix)), key=len, reverse=True)


def sweep(base: Path) -> list[str]:
    """Unmount what is mounted under `base`, stop what still names it; what was found, described."""
    left: list[str] = []
    for point in mounts_under(base):
        left.append(f"mount {point}")
        fuse = point in mount_points("fuse")
        for args in ((["fusermount", "-u", point], ["fusermount", "-uz", point]) if fuse
                     else (["umount", point], ["umount", "-l", point])):
            subprocess.run(args, capture_output=True, timeout=30)
            if point not in mount_points():
                break
    procs = processes_under(base)
    for pid, cmd in procs.items():
        left.append(f"pid {pid}: {cmd}")
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + STOP_WAIT_S
    while procs and time.monotonic() < deadline:
        procs = {pid: cmd for pid, cmd in procs.items() if _alive(pid)}
        time.sleep(0.05)
    for pid in procs:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left


@pytest.fixture(autouse=True)
def _nothing_left_behind(request: pytest.FixtureRequest):  # noqa: ANN202 - a fixture
    """Autouse, so torn down after every fixture the test asked for: only true leftovers remain."""
    base = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if base is not None:
        left = sweep(base)
        _found.extend((request.node.nodeid, what) for what in left)
        if left:  # in the warnings summary under the test's own id, not only at the end of the run
            warnings.warn(LeftBehind(f"{len(left)} left behind, stopped by the sweep: " + "; ".join(left)), stacklevel=1)


def pytest_sessionfinish(session: pytest.Session) -> None:
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None:
        return
    try:
        base = factory.getbasetemp()
    except Exception:  # noqa: BLE001 - no temp dir was made: nothing can be under it
        return
    _found.extend(("(end of run)", what) for what in sweep(base))


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 - pytest's reporter
    if not _found:
        return
    tests = sorted({test for test, _ in _found})
    terminalreporter.write_sep("-", f"left behind and stopped after their test: {len(_found)} ({len(tests)} tests)")
    for test, what in _found:
        terminalreporter.write_line(f"{test}: {what}")
