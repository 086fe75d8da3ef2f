"""The graph server through the full stack: a real `kgbridge serve` process, real sockets, the
real MCP client, the real watcher on a real drop directory."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from mcp import Client

from ontology.artifact import Channel
from ontology.ingest import Ontology

from conftest import FIXTURES, ledger, memory
from support.bridge_env import wait_for
from support.server_proc import KGBRIDGE, ServerProcess, artifact_rows, free_port, wait_drained


@pytest.fixture
def shop(root: Path) -> Path:
    ingest = root / "ontology" / "shop" / "ingest"
    ingest.mkdir(parents=True)
    return ingest


@pytest.fixture
def server(root: Path, shop: Path):
    with ServerProcess(root) as proc:
        yield proc


def drop(ingest: Path, name: str, data: bytes) -> None:
    """How hooks deliver: write a dot-temp file, then rename into place."""
    tmp = ingest / f".tmp-{name}"
    tmp.write_bytes(data)
    os.replace(tmp, ingest / name)


def test_files_present_before_start_are_ingested_once(root, shop):
    for i in range(5):
        (shop / f"note-{i}.md").write_bytes(memory(f"note-{i}", f"Service {i} listens on port {8000 + i}"))
    with ServerProcess(root):
        wait_drained(shop)
    rows = artifact_rows(root / "ontology" / "shop" / "graph.db")
    assert len(rows) == 5 == len(set(rows))
    archive = Ontology(root, "shop").archive
    assert sorted(archive.read(entry) for entry, _ in archive.entries()) == sorted(
        memory(f"note-{i}", f"Service {i} listens on port {8000 + i}") for i in range(5))


def test_renamed_in_written_directly_and_burst_are_each_ingested_once(server, root, shop):
    drop(shop, "renamed.md", memory("renamed", "Dropped by tmp and rename"))
    (shop / "direct.md").write_bytes(memory("direct", "Written directly into the drop directory"))
    for i in range(200):
        drop(shop, f"burst-{i:03d}.md", memory(f"burst-{i}", f"Burst artifact number {i} mentions queue {i}"))
    wait_drained(shop)
    db = root / "ontology" / "shop" / "graph.db"
    assert wait_for(lambda: len(artifact_rows(db)) >= 202, timeout=120), len(artifact_rows(db))
    rows = artifact_rows(db)
    assert len(rows) == 202 == len(set(rows))
    health = httpx.get(f"{server.url}/health").json()
    assert health["status"] == "healthy" and health["writers"]["shop"]["ingested"] == 202


def test_temp_and_dot_files_are_left_alone(server, shop):
    (shop / ".tmp-half-written").write_bytes(b"partial")
    (shop / "draft.md.part").write_bytes(b"partial")
    time.sleep(1.0)
    assert (shop / ".tmp-half-written").exists() and (shop / "draft.md.part").exists()


def test_a_new_ontology_directory_is_picked_up_live(server, root):
    ingest = root / "ontology" / "newproj" / "ingest"
    ingest.mkdir(parents=True)
    drop(ingest, "first.md", memory("first", "Created while the server runs"))
    wait_drained(ingest, timeout=20)
    assert len(artifact_rows(root / "ontology" / "newproj" / "graph.db")) == 1


def test_bad_file_in_drop_directory_moves_aside_with_reason(server, root, shop):
    drop(shop, "binary.md", b"\x00\x01\x02")
    drop(shop, "good.md", memory("good", "Good artifacts still flow"))
    wait_drained(shop)
    reasons = list((root / "ontology" / "shop" / "rejected").glob("*.reason.json"))
    assert len(reasons) == 1 and "NUL" in json.loads(reasons[0].read_text())["reason"]
    assert len(artifact_rows(root / "ontology" / "shop" / "graph.db")) == 1


def test_http_multipart_and_json_ingest_answer_what_happened(server):
    data = (FIXTURES / "corpus" / "memory" / "testing-real-db.md").read_bytes()
    files = {"file": ("testing-real-db.md", data, "text/markdown")}
    r = httpx.post(f"{server.url}/ingest", files=files, data={"ontology": "shop", "auto_approve": "true"})
    assert r.status_code == 200 and r.json()["status"] == "new"
    r = httpx.post(f"{server.url}/ingest", json={"ontology": "shop", "filename": "testing-real-db.md",
                                                 "content": data.decode()})
    assert r.status_code == 200 and r.json()["status"] == "duplicate"
    r = httpx.post(f"{server.url}/ingest", json={"ontology": "shop", "filename": "x.md", "content": ""})
    assert r.status_code == 422 and r.json()["status"] == "rejected" and "empty" in r.json()["reason"]
    r = httpx.get(f"{server.url}/ontologies/shop/assertions", params={"status": "INSUFFICIENT_DATA"})
    assert r.status_code == 200 and {a["status"] for a in r.json()} == {"INSUFFICIENT_DATA"}
    assert all({"id", "concept", "text", "belief", "plausibility", "conflict", "sources"} <= set(a) for a in r.json())
    concept = httpx.get(f"{server.url}/ontologies/shop/concepts/testing-real-db").json()
    assert concept["key"] == "testing-real-db" and concept["assertions"]
    hits = httpx.get(f"{server.url}/ontologies/shop/search", params={"q": "database mocks"}).json()["hits"]
    assert hits and hits[0]["concept"] == "testing-real-db" and hits[0]["match"] != "partial"
    narrowed = httpx.get(f"{server.url}/ontologies/shop/search",
                         params={"q": "database", "status": "INSUFFICIENT_DATA", "concept": "testing-real-db",
                                 "since": "2020-01-01", "limit": "2"}).json()["hits"]
    assert 0 < len(narrowed) <= 2 and {(h["kind"], h["concept"], h["status"]) for h in narrowed} == {
        ("assertion", "testing-real-db", "INSUFFICIENT_DATA")}
    r = httpx.get(f"{server.url}/ontologies/shop/search", params={"q": "database", "status": "CONFIRMED"})
    assert r.status_code == 400 and "unknown status" in r.json()["detail"]


def test_ontology_routes_activate_over_http(server):
    assert httpx.get(f"{server.url}/ontologies/headless").status_code == 404
    r = httpx.post(f"{server.url}/ontologies", json={"name": "headless"})
    assert r.status_code == 201
    assert httpx.post(f"{server.url}/ontologies", json={"name": "headless"}).status_code == 409
    assert httpx.get(f"{server.url}/ontologies/headless").status_code == 200
    assert "headless" in httpx.get(f"{server.url}/ontologies").json()["ontologies"]
    assert httpx.post(f"{server.url}/ontologies", json={"name": "../etc"}).status_code == 400


def test_guard_and_limits_through_the_full_stack(server):
    url = server.url
    assert httpx.get(f"{url}/health", headers={"Host": "evil.example"}).status_code == 421
    assert httpx.get(f"{url}/health", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert httpx.get(f"{url}/health", headers={"Origin": "https://evil.example"}).status_code == 403
    assert httpx.get(f"{url}/health", headers={"Origin": f"http://localhost:{server.port}"}).status_code == 200
    mcp = httpx.post(f"{url}/mcp", headers={"Host": "evil.example"}, json={})
    assert mcp.status_code == 421
    r = httpx.post(f"{url}/ingest", json={"ontology": "nope", "filename": "a.md", "content": "hello there"})
    assert r.status_code == 404
    big = "x" * (3 * 1024 * 1024)
    r = httpx.post(f"{url}/ingest", json={"ontology": "shop", "filename": "big.md", "content": big})
    assert r.status_code == 413
    r = httpx.post(f"{url}/ingest", files={"file": ("big.md", big.encode())}, data={"ontology": "shop"})
    assert r.status_code == 413
    r = httpx.post(f"{url}/ingest", json={"ontology": "shop", "filename": "../../escape.md", "content": "hi there"})
    assert r.status_code == 422 and "filename" in r.json()["reason"]


def test_token_is_required_when_configured(root, shop):
    with ServerProcess(root, token="s3cret") as proc:
        assert httpx.get(f"{proc.url}/health").status_code == 401
        assert httpx.get(f"{proc.url}/health", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(f"{proc.url}/health", headers=proc.headers()).status_code == 200


def test_binding_off_loopback_without_token_refuses_to_start(root):
    result = subprocess.run([*KGBRIDGE, "serve", "--root", str(root), "--host", "0.0.0.0", "--port",
                             str(free_port())], capture_output=True, text=True, timeout=30,
                            env={k: v for k, v in os.environ.items() if k != "KG_TOKEN"})
    assert result.returncode == 2 and "token" in result.stderr.lower()


def payload(result):
    """A tool's value: lists arrive as structured content, dicts as one JSON text item."""
    if result.structured_content and "result" in result.structured_content:
        return result.structured_content["result"]
    return json.loads(result.content[0].text)


MCP_LOADED = "MCP at /mcp: SDK loaded on the first request"


def test_mcp_loads_on_its_first_requests_once_and_stops_with_the_server(root, shop):
    """The MCP SDK is most of the server's start-up: it loads on the first /mcp request (ontology.server
    LazyMCP), once for clients that arrive together, and the server still stops gracefully after.
    (That `import kgbridge.serve` does not import the SDK is tests/test_cli_errors.py's.)"""
    server = ServerProcess(root).start()
    try:
        drop(shop, "db.md", memory("db", "Orders SQL database: postgres"))
        wait_drained(shop)
        assert httpx.get(f"{server.url}/ontologies/shop", timeout=10).status_code == 200
        assert MCP_LOADED not in server.log.read_text(), "the SDK loaded before any /mcp request"

        async def tools() -> set[str]:
            async with Client(f"{server.url}/mcp") as client:
                return {t.name for t in (await client.list_tools()).tools}

        async def together() -> list[set[str]]:
            return list(await asyncio.gather(*(tools() for _ in range(3))))

        assert all("kg_search" in names for names in asyncio.run(together()))
        assert server.log.read_text().count(MCP_LOADED) == 1
    finally:
        code = server.stop()
    assert code == 0, server.log.read_text()[-2000:]


def test_mcp_client_lists_and_calls_every_tool(server):
    async def run() -> None:
        async with Client(f"{server.url}/mcp") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"kg_status", "kg_search", "kg_concept", "kg_contested", "kg_ingest"} <= names
            saved = await client.call_tool("kg_ingest", {"filename": "db.md", "ontology": "shop",
                                                          "content": memory("db", "Orders SQL database: postgres").decode()})
            assert json.loads(saved.content[0].text)["status"] == "new"
            await client.call_tool("kg_ingest", {"filename": "db2.md", "ontology": "shop",
                                                 "content": memory("db2", "The Orders SQL database is MySQL").decode()})
            status = json.loads((await client.call_tool("kg_status", {"ontology": "shop"})).content[0].text)
            assert status["counts"]["assertions"] == 2
            contested = payload(await client.call_tool("kg_contested", {"ontology": "shop"}))
            assert {a["text"] for a in contested} == {"Orders SQL database: postgres", "The Orders SQL database is MySQL"}
            hits = payload(await client.call_tool("kg_search", {"query": "postgres", "ontology": "shop"}))
            assert hits and "postgres" in hits[0]["text"]
            disputed = payload(await client.call_tool("kg_search", {"query": "database", "ontology": "shop",
                                                                     "status": ["CONTESTED"], "limit": 5}))
            assert {(h["text"], h["status"]) for h in disputed} == {("Orders SQL database: postgres", "CONTESTED"),
                                                                    ("The Orders SQL database is MySQL", "CONTESTED")}
            bad = await client.call_tool("kg_search", {"query": "database", "ontology": "shop", "since": "soon"})
            assert bad.is_error and "not a date" in bad.content[0].text
            concept = await client.call_tool("kg_concept", {"id": "db", "ontology": "shop"})
            assert json.loads(concept.content[0].text)["key"] == "db"
            missing = await client.call_tool("kg_concept", {"id": "nope", "ontology": "shop"})
            assert missing.is_error
            by_path = await client.call_tool("kg_status", {"project_path": "/nonexistent/shop"})
            assert json.loads(by_path.content[0].text)["ontology"] == "shop"
    asyncio.run(run())


def test_mcp_tools_tell_the_agent_why_they_refuse(server):
    """A refusal (no such ontology or concept, a bad slug) is the agent's to fix: it reads the reason,
    not the SDK's bare "Error executing tool"."""
    async def run() -> dict[str, str]:
        async with Client(f"{server.url}/mcp") as client:
            calls = {"kg_concept": {"id": "nope", "ontology": "shop"}, "kg_contested": {"ontology": "nosuch"},
                     "kg_ingest": {"filename": "a.md", "content": "x", "ontology": "Bad Slug"},
                     "kg_search": {"query": "x", "ontology": "nosuch"}, "kg_memory": {"ontology": "nosuch"}}
            out = {}
            for tool, arguments in calls.items():
                result = await client.call_tool(tool, arguments)
                assert result.is_error, (tool, result)
                out[tool] = result.content[0].text
            return out
    told = asyncio.run(run())
    assert "no concept 'nope' in 'shop'; try kg_search" in told["kg_concept"], told
    for tool in ("kg_contested", "kg_search", "kg_memory"):
        assert "ontology 'nosuch' does not exist" in told[tool], told
    assert "Bad Slug" in told["kg_ingest"], told


def test_sigterm_exits_cleanly(root, shop):
    proc = ServerProcess(root).start()
    assert proc.stop(signal.SIGTERM) == 0


def test_restart_mid_burst_loses_and_doubles_nothing(root, shop):
    proc = ServerProcess(root).start()
    for i in range(300):
        drop(shop, f"2026-04-05T1445Z_e{i:03d}.md", ledger(f"s{i}", f"- Queue {i} drains before deploy {i}"))
        if i == 150:
            proc.stop(signal.SIGKILL)  # mid-burst, mid-ingest: the hardest stop
    with ServerProcess(root):
        wait_drained(shop)
    rows = artifact_rows(root / "ontology" / "shop" / "graph.db")
    assert len(rows) == 300 == len(set(rows))


def test_memory_route_and_kg_memory_serve_the_projection(server):
    data = (FIXTURES / "corpus" / "memory" / "testing-real-db.md").read_text()
    httpx.post(f"{server.url}/ingest", json={"ontology": "shop", "filename": "testing-real-db.md", "content": data})
    r = httpx.get(f"{server.url}/ontologies/shop/memory")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/markdown")
    assert r.text.startswith("# Memory: shop") and "testing-real-db.md" in r.text
    assert len(r.content) <= 24_000
    assert httpx.get(f"{server.url}/ontologies/nope/memory").status_code == 404

    async def run() -> str:
        async with Client(f"{server.url}/mcp") as client:
            result = await client.call_tool("kg_memory", {"ontology": "shop"})
            return result.content[0].text
    assert asyncio.run(run()) == r.text


def test_serve_regenerates_a_deleted_graph_from_the_archive_at_start(root):
    """No request needed: the server catches every ontology up with its archive when it starts."""
    onto = Ontology(root, "shop", create=True)
    onto.ingest_many([(f"note-{i}.md", memory(f"note-{i}", f"Service {i} listens on port {8000 + i}"), Channel.CLI)
                      for i in range(5)])
    onto.close()
    before = sorted(artifact_rows(onto.paths.database))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{onto.paths.database}{suffix}").unlink(missing_ok=True)
    with ServerProcess(root):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if onto.paths.database.exists() and sorted(artifact_rows(onto.paths.database)) == before:
                break
            time.sleep(0.1)
    assert sorted(artifact_rows(onto.paths.database)) == before


def test_http_and_mcp_search_match_digits_of_any_script(server):
    """Written with Arabic-Indic digits, found over HTTP by ASCII and Persian digits and over MCP by
    Devanagari ones; each hit shows the line as written (search_terms.search_key folds only the key)."""
    line = "الإصدار ٢٠٢٦ جاهز"
    r = httpx.post(f"{server.url}/ingest", json={"ontology": "shop", "filename": "release.md",
                                                 "content": memory("release", "release notes", f"- {line}").decode()})
    assert r.status_code == 200 and r.json()["status"] == "new"
    for q in ("2026", "۲۰۲۶"):
        hits = httpx.get(f"{server.url}/ontologies/shop/search", params={"q": q}).json()["hits"]
        assert [h["text"] for h in hits if h["kind"] == "assertion"] == [line], q

    async def run() -> list[str]:
        async with Client(f"{server.url}/mcp") as client:
            hits = payload(await client.call_tool("kg_search", {"query": "२०२६", "ontology": "shop"}))
            return [h["text"] for h in hits if h["kind"] == "assertion"]
    assert asyncio.run(run()) == [line]
