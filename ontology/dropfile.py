"""Read one untrusted file (a drop, a host memory file) without letting it block, escape or bloat us.

Invariant: the file is opened with O_NONBLOCK|O_NOFOLLOW and judged by `fstat` on that descriptor,
so a FIFO, device, directory, symlink or hard link is refused without a blocking read or following
it anywhere; the size is checked before reading and the read stops at the byte budget, so an
oversized (or sparse) file costs at most `PREFIX_BYTES` of memory and of rejected/.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ontology.archive import PREFIX_BYTES
from ontology.parse import MAX_ARTIFACT_BYTES

_CHUNK = 256 * 1024


class DropRefused(Exception):
    """The file is not a plain, private, bounded regular file; `prefix` is what may be kept of it."""

    def __init__(self, reason: str, prefix: bytes = b"") -> None:
        super().__init__(reason)
        self.reason = reason
        self.prefix = prefix


@dataclass(frozen=True)
class DropRead:
    data: bytes
    size: int
    mtime_ns: int


def _read_upto(fd: int, limit: int) -> bytes:
    chunks, left = [], limit
    while left > 0 and (chunk := os.read(fd, min(_CHUNK, left))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_drop(path: Path, *, limit: int = MAX_ARTIFACT_BYTES, dir_fd: int | None = None,
              follow: bool = False, allow_links: bool = False) -> DropRead:
    """The file's bytes, or `DropRefused` with the reason (and a bounded prefix when it is only too
    large). `FileNotFoundError` if it vanished; other OSErrors (EACCES, EIO) propagate."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    name = path.name if dir_fd is not None else path
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            try:
                target = os.readlink(name, dir_fd=dir_fd)
            except OSError:
                target = "?"
            raise DropRefused(f"symlinks are refused (pointed to {target!r}); drop a regular file",
                              target.encode("utf-8", "surrogateescape")) from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):  # a socket; a directory opened for writing
            raise DropRefused(f"not a regular file ({os.strerror(exc.errno)})") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "directory" if stat.S_ISDIR(st.st_mode) else "FIFO" if stat.S_ISFIFO(st.st_mode) else "special file"
            raise DropRefused(f"a {kind} is not a regular file; only regular files are ingested")
        if st.st_nlink > 1 and not allow_links:
            raise DropRefused(f"a hard link ({st.st_nlink} names) is refused: it may be a file from elsewhere; "
                              "drop a copy")
        if st.st_size > limit:
            raise DropRefused(f"artifact is {st.st_size} bytes, over the {limit}-byte limit "
                              f"(first {PREFIX_BYTES} bytes kept)", _read_upto(fd, PREFIX_BYTES))
        data = _read_upto(fd, limit + 1)
        if len(data) > limit:  # grew while we read
            raise DropRefused(f"artifact is over the {limit}-byte limit (first {PREFIX_BYTES} bytes kept)",
                              data[:PREFIX_BYTES])
        return DropRead(data, st.st_size, st.st_mtime_ns)
    finally:
        os.close(fd)
