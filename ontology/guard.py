"""One ASGI guard in front of every route (CONTRACT §7): Host, cross-site, bearer token.

Invariant: checked before any handler runs, in this order: a non-local Host → 421 (DNS rebinding);
`Sec-Fetch-Site: cross-site` or a non-local Origin → 403 (a browser page driving the API); a token,
when configured, missing or wrong → 401. Bound off loopback, the server refuses to start without a
token (see `ontology.server`), so non-local Host names are allowed only in that case.
"""

from __future__ import annotations

import hmac
import json
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def _hostname(value: str) -> str:
    """Host header or Origin netloc without its port; IPv6 keeps its brackets stripped."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def is_local(host: str) -> bool:
    return _hostname(host) in LOCAL_HOSTS or _hostname(host).startswith("127.")


class Guard:
    def __init__(self, app: ASGIApp, *, token: str | None = None, allow_remote_hosts: bool = False) -> None:
        self.app = app
        self.token = token
        self.allow_remote_hosts = allow_remote_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        verdict = self._check(headers)
        if verdict is None:
            await self.app(scope, receive, send)
            return
        status, message = verdict
        body = json.dumps({"error": message}).encode()
        extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()), *extra]})
        await send({"type": "http.response.body", "body": body})

    def _check(self, headers: dict[str, str]) -> tuple[int, str] | None:
        host = headers.get("host", "")
        if not host or (not self.allow_remote_hosts and not is_local(host)):
            return 421, f"misdirected request: host {host!r} is not served here"
        if headers.get("sec-fetch-site", "").lower() == "cross-site":
            return 403, "cross-site requests are refused"
        origin = headers.get("origin")
        if origin is not None and origin != "null":
            netloc = urlsplit(origin).netloc
            if not netloc or not (is_local(netloc) or (self.allow_remote_hosts and _hostname(netloc) == _hostname(host))):
                return 403, f"origin {origin!r} is refused"
        elif origin == "null":
            return 403, "opaque origin is refused"
        if self.token is not None:
            supplied = headers.get("authorization", "")
            expected = f"Bearer {self.token}"
            if not hmac.compare_digest(supplied.encode(), expected.encode()):
                return 401, "missing or wrong bearer token"
        return None
