"""The bridge's local state per project slug: outbox, delivered hashes, detection cache, markers.

Lives in `$KG_STATE_DIR` (default `$XDG_STATE_HOME/kgbridge`, else `~/.local/state/kgbridge`), never
inside the knowledge root, so it survives a dead backend. Invariants: every write is atomic
(tmp + rename) or an O_APPEND line; an artifact is in exactly one of: not yet seen, outbox,
delivered. Standard library only (the hook imports it).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from collections.abc import Iterator

from ontology.atomic import atomic_write  # one atomic writer for the whole project

STATE_ENV = "KG_STATE_DIR"


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


class ProjectState:
    """State of one slug. Paths only; nothing is created until written."""

    def __init__(self, slug: str, base: Path | None = None) -> None:
        self.slug = slug
        self.dir = (base or state_root()) / slug
        self.outbox = self.dir / "outbox"
        self.delivered_log = self.dir / "delivered"
        self.cache = self.dir / "detect.json"
        self.known_marker = self.dir / "known"
        self.last_delivery = self.dir / "last-delivery.json"
        self.lock_path = self.dir / "deliver.lock"

    # -- known: this project was active once, so absence means "backend down", not "opted out" ----

    def mark_known(self) -> None:
        if not self.known_marker.exists():
            atomic_write(self.known_marker, b"")

    def is_known(self) -> bool:
        return self.known_marker.exists()

    # -- delivered registry ------------------------------------------------------------------------

    def delivered(self) -> set[str]:
        try:
            return set(self.delivered_log.read_text(encoding="utf-8").split())
        except OSError:
            return set()

    def record_delivered(self, key: str, transport: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.delivered_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, (key + "\n").encode())
        finally:
            os.close(fd)
        atomic_write(self.last_delivery, json.dumps({"at": time.time(), "transport": transport,
                                                     "key": key}).encode())

    # -- outbox --------------------------------------------------------------------------------------

    def outbox_items(self) -> list[Path]:
        try:
            return sorted(p for p in self.outbox.iterdir() if p.is_file() and not p.name.startswith("."))
        except OSError:
            return []

    def put_outbox(self, drop_name: str, data: bytes) -> Path:
        target = self.outbox / drop_name
        atomic_write(target, data)
        return target

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Serialize delivery workers of one project (hooks can fire close together)."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.lock_path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
