"""One ASGI guard in front of every route (docs/reference.md §7): Host, cross-site, bearer token.

Invariant: checked before any handler runs, in this order: a duplicated Host, Origin,
Sec-Fetch-Site or Authorization header → 400; a Host that is not exactly `localhost` or a loopback
IP literal (after a numeric port is split off) → 421 (DNS rebinding); `Sec-Fetch-Site: cross-site`
or an Origin that is not local the same way → 403; a token, when configured, missing or wrong → 401.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from http import HTTPStatus
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

# Headers a proxy or a crafted request could send twice to slip one value past the check.
SINGLE_HEADERS = frozenset({"host", "origin", "sec-fetch-site", "authorization"})
_COMMON_LOOPBACK = frozenset({"127.0.0.1", "::1"})


def is_loopback(name: str) -> bool:
    """True for exactly `localhost` or a loopback IP literal (IPv6 with or without brackets).
    Names that merely start like one (`127.evil`, `127.0.0.1.nip.io`, `localhost.evil`) are not:
    a DNS name can resolve to anything, which is how rebinding works."""
    name = name.lower()
    if name == "localhost":
        return True
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name in _COMMON_LOOPBACK:
        return True  # what every local client sends: no `ipaddress` parse per request
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> str | None:
    """The host of a `Host` header or URL authority (`host[:port]`, `[v6][:port]`), or None when
    anything but a numeric port follows it (`localhost:80@evil.com`, `[::1].evil.com`)."""
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host, rest = value[: end + 1], value[end + 1 :]
    else:
        host, colon, port = value.partition(":")
        rest = colon + port
    if rest and not (rest[0] == ":" and rest[1:].isdigit() and rest.isascii()):
        return None
    return host or None


def is_local_authority(value: str) -> bool:
    host = split_host(value)
    return host is not None and is_loopback(host)


def _origin_authority(origin: str) -> str | None:
    """The `host[:port]` of an Origin that is exactly scheme://authority, else None."""
    try:
        parts = urlsplit(origin)
    except ValueError:
        return None
    if parts.scheme not in {"http", "https"} or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    return parts.netloc or None


class Guard:
    def __init__(self, app: ASGIApp, *, token: str | None = None, allow_remote_hosts: bool = False) -> None:
        self.app = app
        self.token = token
        self.allow_remote_hosts = allow_remote_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        verdict = self._check(scope["headers"])
        if verdict is None:
            await self.app(scope, receive, send)
            return
        status, message = verdict
        # The API's error shape (ontology.http): a kind for programs, a sentence for people.
        kind = HTTPStatus(status).phrase.lower().replace(" ", "-")
        body = json.dumps({"error": kind, "detail": message}).encode()
        extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()), *extra]})
        await send({"type": "http.response.body", "body": body})

    def _check(self, raw: list[tuple[bytes, bytes]]) -> tuple[int, str] | None:
        headers: dict[str, str] = {}
        for key, value in raw:
            name = key.decode("latin-1").lower()
            if name in SINGLE_HEADERS and name in headers:
                return 400, f"duplicated {name} header is refused"
            headers[name] = value.decode("latin-1").strip()
        host = headers.get("host", "")
        if not host or not (is_local_authority(host) or (self.allow_remote_hosts and split_host(host))):
            return 421, f"misdirected request: host {host!r} is not served here"
        if headers.get("sec-fetch-site", "").lower() == "cross-site":
            return 403, "cross-site requests are refused"
        origin = headers.get("origin")
        if origin is not None:
            authority = _origin_authority(origin)  # "null" (an opaque origin) has none
            same_host = self.allow_remote_hosts and authority is not None and \
                split_host(authority.lower()) == split_host(host.lower())
            if authority is None or not (is_local_authority(authority) or same_host):
                return 403, f"origin {origin!r} is refused"
        if self.token is not None:
            scheme, _, supplied = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(supplied.strip().encode(), self.token.encode()):
                return 401, "missing or wrong bearer token"
        return None
