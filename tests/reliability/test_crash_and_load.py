"""Crash and load: nothing lost, nothing doubled, the database intact."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from conftest import ledger, memory
from support.server_proc import ServerProcess, artifact_rows, wait_drained


def _integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def test_kill_9_during_1000_ingests_then_restart_ingests_each_exactly_once(root):
    ingest = root / "ontology" / "shop" / "ingest"
    ingest.mkdir(parents=True)
    server = ServerProcess(root).start()
    start = time.monotonic()
    for i in range(1000):
        tmp = ingest / f".tmp-{i}"
        tmp.write_bytes(ledger(f"crash-{i}", f"- Worker {i} drains queue {i % 13} before deploy"))
        os.replace(tmp, ingest / f"2026-04-05T1445Z_e{i:04d}.md")
        if i == 400:
            time.sleep(0.5)  # let the writer get going, then pull the plug mid-ingest
            server.stop(signal.SIGKILL)
    with ServerProcess(root):
        wait_drained(ingest, timeout=300)
    elapsed = time.monotonic() - start
    db = root / "ontology" / "shop" / "graph.db"
    rows = artifact_rows(db)
    assert len(rows) == 1000 == len(set(rows))
    assert _integrity(db) == "ok"
    print(f"\n[reliability] crash: 1000 artifacts, kill -9 at 400, all ingested once in {elapsed:.1f} s")


DROPPER = """
import os, sys
ingest, worker, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    name = f"drop-{worker}-{i}.md"
    data = f"---\\nname: drop-{worker}-{i}\\ndescription: dropper {worker} item {i}\\ntype: project\\n---\\nbody {i}\\n"
    tmp = os.path.join(ingest, "." + name)
    with open(tmp, "w") as fh:
        fh.write(data)
    os.replace(tmp, os.path.join(ingest, name))
"""


def test_8_droppers_and_4_posting_clients_at_once_count_exactly(root):
    ingest = root / "ontology" / "shop" / "ingest"
    ingest.mkdir(parents=True)
    per = 50
    with ServerProcess(root) as server:
        start = time.monotonic()
        droppers = [subprocess.Popen([sys.executable, "-c", DROPPER, str(ingest), str(w), str(per)])
                    for w in range(8)]

        def post(worker: int) -> list[int]:
            codes = []
            with httpx.Client(base_url=server.url, timeout=60) as client:
                for i in range(per):
                    r = client.post("/ingest", json={"ontology": "shop", "filename": f"post-{worker}-{i}.md",
                                                     "content": memory(f"post-{worker}-{i}", f"poster {worker} item {i}").decode()})
                    codes.append(r.status_code)
            return codes
        with ThreadPoolExecutor(4) as pool:
            codes = [c for batch in pool.map(post, range(4)) for c in batch]
        assert all(p.wait(120) == 0 for p in droppers)
        wait_drained(ingest, timeout=300)
        elapsed = time.monotonic() - start
        assert codes == [200] * (4 * per)
        rows = artifact_rows(root / "ontology" / "shop" / "graph.db")
        assert len(rows) == 12 * per == len(set(rows))
        health = httpx.get(f"{server.url}/health").json()
        assert health["status"] == "healthy" and health["writers"]["shop"]["ingested"] == 12 * per
    print(f"\n[reliability] load: 8 droppers + 4 posters, {12 * per} artifacts in {elapsed:.1f} s, none doubled")
