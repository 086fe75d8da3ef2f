"""Every HTTP refusal has one shape, `{"error": kind, "detail": what to do}`, and a bug inside the
server reaches its log with the traceback, never the client."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from ontology.server import build_app
from support.server_proc import ServerProcess


@pytest.fixture
def server(root: Path):
    (root / "ontology" / "shop" / "ingest").mkdir(parents=True)
    with ServerProcess(root) as proc:
        yield proc


def test_refusals_share_one_shape_with_the_status_that_says_why(server):
    with httpx.Client(base_url=server.url, timeout=30) as client:
        cases = {
            404: client.get("/ontologies/nosuch/assertions"),
            400: client.get("/ontologies/shop/assertions", params={"status": "maybe"}),
            409: client.post("/ontologies", json={"name": "shop"}),
            413: client.post("/ingest", content=b"x" * (3 << 20), headers={"content-type": "application/json"}),
            421: client.get("/health", headers={"Host": "attacker.example"}),
        }
        concept = client.get("/ontologies/shop/concepts/nothing-here")
        unknown = [client.get("/no/such/route"), client.post("/"), client.get("/mcp/x"), client.delete("/health")]
    for status, response in [*cases.items(), *((r.status_code, r) for r in unknown)]:
        assert response.status_code == status, (status, response.text)
        body = response.json()
        assert set(body) == {"error", "detail"} and body["error"] and body["detail"], body
    assert cases[404].json()["error"] == "no-ontology" and "POST /ontologies" in cases[404].json()["detail"]
    assert all(label in cases[400].json()["detail"] for label in ("AFFIRMATIVE", "CONTESTED", "CONTRADICTORY"))
    assert concept.status_code == 404 and concept.json()["error"] == "not-found"
    # Unknown routes and methods: the router's refusals in the same shape, saying what was asked.
    assert [r.status_code for r in unknown] == [404, 404, 404, 405]
    assert unknown[0].json() == {"error": "not-found", "detail": "no route GET /no/such/route"}


def test_a_bug_is_logged_with_its_traceback_and_the_client_learns_nothing_of_it(root, caplog):
    """The memory route runs whatever the composition root plugs in; here that raises."""
    (root / "ontology" / "shop" / "ingest").mkdir(parents=True)

    def broken(backend):  # type: ignore[no-untyped-def]
        def render(slug: str) -> str:
            raise KeyError("secret-internal-detail")
        return render

    app = build_app(root, watch=False, memory=broken)
    with caplog.at_level(logging.ERROR, logger="kgbridge.server"), \
            TestClient(app.asgi, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        response = client.get("/ontologies/shop/memory")
    assert response.status_code == 500
    assert response.json()["error"] == "internal" and "secret-internal-detail" not in response.text
    logged = [r for r in caplog.records if r.name == "kgbridge.server" and r.exc_info]
    assert logged and "secret-internal-detail" in caplog.text and "Traceback" in caplog.text
