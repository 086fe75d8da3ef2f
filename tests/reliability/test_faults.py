"""Faults: the disk under the knowledge root fills up; the backend dies and comes back."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from support.bridge_env import BridgeEnv, drops, wait_for
from conftest import memory
from support.server_proc import ServerProcess, artifact_rows, wait_drained
from support.tmpfs import tmpfs


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 16 MiB tmpfs as the knowledge root: a disk we can fill. Needs root (as CI runs)."""
    with tmpfs(tmp_path / "Knowledge", "16m") as point:
        yield point


def _fill(point: Path) -> Path:
    filler = point / "filler"
    with open(filler, "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * (1 << 20))
                handle.flush()
        except OSError:
            pass
    return filler


def test_disk_full_keeps_artifacts_reports_degraded_and_resumes_by_itself(small_disk):
    ingest = small_disk / "ontology" / "shop" / "ingest"
    ingest.mkdir(parents=True)
    with ServerProcess(small_disk) as server:
        for i in range(3):  # a working graph first
            (ingest / f"warm-{i}.md").write_bytes(memory(f"warm-{i}", f"Warm-up claim number {i}"))
        wait_drained(ingest)
        filler = _fill(small_disk)
        os.truncate(filler, os.path.getsize(filler) - 64 * 1024)  # just room for the drops
        staged = small_disk / "staged"
        staged.mkdir()
        for i in range(5):
            (staged / f"full-{i}.md").write_bytes(memory(f"full-{i}", f"Written while the disk is full {i}"))
        _fill(small_disk / "ontology")  # now nothing is left for blobs, log or WAL
        for path in sorted(staged.iterdir()):
            os.replace(path, ingest / path.name)  # a rename needs no space
        dropped = {p.name for p in drops(ingest)}
        assert len(dropped) == 5
        # Health is per ontology: the full disk degrades "shop", the server itself still serves.
        assert wait_for(lambda: httpx.get(f"{server.url}/health").json()["ontology_status"]["shop"] == "degraded",
                        timeout=30)
        r = httpx.post(f"{server.url}/ingest", json={"ontology": "shop", "filename": "http.md",
                                                     "content": memory("http", "Posted while full").decode()})
        assert r.status_code == 503
        assert {p.name for p in drops(ingest)} == dropped, "nothing left ingest/ while the disk was full"
        filler.unlink()
        (small_disk / "ontology" / "filler").unlink()
        wait_drained(ingest, timeout=60)
        assert wait_for(lambda: httpx.get(f"{server.url}/health").json()["ontology_status"]["shop"] == "healthy",
                        timeout=30)
    rows = artifact_rows(small_disk / "ontology" / "shop" / "graph.db")
    assert len(rows) == 3 + len(dropped) == len(set(rows))


def test_hook_keeps_artifacts_in_outbox_while_disk_is_full(small_disk, tmp_path):
    bridge = BridgeEnv(tmp_path / "env").setup()
    env = bridge.environ(KG_KNOWLEDGE_ROOT=str(small_disk))
    assert bridge.cli("activate", env=env).returncode == 0
    filler = _fill(small_disk)
    path = bridge.memory_dir / "note.md"
    path.write_bytes(memory("note", "Captured while the knowledge disk is full"))
    assert bridge.hook(bridge.post_tool_use(path), env=env).returncode == 0
    assert len(drops(bridge.outbox)) == 1
    filler.unlink()
    assert bridge.cli("flush", env=env).returncode == 0
    ingest = small_disk / "ontology" / "shop" / "ingest"
    assert [p.read_bytes() for p in drops(ingest)] == [path.read_bytes()] and drops(bridge.outbox) == []


def test_http_backend_dies_and_returns_outbox_drains_exactly_once(tmp_path):
    bridge = BridgeEnv(tmp_path / "env").setup()
    server_root = tmp_path / "server"
    server_root.mkdir()
    server = ServerProcess(server_root).start()
    env = bridge.environ(KG_URL=server.url, KG_KNOWLEDGE_ROOT=str(tmp_path / "no-local-root"))
    assert bridge.cli("activate", env=env).returncode == 0
    server.stop(signal.SIGKILL)
    for i in range(5):
        path = bridge.memory_dir / f"note-{i}.md"
        path.write_bytes(memory(f"note-{i}", f"Captured while the backend is dead {i}"))
        assert bridge.hook(bridge.post_tool_use(path), env=env).returncode == 0
    assert len(drops(bridge.outbox)) == 5
    with ServerProcess(server_root, port=server.port):
        time.sleep(0.2)
        for _ in range(2):  # a second flush (or a later hook) must not resend
            assert bridge.cli("flush", env=env).returncode == 0
        assert drops(bridge.outbox) == []
    rows = artifact_rows(server_root / "ontology" / "shop" / "graph.db")
    assert len(rows) == 5 == len(set(rows))
