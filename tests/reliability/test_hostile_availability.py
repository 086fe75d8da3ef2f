"""Issue 13, availability findings: a poison input never stops a batch (A1), a FIFO never blocks a
worker (A5), an oversized or endless input is refused before it is read (A6), deep JSON is a 400;
each through a real `kgbridge serve` process."""

from __future__ import annotations

import errno
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
from ontology.ingest import WRITER_WAIT_ENV
from support.server_proc import ServerProcess, artifact_rows, wait_drained

# Only what catches a hang: generous, never a claim about speed (that is bench/'s job).
HANG_S = 120

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
    kept = ingest.parent.parent / "pipe-kept"  # a second name: the server removes the one it refused
    os.link(fifo, kept)
    os.rename(fifo, ingest / "pipe.md")
    time.sleep(1.0)
    _drop(ingest, "after-fifo.md", memory("afterfifo", "ingested although a FIFO came first"))
    wait_drained(ingest, timeout=15)
    assert [i for i, _ in artifact_rows(ingest.parent / "graph.db")] == ["memory:shop/after-fifo.md"]
    assert any("FIFO" in r for r in reasons(ingest.parent))
    # No thread of the server holds the FIFO or waits in its open(): a write-side open that does not
    # block finds no reader (ENXIO). A worker stuck on it would be a reader, and would hold shutdown.
    try:
        os.close(os.open(kept, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        assert exc.errno == errno.ENXIO, exc
    else:
        raise AssertionError("a thread of the server holds the FIFO open or waits in its open()")
    # SIGTERM ends it cleanly; a shutdown that hangs is SIGKILLed at the (generous) timeout: not 0.
    code = server.stop(signal.SIGTERM, timeout=HANG_S)
    assert code == 0, f"SIGTERM did not end the server cleanly within {HANG_S} s (exit {code})"


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
        assert httpx.get(f"{server.url}/health", timeout=HANG_S).status_code == 200
        time.sleep(0.5)  # evicted connections close on the loop's next turns
        assert _open_fds(server.proc.pid) < MAX_CONNECTIONS + 60, "the connection cap did not hold"
        # A valid head that never ends, one byte a second for far longer than REQUEST_READ_SECONDS: the
        # server must close the connection, without an answer, while bytes still arrive (a deadline for
        # the whole head, not an idle timeout each byte resets). How long it took is not the question.
        head = b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Drip: " + b"a" * int(10 * REQUEST_READ_SECONDS)
        closed_after = None
        for sent, byte in enumerate(head):
            try:
                drip.send(bytes([byte]))
                drip.settimeout(1.0)  # also what paces the drip: at most a byte a second
                answer = drip.recv(1)
            except socket.timeout:
                continue
            except OSError:
                closed_after = sent
                break
            assert answer == b"", f"the unfinished head was answered: {answer + drip.recv(4096)!r}"
            closed_after = sent + 1
            break
        assert closed_after is not None, f"a slow drip kept its slot through all {len(head)} bytes"
        wait_until(lambda: _open_fds(server.proc.pid) < 100, timeout=HANG_S)  # idle ones closed too
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

    code = ("import asyncio, threading\nfrom ontology.connections import watch_loop\n"
            "async def main():\n    watch_loop(asyncio.get_running_loop(), stall=1.0)\n"
            "    await asyncio.sleep(0.2)\n    threading.Event().wait()\nasyncio.run(main())\n")  # blocked for good
    try:
        proc = subprocess.run([sys.executable, "-c", code], timeout=HANG_S, capture_output=True)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"a loop blocked for good still ran after {HANG_S} s: the watchdog never fired") from None
    assert proc.returncode == 70, (proc.returncode, proc.stderr.decode()[-2000:])
    assert b"event loop unresponsive" in proc.stderr, proc.stderr.decode()[-2000:]


@pytest.fixture
def patient_server(root: Path):
    """A server whose callers wait for a held writer until it is let go (KG_WRITER_WAIT_S at its
    maximum), so a test decides by an event, not a clock, while they are still waiting."""
    (root / "ontology" / "shop" / "ingest").mkdir(parents=True)
    with ServerProcess(root, env={WRITER_WAIT_ENV: "3600"}) as proc:
        yield proc


def _post(server: ServerProcess, slug: str, name: str) -> httpx.Response:
    return httpx.post(f"{server.url}/ingest", timeout=HANG_S,
                      json={"ontology": slug, "filename": f"{name}.md", "content": memory(name, f"claim {name}").decode()})


def test_a_held_writer_gets_503_retry_after_while_health_and_other_ontologies_answer(patient_server, root):
    """While another process holds shop's writer (a rebuild): MAX_WAITING_CALLERS callers wait for
    it, every caller past them is told to come back (503 + Retry-After) at once, and /health, reads
    and another ontology's writes are answered while those callers still wait. Letting go of the
    writer then takes the waiting callers' artifacts in."""
    from concurrent.futures import ThreadPoolExecutor, wait

    from filelock import FileLock

    from ontology.ingest import MAX_WAITING_CALLERS

    server = patient_server
    (root / "ontology" / "other" / "ingest").mkdir(parents=True)
    lock = FileLock(str(root / "ontology" / "shop" / ".writer.lock"))
    lock.acquire()  # what a `kgbridge rebuild` in another process does for minutes
    released = False
    try:
        with ThreadPoolExecutor(60) as pool:
            futures = [pool.submit(_post, server, "shop", f"p{i}") for i in range(60)]
            turned_away = 60 - MAX_WAITING_CALLERS
            try:
                wait_until(lambda: sum(f.done() for f in futures) >= turned_away, timeout=HANG_S)
            except AssertionError:
                raise AssertionError(f"{sum(f.done() for f in futures)} of 60 callers answered while the writer "
                                     f"was held; all but {MAX_WAITING_CALLERS} should be told to come back") from None
            done = [f for f in futures if f.done()]
            assert len(done) == turned_away, f"{len(done)} of 60 answered, {MAX_WAITING_CALLERS} should wait"
            for reply in (f.result() for f in done):
                assert reply.status_code == 503 and reply.headers.get("retry-after"), (reply.status_code, reply.text)
            # The writer is still held and MAX_WAITING_CALLERS callers still wait for it: now the rest.
            health = httpx.get(f"{server.url}/health", timeout=HANG_S).json()
            assert health["status"] == "healthy", health
            other = _post(server, "other", "o")
            assert other.status_code == 200 and other.json()["status"] == "new", other.text
            assert httpx.get(f"{server.url}/ontologies/shop", timeout=HANG_S).status_code == 200
            waiting = [f for f in futures if not f.done()]
            assert len(waiting) == MAX_WAITING_CALLERS, f"{len(waiting)} callers still wait"
            lock.release()
            released = True
            wait(waiting, timeout=HANG_S)
            replies = [f.result() for f in waiting]
        assert [r.status_code for r in replies] == [200] * MAX_WAITING_CALLERS, [r.text for r in replies]
    finally:
        if not released:
            lock.release()
    assert len(artifact_rows(root / "ontology" / "shop" / "graph.db")) == MAX_WAITING_CALLERS
    ok = _post(server, "shop", "late")
    assert ok.status_code == 200


def test_a_caller_whose_wait_for_a_held_writer_runs_out_gets_503_retry_after(root):
    """The other way a held writer answers: past KG_WRITER_WAIT_S the caller is told to come back,
    while the writer is still held (the test lets go only after the answer came back)."""
    from filelock import FileLock

    (root / "ontology" / "shop" / "ingest").mkdir(parents=True)
    with ServerProcess(root, env={WRITER_WAIT_ENV: "0.5"}) as server:
        lock = FileLock(str(root / "ontology" / "shop" / ".writer.lock"))
        with lock:
            reply = _post(server, "shop", "held")
            assert reply.status_code == 503 and reply.headers.get("retry-after") == "2", reply.text
            # the wait it was given: KG_WRITER_WAIT_S, not the default (10 s)
            assert reply.json()["error"] == "writer-busy" and "held over 0.5 s" in reply.json()["detail"], reply.text
        assert _post(server, "shop", "free").status_code == 200
