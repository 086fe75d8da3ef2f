"""Projection speed: render time at 10k concepts (target <= 50 ms; without and with a host index),
snapshot + render from SQLite, and `cat MEMORY.md` through a real FUSE mount vs the same bytes on
local disk (target ratio <= 1.5; cached render, the steady state between ingests).
Run: .venv/bin/python -m bench.projection [--concepts 10000]"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ontology.artifact import Channel
from ontology.ingest import Ontology
from projection.render import render_memory
from projection.snapshot import MEMORY_NAME, memory_snapshot
from projection.mount import unmount
from projection.mounts import fuse_available, is_mounted
from projection.view import ProjectionView


def median_ms(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def concept_artifacts(n: int, stores: int = 2000) -> list[tuple[str, bytes, Channel]]:
    """N memory files sharing `stores` "store i: value" facts, one in three with another value, so
    thousands of claims are disputed at 10k."""
    out = []
    for i in range(n):
        value = "postgres" if i % 3 else "mysql"
        body = f"- service-{i} retries queue {i % 97} with backoff\n- store {i % stores}: {value}\n"
        out.append((f"c{i}.md", f"---\nname: concept-{i}\ndescription: concept {i} gist about "
                                f"service {i}\ntype: project\n---\n{body}".encode(), Channel.CLI))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concepts", type=int, default=10_000)
    n = parser.parse_args().concepts
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "K"
        onto = Ontology(root, "bench", create=True)
        start = time.perf_counter()
        onto.ingest_many(concept_artifacts(n))
        print(f"built {n} concepts in {time.perf_counter() - start:.1f} s")
        with onto.reader() as conn:
            snap = memory_snapshot(conn, "bench", limit=n)  # uncut: the renderer gets all 10k concepts
        print(f"snapshot: {snap.n_concepts} concepts, {snap.n_disputed} disputed")
        render = median_ms(lambda: render_memory(snap), 20)
        view = ProjectionView(onto)

        def fresh() -> None:
            view._version = None  # force a re-read, as after an ingest
            view._last_stamp = ()
            view.read(MEMORY_NAME)
        full = median_ms(fresh, 5)
        print(f"render_memory (pure, {n} concepts):     {render:7.2f} ms median")
        print(f"snapshot from SQLite + render:           {full:7.1f} ms median")
        # The host's own index: 150 linked files under two headings, as a real MEMORY.md is.
        index = "# Memory\n\n## Feedback\n" + "".join(f"- [Rule {i}](c{i}.md) — hook {i}\n" for i in range(30))
        index += "\n## Project\n" + "".join(f"- [Note {i}](c{i}.md) — hook {i}\n" for i in range(30, 150))
        onto.ingest(MEMORY_NAME, index.encode(), Channel.CLI)
        with onto.reader() as conn:
            indexed = memory_snapshot(conn, "bench", limit=n)
        with_index = median_ms(lambda: render_memory(indexed), 20)
        full_index = median_ms(fresh, 5)
        print(f"render_memory with a 150-entry host index: {with_index:5.2f} ms median")
        print(f"snapshot + render with the host index:   {full_index:7.1f} ms median")
        if not fuse_available():
            print("FUSE unavailable: mount comparison skipped")
            return
        mnt = Path(tmp) / "mnt"
        local = Path(tmp) / "local.md"
        local.write_bytes(view.read(MEMORY_NAME) or b"")
        daemon = subprocess.Popen([sys.executable, "-m", "projection.mount", "--daemon", "--root", str(root),
                                   "--ontology", "bench", "--at", str(mnt), "--no-overlay"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if mnt.mkdir() is None else None
        while not is_mounted(mnt):
            time.sleep(0.05)
        try:
            subprocess.run(["cat", str(mnt / MEMORY_NAME)], capture_output=True, check=True)  # warm the cache
            via_mount = median_ms(lambda: subprocess.run(["cat", str(mnt / MEMORY_NAME)], capture_output=True), 30)
            via_disk = median_ms(lambda: subprocess.run(["cat", str(local)], capture_output=True), 30)
        finally:
            unmount(mnt)
            daemon.kill()
        print(f"cat MEMORY.md via mount:                 {via_mount:7.2f} ms median")
        print(f"cat same bytes on local disk:            {via_disk:7.2f} ms median")
        print(f"ratio mount / disk:                      {via_mount / via_disk:7.2f}")


if __name__ == "__main__":
    main()
