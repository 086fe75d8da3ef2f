"""The read-only FUSE filesystem that shows the projection in the agent's memory slot.

Invariants: mounted `ro`; every write-type operation answers EROFS; attribute and entry caching are
off and files use direct I/O, so a reader never sees a stale size or a cut-off file; each `open`
takes one snapshot of the file's bytes and serves every read of that handle, and the size `fstat`
reports to its process, from it. Overlay: the directory's own files and subfolders stay visible
(read-only) through a directory fd opened before mounting; the projection's MEMORY.md and topic files
take precedence.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
import threading
import time
from pathlib import Path

from mfusepy import FUSE, FuseOSError, Operations, fuse_get_context

from projection.view import ProjectionView

# Every mount option the read-only, never-stale promise needs; fsname/subtype make it recognisable.
MOUNT_OPTIONS = {"ro": True, "fsname": "kgbridge", "subtype": "kgbridge", "attr_timeout": 0,
                 "entry_timeout": 0, "negative_timeout": 0, "direct_io": True, "default_permissions": True}


def _caller_process() -> int:
    """The process (thread group) of the thread that made the current FUSE request: FUSE reports a
    thread id, and a reader may open on one thread and fstat on another (libuv's pool does)."""
    tid = fuse_get_context()[2]
    try:
        with open(f"/proc/{tid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"Tgid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return tid


def _erofs(*_args: object, **_kwargs: object) -> int:
    raise FuseOSError(errno.EROFS)


class ProjectionFS(Operations):
    def __init__(self, view: ProjectionView, host_fd: int | None = None) -> None:
        self.view = view
        self.host_fd = host_fd  # the memory directory underneath, opened before mounting
        self.started = time.time()
        self._handles: dict[int, bytes] = {}
        self._opened: dict[tuple[int, str], int] = {}  # (caller's process, name) -> its latest handle
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    # -- helpers ----------------------------------------------------------------------------------

    def _host_names(self) -> list[str]:
        if self.host_fd is None:
            return []
        try:
            return sorted(n for n in os.listdir(self.host_fd) if not n.startswith("."))
        except OSError:
            return []

    def _host_dir(self, parts: list[str]) -> int | None:
        """A new fd of the host subdirectory `parts` (no symlink followed, no hidden name), or None."""
        if self.host_fd is None:
            return None
        fd = os.dup(self.host_fd)
        try:
            for part in parts:
                if part.startswith(".") or not part:
                    raise FileNotFoundError(part)
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except OSError:
            os.close(fd)
            return None
        return fd

    def _host_stat(self, name: str) -> os.stat_result | None:
        """A host file or subdirectory (a real folder may keep notes in `archive/`), read-only; a top-level
        name the graph forgot (deleted or renamed away, ADR 0012) is hidden, symlinks never followed."""
        *parents, leaf = name.split("/")
        if self.host_fd is None or leaf.startswith(".") or (not parents and name in self.view.forgotten()):
            return None
        fd = self._host_dir(parents)
        if fd is None:
            return None
        try:
            st = os.stat(leaf, dir_fd=fd, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(fd)
        return st if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) else None

    def _host_link(self, name: str) -> str | None:
        """The target of a host symlink at `name`, or None. A dotfiles setup links MEMORY.md or a note from
        a repository; such a file is never ingested (a link may reach any file), so the mount shows the
        link itself, as the folder does: the reader resolves it, never us (a relative link to a sibling
        reaches the sibling's projection), instead of a generated index or a missing file."""
        *parents, leaf = name.split("/")
        if self.host_fd is None or leaf.startswith(".") or (not parents and name in self.view.forgotten()):
            return None
        fd = self._host_dir(parents)
        if fd is None:
            return None
        try:
            return os.readlink(leaf, dir_fd=fd)
        except OSError:
            return None  # not a link (EINVAL) or gone
        finally:
            os.close(fd)

    def _file_attrs(self, size: int, mtime: float) -> dict[str, object]:
        return {"st_mode": stat.S_IFREG | 0o444, "st_nlink": 1, "st_size": size, "st_uid": os.getuid(),
                "st_gid": os.getgid(), "st_atime": mtime, "st_mtime": mtime, "st_ctime": mtime}

    # -- read side --------------------------------------------------------------------------------

    def getattr(self, path: str, fh: int | None = None) -> dict[str, object]:
        if path == "/":
            return {"st_mode": stat.S_IFDIR | 0o555, "st_nlink": 2, "st_uid": os.getuid(), "st_gid": os.getgid(),
                    "st_atime": self.started, "st_mtime": time.time(), "st_ctime": self.started}
        name = path.lstrip("/")
        if fh is None:
            fh = self._callers_handle(name)  # the kernel sends no handle with fstat: match the caller
        if fh is not None and fh in self._handles:
            return self._file_attrs(len(self._handles[fh]), time.time())
        target = self._host_link(name)
        if target is not None:
            return {**self._file_attrs(len(os.fsencode(target)), self.started), "st_mode": stat.S_IFLNK | 0o777}
        data = self.view.read(name) if "/" not in name else None  # the projection's files are all top-level
        if data is not None:
            return self._file_attrs(len(data), time.time())
        st = self._host_stat(name)
        if st is not None and stat.S_ISDIR(st.st_mode):
            return {**self._file_attrs(0, st.st_mtime), "st_mode": stat.S_IFDIR | 0o555, "st_nlink": 2}
        if st is not None:
            return self._file_attrs(st.st_size, st.st_mtime)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path: str, fh: int) -> list[str]:
        if path != "/":
            return [".", "..", *self._host_subdir(path.strip("/"))]
        names = dict.fromkeys(self.view.names())
        names.update(dict.fromkeys(n for n in self._host_names()
                                   if self._host_stat(n) is not None or self._host_link(n) is not None))
        return [".", "..", *names]

    def readlink(self, path: str) -> str:
        target = self._host_link(path.lstrip("/"))
        if target is None:
            raise FuseOSError(errno.EINVAL)
        return target

    def _host_subdir(self, name: str) -> list[str]:
        st = self._host_stat(name)
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise FuseOSError(errno.ENOTDIR if st is not None else errno.ENOENT)
        fd = self._host_dir(name.split("/"))
        if fd is None:
            raise FuseOSError(errno.ENOENT)
        try:
            entries = sorted(n for n in os.listdir(fd) if not n.startswith("."))
        finally:
            os.close(fd)
        return [n for n in entries
                if self._host_stat(f"{name}/{n}") is not None or self._host_link(f"{name}/{n}") is not None]

    def open(self, path: str, flags: int) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_TRUNC | os.O_APPEND):
            raise FuseOSError(errno.EROFS)
        name = path.lstrip("/")
        if self._host_link(name) is not None:
            raise FuseOSError(errno.ELOOP)  # the kernel follows links itself; only O_NOFOLLOW gets here
        data = self.view.read(name) if "/" not in name else None
        host = self._host_stat(name) if data is None else None
        if host is not None and stat.S_ISDIR(host.st_mode):
            raise FuseOSError(errno.EISDIR)
        if host is not None:
            *parents, leaf = name.split("/")
            parent = self._host_dir(parents)
            if parent is None:
                raise FuseOSError(errno.ENOENT)
            try:
                fd = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=parent)
            finally:
                os.close(parent)
            try:
                chunks = []
                while chunk := os.read(fd, 1 << 20):
                    chunks.append(chunk)
                data = b"".join(chunks)
            finally:
                os.close(fd)
        if data is None:
            raise FuseOSError(errno.ENOENT)
        with self._lock:
            handle = next(self._counter)
            self._handles[handle] = data  # the snapshot this handle serves, whatever ingests follow
            self._opened[(_caller_process(), name)] = handle
        return handle

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        data = self._handles.get(fh)
        if data is None:
            raise FuseOSError(errno.EBADF)
        return data[offset : offset + size]

    def release(self, path: str, fh: int) -> int:
        with self._lock:
            self._handles.pop(fh, None)
            for key in [k for k, v in self._opened.items() if v == fh]:
                del self._opened[key]
        return 0

    def _callers_handle(self, name: str) -> int | None:
        """The handle the calling process last opened on `name`, if still open: `fstat` on it must
        report its snapshot's size, not the newest version's (a reader that reads exactly st_size,
        like Node's fs.readFile, would otherwise get a cut-off file)."""
        if not self._opened:
            return None
        with self._lock:
            return self._opened.get((_caller_process(), name))

    def statfs(self, path: str) -> dict[str, int]:
        return {"f_bsize": 4096, "f_frsize": 4096, "f_blocks": 0, "f_bfree": 0, "f_bavail": 0, "f_files": 0,
                "f_ffree": 0, "f_favail": 0, "f_flag": os.ST_RDONLY, "f_namemax": 255}

    def access(self, path: str, amode: int) -> int:
        if amode & os.W_OK:
            raise FuseOSError(errno.EROFS)
        self.getattr(path)
        return 0

    # -- write side: read-only, every one of them -----------------------------------------------

    create = write = truncate = unlink = rename = mkdir = rmdir = _erofs
    chmod = chown = utimens = symlink = link = mknod = setxattr = removexattr = fallocate = _erofs


def run(view: ProjectionView, mountpoint: Path, *, overlay: bool = True) -> None:
    """Mount in the foreground until unmounted (the daemon process body)."""
    host_fd = os.open(mountpoint, os.O_RDONLY | os.O_DIRECTORY) if overlay else None
    try:
        FUSE(ProjectionFS(view, host_fd), str(mountpoint), foreground=True, nothreads=False,
             nonempty=overlay, **MOUNT_OPTIONS)
    finally:
        if host_fd is not None:
            os.close(host_fd)
