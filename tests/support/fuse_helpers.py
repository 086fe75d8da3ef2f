"""Start, kill and clean up real FUSE mounts in tests; skip cleanly where FUSE cannot run."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgbridge.server_process import die_with_parent
from projection.mounts import fuse_available, is_mounted as mounted

HERE = Path(__file__).parent

requires_fuse = pytest.mark.skipif(not fuse_available(), reason="FUSE (/dev/fuse, fusermount) not available")


def wait_mounted(point: Path, proc: subprocess.Popen | None = None, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if mounted(point):
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"FUSE daemon exited with {proc.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"{point} did not mount")


def unmount(point: Path) -> None:
    """Unmount, lazily if busy or orphaned; never raises."""
    for args in (["fusermount", "-u", str(point)], ["fusermount", "-uz", str(point)]):
        if not mounted(point):
            return
        subprocess.run(args, capture_output=True, timeout=10)
        time.sleep(0.05)


def start_passthrough(source: Path, point: Path, hang_flag: Path | None = None) -> subprocess.Popen:
    source.mkdir(parents=True, exist_ok=True)
    point.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, str(HERE / "fusefs.py"), str(source), str(point)]
    if hang_flag is not None:
        args.append(str(hang_flag))
    # SIGTERM when the test run dies: libfuse then unmounts before it exits (no orphaned mount).
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=die_with_parent())
    try:
        wait_mounted(point, proc)
    except BaseException:
        proc.kill()
        proc.wait()
        unmount(point)
        raise
    return proc
