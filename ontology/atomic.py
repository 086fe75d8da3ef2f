"""Writing a file so that readers see all of it or none of it. Standard library only, and light:
the hook imports it on every memory-file delivery.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def atomic_write(path: Path, data: bytes, mode: int = 0o600, *, parents: bool = True) -> None:
    """Write via a uniquely named temporary file in the same directory, fsync, rename: readers see
    all or nothing, and concurrent writers never share a temporary file. Stdlib only (the hook uses it).
    `parents=False` for a directory someone else owns (a drop directory): if it is gone, fail."""
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".tmp-{os.getpid()}-{time.monotonic_ns()}-{path.name}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
