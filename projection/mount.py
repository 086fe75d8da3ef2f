"""Mount and unmount the projection; the daemon process body lives here too.

Invariants: before mounting over a populated directory, every host file is ingested (nothing of
theirs is lost, and it stays on disk untouched underneath); `unmount` leaves no mount behind even
when the daemon was killed (orphaned, ENOTCONN) or a reader keeps it busy (lazy unmount), returns
only once the daemon has ended, and the host directory is exactly as it was.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ontology.artifact import Channel, Kind
from ontology.dropfile import DropRefused, read_drop
from ontology.errors import UserError
from ontology.ingest import Ontology, Status
from ontology.layout import drop_name
from projection.mounts import is_mounted

log = logging.getLogger(__name__)

MOUNT_WAIT_S = 15.0
# How long `unmount` waits for the daemon to end after SIGTERM before it sends SIGKILL. It ends in
# well under a second once unmounted; `unmount` returns only when it has, so nothing outlives it.
STOP_WAIT_S = 10.0


class MountFailed(UserError, RuntimeError):
    """The projection cannot be mounted there (already a mount point, or the daemon did not start)."""

    status = 409
    kind = "mount-failed"


def ingest_host_files(onto: Ontology, directory: Path) -> int:
    """Ingest the memory directory's own files (as memory artifacts) before covering it, in one
    batched call (a transaction per BATCH_SIZE files, not per file). A symlink is never followed
    (it could reach any file on the machine) and a FIFO never blocks us: both are skipped."""
    items, names = [], []
    for path in sorted(directory.glob("*.md")):
        if path.name.startswith("."):
            continue
        try:
            data = read_drop(path, allow_links=True).data
        except DropRefused as exc:
            log.warning("not ingesting %s from the memory dir: %s", path, exc.reason)
            continue
        except OSError as exc:
            log.warning("cannot read %s from the memory dir: %s", path, exc.strerror)
            continue
        items.append((drop_name(Kind.MEMORY.value, data, path.name), data, Channel.CLI))
        names.append(path.name)
    for name, result in zip(names, onto.ingest_many(items)):
        if result.status is Status.REJECTED:  # the file stays on disk as it is; say why the graph lacks it
            log.warning("not ingesting %s from the memory dir: %s", name, result.reason)
    return len(items)


# The daemon's log is kept to this size (plus one previous generation) across mounts.
MAX_LOG_BYTES = 1024 * 1024


def _rotated(path: Path) -> Path:
    """`path`, moved aside to `<path>.1` first when it has grown past MAX_LOG_BYTES."""
    try:
        if path.stat().st_size > MAX_LOG_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    return path


def mount(root: Path, slug: str, at: Path, *, state_dir: Path, overlay: bool = True) -> int:
    """Mount the projection of `slug` at `at`; returns the daemon pid. The daemon's log and pid file
    go in `state_dir` (the bridge's per-project state, which the caller owns)."""
    if is_mounted(at):
        raise MountFailed(f"{at} is already a mount point; `kgbridge unmount` first")
    at.mkdir(parents=True, exist_ok=True)
    onto = Ontology(root, slug)
    ingest_host_files(onto, at)
    onto.close()
    state_dir.mkdir(parents=True, exist_ok=True)
    log = open(_rotated(state_dir / "mount.log"), "ab")
    proc = subprocess.Popen([sys.executable, "-m", "projection.mount", "--daemon", "--root", str(root),
                             "--ontology", slug, "--at", str(at), *([] if overlay else ["--no-overlay"])],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + MOUNT_WAIT_S
    while not is_mounted(at):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise MountFailed(f"projection did not mount at {at}; see {state_dir / 'mount.log'}")
        time.sleep(0.05)
    (state_dir / "mount.pid").write_text(f"{proc.pid}\n{os.path.abspath(at)}\n")
    return proc.pid


def unmount(at: Path, state_dir: Path | None = None) -> bool:
    """Unmount (lazily if busy or orphaned) and stop the daemon; True if something was mounted."""
    was = is_mounted(at)
    for args in (["fusermount", "-u", str(at)], ["fusermount", "-uz", str(at)]):
        if not is_mounted(at):
            break
        subprocess.run(args, capture_output=True, timeout=15)
    if state_dir is not None:
        pid_file = state_dir / "mount.pid"
        try:
            _stop_daemon(int(pid_file.read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            pass
        pid_file.unlink(missing_ok=True)
    return was


def _is_daemon(pid: int) -> bool:
    """A live (not zombie) projection daemon: never signal a process that reused its pid."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return b"projection.mount\x00--daemon" in cmdline and state != b"Z"


def _stop_daemon(pid: int) -> None:
    """SIGTERM the daemon and wait until it has ended (SIGKILL past STOP_WAIT_S)."""
    if not _is_daemon(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while _is_daemon(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description="kgbridge projection daemon (started by `kgbridge mount`)")
    parser.add_argument("--daemon", action="store_true")
    parser.add_argument("--root", required=True)
    parser.add_argument("--ontology", required=True)
    parser.add_argument("--at", required=True)
    parser.add_argument("--no-overlay", action="store_true")
    args = parser.parse_args()
    from projection.fuse import run
    from projection.view import ProjectionView

    run(ProjectionView(Ontology(Path(args.root), args.ontology)), Path(args.at), overlay=not args.no_overlay)


if __name__ == "__main__":
    main()
