"""Helpers for the hostile-input tests: raw HTTP/1.1 over a loopback socket (so a test controls
every header byte, duplicates included), and waiting on the server's view of an ontology."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx


def raw_request(port: int, head: list[str], body: bytes = b"", timeout: float = 10.0) -> int:
    """Send `head` (request line and header lines, as given) and `body`; the response status."""
    data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        reply = b""
        while b"\r\n" not in reply:
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0


def get_status(port: int, path: str = "/health", headers: list[str] | None = None) -> int:
    return raw_request(port, [f"GET {path} HTTP/1.1", *(headers or []), "Connection: close"])


def wait_until(predicate, timeout: float = 20.0, step: float = 0.1):  # noqa: ANN001 - any callable
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout} s")


def reasons(base: Path) -> list[str]:
    import json

    return sorted(json.loads(p.read_text())["reason"] for p in (base / "rejected").glob("*.reason.json"))


def counts(client: httpx.Client, slug: str) -> dict[str, int]:
    return client.get(f"/ontologies/{slug}").json()["counts"]
