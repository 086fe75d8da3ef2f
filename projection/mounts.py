"""The kernel's mount table, read one way for everyone: is a path a mount point, which are FUSE.

Reads `/proc/self/mounts` only (never stats a mount point, which could hang on a dead daemon) and
undoes its octal escapes (`\040` space, `\011` tab, `\012` newline, `\134` backslash). Standard
library only: the hook asks it whether a memory directory is our projection.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

MOUNT_TABLE = "/proc/self/mounts"
_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def mount_points(fstype_prefix: str = "") -> list[str]:
    """Mount points whose filesystem type starts with `fstype_prefix` ("" for all); [] if unreadable."""
    try:
        with open(MOUNT_TABLE, encoding="utf-8", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        return []
    return [_unescape(fields[1]) for fields in map(str.split, lines)
            if len(fields) >= 3 and fields[2].startswith(fstype_prefix)]


def fuse_available() -> bool:
    """Whether this machine can mount at all (a FUSE device and the unmount tool)."""
    import shutil  # lazily: it pulls in the compression modules, and the hook never asks this

    return os.path.exists("/dev/fuse") and shutil.which("fusermount") is not None


def fuse_mounts() -> list[str]:
    return mount_points("fuse")


def is_mounted(point: Path | str) -> bool:
    return os.path.abspath(point) in mount_points()
