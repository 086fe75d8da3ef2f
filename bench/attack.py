"""The hostile-input catalogue of issue 13, re-run against a real `kgbridge serve` (loopback only,
every loop bounded): Host/Origin variants, bad and poison inputs, idle and slow connections, FIFOs,
a sparse giant, a chunked endless upload, a held writer, odd routes and methods, and kill -9 during
drop bursts.

Run: .venv/bin/python -m bench.attack [--kill-rounds 5] [--burst 400]
Prints one line per attack with its counts; figures go to docs/RELIABILITY.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import resource
import signal
import socket
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from kgbridge.server_process import ServerProcess, artifact_rows, wait_drained

LOCAL = ["127.0.0.1", "127.0.0.1:{p}", "localhost", "LOCALHOST:{p}", "[::1]", "[::1]:{p}", "127.8.9.10:80"]
HOSTILE = ["127.rebind.attacker.example:{p}", "127.0.0.1.nip.io", "127.0.0.1.nip.io:{p}", "127.evil", "[::1].evil.com",
           "localhost:80@evil.com", "localhost.evil", "localhost.", "evil.localhost", "127.0.0.1:80:80", "127.0.0.1:abc",
           "localhost:", "[::1", "::1", "[::1]x", "0.0.0.0", "10.0.0.1", "evil.com", "127.0.0.1 evil.com", "127.0.0.1%2f",
           "127.0.0.1@evil.com", "[::ffff:7f00:1].evil", "1.2.3.4:{p}", "127.1", "2130706433", "0x7f000001",
           "127.000.000.001", "[0:0:0:0:0:0:0:1].x", "LOCALHOST.", "127.0.0.1.", "127.0.0.1:{p}.evil",
           "xn--localhost", "locaLhost.evil", "[::1]:{p}:1"]
BAD_ORIGINS = ["http://127.rebind.attacker.example:{p}", "null", "http://localhost:80@evil.com", "http://localhost.evil",
               "http://[::1].evil.com", "http://127.0.0.1.nip.io", "file://", "http://127.0.0.1/path",
               "javascript:alert(1)", "http://evil.com", "http://localhost:{p}/x?y"]


def status(port: int, head: list[str], body: bytes = b"") -> int:
    data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(data)
        reply = sock.recv(4096)
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0


def get(port: int, *headers: str) -> int:
    return status(port, ["GET /health HTTP/1.1", *headers, "Connection: close"])


def memory(name: str, text: str) -> bytes:
    return f"---\nname: {name}\ndescription: {text}\ntype: project\n---\n- {text}\n".encode()


def peak_kib(pid: int) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("VmHWM")))


def hosts_and_origins(server: ServerProcess) -> None:
    p = server.port
    ok = sum(get(p, f"Host: {h.format(p=p)}") == 200 for h in LOCAL)
    leaked = [h for h in HOSTILE if get(p, f"Host: {h.format(p=p)}") == 200]
    bad_origin = [o for o in BAD_ORIGINS if get(p, "Host: localhost", f"Origin: {o.format(p=p)}") == 200]
    dups = sum(get(p, *(["Host: localhost"] if not h.startswith("Host") else []), h, h) == 400
               for h in ("Host: localhost", "Origin: http://localhost", "Sec-Fetch-Site: same-origin", "Authorization: x"))
    print(f"hosts: local accepted {ok}/{len(LOCAL)}, hostile accepted {len(leaked)}/{len(HOSTILE)} {leaked}; "
          f"hostile origins accepted {len(bad_origin)}/{len(BAD_ORIGINS)}; duplicated guard headers refused {dups}/4")


def bad_inputs(server: ServerProcess, root: Path) -> None:
    cases = {"huge-int.md": b"---\nname: 0x" + b"f" * 5000 + b"\n---\nx\n", "nul.md": b"a\x00b", "cp1251.md": "Привет".encode("cp1251"),
             "empty.md": b"", "bomb.md": b"---\na: &a [x,x]\nb: [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n---\nb\n",
             "deep.md": b"---\nr: " + b"[" * 60 + b"]" * 60 + b"\n---\nb\n", "../../x.md": b"text", "big.md": b"x" * ((1 << 20) + 1),
             "ok.md": memory("ok", "fine")}
    codes = []
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for name, data in cases.items():
            codes.append(client.post("/ingest", files={"file": ("u.md", data)}, data={"ontology": "shop", "filename": name}).status_code)
        deep = client.post("/ingest", content=b"[" * 500_000 + b"]" * 500_000, headers={"content-type": "application/json"})
        codes.append(deep.status_code)
    ingest = root / "ontology" / "shop" / "ingest"
    for name, data in cases.items():
        if "/" not in name:
            (ingest.parent / "stage").write_bytes(data)
            os.rename(ingest.parent / "stage", ingest / f"drop-{name}")
    (ingest.parent / "s2").write_bytes(memory("nonutf8", "name"))
    os.rename(ingest.parent / "s2", os.path.join(bytes(ingest), b"n\xe9.md"))
    wait_drained(ingest, timeout=60)
    health = httpx.get(f"{server.url}/health").json()
    print(f"bad inputs: {len(codes)} over HTTP -> 5xx {sum(c >= 500 for c in codes)}, codes {sorted(set(codes))}; "
          f"drop dir drained, kept reasons {len(list((ingest.parent / 'rejected').glob('*.reason.json')))}, "
          f"health {health['status']}, degraded {health['degraded_writers']}")


ODD_REQUESTS = [("GET", "/"), ("GET", "/nope"), ("GET", "/mcp/x"), ("GET", "/ontologies/shop/../../../etc/passwd"),
                ("GET", "//health"), ("GET", "/health/"), ("GET", "/%2e%2e/%2e%2e/etc/passwd"), ("DELETE", "/health"),
                ("PUT", "/ingest"), ("PATCH", "/ontologies/shop"), ("GET", "/ontologies/shop/concepts/%00"),
                ("GET", "/ontologies/shop/search?q=" + "x" * 8000), ("TRACE", "/health")]


def odd_routes(server: ServerProcess) -> None:
    """Unknown routes, methods and paths: every answer in the JSON error shape, never a 5xx."""
    shapeless, server_errors = [], 0
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for method, path in ODD_REQUESTS:
            response = client.request(method, path)
            server_errors += response.status_code >= 500
            if response.status_code >= 400:
                try:
                    ok = set(response.json()) == {"error", "detail"}
                except ValueError:
                    ok = False
                if not ok:
                    shapeless.append(f"{method} {path[:40]} {response.status_code}")
    print(f"odd routes: {len(ODD_REQUESTS)} requests -> 5xx {server_errors}, refusals not in the error shape "
          f"{len(shapeless)} {shapeless}")


def idle_and_slow(server: ServerProcess, n: int) -> None:
    socks = []
    try:
        for _ in range(n):
            socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        for s in socks[:20]:
            s.send(b"GET /health HTTP/1.1\r\n")  # slow drip: headers never finished
        start = time.perf_counter()
        ok = httpx.get(f"{server.url}/health", timeout=10).status_code
        latency = time.perf_counter() - start
        time.sleep(1)
        fds = len(os.listdir(f"/proc/{server.proc.pid}/fd"))
        time.sleep(12)
        closed = 0
        for s in socks:
            s.settimeout(0.01)
            try:
                closed += s.recv(1) == b""
            except (socket.timeout, BlockingIOError):
                pass
            except OSError:
                closed += 1
        print(f"idle/slow: {n} idle + 20 slow-drip opened; server fds 1 s later {fds}; /health {ok} in {latency * 1000:.0f} ms; "
              f"closed by the server after 12 s: {closed}/{n}")
    finally:
        for s in socks:
            s.close()


def fifos_sparse_chunked(server: ServerProcess, root: Path) -> None:
    ingest = root / "ontology" / "shop" / "ingest"
    for i in range(20):
        os.mkfifo(ingest.parent / f"f{i}")
        os.rename(ingest.parent / f"f{i}", ingest / f"fifo-{i}.md")
    sparse = ingest.parent / "sparse"
    with open(sparse, "wb") as handle:
        handle.truncate(1536 * 1024 * 1024)
    os.rename(sparse, ingest / "giant.md")
    start = time.perf_counter()
    (ingest.parent / "g").write_bytes(memory("afterfifo", "after the fifos"))
    os.rename(ingest.parent / "g", ingest / "after-fifo.md")
    wait_drained(ingest, timeout=60)
    took = time.perf_counter() - start
    kept = max(p.stat().st_size for p in (ingest.parent / "rejected").iterdir())
    head = (b"POST /ingest HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\n\r\n")
    chunk = b"x" * (1 << 20)
    sent = 0
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        while sent < 300 * (1 << 20):
            try:
                if sock.recv(1 << 16):
                    break
            except BlockingIOError:
                pass
            except OSError:
                break
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BlockingIOError, OSError):
                time.sleep(0.01)
                continue
            sent += len(chunk)
    print(f"fifos/sparse/chunked: 20 FIFOs + 1.5 GB sparse refused, next drop ingested in {took:.1f} s, largest kept "
          f"rejection {kept} B; chunked upload refused after {sent >> 20} MiB sent; server peak RSS "
          f"{peak_kib(server.proc.pid) >> 10} MiB")


def held_writer(server: ServerProcess, root: Path) -> None:
    from filelock import FileLock

    lock = FileLock(str(root / "ontology" / "shop" / ".writer.lock"))
    lock.acquire()
    try:
        with ThreadPoolExecutor(60) as pool:
            futures = [pool.submit(httpx.post, f"{server.url}/ingest", timeout=60,
                                   json={"ontology": "shop", "filename": f"h{i}.md", "content": memory(f"h{i}", "x").decode()})
                       for i in range(60)]
            time.sleep(1)
            start = time.perf_counter()
            ok = httpx.get(f"{server.url}/health", timeout=10).status_code
            latency = time.perf_counter() - start
            codes = [f.result().status_code for f in futures]
    finally:
        lock.release()
    print(f"held writer: 60 POSTs -> {codes.count(503)} x 503 Retry-After, {len(codes) - codes.count(503)} other; "
          f"/health {ok} in {latency * 1000:.0f} ms meanwhile")


def kill_during_bursts(base: Path, rounds: int, burst: int) -> None:
    root = base / "kill"
    ingest = root / "ontology" / "shop" / "ingest"
    ingest.mkdir(parents=True)
    rng = random.Random(13)
    expected: set[str] = set()
    for r in range(rounds):
        server = ServerProcess(root).start()
        kill_at = rng.randrange(burst // 4, burst)
        for i in range(burst):
            data = memory(f"k{r}-{i}", f"round {r} item {i}")
            expected.add(hashlib.sha256(data).hexdigest())
            (ingest.parent / "stage").write_bytes(data)
            os.rename(ingest.parent / "stage", ingest / f"k{r}-{i}.md")
            if i == kill_at:
                server.stop(signal.SIGKILL)
        if server.proc.poll() is None:
            server.stop(signal.SIGKILL)
    with ServerProcess(root):
        wait_drained(ingest, timeout=120)
    got = [sha for _, sha in artifact_rows(root / "ontology" / "shop" / "graph.db")]
    print(f"kill -9 during bursts: {rounds} kills over {rounds * burst} drops -> missing {len(expected - set(got))}, "
          f"doubled {len(got) - len(set(got))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kill-rounds", type=int, default=5)
    parser.add_argument("--burst", type=int, default=400)
    parser.add_argument("--idle", type=int, default=2000)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.idle + 512)), hard))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        (root / "ontology" / "shop" / "ingest").mkdir(parents=True)
        with ServerProcess(root) as server:
            hosts_and_origins(server)
            bad_inputs(server, root)
            odd_routes(server)
            idle_and_slow(server, args.idle)
            fifos_sparse_chunked(server, root)
            held_writer(server, root)
            start = time.perf_counter()
            code = server.stop(signal.SIGTERM)
            print(f"SIGTERM after all of it: exit {code} in {time.perf_counter() - start:.1f} s")
        kill_during_bursts(Path(tmp), args.kill_rounds, args.burst)


if __name__ == "__main__":
    main()
