"""Issue 13, availability findings: a poison input never stops a batch (A1), a FIFO never blocks a
worker (A5), an oversized or endless input is refused before it is read (A6), deep JSON is a 400;
each through a real `kgbridge serve` process."""

from __future__ import annotations

import os
import select
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest

from support.attack import reasons, wait_until
from conftest import memory
from ontology.dropfile import PREFIX_BYTES
from support.server_proc import ServerProcess, artifact_rows, wait_drained

HUGE_INT = b"---\nname: 0x" + b"f" * 5000 + b"\ndescription: an integer too long to print\ntype: project\n---\nBody.\n"


@pytest.fixture
def server(root: Path):
    (root / "ontology" / "shop" / "ingest").mkdir(parents=True)
    with ServerProcess(root) as proc:
        yield proc


def _drop(ingest: Path, name: str | bytes, data: bytes) -> None:
    """Write beside ingest/ and rename in, as a hook does."""
    staging = ingest.parent / "staging"
    staging.mkdir(exist_ok=True)
    tmp = staging / "x"
    tmp.write_bytes(data)
    os.rename(tmp, os.path.join(bytes(ingest) if isinstance(name, bytes) else ingest, name))


def test_poison_inputs_are_rejected_one_by_one_and_the_batch_goes_on(server, root):
    ingest = root / "ontology" / "shop" / "ingest"
    base = ingest.parent
    _drop(ingest, "good-before.md", memory("before", "ingested despite its neighbours"))
    _drop(ingest, "huge-int.md", HUGE_INT)
    _drop(ingest, b"caf\xe9.md", memory("latin1", "a name that is not UTF-8"))
    # A file that is swapped for a directory between its event and the read.
    swapped = ingest / "swapped.md"
    swapped.write_bytes(memory("swapped", "soon a directory"))
    os.rename(swapped, base / "swapped-away.md")
    swapped.mkdir()
    _drop(ingest, "good-after.md", memory("after", "ingested despite its neighbours"))
    wait_until(lambda: not any(p.is_file() for p in ingest.iterdir()))
    with httpx.Client(base_url=server.url, timeout=10) as client:
        wait_until(lambda: len(reasons(base)) >= 3)
        health = client.get("/health").json()
        assert health["status"] == "healthy" and health["degraded_writers"] == [], health
        identities = sorted(i for i, _ in artifact_rows(base / "graph.db"))
        assert identities == ["memory:shop/good-after.md", "memory:shop/good-before.md"]
        kept = reasons(base)
        assert any("could not be parsed" in r and "ValueError" in r for r in kept), kept
        assert any("not valid UTF-8" in r for r in kept), kept
        assert any("directory" in r for r in kept), kept
        # Over HTTP the same inputs are a 422 with the artifact kept, never a 500 with nothing kept.
        before = len(list((base / "rejected").glob("*.reason.json")))
        response = client.post("/ingest", files={"file": ("u.md", HUGE_INT)}, data={"ontology": "shop", "filename": "h2.md"})
        assert response.status_code == 422 and "could not be parsed" in response.json()["reason"]
        body = b'{"ontology": "shop", "filename": "bad\\udce9.md", "content": "x y z"}'
        response = client.post("/ingest", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422, response.text
        assert len(list((base / "rejected").glob("*.reason.json"))) == before + 2


def test_a_fifo_in_the_drop_dir_blocks_nothing(server, root):
    ingest = root / "ontology" / "shop" / "ingest"
    fifo = ingest.parent / "pipe"
    os.mkfifo(fifo)
    os.rename(fifo, ingest / "pipe.md")
    time.sleep(1.0)
    _drop(ingest, "after-fifo.md", memory("afterfifo", "ingested although a FIFO came first"))
    wait_drained(ingest, timeout=15)
    assert [i for i, _ in artifact_rows(ingest.parent / "graph.db")] == ["memory:shop/after-fifo.md"]
    assert any("FIFO" in r for r in reasons(ingest.parent))
    started = time.monotonic()
    assert server.stop(signal.SIGTERM, timeout=20) == 0
    assert time.monotonic() - started < 10


def test_a_sparse_giant_drop_is_refused_unread_and_only_its_prefix_kept(server, root):
    ingest = root / "ontology" / "shop" / "ingest"
    staging = ingest.parent / "sparse"
    with open(staging, "wb") as handle:
        handle.write(b"---\nname: giant\n---\n")
        handle.truncate(256 * 1024 * 1024)  # 256 MiB of holes: free on disk, not in memory
    os.rename(staging, ingest / "giant.md")
    wait_drained(ingest, timeout=30)
    rejected = ingest.parent / "rejected"
    kept = [p for p in rejected.iterdir() if not p.name.endswith(".reason.json")]
    assert len(kept) == 1 and kept[0].stat().st_size <= PREFIX_BYTES
    assert any("over the" in r for r in reasons(ingest.parent))
    status = Path(f"/proc/{server.proc.pid}/status").read_text()
    peak_kib = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM")))
    assert peak_kib < 200 * 1024, f"server peaked at {peak_kib} KiB"


def test_a_chunked_upload_is_refused_once_over_budget_not_after_reading_it_all(server):
    """Send an endless chunked multipart body and count what went out before the 413 came back."""
    boundary = "b0undary"
    head = (f"POST /ingest HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\n\r\n").encode()
    preamble = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"ontology\"\r\n\r\nshop\r\n"
                f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.md\"\r\n"
                "Content-Type: text/markdown\r\n\r\n").encode()
    chunk = b"x" * (256 * 1024)
    sent, status, limit = 0, None, 128 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head + b"%x\r\n%s\r\n" % (len(preamble), preamble))
        while sent < limit:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        sock.settimeout(30)
        reply = sock.recv(4096)
        status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else None
    assert status == 413
    assert sent < 32 * 1024 * 1024, f"{sent} bytes went out before the refusal"


@pytest.mark.parametrize("path", ["/ingest", "/ontologies"])
def test_deeply_nested_json_is_a_400(server, path):
    body = b"[" * 30_000 + b"]" * 30_000  # under the /ontologies body limit (64 KiB)
    response = httpx.post(server.url + path, content=body, headers={"content-type": "application/json"}, timeout=30)
    assert response.status_code == 400, response.text
    assert httpx.get(server.url + "/health").json()["status"] == "healthy"


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_idle_and_slow_connections_are_capped_and_timed_out(server):
    from ontology.connections import MAX_CONNECTIONS, REQUEST_READ_SECONDS

    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4096)), hard))
    idle: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS + 100):
            idle.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        drip = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        idle.append(drip)
        started = time.monotonic()
        assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200
        time.sleep(0.5)  # evicted connections close on the loop's next turns
        assert _open_fds(server.proc.pid) < MAX_CONNECTIONS + 60, "the connection cap did not hold"
        closed_at = None
        for byte in b"GET /health HTTP/1.1\r\nHost: localhost\r\n" * 4:  # one byte a second, never done
            try:
                drip.send(bytes([byte]))
            except OSError:
                closed_at = time.monotonic()
                break
            drip.settimeout(1.0)
            try:
                if drip.recv(1) == b"":
                    closed_at = time.monotonic()
                    break
            except socket.timeout:
                pass
        assert closed_at is not None and closed_at - started < REQUEST_READ_SECONDS + 10, "slow drip kept its slot"
        time.sleep(1)
        assert _open_fds(server.proc.pid) < 100, "idle connections were not closed"
    finally:
        for sock in idle:
            sock.close()


def test_a_request_head_past_its_budget_is_refused_before_it_ends(server):
    """The C parser sets no bound on headers: ours does (MAX_HEADER_BYTES), whether the head comes
    in one piece or trickles in, and a body far larger than it still passes."""
    from ontology.connections import MAX_HEADER_BYTES

    filler = [f"X-Filler-{i}: {'a' * 100}" for i in range(MAX_HEADER_BYTES // 100)]
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(("GET /health HTTP/1.1\r\nHost: localhost\r\n" + "\r\n".join(filler) + "\r\n\r\n").encode())
        assert sock.recv(4096).startswith(b"HTTP/1.1 431 ")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:  # never ends its head
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
        sent, answer = 0, b""
        while not answer and sent < 4 * MAX_HEADER_BYTES:
            sock.sendall(b"X-Drip: " + b"b" * 1000 + b"\r\n")
            sent += 1010
            if select.select([sock], [], [], 0.01)[0]:
                answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 431 ") and sent <= MAX_HEADER_BYTES + 2048
    note = memory("big", "a body far over the head's budget", "- " + "word " * (4 * MAX_HEADER_BYTES // 5) + "\n")
    reply = httpx.post(f"{server.url}/ingest", json={"ontology": "shop", "filename": "big.md", "content": note.decode()},
                       timeout=30)
    assert reply.status_code == 200 and reply.json()["status"] == "new"


def test_a_stalled_event_loop_ends_the_process(tmp_path):
    """The watchdog's promise: a loop that answers nothing exits (70) instead of holding the port."""
    import subprocess
    import sys

    code = ("import asyncio, time\nfrom ontology.connections import watch_loop\n"
            "async def main():\n    watch_loop(asyncio.get_running_loop(), stall=1.0)\n"
            "    await asyncio.sleep(0.2)\n    time.sleep(30)\nasyncio.run(main())\n")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], timeout=25, capture_output=True)
    assert proc.returncode == 70 and time.monotonic() - started < 10


def test_a_held_writer_gets_503_retry_after_while_health_and_other_ontologies_answer(server, root):
    from concurrent.futures import ThreadPoolExecutor

    from filelock import FileLock

    (root / "ontology" / "other" / "ingest").mkdir(parents=True)
    lock = FileLock(str(root / "ontology" / "shop" / ".writer.lock"))
    lock.acquire()  # what a `kgbridge rebuild` in another process does for minutes
    try:
        def post(i: int) -> httpx.Response:
            return httpx.post(f"{server.url}/ingest", timeout=60,
                              json={"ontology": "shop", "filename": f"p{i}.md",
                                    "content": memory(f"p{i}", f"claim {i}").decode()})
        with ThreadPoolExecutor(60) as pool:
            futures = [pool.submit(post, i) for i in range(60)]
            time.sleep(1.0)
            started = time.monotonic()
            assert httpx.get(f"{server.url}/health", timeout=5).json()["status"] == "healthy"
            other = httpx.post(f"{server.url}/ingest", timeout=5,
                               json={"ontology": "other", "filename": "o.md", "content": memory("o", "other").decode()})
            assert other.status_code == 200 and other.json()["status"] == "new"
            assert httpx.get(f"{server.url}/ontologies/shop", timeout=5).status_code == 200
            assert time.monotonic() - started < 5
            replies = [f.result() for f in futures]
        assert all(r.status_code == 503 and r.headers.get("retry-after") for r in replies), \
            sorted({r.status_code for r in replies})
    finally:
        lock.release()
    ok = httpx.post(f"{server.url}/ingest", timeout=30,
                    json={"ontology": "shop", "filename": "late.md", "content": memory("late", "after").decode()})
    assert ok.status_code == 200
