"""A passthrough FUSE filesystem for fault tests: `python fusefs.py SOURCE MOUNTPOINT [HANG_FLAG]`.

While HANG_FLAG exists every operation blocks, as a half-dead backend daemon would; killing this
process with SIGKILL leaves an orphaned mount (ENOTCONN). Real mfusepy, real kernel mount.
"""

from __future__ import annotations

import errno
import os
import sys
import time

from mfusepy import FUSE, FuseOSError, Operations

_STAT_KEYS = ("st_mode", "st_nlink", "st_size", "st_uid", "st_gid", "st_atime", "st_mtime", "st_ctime")


class Passthrough(Operations):
    def __init__(self, source: str, hang_flag: str | None) -> None:
        self.source = source
        self.hang_flag = hang_flag

    def _path(self, path: str) -> str:
        self._hang()
        return os.path.join(self.source, path.lstrip("/"))

    def _hang(self) -> None:
        while self.hang_flag and os.path.exists(self.hang_flag):
            time.sleep(0.05)

    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._path(path))
        except OSError as exc:
            raise FuseOSError(exc.errno or errno.EIO) from None
        return {key: getattr(st, key) for key in _STAT_KEYS}

    def access(self, path, amode):
        if not os.access(self._path(path), amode):
            raise FuseOSError(errno.EACCES)
        return 0

    def readdir(self, path, fh):
        return [".", "..", *os.listdir(self._path(path))]

    def mkdir(self, path, mode):
        return os.mkdir(self._path(path), mode)

    def rmdir(self, path):
        return os.rmdir(self._path(path))

    def unlink(self, path):
        return os.unlink(self._path(path))

    def rename(self, old, new):
        return os.rename(self._path(old), self._path(new))

    def chmod(self, path, mode):
        return os.chmod(self._path(path), mode)

    def chown(self, path, uid, gid):
        return os.chown(self._path(path), uid, gid)

    def truncate(self, path, length, fh=None):
        return os.truncate(self._path(path), length)

    def utimens(self, path, times=None):
        return os.utime(self._path(path), ns=times) if times else os.utime(self._path(path))

    def open(self, path, flags):
        return os.open(self._path(path), flags)

    def create(self, path, mode, fi=None):
        return os.open(self._path(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        return os.pwrite(fh, data, offset)

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        return os.fsync(fh)

    def release(self, path, fh):
        return os.close(fh)

    def statfs(self, path):
        st = os.statvfs(self._path(path))
        return {key: getattr(st, key) for key in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail",
                                                  "f_files", "f_ffree", "f_favail", "f_flag", "f_namemax")}


if __name__ == "__main__":
    source, mountpoint = sys.argv[1], sys.argv[2]
    flag = sys.argv[3] if len(sys.argv) > 3 else None
    FUSE(Passthrough(source, flag), mountpoint, foreground=True, nothreads=False, fsname="kgtest")
