"""Forgetting: what a memory folder held when we last delivered from it, and what is gone since.

A file that vanished is sent as a tombstone; one that vanished while a new file carries its content
(same bytes, or the same frontmatter `name:` and most of its body) as a move (docs/adr/0012). Each
folder's last known contents live in `<state>/<slug>/<Folder>`, changed only under that file's lock
(a hook that finds it taken leaves its change beside it, never waits); an unreadable folder is never
read as an empty one. Standard library only (the hook imports it).
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path

from kgbridge.state import Delivered, ProjectState, read_json
from ontology.atomic import atomic_write

# "Most of its body": more than half of the longer body's distinct lines are in the other one.
# A renamed file is usually the same text, maybe retitled; two different memories sharing a `name:`
# rarely share half their lines.
MOVE_OVERLAP = 0.5
# A rescan waits this long for a folder's state (a hook holds it for one small read and write); past
# it, the rescan leaves forgetting to the next one rather than change the state unlocked.
LOCK_WAIT_S = 5.0
LOCK_POLL_S = 0.01
_NAME_LINE = re.compile(r"^\s*name:\s*(.+?)\s*$", re.MULTILINE)


def fingerprint(data: bytes) -> dict[str, object]:
    """What we remember of a delivered file: its hash, its `name:`, and a hash per distinct body line."""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    name, body = "", text
    if text.startswith("---"):
        close = text.find("\n---", 3)
        if close > 0:
            head, body = text[3:close], text[close + 4:]
            found = _NAME_LINE.search(head)
            name = found.group(1).strip("\"'") if found else ""
    lines = sorted({hashlib.sha1(line.strip().encode()).hexdigest()[:12]  # noqa: S324 - a fingerprint
                    for line in body.split("\n") if line.strip()})
    return {"sha": hashlib.sha256(data).hexdigest(), "name": name, "lines": lines}


def same_file(old: dict[str, object], new: dict[str, object]) -> bool:
    """Does `new` carry the content of the vanished `old`? Same bytes, or same `name:` and most lines."""
    if old.get("sha") == new.get("sha"):
        return True
    if not old.get("name") or old.get("name") != new.get("name"):
        return False
    a, b = set(old.get("lines") or ()), set(new.get("lines") or ())  # type: ignore[arg-type]
    return bool(a and b) and len(a & b) / max(len(a), len(b)) > MOVE_OVERLAP


def tombstone(filename: str, at: str) -> bytes:
    """The tombstone artifact (docs/reference.md §4)."""
    return json.dumps({"kgbridge": "tombstone", "file": filename, "at": at}, ensure_ascii=False).encode()


def move(old: str, new: str, content: bytes, at: str) -> bytes:
    """The move artifact: the new file's content, and the name it had before (docs/reference.md §4)."""
    try:
        carried = {"content": content.decode("utf-8")}
    except UnicodeDecodeError:  # a UTF-16 or Windows-1252 file: its bytes as they are, for the backend to read
        carried = {"content_base64": base64.b64encode(content).decode("ascii")}
    return json.dumps({"kgbridge": "move", "from": old, "to": new, "at": at, **carried}, ensure_ascii=False).encode()


WITHHELD = "withheld"


class Folder(StrEnum):
    """The memory folders a rescan compares, each by the state file that remembers it."""

    CLAUDE = "memory-files.json"  # the project's Claude Code memory directory
    CODEX = "codex-memory-files.json"  # Codex's own store: memory_summary.md and its ad-hoc notes


class KnownFiles:
    """File name -> fingerprint of what was last delivered from one memory folder: the state file, plus
    the changes hooks left beside it while it was locked (`<Folder>.pending/`, applied in the order
    they were made). Change it only through `held` or `record` (read, change, write under the lock)."""

    def __init__(self, state: ProjectState, folder: Folder = Folder.CLAUDE) -> None:
        self.path = state.dir / folder
        self.files: dict[str, dict[str, object]] = {
            name: fp for name, fp in read_json(self.path).items() if isinstance(fp, dict)}
        self.pending = pending_dir(state, folder)
        self._applied: list[Path] = []
        try:
            entries = sorted(p for p in self.pending.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
        except OSError:
            entries = []
        for entry in entries:
            change = read_json(entry)
            self._apply(change.get("files"), change.get("withhold"))
            self._applied.append(entry)

    def _apply(self, files: object, withhold: object) -> None:
        if isinstance(files, dict):
            self.files.update((name, fp) for name, fp in files.items() if isinstance(fp, dict))
        for name in withhold if isinstance(withhold, list) else ():
            if isinstance(name, str):
                self.withhold(name)

    def save(self) -> None:
        """Write the state, then drop the pending changes it now holds (a crash between the two applies
        them again: each sets a fingerprint or a mark, so twice is once)."""
        atomic_write(self.path, json.dumps(self.files, sort_keys=True).encode())
        for entry in self._applied:
            entry.unlink(missing_ok=True)
        self._applied = []

    def withhold(self, name: str) -> None:
        """`name` was deleted or rewritten through the mounted projection: the host's copy underneath is
        what the agent deleted or replaced, so it is not sent again while unchanged (its bytes are
        learned at the next rescan)."""
        self.files[name] = {**self.files.get(name, {}), WITHHELD: True}

    def withholds(self, name: str, fingerprint: dict[str, object]) -> bool:
        entry = self.files.get(name) or {}
        return bool(entry.get(WITHHELD)) and entry.get("sha") in (None, fingerprint["sha"])


def pending_dir(state: ProjectState, folder: Folder) -> Path:
    return state.dir / f"{folder}.pending"


@contextmanager
def held(state: ProjectState, folder: Folder, *, wait: float) -> Iterator[KnownFiles | None]:
    """The folder's state under its lock (an flock on `<Folder>.lock`, a file kept for it: the state
    file itself is replaced at every save), read after the lock is taken; None when another process
    still holds it after `wait` seconds (0: only if free this instant). Call `save` inside."""
    state.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(state.dir / f"{folder}.lock", os.O_RDONLY | os.O_CREAT, 0o600)  # flock needs no write access
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield None
                    return
                time.sleep(LOCK_POLL_S)
        try:
            yield KnownFiles(state, folder)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def record(state: ProjectState, folder: Folder, files: dict[str, dict[str, object]] | None = None,
           withhold: Iterable[str] = ()) -> None:
    """A hook's change to the folder's state (fingerprints of files it handed over, files to withhold),
    never waiting: under the lock if it is free this instant, else left in `<Folder>.pending/` for
    the next holder to apply. Raises OSError when neither can be written."""
    names = list(withhold)
    with held(state, folder, wait=0) as known:
        if known is not None:
            known._apply(files, names)
            known.save()
            return
    entry = pending_dir(state, folder) / f"{time.time_ns():020d}-{os.getpid()}.json"
    atomic_write(entry, json.dumps({"files": files or {}, "withhold": names}, sort_keys=True).encode())


def memory_keys(delivered: Delivered, filename: str) -> list[str]:
    """The delivered-registry keys of every version of one memory file (kgbridge.deliver.registry_key)."""
    suffix = ":" + base64.urlsafe_b64encode(filename.encode()).decode()
    return [k for k in delivered if k.startswith("memory:") and k.endswith(suffix)]


def vanished(known: KnownFiles, present: Iterable[str], readable: dict[str, bytes]) -> list[tuple[str, str | None]]:
    """(gone file, the new file that carries its content or None), for every known file not present.
    A new file answers for at most one vanished file."""
    fresh = {name: fingerprint(data) for name, data in readable.items() if name not in known.files}
    out: list[tuple[str, str | None]] = []
    for name in sorted(known.files.keys() - set(present)):
        match = next((n for n, fp in sorted(fresh.items()) if same_file(known.files[name], fp)), None)
        if match is not None:
            del fresh[match]
        out.append((name, match))
    return out


def listing(directory: Path) -> list[Path] | None:
    """The memory files in `directory`, or None when it cannot be read (never taken for empty)."""
    try:
        return sorted(p for p in directory.iterdir() if p.suffix == ".md" and not p.name.startswith("."))
    except OSError:
        return None
