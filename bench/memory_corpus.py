"""Is the projection of a real memory folder at least as useful as the folder? Measured per folder.

Run: .venv/bin/python -m bench.memory_corpus DIR [DIR ...]   (a memory folder, or a folder of them)
Each folder (MEMORY.md + topic files) is ingested into a fresh ontology as `kgbridge mount` does, then
its projection is checked against the original: topic file names present, index hooks kept verbatim
(where the index fits the budget), no index entry twice, the budget, every user/feedback entry of a
fitting index present, and links between topic files that resolved on disk still resolve.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ontology.ingest import Ontology
from ontology.parse import parse_artifact
from projection.hostindex import BlockKind, parse_index
from projection.mount import ingest_host_files
from projection.render import MAX_BYTES, MAX_LINES, native_load
from projection.snapshot import MEMORY_NAME
from projection.view import ProjectionView

_LOCAL_LINK = re.compile(r"\[[^\]]*\]\(<?([^)\s>#]+\.md)>?\)|\[\[([^\]|#]+)")


@dataclass
class Folder:
    name: str
    files: int = 0
    names_kept: int = 0
    fits: bool = True
    hooks: int = 0
    hooks_kept: int = 0
    twice: int = 0
    over_budget: bool = False
    rules: int = 0
    rules_kept: int = 0
    links: int = 0
    links_kept: int = 0


def _rule_files(folder: Path) -> set[str]:
    out = set()
    for path in folder.glob("*.md"):
        try:
            if parse_artifact("x", path.name, path.read_bytes()).memory_type in ("user", "feedback"):
                out.add(path.name)
        except ValueError:
            continue
    return out


def _targets(text: str) -> list[str]:
    return [m[0].rsplit("/", 1)[-1] if m[0] else f"{m[1].strip()}.md" for m in _LOCAL_LINK.findall(text)]


def check(folder: Path, work: Path) -> Folder:
    result = Folder(folder.name)
    onto = Ontology(work / folder.name, "corpus", create=True)
    ingest_host_files(onto, folder)
    view = ProjectionView(onto)
    names = set(view.names())
    memory = (view.read(MEMORY_NAME) or b"").decode()
    topics = sorted(p.name for p in folder.glob("*.md") if p.name != MEMORY_NAME)
    result.files = len(topics)
    result.names_kept = sum(1 for t in topics if t in names)
    out_lines = memory.splitlines()
    # Over 200 lines / 24,000 bytes: only the author's index, served whole because Claude Code loads it whole.
    result.over_budget = len(memory.encode()) > MAX_BYTES or len(out_lines) > MAX_LINES
    index_path = folder / MEMORY_NAME
    if index_path.exists():
        index = index_path.read_bytes().decode("utf-8", "replace").replace("\r\n", "\n")
        result.fits = native_load(index) == index.strip().split("\n")
        result.over_budget = result.over_budget and not (result.fits and memory == index.strip() + "\n")
        rules = _rule_files(folder)
        original = Counter(b.target for b in parse_index(index) if b.kind is BlockKind.ENTRY and b.target)
        projected = Counter(t for ln in out_lines if ln.lstrip().startswith(("-", "*")) and not ln.startswith("- **")
                            for t in _targets(ln)[:1])
        result.twice = sum(1 for t, n in projected.items() if n > max(1, original.get(t, 0)))
        for block in parse_index(index):
            if block.kind is not BlockKind.ENTRY or not block.target:
                continue
            kept = any(ln.startswith(block.lines[0]) for ln in out_lines)
            if result.fits:
                result.hooks += 1
                result.hooks_kept += kept
                if block.target in rules or block.rule_heading:
                    result.rules += 1
                    result.rules_kept += kept
    for topic in topics:
        on_disk = {t for t in _targets((folder / topic).read_text("utf-8", "replace")) if (folder / t).exists()}
        shown = (view.read(topic) or b"").decode()
        result.links += len(on_disk)
        result.links_kept += sum(1 for t in on_disk if t in names and shown)
    onto.close()
    return result


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "   - "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args()
    folders = [p for d in args.dirs for p in ([d] if (d / MEMORY_NAME).exists() else sorted(d.iterdir()))
               if p.is_dir()]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'folder':42} {'names':>7} {'hooks':>7} {'rules':>7} {'links':>7} twice budget")
        for folder in folders:
            r = check(folder, Path(tmp))
            results.append(r)
            print(f"{r.name[:42]:42} {_pct(r.names_kept, r.files)} {_pct(r.hooks_kept, r.hooks)} "
                  f"{_pct(r.rules_kept, r.rules)} {_pct(r.links_kept, r.links)} {r.twice:5} "
                  f"{'OVER' if r.over_budget else 'ok'}{'' if r.fits else ' (index over budget)'}")
    total = {k: sum(getattr(r, k) for r in results) for k in
             ("files", "names_kept", "hooks", "hooks_kept", "rules", "rules_kept", "links", "links_kept", "twice")}
    over = sum(r.over_budget for r in results)
    print(f"\n{len(results)} folders: names {_pct(total['names_kept'], total['files'])} of {total['files']} · "
          f"hooks verbatim {_pct(total['hooks_kept'], total['hooks'])} of {total['hooks']} · "
          f"user/feedback entries {_pct(total['rules_kept'], total['rules'])} of {total['rules']} · "
          f"links resolving {_pct(total['links_kept'], total['links'])} of {total['links']} · "
          f"entries twice {total['twice']} · budget violations {over}")
    ok = (total["names_kept"] >= 0.95 * total["files"] and total["hooks_kept"] >= 0.9 * total["hooks"]
          and total["twice"] == 0 and over == 0 and total["rules_kept"] == total["rules"])
    print("acceptance:", "met" if ok else "NOT met")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
