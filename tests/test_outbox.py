"""The outbox drains: refusals are set aside with the backend's answer, transient failures back off,
order is arrival order, and the hook never waits on a backend or an odd file. Real hook processes,
a real `kgbridge serve` socket, real tmpfs mounts for a read-only or full state directory."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from support.bridge_env import BridgeEnv, drops, wait_for
from conftest import memory
from support.server_proc import ServerProcess
from support.tmpfs import remount, tmpfs

# Only what catches a hook that blocks (a FIFO opened for reading, a hung backend): generous, never a
# claim about speed. The hook's time budget is measured in bench/hook.py, not here.
HANG_S = 60.0


@pytest.fixture
def bridge(tmp_path: Path) -> BridgeEnv:
    return BridgeEnv(tmp_path / "env").setup()


def _activated_then_dead(bridge: BridgeEnv, tmp_path: Path) -> tuple[Path, ServerProcess, dict[str, str]]:
    """A project activated over HTTP on a real server, which then dies (kill -9)."""
    server_root = tmp_path / "server"
    server_root.mkdir()
    server = ServerProcess(server_root).start()
    env = bridge.environ(KG_URL=server.url, KG_KNOWLEDGE_ROOT=str(bridge.base / "no-local-root"))
    assert bridge.cli("activate", env=env).returncode == 0
    server.stop(signal.SIGKILL)
    return server_root, server, env


def _ordered_artifacts(root: Path) -> list[tuple[str, str]]:
    """(source identity, sha256) in the order the backend received them."""
    conn = sqlite3.connect(f"file:{root / 'ontology' / 'shop' / 'graph.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT s.identity, a.sha256 FROM artifacts a JOIN sources s ON s.id = a.source_id "
                            "ORDER BY a.id").fetchall()
    finally:
        conn.close()


def _write_payload(bridge: BridgeEnv, path: Path) -> dict[str, object]:
    """A PostToolUse for a Write of `path`, whatever its content (binary, a FIFO)."""
    return {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PostToolUse",
            "tool_name": "Write", "tool_input": {"file_path": str(path), "content": "(not shown)"}}


def _sha(data: bytes) -> str:
    import hashlib
    return hashlib.sha256(data).hexdigest()


def test_a_413_at_the_head_of_the_outbox_does_not_hold_back_the_20_behind_it(bridge, tmp_path):
    server_root, server, env = _activated_then_dead(bridge, tmp_path)
    # An item an earlier version queued: 2.5 MB, over the server's 2 MiB body limit (413). Earlier
    # versions named items without an arrival stamp; it is the oldest item.
    bridge.outbox.mkdir(parents=True)
    huge = bridge.outbox / f"document.{'0' * 12}.huge.md"
    huge_bytes = memory("huge", "an item from an earlier version", "x" * 2_500_000)
    huge.write_bytes(huge_bytes)
    os.utime(huge, (time.time() - 3600, time.time() - 3600))
    sent = []
    for i in range(20):
        if i == 7:  # and one the backend keeps as rejected (binary): 422, in the middle
            path = bridge.memory_dir / "binary.md"
            path.write_bytes(bytes(range(32)) * 64)
            assert bridge.hook(_write_payload(bridge, path), env=env).returncode == 0
        path = bridge.memory_dir / f"note-{i:02d}.md"
        path.write_bytes(memory(f"note-{i:02d}", f"Captured while the backend is away {i}"))
        sent.append(path.read_bytes())
        assert bridge.hook(bridge.post_tool_use(path), env=env).returncode == 0
    assert len(drops(bridge.outbox)) == 22
    with ServerProcess(server_root, port=server.port):
        result = bridge.cli("flush", "--json", env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert (report["outbox_depth"], report["refused"]) == (0, 2)
        status = bridge.status(env)
        assert (status["outbox_depth"], status["refused"], status["outbox_oldest_age_s"]) == (0, 2, None)
    assert sorted(sha for _, sha in _ordered_artifacts(server_root)) == sorted(map(_sha, sent))
    refused = bridge.state / "shop" / "refused"
    answers = {p.name: json.loads(p.read_text()) for p in refused.glob("*.answer.json")}
    assert sorted(a["status"] for a in answers.values()) == [413, 422]
    assert (refused / huge.name).read_bytes() == huge_bytes, "the refused item is kept, byte for byte"
    assert all("error" in a["answer"] or "reason" in a["answer"] for a in answers.values()), answers


def test_50_concurrent_hooks_during_an_outage_arrive_once_each_in_order_per_file(bridge, tmp_path):
    server_root, server, env = _activated_then_dead(bridge, tmp_path)
    written: dict[str, list[str]] = {}
    failures: list[str] = []

    def agent(n: int) -> None:  # one agent edits its file five times, one hook after each write
        path = bridge.memory_dir / f"topic-{n}.md"
        for version in range(5):
            data = memory(f"topic-{n}", f"Topic {n}", f"- Claim {n} as of version {version}")
            path.write_bytes(data)
            written.setdefault(path.name, []).append(_sha(data))
            result = bridge.hook(bridge.post_tool_use(path), env=env)
            if result.returncode != 0:
                failures.append(result.stderr.decode())

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert len(drops(bridge.outbox)) == 50
    with ServerProcess(server_root, port=server.port):
        # Recovery: the detached worker (backing off meanwhile) drains on its own; no flush.
        assert wait_for(lambda: drops(bridge.outbox) == [], timeout=90), drops(bridge.outbox)[:3]
        time.sleep(0.5)
        rows = _ordered_artifacts(server_root)
    assert len(rows) == 50 == len(set(rows))
    for name, shas in written.items():
        arrived = [sha for identity, sha in rows if identity.endswith("/" + name)]
        assert arrived == shas, f"{name} arrived out of order"


def test_a_fifo_or_a_huge_sparse_memory_file_is_skipped_at_once_and_logged(bridge):
    assert bridge.cli("activate").returncode == 0
    fifo = bridge.memory_dir / "pipe.md"
    os.mkfifo(fifo)
    sparse = bridge.memory_dir / "sparse.md"
    with open(sparse, "wb") as handle:
        handle.truncate(600 * 1024 * 1024)
    for path in (fifo, sparse):  # a hook that blocks on either fails here, by bridge.hook's timeout
        result = bridge.hook(_write_payload(bridge, path), timeout=HANG_S)
        assert result.returncode == 0, result.stderr.decode()
    log = (bridge.state / "hook.log").read_text()
    assert "pipe.md: not a regular file" in log and "sparse.md: 629145600 bytes" in log
    assert drops(bridge.ingest) == [] and drops(bridge.outbox) == []
    fine = bridge.memory_dir / "fine.md"
    fine.write_bytes(memory("fine", "a plain memory file"))
    assert bridge.hook(bridge.post_tool_use(fine)).returncode == 0
    assert [p.read_bytes() for p in drops(bridge.ingest)] == [fine.read_bytes()]


def test_a_memory_file_name_that_is_not_utf8_is_delivered_with_the_files_after_it(bridge):
    assert bridge.cli("activate").returncode == 0
    odd = os.fsdecode(b"caf\xe9-notes.md")  # Latin-1 bytes: not valid UTF-8
    (bridge.memory_dir / odd).write_bytes(memory("cafe", "an odd name"))
    (bridge.memory_dir / "zz-after.md").write_bytes(memory("zz", "sorts after it"))
    result = bridge.cli("flush")
    assert result.returncode == 0, result.stdout + result.stderr
    names = sorted(os.fsencode(p.name).split(b".", 2)[2] for p in drops(bridge.ingest))
    assert names == [b"caf\xe9-notes.md", b"zz-after.md"]
    assert bridge.status()["outbox_depth"] == 0


@pytest.fixture
def small_state(tmp_path: Path):
    """A 1 MiB tmpfs as the state directory, to fill or remount read-only."""
    with tmpfs(tmp_path / "state", "1m") as point:
        yield point


def test_read_only_or_full_state_dir_is_reported_and_nothing_is_lost(tmp_path, small_state):
    bridge = BridgeEnv(tmp_path / "env").setup()
    env = bridge.environ(KG_STATE_DIR=str(small_state))
    assert bridge.cli("activate", env=env).returncode == 0
    away = bridge.root.rename(bridge.base / "away")  # backend away: items must wait in the outbox
    first = bridge.memory_dir / "first.md"
    first.write_bytes(memory("first", "queued before the state dir broke"))
    assert bridge.hook(bridge.post_tool_use(first), env=env).returncode == 0
    assert len(drops(small_state / "shop" / "outbox")) == 1
    remount(small_state, "ro")
    try:
        second = bridge.memory_dir / "second.md"
        second.write_bytes(memory("second", "written while the state dir is read-only"))
        result = bridge.hook(bridge.post_tool_use(second), env=env)
        assert (result.returncode, result.stdout) == (0, b"")
        assert b"outbox unwritable" in result.stderr and b"second.md" in result.stderr  # hook.log is read-only too
        for verb in ("flush", "status"):
            done = bridge.cli(verb, env=env)
            assert done.returncode == 2 and "Traceback" not in done.stderr, (verb, done.stderr)
            assert "state directory" in done.stderr and "Read-only file system" in done.stderr
    finally:
        remount(small_state, "rw")
    filler = small_state / "filler"
    with open(filler, "wb", buffering=0) as handle:  # unbuffered: nothing left to flush at close
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError:
            pass
    third = bridge.memory_dir / "third.md"
    third.write_bytes(memory("third", "written while the state dir is full"))
    result = bridge.hook(bridge.post_tool_use(third), env=env)
    assert result.returncode == 0
    said = result.stderr.decode() + (small_state / "hook.log").read_text(errors="replace")
    assert "outbox unwritable" in said and "third.md" in said
    done = bridge.cli("status", env=env)
    assert done.returncode == 2 and "No space left" in done.stderr, done.stderr
    filler.unlink()
    away.rename(bridge.root)  # backend back, space back: one rescan delivers all three, once
    assert bridge.cli("flush", env=env).returncode == 0
    assert bridge.cli("flush", env=env).returncode == 0
    assert sorted(p.read_bytes() for p in drops(bridge.ingest)) == sorted(
        p.read_bytes() for p in (first, second, third))


def _queued(tmp_path: Path, n: int):
    from kgbridge.deliver import enqueue
    from kgbridge.state import ProjectState

    state = ProjectState("shop", base=tmp_path / "state")
    for i in range(n):
        assert enqueue(state, "memory", f"note-{i}.md", memory(f"note-{i}", f"Queued while away {i}"))
    return state


def test_a_drain_sends_its_items_over_one_kept_alive_connection(tmp_path, monkeypatch):
    """A connect (and an accept on the server) per item was most of a small item's cost."""
    import socket

    from kgbridge.deliver import drain
    from kgbridge.detect import Activation, Detection, Transport
    from support.server_proc import artifact_rows

    server_root = tmp_path / "Knowledge"
    (server_root / "ontology" / "shop" / "ingest").mkdir(parents=True)
    state = _queued(tmp_path, 5)
    with ServerProcess(server_root) as server:
        opened, real = [], socket.create_connection
        monkeypatch.setattr(socket, "create_connection", lambda *a, **k: opened.append(a[0]) or real(*a, **k))
        with state.lock():
            report = drain(state, Detection(Activation.ACTIVE, Transport.HTTP, f"{server.url}/ingest", "test"))
    assert tuple(report) == (5, 0, 0, None)
    assert opened == [("127.0.0.1", server.port)]
    assert len(artifact_rows(server_root / "ontology" / "shop" / "graph.db")) == 5


def test_a_kept_connection_the_server_closed_meanwhile_is_opened_again(tmp_path):
    """The server ends an idle kept-alive connection after KEEP_ALIVE_SECONDS; the next send on it
    must not come back as a failure (which would stop the drain and back off)."""
    from kgbridge.deliver import Connections, SendOutcome, send
    from kgbridge.detect import Activation, Detection, Transport
    from ontology.connections import KEEP_ALIVE_SECONDS
    from ontology.layout import drop_name

    server_root = tmp_path / "Knowledge"
    (server_root / "ontology" / "shop" / "ingest").mkdir(parents=True)
    connections = Connections()
    with ServerProcess(server_root) as server:
        detection = Detection(Activation.ACTIVE, Transport.HTTP, f"{server.url}/ingest", "test")
        first = send(detection, "shop", drop_name("memory", b"a", "a.md"), memory("a", "First"), connections=connections)
        time.sleep(KEEP_ALIVE_SECONDS + 1)
        second = send(detection, "shop", drop_name("memory", b"b", "b.md"), memory("b", "Second"),
                      connections=connections)
        connections.close()
    assert (first.outcome, second.outcome) == (SendOutcome.DELIVERED, SendOutcome.DELIVERED)
