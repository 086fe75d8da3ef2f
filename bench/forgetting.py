"""Move detection on real memory folders: is a renamed file found, and is a distinct file never taken
for another? Also what remembering a folder and comparing it costs the rescan.

Run: .venv/bin/python -m bench.forgetting DIR   (a folder of memory folders)
Every pair of distinct files in one folder is compared (`kgbridge.forgetting.same_file`: a false move
would merge two sources); then each folder is renamed wholesale (as is, then with a line added) and
the moves found are counted (a file without `name:` is only found by its bytes).
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path

from kgbridge import forgetting
from kgbridge.state import ProjectState


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    folders = sorted(d for d in parser.parse_args().corpus.iterdir() if d.is_dir())
    pairs = false_moves = files = found = found_edited = 0
    remember_ms = compare_ms = 0.0
    for folder in folders:
        data = {p.name: p.read_bytes() for p in folder.rglob("*.md")}
        files += len(data)
        prints = {name: forgetting.fingerprint(raw) for name, raw in data.items()}
        for a, b in itertools.combinations(prints, 2):
            pairs += 1
            false_moves += forgetting.same_file(prints[a], prints[b])
        with tempfile.TemporaryDirectory() as tmp:
            known = forgetting.KnownFiles(ProjectState("bench", Path(tmp)))
            start = time.perf_counter()
            known.files = {name: forgetting.fingerprint(raw) for name, raw in data.items()}
            known.save()
            remember_ms += (time.perf_counter() - start) * 1e3
            renamed = {f"renamed_{name}": raw for name, raw in data.items()}
            start = time.perf_counter()
            moves = forgetting.vanished(forgetting.KnownFiles(ProjectState("bench", Path(tmp))), renamed, renamed)
            compare_ms += (time.perf_counter() - start) * 1e3
            found += sum(1 for _, successor in moves if successor)
            edited = {f"renamed_{name}": raw + b"\n- One line the rename added\n" for name, raw in data.items()}
            moves = forgetting.vanished(forgetting.KnownFiles(ProjectState("bench", Path(tmp))), edited, edited)
            found_edited += sum(1 for _, successor in moves if successor)
    print(f"{len(folders)} folders, {files} files")
    print(f"distinct-file pairs taken for one file (false moves): {false_moves} of {pairs}")
    print(f"renamed files recognized as moves: {found} of {files}; renamed with a line added: {found_edited} of {files}")
    print(f"remember every folder: {remember_ms:.1f} ms in all; compare after renaming all: {compare_ms:.1f} ms in all")


if __name__ == "__main__":
    main()
