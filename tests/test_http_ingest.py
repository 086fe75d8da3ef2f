"""`POST /ingest` with a JSON body is answered by `JsonIngest`, a plain ASGI app in front of Starlette
(the hot path: one artifact per request), with exactly the answers of the Starlette route it stands
in for; multipart uploads and every other request still go through Starlette."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from conftest import memory
from ontology import http as http_mod
from ontology.guard import Guard
from ontology.server import build_app

BASE = "http://127.0.0.1"


def _cases() -> list[tuple[str, dict]]:
    note = memory("deploys", "Never deploy on Fridays").decode()
    ok = {"ontology": "shop", "filename": "deploys.md", "content": note}
    return [
        ("new", {"json": ok}),
        ("duplicate", {"json": ok}),
        ("mcp channel", {"json": {**ok, "filename": "other.md"}, "headers": {"x-kg-channel": "mcp"}}),
        ("rejected artifact", {"json": {**ok, "filename": "empty.md", "content": "   "}}),
        ("no ontology", {"json": {**ok, "ontology": "nosuch"}}),
        ("bad slug", {"json": {**ok, "ontology": "../etc"}}),
        ("bad json", {"content": b"{not json", "headers": {"content-type": "application/json"}}),
        ("not strings", {"json": {**ok, "content": 3}}),
        ("missing field", {"json": {"ontology": "shop"}}),
        ("too deep", {"content": b"[" * 100_000, "headers": {"content-type": "application/json"}}),
        ("declared too large", {"content": b"x" * (http_mod.MAX_BODY_BYTES + 1),
                                "headers": {"content-type": "application/json"}}),
        ("chunked too large", {"content": iter([b"x" * (1 << 20)] * 3), "headers": {"content-type": "application/json"}}),
    ]


def _answers(app, monkeypatch: pytest.MonkeyPatch | None = None) -> list[tuple[str, int, dict, dict]]:
    out = []
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
        for name, kwargs in _cases():
            response = client.post("/ingest", **kwargs)
            headers = {k: v for k, v in response.headers.items() if k in ("content-type", "content-length", "retry-after")}
            out.append((name, response.status_code, headers, json.loads(response.content)))
    return out


def test_json_ingest_answers_as_the_starlette_route_does(tmp_path: Path):
    roots = [tmp_path / "fast", tmp_path / "route"]
    for root in roots:
        (root / "ontology" / "shop" / "ingest").mkdir(parents=True)
    fast = build_app(roots[0], watch=False)
    route = build_app(roots[1], watch=False)
    starlette_only = Guard(route.asgi.app.app)  # the same app without JsonIngest in front
    got, expected = _answers(fast.asgi), _answers(starlette_only)
    assert [a[:2] for a in got] == [(name, status) for name, status in zip(
        [c[0] for c in _cases()], [200, 200, 200, 422, 404, 400, 400, 400, 400, 400, 413, 413])]
    assert got == expected


def test_json_ingests_skip_starlette_and_multipart_still_reaches_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """With the Starlette route's body reader broken, a JSON ingest still lands (JsonIngest answered
    it); a multipart upload reaches the route, as does every other path."""
    root = tmp_path / "root"
    (root / "ontology" / "shop" / "ingest").mkdir(parents=True)
    reached = []

    async def broken(request):  # type: ignore[no-untyped-def]
        reached.append(request.headers.get("content-type", ""))
        raise RuntimeError("the Starlette ingest route was used")

    monkeypatch.setattr(http_mod, "_ingest_payload", broken)
    app = build_app(root, watch=False)
    with TestClient(app.asgi, base_url=BASE, raise_server_exceptions=False) as client:
        note = memory("deploys", "Never deploy on Fridays").decode()
        answer = client.post("/ingest", json={"ontology": "shop", "filename": "deploys.md", "content": note})
        assert answer.status_code == 200 and answer.json()["status"] == "new", answer.text
        upload = client.post("/ingest", data={"ontology": "shop"}, files={"file": ("b.md", b"- a fact\n")})
        assert upload.status_code == 500
        assert client.get("/health").status_code == 200
        hostile = client.post("/ingest", json={}, headers={"Host": "attacker.example"})
        assert hostile.status_code == 421  # the Guard still runs first
    assert reached == [] or all(c.startswith("multipart/form-data") for c in reached)
    assert len(reached) == 1
