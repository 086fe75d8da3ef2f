"""A real tmpfs mounted for one test: a disk we can fill or remount read-only. Needs root (as CI runs)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(point: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of `size` (e.g. "16m") at `point` for the duration; skip where we cannot."""
    point.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], capture_output=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


def remount(point: Path, mode: str) -> None:
    """Remount `point` "ro" or "rw"."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(point)], check=True, capture_output=True)
