"""Deliver one artifact to the knowledge graph, verbatim, or keep it in the outbox until we can.

Invariants: nothing is lost (an artifact is either delivered, or in the outbox, or not ours to
send); nothing is sent twice (the delivered registry keys on content hash + kind + name); a drop is
atomic (dot-temp file in the drop directory, then rename to `<kind>.<sha12>.<name>`); no call waits
longer than its timeout, even on a hung FUSE mount (kgbridge.bounded). Standard library only (the hook imports it).
"""

from __future__ import annotations

import base64
import hashlib
import json
from enum import StrEnum
from pathlib import Path

from kgbridge.bounded import TimedOut, call_bounded
from kgbridge.detect import Detection, Transport, backend_token, behind_fuse
from kgbridge.state import ProjectState
from ontology.atomic import atomic_write  # stdlib-only modules
from ontology.layout import drop_name, split_drop_name

# Writing one small file into a live drop directory takes well under a millisecond; a write that
# has not finished in 250 ms is hung, and the artifact goes to the outbox instead.
DROP_TIMEOUT_S = 0.25
# Posting one artifact to a healthy backend on loopback is ~10 ms; allow for a busy single writer.
POST_TIMEOUT_S = 2.0


class Outcome(StrEnum):
    """What `deliver` did with one artifact."""

    DELIVERED = "delivered"  # the backend has it now
    SEEN = "seen"  # it had it already (the delivered registry says so)
    OUTBOX = "outbox"  # kept locally until the backend is back
    SKIPPED = "skipped"  # the project was never activated: a silent no-op


def registry_key(kind: str, data: bytes, name: str) -> str:
    """Whitespace-free key for the delivered registry."""
    encoded = base64.urlsafe_b64encode(name.encode()).decode()
    return f"{kind}:{hashlib.sha256(data).hexdigest()}:{encoded}"


def _drop(ingest: Path, dropped: str, data: bytes) -> None:
    # Never creates the drop directory: one that is gone means the ontology is, not "make it again".
    atomic_write(ingest / dropped, data, mode=0o644, parents=False)


def _drop_bounded(ingest: Path, dropped: str, data: bytes) -> bool:
    """Drop the file; behind a FUSE mount in a bounded child, so a hung daemon cannot hold us."""
    try:
        if behind_fuse(ingest):
            call_bounded(lambda: _drop(ingest, dropped, data), DROP_TIMEOUT_S)
        else:
            _drop(ingest, dropped, data)
        return True
    except (OSError, TimedOut):
        return False


def _post(url: str, token: str | None, slug: str, name: str, data: bytes) -> bool:
    import urllib.error  # lazily: only the HTTP transport pays for it
    import urllib.request

    body = json.dumps({"ontology": slug, "filename": name, "content": data.decode("utf-8", "replace")}).encode()
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=POST_TIMEOUT_S) as response:  # noqa: S310
            return response.status == 200
    except urllib.error.HTTPError as exc:
        return exc.code == 422  # rejected: the backend kept it with its reason; resending won't help
    except OSError:
        return False


def send(detection: Detection, slug: str, dropped: str, data: bytes, *, token: str | None = None) -> bool:
    """One attempt over the detected transport; True when the backend has it."""
    if detection.transport == Transport.DIR and detection.ingest_target:
        return _drop_bounded(Path(detection.ingest_target), dropped, data)
    if detection.transport == Transport.HTTP and detection.ingest_target:
        # The drop name carries the kind hint and original name; the backend decodes both.
        return _post(detection.ingest_target, backend_token(token), slug, dropped, data)
    return False


def deliver(state: ProjectState, detection: Detection, kind: str, name: str, data: bytes,
            delivered: set[str] | None = None) -> Outcome:
    """Deliver or enqueue one artifact, and say which of the four happened."""
    key = registry_key(kind, data, name)
    seen = state.delivered() if delivered is None else delivered
    if key in seen:
        return Outcome.SEEN
    dropped = drop_name(kind, data, name)
    if detection.active and send(detection, state.slug, dropped, data):
        state.record_delivered(key, detection.transport)
        seen.add(key)
        return Outcome.DELIVERED
    if detection.active or state.is_known():
        if not (state.outbox / dropped).exists():
            state.put_outbox(dropped, data)
        return Outcome.OUTBOX
    return Outcome.SKIPPED


def flush(state: ProjectState, detection: Detection) -> tuple[int, int]:
    """Try every outbox item once; returns (delivered, still waiting)."""
    if not detection.active:
        return 0, len(state.outbox_items())
    delivered = state.delivered()
    sent = 0
    for item in state.outbox_items():
        data = item.read_bytes()
        hint, original = split_drop_name(item.name)
        key = registry_key(hint or "document", data, original)
        if key in delivered or send(detection, state.slug, item.name, data):
            if key not in delivered:
                state.record_delivered(key, detection.transport)
                delivered.add(key)
            item.unlink()
            sent += 1
        else:
            break  # the backend stopped answering: keep order, try the rest later
    return sent, len(state.outbox_items())
