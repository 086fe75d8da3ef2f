"""Server throughput: `POST /ingest` (sequential and 4 concurrent clients) and the drop directory.

Run: .venv/bin/python -m bench.server [--n 500] [--corpus zipf,repetitive --n 20000] [--delivery --n 1000]
Starts a real `kgbridge serve` on a free loopback port over a temporary knowledge root; all three
figures come from one run so their ratios compare like with like on a noisy machine. With
`--corpus`, only the single-POST path runs (one artifact per request, one client), over the
`bench.ingest` corpora, reporting the rate overall and over the first and last 1,000 requests, and
the CPU time of the server and of the client (what the rate would be if the two had the machine).
With `--delivery`, the bridge's own sends: a new connection per item against one kept alive.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench.ingest import corpus
from kgbridge.server_process import ServerProcess, wait_drained


def artifact(tag: str, i: int) -> bytes:
    return (f"---\nname: {tag}-{i}\ndescription: {tag} service {i} retries with backoff {i % 17}\n"
            f"type: project\n---\n- The {tag} worker {i} drains queue {i % 31} before deploys\n").encode()


WINDOW = 1_000  # requests per window when comparing the cost of the first and the last ones


def single_posts(kind: str, n: int) -> dict[str, float]:
    """POST a corpus one artifact per request, one client, into a fresh server; prints and returns
    the rates. The client is what the bridge uses (`http.client`), on one kept-alive connection."""
    artifacts = corpus(kind, n, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        (root / "ontology" / "bench" / "ingest").mkdir(parents=True)
        with ServerProcess(root) as server:
            assert server.proc is not None
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
            headers = {"Content-Type": "application/json; charset=utf-8"}
            cpu_start, client_start = _cpu_seconds(server.proc.pid), time.process_time()
            loop_start = _cpu_seconds(server.proc.pid, thread=server.proc.pid)
            stamps = [time.perf_counter()]
            for name, data in artifacts:
                body = json.dumps({"ontology": "bench", "filename": name, "content": data.decode()}).encode()
                connection.request("POST", "/ingest", body=body, headers=headers)
                response = connection.getresponse()
                answer = response.read()
                if response.status != 200:
                    raise RuntimeError(f"POST /ingest {name}: {response.status} {answer[:200]!r}")
                stamps.append(time.perf_counter())
            server_cpu = _cpu_seconds(server.proc.pid) - cpu_start
            loop_cpu = _cpu_seconds(server.proc.pid, thread=server.proc.pid) - loop_start
            client_cpu = time.process_time() - client_start
            peak_rss_mb = _peak_rss_mb(server.proc.pid)
            connection.close()
    window = min(WINDOW, n)
    first = window / (stamps[window] - stamps[0])
    last = window / (stamps[-1] - stamps[-1 - window])
    figures = {"elapsed": stamps[-1] - stamps[0], "server_cpu": server_cpu, "client_cpu": client_cpu,
               "loop_cpu": loop_cpu, "first": first, "last": last, "peak_rss_mb": peak_rss_mb}
    print(f"{kind:>10} POST /ingest, 1 client, {n} artifacts: {n / figures['elapsed']:7.1f}/s overall, "
          f"first {window} {first:7.1f}/s, last {window} {last:7.1f}/s (cost last / first {first / last:.2f}); "
          f"server CPU {server_cpu / n * 1000:.3f} ms/artifact ({n / server_cpu:.1f}/s; its event loop "
          f"{loop_cpu / n * 1000:.3f} ms), "
          f"client CPU {client_cpu / n * 1000:.3f} ms, both {n / (server_cpu + client_cpu):.1f}/s", flush=True)
    return figures


def delivery(n: int) -> dict[str, float]:
    """The bridge's sends (`kgbridge.deliver.send`, what a drain does per outbox item) of `n` corpus
    items to a fresh server: a new connection per item (before issue 15's session 5) against one
    kept-alive connection for all of them (a drain now). Rates in items/s, with the client's CPU."""
    from kgbridge.deliver import Connections, SendOutcome, send
    from kgbridge.detect import Activation, Detection, Transport
    from ontology.layout import drop_name

    items = [(drop_name("memory", data, name), data) for name, data in corpus("zipf", 2 * n, 0.0)]
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        (root / "ontology" / "bench" / "ingest").mkdir(parents=True)
        with ServerProcess(root) as server:
            detection = Detection(Activation.ACTIVE, Transport.HTTP, f"{server.url}/ingest", "bench")
            for label, batch, connections in (("new connection per item", items[:n], None),
                                              ("one kept-alive connection", items[n:], Connections())):
                start, cpu = time.perf_counter(), time.process_time()
                for dropped, data in batch:
                    attempt = send(detection, "bench", dropped, data, connections=connections)
                    if attempt.outcome is not SendOutcome.DELIVERED:
                        raise RuntimeError(f"{dropped}: {attempt.detail}")
                elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
                if connections is not None:
                    connections.close()
                figures[label] = n / elapsed
                print(f"deliver {n} items, {label}: {n / elapsed:7.1f}/s, client CPU {cpu / n * 1000:.3f} ms/item, "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
    return figures


def _peak_rss_mb(pid: int) -> float:
    """Peak resident set size of a process (Linux /proc: VmHWM, in kB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_seconds(pid: int, thread: int | None = None) -> float:
    """User + system CPU time of a process, or of one of its threads (the main one runs the server's
    event loop), from Linux /proc: to tell work from waiting on a busy machine."""
    stat = Path(f"/proc/{pid}/task/{thread}/stat" if thread is not None else f"/proc/{pid}/stat")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--corpus", help="zipf,repetitive: single-POST path over these corpora only")
    parser.add_argument("--delivery", action="store_true", help="the bridge's sends: a connection per item or one")
    args = parser.parse_args()
    n = args.n
    if args.delivery:
        delivery(n)
        return
    if args.corpus:
        for kind in args.corpus.split(","):
            single_posts(kind, n)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        ingest = root / "ontology" / "bench" / "ingest"
        ingest.mkdir(parents=True)
        with ServerProcess(root) as server, httpx.Client(base_url=server.url, timeout=60) as client:
            start = time.perf_counter()
            for i in range(n):
                client.post("/ingest", json={"ontology": "bench", "filename": f"seq-{i}.md",
                                             "content": artifact("seq", i).decode()}).raise_for_status()
            seq = n / (time.perf_counter() - start)

            def post_range(worker: int) -> None:
                with httpx.Client(base_url=server.url, timeout=60) as c:
                    for i in range(worker, n, 4):
                        c.post("/ingest", files={"file": (f"par-{i}.md", artifact("par", i))},
                               data={"ontology": "bench"}).raise_for_status()
            start = time.perf_counter()
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(post_range, range(4)))
            par = n / (time.perf_counter() - start)

            start = time.perf_counter()
            for i in range(n):
                tmp_path = ingest / f".tmp-drop-{i}.md"
                tmp_path.write_bytes(artifact("drop", i))
                os.replace(tmp_path, ingest / f"drop-{i}.md")
            wait_drained(ingest, timeout=600)
            drop = n / (time.perf_counter() - start)
    print(f"POST /ingest, 1 client:   {seq:7.1f} artifacts/s")
    print(f"POST /ingest, 4 clients:  {par:7.1f} artifacts/s (multipart)")
    print(f"drop directory:           {drop:7.1f} artifacts/s (tmp + rename until drained)")


if __name__ == "__main__":
    main()
