"""The bridge's local state per project slug: outbox, refused items, delivered registry, locks.

Lives in `$KG_STATE_DIR` (default `$XDG_STATE_HOME/kgbridge`, else `~/.local/state/kgbridge`), never
inside the knowledge root, so it survives a dead backend. Invariants: every write is atomic
(tmp + rename) or an O_APPEND line; an artifact is in exactly one of: not yet seen, outbox,
refused, delivered; the outbox is read in arrival order. Standard library only (the hook imports it).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
from collections import namedtuple
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ontology.atomic import atomic_write  # one atomic writer for the whole project

STATE_ENV = "KG_STATE_DIR"
# Outbox names: `<arrival, ns since the epoch, 20 digits>-<pid>.<drop name>`, so name order is
# arrival order. Names without the prefix were written by earlier versions: they came first.
_ARRIVAL = re.compile(r"^(\d{20})-(\d+)\.(.+)$", re.DOTALL)
ANSWER_SUFFIX = ".answer.json"


class StateUnusable(OSError):
    """The state directory cannot be listed or written (read-only, full, not a directory)."""


def state_root() -> Path:
    explicit = os.environ.get(STATE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "state") / "kgbridge"


def read_json(path: Path) -> dict[str, object]:
    """A JSON object from `path`, or {} when it is missing, unreadable or not an object (tolerant)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_json_object(path: Path, invalid: type[ValueError]) -> tuple[str, dict[str, object]]:
    """(text, object) of a user-owned JSON file; missing is empty; malformed raises `invalid`, so a
    file we cannot parse is never overwritten (strict)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "", {}
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise invalid(f"{path} is not valid JSON ({exc}); fix it by hand first") from None
    if not isinstance(data, dict):
        raise invalid(f"{path} is not a JSON object; fix it by hand first")
    return text, data


class OutboxItem(namedtuple("OutboxItem", "path arrival_ns drop_name")):
    """One waiting artifact: its file, when it arrived (ns since the epoch) and its drop name."""

    __slots__ = ()
    path: Path
    arrival_ns: int
    drop_name: str


def _listing(directory: Path) -> list[str]:
    """Visible names in `directory`; [] when it does not exist yet; StateUnusable otherwise."""
    try:
        return [name for name in os.listdir(directory) if not name.startswith(".")]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StateUnusable(exc.errno, f"cannot list {directory}: {exc.strerror}") from None


class Delivered:
    """The delivered registry as read: the last key settled per (kind, file name). A key counts as
    settled only while it is its file's last one, so content that comes back (an edit A -> B -> A)
    is sent again as the file's newest version. Keys are `<kind>:<sha256>:<name>` (deliver.registry_key)."""

    def __init__(self, lines: list[str] | None = None) -> None:
        self._last: dict[str, str] = {}
        for line in lines or ():  # a `-<key>` line forgets one (a tombstone sent for its file)
            if line.startswith("-"):
                self.discard(line[1:])
            else:
                self.add(line)

    @staticmethod
    def _file(key: str) -> str:
        kind, _, rest = key.partition(":")
        return f"{kind}:{rest.partition(':')[2]}"

    def add(self, key: str) -> None:
        self._last[self._file(key)] = key

    def discard(self, key: str) -> None:
        if self._last.get(self._file(key)) == key:
            del self._last[self._file(key)]

    def difference_update(self, keys: list[str]) -> None:
        for key in keys:
            self.discard(key)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._last.values()))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._last.get(self._file(key)) == key

    def __len__(self) -> int:
        return len(self._last)


class ProjectState:
    """State of one slug. Paths only; nothing is created until written."""

    def __init__(self, slug: str, base: Path | None = None) -> None:
        self.slug = slug
        self.dir = (base or state_root()) / slug
        self.outbox = self.dir / "outbox"
        self.refused = self.dir / "refused"
        self.delivered_log = self.dir / "delivered"
        self.cache = self.dir / "detect.json"
        self.known_marker = self.dir / "known"
        self.last_delivery = self.dir / "last-delivery.json"
        self.retry_file = self.dir / "retry.json"
        self.rescan_marker = self.dir / "rescan-requested"  # + `.<harness>`: whose memory to rescan
        self.edits = self.dir / "edits"  # PreToolUse edits of the mounted slot the mount was too slow for
        # Edits of the mounted slot that did not apply (old_string not in the current text): kept with the agent's
        # text, told at its next write there (`.json` until told, then `.told`).
        self.unapplied = self.dir / "unapplied"
        # Per memory file, the last edit applied through the mount: the text it was applied to and the text it
        # gave, so the next edit builds on it while the mount still shows the text before it.
        self.edited = self.dir / "edited"
        self.lock_path = self.dir / "deliver.lock"
        self.worker_lock_path = self.dir / "worker.lock"

    # -- known: this project was active once, so absence means "backend down", not "opted out" ----

    def mark_known(self) -> None:
        if not self.known_marker.exists():
            atomic_write(self.known_marker, b"")

    def is_known(self) -> bool:
        return self.known_marker.exists()

    # -- delivered registry (delivered or refused: either way settled, never sent again) -----------

    def delivered(self) -> Delivered:
        """The registry in log order (the order things reached the backend): last key per file; a
        `-<key>` line forgets one (a tombstone sent for its file)."""
        try:
            return Delivered(self.delivered_log.read_text(encoding="utf-8").split())
        except (OSError, UnicodeDecodeError):
            return Delivered()

    def _append(self, lines: list[str]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.delivered_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, "".join(line + "\n" for line in lines).encode())
        finally:
            os.close(fd)

    def forget_delivered(self, keys: list[str]) -> None:
        """Send these again when they reappear: a file restored after its tombstone is a new version."""
        if keys:
            self._append([f"-{key}" for key in keys])

    def record_delivered(self, key: str, transport: str) -> None:
        self._append([key])
        atomic_write(self.last_delivery, json.dumps({"at": time.time(), "transport": transport,
                                                     "key": key}).encode())

    # -- outbox, in arrival order --------------------------------------------------------------------

    def outbox_items(self) -> list[OutboxItem]:
        """Waiting items, oldest first. Raises StateUnusable when the outbox cannot be listed."""
        items = []
        for name in _listing(self.outbox):
            match = _ARRIVAL.match(name)
            if match:
                items.append(OutboxItem(self.outbox / name, int(match.group(1)), match.group(3)))
                continue
            try:  # an earlier version's item: its mtime is when it arrived
                arrival = os.stat(self.outbox / name).st_mtime_ns
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StateUnusable(exc.errno, f"cannot read {self.outbox / name!r}: {exc.strerror}") from None
            items.append(OutboxItem(self.outbox / name, arrival, name))
        items.sort(key=lambda item: (item.arrival_ns, item.path.name))
        return items

    def put_outbox(self, drop_name: str, data: bytes) -> Path:
        """Append one item after every item already waiting (even if the clock stepped back)."""
        newest = max((int(m.group(1)) for m in map(_ARRIVAL.match, _listing(self.outbox)) if m), default=0)
        target = self.outbox / f"{max(time.time_ns(), newest + 1):020d}-{os.getpid()}.{drop_name}"
        atomic_write(target, data)
        return target

    def put_edit(self, record: dict[str, object]) -> Path:
        target = self.edits / f"{time.time_ns():020d}-{os.getpid()}.json"
        atomic_write(target, json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogateescape"))
        return target

    def edit_items(self) -> list[Path]:
        return sorted(self.edits / name for name in _listing(self.edits))

    def put_unapplied(self, record: dict[str, object]) -> Path:
        target = self.unapplied / f"{time.time_ns():020d}-{os.getpid()}.json"
        atomic_write(target, json.dumps(record, ensure_ascii=False, indent=1).encode("utf-8", "surrogateescape"))
        return target

    def untold_unapplied(self) -> list[Path]:
        return sorted(self.unapplied / name for name in _listing(self.unapplied) if name.endswith(".json"))

    def refuse(self, item: OutboxItem, answer: dict[str, object]) -> Path:
        """Move a permanently refused item to `refused/`, its answer beside it (answer first, so an
        item there always has one)."""
        target = self.refused / item.path.name
        atomic_write(self.refused / f"{item.path.name}{ANSWER_SUFFIX}",
                     json.dumps({"at": time.time(), **answer}, ensure_ascii=False, indent=2).encode("utf-8", "replace"))
        os.replace(item.path, target)
        return target

    def refused_items(self) -> list[Path]:
        return sorted(self.refused / name for name in _listing(self.refused) if not name.endswith(ANSWER_SUFFIX))

    # -- retry schedule (after transient failures) and rescan requests -------------------------------

    def retry(self) -> dict[str, object]:
        return read_json(self.retry_file)

    def set_retry(self, attempts: int, at: float, reason: str) -> None:
        atomic_write(self.retry_file, json.dumps({"attempts": attempts, "next_at": at, "reason": reason},
                                                 ensure_ascii=False).encode("utf-8", "replace"))

    def clear_retry(self) -> None:
        self.retry_file.unlink(missing_ok=True)

    def request_rescan(self, harness: str) -> None:
        atomic_write(self.rescan_marker.with_name(f"{self.rescan_marker.name}.{harness}"), b"")

    def rescan_requested(self) -> bool:
        return any(name.startswith(self.rescan_marker.name) for name in _listing(self.dir))

    def take_rescan_requests(self) -> set[str]:
        """The harnesses whose rescans were asked for since the last take (empty: none)."""
        taken = set()
        for name in _listing(self.dir):
            if name.startswith(self.rescan_marker.name + "."):
                try:
                    (self.dir / name).unlink()
                except FileNotFoundError:
                    continue
                taken.add(name[len(self.rescan_marker.name) + 1:])
        return taken

    # -- health: can we write here at all? -----------------------------------------------------------

    def problem(self) -> str | None:
        """None when the state directory takes a small durable write; else what is wrong."""
        probe = self.dir / f".probe-{os.getpid()}-{time.monotonic_ns()}"
        try:
            atomic_write(probe, b"\0" * 4096)
            probe.unlink()
            _listing(self.outbox)
        except OSError as exc:
            return f"state directory {self.dir} is unusable: {exc.strerror or exc}"
        return None

    def summary(self) -> dict[str, object]:
        """What `status` and `flush` report; never raises: what cannot be read is said instead."""
        problem = self.problem()
        depth: int | None = None
        oldest: float | None = None
        refused: int | None = None
        try:
            items = self.outbox_items()
            depth = len(items)
            oldest = round(max(0.0, time.time() - items[0].arrival_ns / 1e9), 1) if items else None
            refused = len(self.refused_items())
        except StateUnusable as exc:
            problem = problem or str(exc)
        retry = self.retry()
        next_at = retry.get("next_at")
        return {"outbox_depth": depth, "outbox_oldest_age_s": oldest, "refused": refused,
                "refused_dir": str(self.refused),
                "next_retry": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(next_at))
                if isinstance(next_at, (int, float)) else None,
                "last_error": retry.get("reason"), "state_problem": problem}

    # -- locks -----------------------------------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Serialize drains of one project (a worker, `kgbridge flush`): one sender at a time. Where
        no lock file can be made (read-only state dir) nothing can be dequeued either, so we go on
        unlocked: the rescan's direct sends stay idempotent (the backend keeps one copy)."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.lock_path, os.O_RDONLY | os.O_CREAT, 0o600)  # flock needs no write access
        except OSError:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    @contextmanager
    def try_lock(self) -> Iterator[bool]:
        """The drain lock if it is free this instant, else False at once: the hook's local drop takes
        it so that a drop and its registry line are one step to a rescan, and never waits for it (a
        drain holding it may be posting to a slow backend). True, unlocked, where no lock file can
        be made (read-only state dir), as for `lock`: no drain can hold it either."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.lock_path, os.O_RDONLY | os.O_CREAT, 0o600)
        except OSError:
            yield True
            return
        with _exclusive_now(fd) as mine:
            yield mine

    def worker_running(self) -> bool:
        """Does a worker hold this project's slot right now? A non-blocking probe: a hook that finds
        one leaves its item to it instead of starting a process that would only exit again. A worker
        starting during the probe finds the slot taken and exits; the prober then starts one."""
        try:
            fd = os.open(self.worker_lock_path, os.O_RDONLY)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        finally:
            os.close(fd)

    @contextmanager
    def worker_slot(self) -> Iterator[bool]:
        """True for the one worker of this project; False at once for every other (they leave their
        item in the outbox and exit: the holder drains it)."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.worker_lock_path, os.O_RDONLY | os.O_CREAT, 0o600)  # flock needs no write access
        with _exclusive_now(fd) as mine:
            yield mine


@contextmanager
def _exclusive_now(fd: int) -> Iterator[bool]:
    """An exclusive flock on `fd` if it is free this instant (True; released after), else False at
    once. Closes `fd` either way."""
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
