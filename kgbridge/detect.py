"""Is this project's knowledge graph present right now? Fail-safe, bounded, cached.

Invariant: `detect` returns within `BUDGET_S` whatever the backend does. A drop directory counts only
when the filesystem behind it answers: a FUSE mount at or above the root is checked in a bounded
child process (see kgbridge.bounded), and ENOTCONN (orphaned mount), EIO or a hang read as absent. Over HTTP the
server must answer `/health` with status "healthy" and know the ontology. Results are cached briefly
so a hung backend is probed once, not on every hook. Standard library only (the hook imports it).
"""

from __future__ import annotations

import json
import os
import time
from collections import namedtuple
from enum import StrEnum
from pathlib import Path

from kgbridge.bounded import ChildFailed, TimedOut, alarm, call_bounded
from kgbridge.project import Project, vetoed
from kgbridge.state import ProjectState, read_json
from ontology.atomic import atomic_write
from ontology.layout import knowledge_root, ontology_paths
from projection.mounts import fuse_mounts

# The whole decision. Detection runs in the detached worker, the CLI and SessionStart's bounded
# child, never on a hook's synchronous path (ADR 0006), so it can afford to tell a busy backend on a
# loaded machine from a hung one: 1 s in all.
BUDGET_S = 1.0
# One stat on a possibly hung FUSE mount; leaves room for the HTTP probe within the budget.
STAT_TIMEOUT_S = 0.3
# One HTTP exchange (the whole of it: bounded.alarm) on loopback takes a few ms; 300 ms is hung.
HTTP_TIMEOUT_S = 0.3
# Absent results are cached longer (a dead backend stays dead for a while) than present ones.
CACHE_ABSENT_S = 20.0
CACHE_PRESENT_S = 5.0
# The HTTP backend, when the knowledge root is not on this machine (docs/reference.md).
URL_ENV = "KG_URL"
TOKEN_ENV = "KG_TOKEN"


def backend_url(explicit: str | None = None) -> str | None:
    """The backend's base URL without a trailing slash: `explicit`, else $KG_URL; None if neither."""
    raw = explicit if explicit is not None else os.environ.get(URL_ENV, "")
    return raw.rstrip("/") or None


def backend_token(explicit: str | None = None) -> str | None:
    """The bearer token: `explicit`, else $KG_TOKEN (the server reads the same variable)."""
    return explicit if explicit is not None else (os.environ.get(TOKEN_ENV) or None)


class Activation(StrEnum):
    """Where a project stands with kgbridge."""

    INACTIVE = "inactive"  # no ontology for it (never activated, or the backend is away)
    ACTIVE = "active"
    HARD_OFF = "hard-off"  # vetoed in ways.json


class Transport(StrEnum):
    """How artifacts reach the backend."""

    DIR = "dir"  # the ontology's drop directory on this machine
    HTTP = "http"  # POST /ingest to $KG_URL
    NONE = "none"


class Detection(namedtuple("Detection", "state transport ingest_target reason elapsed_ms cached",
                           defaults=(0.0, False))):
    """What detection found. A namedtuple rather than a dataclass: the hook imports this module on
    every delivery, and `dataclasses` alone costs ~7 ms of its start-up (bench/hook.py)."""

    __slots__ = ()
    state: Activation  # a plain string equal to it when read back from the cache
    transport: Transport
    ingest_target: str | None  # the drop directory or the ingest URL
    reason: str
    elapsed_ms: float
    cached: bool

    @property
    def active(self) -> bool:
        return self.state == Activation.ACTIVE


def behind_fuse(path: Path) -> bool:
    text = os.path.abspath(path)
    for point in fuse_mounts():
        if text == point or text.startswith(point.rstrip("/") + "/") or point.startswith(text.rstrip("/") + "/"):
            return True
    return False


def _check_dir(path: Path) -> tuple[bool, str]:
    try:
        if not os.path.isdir(path):
            return False, "no drop directory"
        return (True, "drop directory present") if os.access(path, os.W_OK) else (False, "drop directory not writable")
    except OSError as exc:  # ENOTCONN: orphaned FUSE mount; EIO: half-dead daemon
        return False, f"drop directory unusable: {os.strerror(exc.errno or 0) or exc}"


def probe_dir(path: Path, timeout: float) -> tuple[bool, str]:
    """(present, reason). Behind a FUSE mount the check runs in a bounded child (kgbridge.bounded)."""
    if not behind_fuse(path):
        return _check_dir(path)
    try:
        present, reason = call_bounded(lambda: _check_dir(path), timeout)  # type: ignore[misc]
        return bool(present), str(reason)
    except TimedOut:
        return False, f"drop directory did not answer within {timeout * 1000:.0f} ms"
    except ChildFailed as exc:
        return False, f"drop directory unusable: {exc}"


def http_get(url: str, token: str | None, timeout: float) -> tuple[int, bytes]:
    import urllib.error  # lazily: ~15 ms of imports the dir-transport hook never needs
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:  # `timeout` bounds each socket operation, the alarm the whole exchange (a trickling answer)
        with alarm(timeout), urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return response.status, response.read(65536)
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def probe_http(url: str, slug: str, token: str | None, deadline: float) -> tuple[bool, str]:
    try:
        status, body = http_get(f"{url}/health", token, max(0.01, min(HTTP_TIMEOUT_S, deadline - time.monotonic())))
        health = json.loads(body or b"{}").get("status") if status == 200 else None
        if health != "healthy":
            return False, f"backend health is {health or status}"
        status, _ = http_get(f"{url}/ontologies/{slug}", token,
                             max(0.01, min(HTTP_TIMEOUT_S, deadline - time.monotonic())))
        return (True, "ontology exists on backend") if status == 200 else (False, f"ontology not on backend ({status})")
    except (OSError, ValueError) as exc:  # refused, reset, timed out, garbage
        return False, f"backend unreachable: {exc}"


def detect(project: Project, *, root: Path | None = None, url: str | None = None, token: str | None = None,
           use_cache: bool = True) -> Detection:
    start = time.monotonic()
    if vetoed(project):
        return Detection(Activation.HARD_OFF, Transport.NONE, None, "vetoed in ways.json")
    root = knowledge_root(root)
    url, token = backend_url(url), backend_token(token)
    state = ProjectState(project.slug)
    key = f"{root}|{url}"
    if use_cache:
        cached = read_json(state.cache)
        if cached.get("key") == key and time.time() < float(cached.get("until", 0)):  # type: ignore[arg-type]
            return Detection(**{**cached["detection"], "cached": True})  # type: ignore[arg-type]

    ingest = ontology_paths(root, project.slug).ingest
    present, reason = probe_dir(ingest, STAT_TIMEOUT_S)
    if present:
        found = Detection(Activation.ACTIVE, Transport.DIR, str(ingest), reason)
    elif url:
        ok, why = probe_http(url, project.slug, token, start + BUDGET_S)
        found = Detection(Activation.ACTIVE, Transport.HTTP, f"{url}/ingest", why) if ok else \
            Detection(Activation.INACTIVE, Transport.NONE, None, f"{reason}; {why}")
    else:
        found = Detection(Activation.INACTIVE, Transport.NONE, None, reason)
    found = Detection(found.state, found.transport, found.ingest_target, found.reason,
                      round((time.monotonic() - start) * 1000, 1))
    if found.active:
        state.mark_known()
    try:
        ttl = CACHE_PRESENT_S if found.active else CACHE_ABSENT_S
        atomic_write(state.cache, json.dumps({"key": key, "until": time.time() + ttl,
                                              "detection": found._asdict()}).encode())
    except OSError:
        pass  # a read-only state dir costs only the cache
    return found


def forget(project: Project) -> None:
    """Drop the cached decision (after activate/deactivate, or a failed delivery)."""
    try:
        ProjectState(project.slug).cache.unlink()
    except OSError:
        pass
