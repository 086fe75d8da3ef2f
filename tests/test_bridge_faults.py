"""Fail-safe detection against real broken backends: an orphaned FUSE mount (daemon killed,
ENOTCONN), a FUSE mount whose operations block, and an HTTP server that accepts and never answers.
In each: status says inactive promptly, the hook returns promptly, the artifact waits in the outbox,
and it is delivered once the backend is back. (The budget itself is measured in bench/hook.py;
the bounds here only prove nothing hangs.)"""

from __future__ import annotations

import signal
import socket
import threading
from pathlib import Path

import pytest

from ontology.ingest import Ontology

from support.bridge_env import BridgeEnv, drops
from conftest import FIXTURES
from support.fuse_helpers import requires_fuse, start_passthrough, unmount
from support.server_proc import ServerProcess, free_port

MEMORY = FIXTURES / "corpus" / "memory" / "testing-real-db.md"
# A hang guard, not a timing goal (timing is bench.hook's): a hook or CLI call that blocked on a
# backend that never answers would wait forever, and run_bounded fails it after this long. Load
# cannot reach it; the give-up itself is shown by the reason the hook records (below).
HANG_GUARD_S = 60.0


@pytest.fixture
def bridge(tmp_path: Path) -> BridgeEnv:
    return BridgeEnv(tmp_path).setup()


def _write_memory(bridge: BridgeEnv) -> Path:
    path = bridge.memory_dir / "testing-real-db.md"
    path.write_bytes(MEMORY.read_bytes())
    return path


def _assert_absent_then_outbox(bridge: BridgeEnv, gave_up: str | tuple[str, ...],
                               env: dict[str, str] | None = None) -> None:
    """The backend reads as absent for a reason `gave_up` names, and the hook returns on its own,
    silent, with the entry kept in the outbox for later."""
    status = bridge.status(env)
    reasons = (gave_up,) if isinstance(gave_up, str) else gave_up
    assert status["state"] == "inactive" and any(r in str(status["reason"]) for r in reasons), status["reason"]
    result = bridge.hook(bridge.post_tool_use(_write_memory(bridge)), env=env, timeout=HANG_GUARD_S)
    assert (result.returncode, result.stdout) == (0, b"")
    assert [p.name.split(".", 3)[3] for p in drops(bridge.outbox)] == ["testing-real-db.md"]


@requires_fuse
def test_orphaned_fuse_mount_reads_as_absent_and_outbox_drains_when_back(bridge, tmp_path):
    backing = tmp_path / "backing"
    daemon = start_passthrough(backing, bridge.root)
    try:
        assert bridge.cli("activate").returncode == 0
        assert bridge.status()["state"] == "active"
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(10)
        # ENOTCONN on the orphaned mount: isdir fails, or the kernel's cached attributes answer it and
        # the access check fails; either way the drop directory is unusable.
        _assert_absent_then_outbox(bridge, ("no drop directory", "drop directory not writable"))
        unmount(bridge.root)
        daemon = start_passthrough(backing, bridge.root)  # backend back
        assert bridge.cli("flush").returncode == 0
        assert [p.read_bytes() for p in drops(bridge.ingest)] == [MEMORY.read_bytes()]
        assert drops(bridge.outbox) == []
    finally:
        daemon.kill()
        unmount(bridge.root)


@requires_fuse
def test_hung_fuse_mount_reads_as_absent_and_outbox_drains_when_back(bridge, tmp_path):
    backing, flag = tmp_path / "backing", tmp_path / "hang.flag"
    daemon = start_passthrough(backing, bridge.root, hang_flag=flag)
    try:
        assert bridge.cli("activate").returncode == 0
        flag.write_text("block every operation")
        _assert_absent_then_outbox(bridge, "did not answer within")
        flag.unlink()  # backend answers again
        assert bridge.cli("flush").returncode == 0
        assert [p.read_bytes() for p in drops(bridge.ingest)] == [MEMORY.read_bytes()]
        assert drops(bridge.outbox) == []
    finally:
        flag.unlink(missing_ok=True)
        daemon.kill()
        unmount(bridge.root)


class SilentServer:
    """Accepts TCP connections on loopback and never answers a byte."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                continue

    def close(self) -> None:
        self.stop.set()
        for conn in self.held:
            conn.close()
        self.sock.close()


def test_http_backend_that_never_answers_reads_as_absent_and_outbox_drains_when_back(bridge, tmp_path):
    port = free_port()
    server_root = tmp_path / "server-root"
    server_root.mkdir()
    env = bridge.environ(KG_URL=f"http://127.0.0.1:{port}")
    with ServerProcess(server_root, port=port):
        assert bridge.cli("activate", env=env).returncode == 0
        assert bridge.status(env)["transport"] == "http"
    silent = SilentServer(port)
    try:
        _assert_absent_then_outbox(bridge, "backend unreachable: no answer within", env)
        assert silent.held  # it connected, and nothing but its own give-up ended the wait
    finally:
        silent.close()
    with ServerProcess(server_root, port=port):
        assert bridge.cli("flush", env=env).returncode == 0
        assert drops(bridge.outbox) == []
        assert bridge.status(env)["last_delivery"] is not None
    archive = Ontology(server_root, "shop").archive
    assert MEMORY.read_bytes() in [archive.read(entry) for entry, _ in archive.entries()]
