"""`kgbridge mount` over a memory directory that already holds many files (issue 13: 3,000 files
took 6 s to mount and 8 s to `ls -l`).

Run: .venv/bin/python -m bench.mount_host_files [--files 3000]
Writes N host memory files, then times the host-file ingest that precedes mounting, a real FUSE
mount, and `ls -l` of the mounted directory (the projection plus the N host files underneath).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from ontology.artifact import Channel
from ontology.ingest import Ontology
from ontology.layout import drop_name
from projection.mount import ingest_host_files, mount, unmount
from projection.mounts import fuse_available


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=3000)
    n = parser.parse_args().files
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root, memdir, state = base / "root", base / "memory", base / "state"
        memdir.mkdir()
        for i in range(n):
            (memdir / f"note-{i:05d}.md").write_text(_note(i))
        onto = Ontology(root, "bench", create=True)
        start = time.perf_counter()
        ingest_host_files(onto, memdir)
        ingest_s = time.perf_counter() - start
        onto.close()
        print(f"host-file ingest of {n} files: {ingest_s:.2f} s ({n / ingest_s:.0f} files/s)")
        if not fuse_available():
            print("FUSE not available: mount and ls -l skipped")
            return
        start = time.perf_counter()
        daemon = mount(root, "bench", memdir, state_dir=state)  # re-ingests: all duplicates now
        mount_s = time.perf_counter() - start
        try:
            cold_s, lines, cold_cpu = _timed_ls(memdir, daemon)
            warm_s, _, warm_cpu = _timed_ls(memdir, daemon)
            one = memdir / f"note-{n // 2:05d}.md"
            warm_cat_ms, _ = _timed_cat(one)
            # A new version of one file: the first read after it renders anew (nothing stale is served).
            changed = _note(n // 2).encode() + b"- It pages the on-call engineer first\n"
            onto = Ontology(root, "bench")
            onto.ingest_many([(drop_name("memory", changed, one.name), changed, Channel.CLI)])
            onto.close()
            cold_cat_ms, size = _timed_cat(memdir / f"note-{n // 3:05d}.md")
            after_s, _, after_cpu = _timed_ls(memdir, daemon)
        finally:
            unmount(memdir, state)
        print(f"mount (all {n} already ingested): {mount_s:.2f} s")
        print(f"ls -l through the mount: first {cold_s:.2f} s ({lines} lines), again {warm_s:.2f} s, "
              f"after one file changed {after_s:.2f} s")
        print(f"  the mount daemon's CPU time for each: {cold_cpu:.2f} s, {warm_cpu:.2f} s, {after_cpu:.2f} s "
              f"(what a loaded machine inflates least)")
        print(f"cat of one file ({size} B): {cold_cat_ms:.0f} ms after a change, {warm_cat_ms:.0f} ms after ls -l")


def _note(i: int) -> str:
    return (f"---\nname: note-{i}\ndescription: host note {i} about service {i % 97}\ntype: project\n---\n"
            f"- Service {i % 97} restarts after {i % 13} failures\n")


def _timed_cat(path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    data = subprocess.run(["cat", str(path)], capture_output=True, check=True, timeout=60).stdout
    return (time.perf_counter() - start) * 1000, len(data)


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed_ls(directory: Path, daemon: int) -> tuple[float, int, float]:
    """Wall seconds, lines listed, and the mount daemon's CPU seconds for one `ls -l`."""
    cpu, start = _cpu_s(daemon), time.perf_counter()
    listing = subprocess.run(["ls", "-l", str(directory)], capture_output=True, check=True, timeout=600).stdout
    return time.perf_counter() - start, listing.count(b"\n"), _cpu_s(daemon) - cpu


if __name__ == "__main__":
    main()
