"""`kgbridge mount` over a memory directory that already holds many files (issue 13: 3,000 files
took 6 s to mount and 8 s to `ls -l`).

Run: .venv/bin/python -m bench.mount_host_files [--files 3000]
Writes N host memory files, then times the host-file ingest that precedes mounting, a real FUSE
mount, and `ls -l` of the mounted directory (the projection plus the N host files underneath).
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

from ontology.ingest import Ontology
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
            (memdir / f"note-{i:05d}.md").write_text(
                f"---\nname: note-{i}\ndescription: host note {i} about service {i % 97}\ntype: project\n---\n"
                f"- Service {i % 97} restarts after {i % 13} failures\n")
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
        mount(root, "bench", memdir, state_dir=state)  # re-ingests: all duplicates now
        mount_s = time.perf_counter() - start
        try:
            start = time.perf_counter()
            listing = subprocess.run(["ls", "-l", str(memdir)], capture_output=True, check=True, timeout=300).stdout
            ls_s = time.perf_counter() - start
        finally:
            unmount(memdir, state)
        lines = listing.count(b"\n")
        print(f"mount (all {n} already ingested): {mount_s:.2f} s; ls -l through the mount: {ls_s:.2f} s "
              f"({lines} lines)")


if __name__ == "__main__":
    main()
