"""Deliver artifacts to the knowledge graph, verbatim, through the outbox; drain it in arrival order.

Invariants: nothing is lost (an artifact is delivered, waiting in the outbox, refused with the
backend's answer in `refused/`, or not ours to send); nothing is sent twice in a row (the registry
keeps the last kind + content hash per name, so a revert is sent again); a permanent refusal never
blocks the items behind it, a transient failure stops the drain so order holds; no send outlives its
bound (kgbridge.bounded).
Standard library only (the hook imports it).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections import namedtuple
from enum import StrEnum
from pathlib import Path

from kgbridge.bounded import TimedOut, alarm, call_bounded
from kgbridge.detect import Detection, Transport, backend_token, behind_fuse
from kgbridge.state import Delivered, OutboxItem, ProjectState
from ontology.atomic import atomic_write  # stdlib-only modules
from ontology.layout import drop_name, split_drop_name

# Writing one small file into a live drop directory takes well under a millisecond; a write that
# has not finished in 250 ms is hung, and the item waits for the next attempt.
DROP_TIMEOUT_S = 0.25
# One POST, the whole exchange (connect, send, answer): ~10 ms on loopback when healthy. Only the
# detached worker and `kgbridge flush` post, so this may wait out a busy single writer.
POST_TIMEOUT_S = 5.0
# 4xx answers that say nothing about the item (auth, missing ontology, rate limits): the same item
# may succeed later, so they stop the drain like a 5xx instead of refusing the item.
_NOT_THE_ITEMS_FAULT = frozenset({401, 403, 404, 407, 408, 409, 425, 429})


class Outcome(StrEnum):
    """What the hook's hand-over did with one artifact."""

    DELIVERED = "delivered"  # dropped into a local drop directory: the backend has it now
    SEEN = "seen"  # it had it already (the delivered registry says so)
    OUTBOX = "outbox"  # queued; the detached worker sends it
    UNSAVED = "unsaved"  # the outbox cannot be written: logged; the next rescan reads the file again


class SendOutcome(StrEnum):
    """What one attempt to send one outbox item came to."""

    DELIVERED = "delivered"  # the backend has it
    REFUSED = "refused"  # it never will (413, 422, other 4xx): set aside with the answer
    RETRY = "retry"  # backend away, hung or busy: stop here, keep order, back off


class Attempt(namedtuple("Attempt", "outcome detail")):
    __slots__ = ()
    outcome: SendOutcome
    detail: dict[str, object]


class DrainReport(namedtuple("DrainReport", "delivered refused waiting stopped")):
    """Counts of one drain; `stopped` says why items still wait (None when the outbox is empty)."""

    __slots__ = ()
    delivered: int
    refused: int
    waiting: int
    stopped: str | None


def registry_key(kind: str, data: bytes, name: str) -> str:
    """Whitespace-free key for the delivered registry; any file name works (surrogate escapes too)."""
    encoded = base64.urlsafe_b64encode(os.fsencode(name)).decode()
    return f"{kind}:{hashlib.sha256(data).hexdigest()}:{encoded}"


def wire_name(name: str) -> str:
    """A file name as valid UTF-8 text for the wire (undecodable bytes become U+FFFD)."""
    return os.fsencode(name).decode("utf-8", "replace")


def write_drop(ingest: Path, dropped: str, data: bytes) -> None:
    """Drop one file atomically. Never creates the drop directory: one that is gone means the
    ontology is, not "make it again"."""
    atomic_write(ingest / dropped, data, mode=0o644, parents=False)


def _send_drop(ingest: Path, dropped: str, data: bytes) -> Attempt:
    """Behind a FUSE mount in a bounded child, so a hung daemon cannot hold the drain."""
    try:
        if behind_fuse(ingest):
            call_bounded(lambda: write_drop(ingest, dropped, data), DROP_TIMEOUT_S)
        else:
            write_drop(ingest, dropped, data)
        return Attempt(SendOutcome.DELIVERED, {})
    except (OSError, TimedOut) as exc:
        return Attempt(SendOutcome.RETRY, {"error": f"drop directory: {exc}"})


def _answer(body: bytes) -> object:
    try:
        return json.loads(body)
    except ValueError:
        return body[:4096].decode("utf-8", "replace")


class Connections:
    """One HTTP connection kept alive across the sends of one drain, instead of a connect (and a
    server-side accept) per item. A connection is reused only after a 2xx answer the server did not
    end with `Connection: close`; any other outcome closes it, and the next send opens a new one."""

    def __init__(self) -> None:
        # (url, its http.client.HTTPConnection); annotations are not evaluated, so http.client stays
        # unimported until an HTTP send needs it (the hook imports this module)
        self._open: tuple[str, http.client.HTTPConnection] | None = None

    def take(self, url: str) -> tuple[http.client.HTTPConnection, bool]:
        """(a connection to `url`, whether it served an earlier send)."""
        import http.client  # lazily: only the HTTP transport pays for it
        import urllib.parse

        if self._open is not None and self._open[0] == url:
            connection, self._open = self._open[1], None
            return connection, True
        self.close()
        parts = urllib.parse.urlsplit(url)
        factory = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        return factory(parts.hostname or "localhost", parts.port, timeout=POST_TIMEOUT_S), False

    def keep(self, url: str, connection: http.client.HTTPConnection) -> None:
        self.close()
        self._open = (url, connection)

    def close(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None


def _ingest_body(slug: str, filename: str, data: bytes) -> tuple[bytes, str]:
    """(body, content type) of one POST /ingest. UTF-8 text goes as JSON; other bytes (a UTF-16 or
    Windows-1252 file) go verbatim as multipart, which the backend decodes and archives as they are:
    JSON would have carried them through `decode("utf-8", "replace")`, losing the author's bytes."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        boundary = f"kgbridge-{hashlib.sha256(data).hexdigest()}"  # cannot occur inside `data`
        head = "".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"\r\n\r\n{value}\r\n'
                       for field, value in (("ontology", slug), ("filename", filename)))
        part = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="upload.md"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n")
        body = (head + part).encode("utf-8") + data + f"\r\n--{boundary}--\r\n".encode("ascii")
        return body, f"multipart/form-data; boundary={boundary}"
    # UTF-8 on the wire: with ensure_ascii an emoji-rich 837 KB file became a 2.35 MB body (413).
    body = json.dumps({"ontology": slug, "filename": filename, "content": text}, ensure_ascii=False).encode("utf-8")
    return body, "application/json; charset=utf-8"


def _post(url: str, token: str | None, slug: str, name: str, data: bytes,
          connections: Connections | None = None) -> Attempt:
    import http.client  # lazily: only the HTTP transport pays for it
    import urllib.parse

    body, content_type = _ingest_body(slug, wire_name(name), data)
    headers = {"Content-Type": content_type, **({"Authorization": f"Bearer {token}"} if token else {})}
    path = urllib.parse.urlsplit(url).path or "/"
    pool = connections if connections is not None else Connections()
    while True:
        connection, reused = pool.take(url)
        try:
            with alarm(POST_TIMEOUT_S):
                try:
                    connection.request("POST", path, body=body, headers=headers)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a server may answer (413) and close before reading the body: read that answer
                response = connection.getresponse()
                answer = response.read(65536)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
            connection.close()
            if reused:
                continue  # the server closed a kept connection meanwhile: once more on a new one (ingest is idempotent)
            return Attempt(SendOutcome.RETRY, {"error": f"{type(exc).__name__}: {exc}"})
        except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, timed out
            connection.close()
            return Attempt(SendOutcome.RETRY, {"error": f"{type(exc).__name__}: {exc}"})
        break
    if 200 <= response.status < 300 and not response.will_close and connections is not None:
        pool.keep(url, connection)
    else:
        connection.close()
    if 200 <= response.status < 300:
        return Attempt(SendOutcome.DELIVERED, {"status": response.status})
    detail = {"status": response.status, "answer": _answer(answer)}
    if response.status < 400 or response.status >= 500 or response.status in _NOT_THE_ITEMS_FAULT:
        return Attempt(SendOutcome.RETRY, detail)
    return Attempt(SendOutcome.REFUSED, detail)


def send(detection: Detection, slug: str, dropped: str, data: bytes, *, token: str | None = None,
         connections: Connections | None = None) -> Attempt:
    """One attempt over the detected transport (over `connections`' kept connection, if given)."""
    if detection.transport == Transport.DIR and detection.ingest_target:
        return _send_drop(Path(detection.ingest_target), dropped, data)
    if detection.transport == Transport.HTTP and detection.ingest_target:
        # The drop name carries the kind hint and original name; the backend decodes both.
        return _post(detection.ingest_target, backend_token(token), slug, dropped, data, connections)
    return Attempt(SendOutcome.RETRY, {"error": f"backend {detection.state}: {detection.reason}"})


def enqueue(state: ProjectState, kind: str, name: str, data: bytes, delivered: Delivered | None = None,
            waiting: set[str] | None = None) -> bool:
    """Put one artifact at the end of the outbox unless it is settled or already waiting; True when
    added. Raises OSError when the outbox cannot be written (the caller says so)."""
    if registry_key(kind, data, name) in (state.delivered() if delivered is None else delivered):
        return False
    dropped = drop_name(kind, data, name)
    if waiting is not None and dropped in waiting:
        return False
    state.put_outbox(dropped, data)
    if waiting is not None:
        waiting.add(dropped)
    return True


def _settle(state: ProjectState, item: OutboxItem, attempt: Attempt, key: str, transport: str) -> None:
    if attempt.outcome is SendOutcome.REFUSED:
        state.refuse(item, {"drop_name": wire_name(item.drop_name), **attempt.detail})
    else:
        item.path.unlink(missing_ok=True)
    state.record_delivered(key, transport)


def drain(state: ProjectState, detection: Detection) -> DrainReport:
    """Send waiting items oldest first until the outbox is empty or the backend stops answering.
    The caller holds `state.lock()`. Raises StateUnusable when the outbox cannot be read."""
    connections = Connections()  # one kept-alive connection for the whole drain
    try:
        delivered, refused, stopped = _drain_items(state, detection, connections)
    finally:
        connections.close()
    return DrainReport(delivered, refused, len(state.outbox_items()), stopped)


def _drain_items(state: ProjectState, detection: Detection, connections: Connections) -> tuple[int, int, str | None]:
    delivered, refused, stopped = 0, 0, None
    settled = state.delivered()
    for item in state.outbox_items():
        try:
            data = item.path.read_bytes()
        except FileNotFoundError:
            continue  # another drain took it
        except OSError as exc:
            stopped = f"cannot read outbox item {wire_name(item.path.name)}: {exc.strerror or exc}"
            break
        hint, original = split_drop_name(item.drop_name)
        key = registry_key(hint or "document", data, original)
        if key in settled:
            item.path.unlink(missing_ok=True)
            continue
        attempt = send(detection, state.slug, item.drop_name, data, connections=connections)
        if attempt.outcome is SendOutcome.RETRY:
            stopped = str(attempt.detail.get("error") or f"HTTP {attempt.detail.get('status')}")
            break
        try:
            _settle(state, item, attempt, key, detection.transport)
        except OSError as exc:  # a full or read-only state dir: the item stays; resending is harmless
            stopped = f"cannot settle {wire_name(item.path.name)}: {exc.strerror or exc}"
            break
        settled.add(key)
        delivered += attempt.outcome is SendOutcome.DELIVERED
        refused += attempt.outcome is SendOutcome.REFUSED
    return delivered, refused, stopped
