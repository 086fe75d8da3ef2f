"""Fidelity of the projection to each memory folder it covers: the author's text, line by line.

Run: .venv/bin/python -m bench.fidelity DIR [DIR ...] [--mount] [--marks]
Each folder (a memory folder, or every folder inside DIR) is ingested into a fresh ontology as
`kgbridge mount` does; every file is then read as the agent would (the projection; with --mount a
real FUSE mount over a copy of the folder, every file and subfolder) and diffed line by line with the
original: author lines kept verbatim, kept with a mark appended (MEMORY.md), changed or missing; bytes
kgbridge added; each added mark by kind (--marks prints every one, to judge by reading).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ontology.artifact import ArtifactRejected
from ontology.ingest import Ontology
from ontology.parse import decode_text
from projection.mount import ingest_host_files, mount, unmount
from projection.mounts import fuse_available
from projection.render import FULL_INDEX_NAME, MAX_BYTES, MAX_LINES, full_index_named, native_load
from projection.snapshot import MEMORY_NAME
from projection.topic import APPENDIX_MARKER
from projection.view import ProjectionView

_MARK = re.compile(r" ⟨kg: ([^⟩]*)⟩$")
_VOICE = re.compile(r"^- .+? \([^()]*\) (agrees|disputes|supersedes|adds): ")


@dataclass
class Folder:
    name: str
    files: int = 0
    missing: list[str] = field(default_factory=list)  # files the agent can no longer read
    lines: int = 0  # author lines, all files
    kept: int = 0  # verbatim
    marked: int = 0  # verbatim with a mark appended (MEMORY.md only)
    changed: int = 0  # author lines not found verbatim where they belong
    raw_exact: int = 0  # files whose author bytes come back byte for byte (BOM and line endings too)
    identical: int = 0  # files shown exactly as they are on disk, nothing added
    bytes_in: int = 0
    bytes_added: int = 0
    index_lines: int = 0
    index_bytes: int = 0
    memory_lines: int = 0
    memory_bytes: int = 0
    over_budget: bool = False  # over 200 lines / 24,000 bytes, and not the author's index Claude Code loads whole
    full_index: bool | None = None  # MEMORY.full.md (served while MEMORY.md is cut) is the author's index
    index_first: bool = True  # the author's index starts before anything of ours but header/disputes
    marks: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)  # every added line, for --marks


def _text(data: bytes) -> str:
    """The file as the agent should read it: only a BOM and CRLF line ends may differ (ADR 0005), and a
    UTF-16 or cp1252 file is its characters (ADR 0009, "Encodings"), compared as such."""
    try:
        text = decode_text(data)[0]
    except ArtifactRejected:  # refused: the agent reads the bytes as they are
        text = data.decode("utf-8", "replace")
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    return text if "\n" in text else text.replace("\r", "\n")


def _lines(text: str) -> list[str]:
    if not text:
        return []
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def _author_files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def _diff(orig: list[str], shown: list[str], key=lambda s: s) -> tuple[list[int], list[int]]:  # noqa: ANN001
    """Indexes of `orig` matched in order in `shown` (by `key` of the shown line), and of `shown` unmatched."""
    matcher = difflib.SequenceMatcher(None, orig, [key(s) for s in shown], autojunk=False)
    hit_o, hit_s = [], set()
    for block in matcher.get_matching_blocks():
        hit_o += range(block.a, block.a + block.size)
        hit_s.update(range(block.b, block.b + block.size))
    return hit_o, [j for j in range(len(shown)) if j not in hit_s]


def _memory(r: Folder, orig: list[str], shown: list[str]) -> None:
    hit, added = _diff(orig, shown, key=lambda s: _MARK.sub("", s))
    matched = set(hit)
    marked = {i for i, j in zip(hit, sorted(set(range(len(shown))) - set(added))) if shown[j] != orig[i]}
    r.kept += len(hit) - len(marked)
    r.marked += len(marked)
    r.changed += len(orig) - len(matched)
    dropped = [orig[i] for i in range(len(orig)) if i not in matched and orig[i].strip()]
    r.notes += [f"MEMORY.md: not shown: {line}" for line in dropped[:3]]
    r.notes += [f"MEMORY.md: … {len(dropped) - 3} more lines not shown"] if len(dropped) > 3 else []
    first_author = min((j for j in range(len(shown)) if j not in set(added)), default=None)
    ours_before = [shown[j] for j in added if first_author is not None and j < first_author]
    ours = ("> kgbridge", "## Disputed", "- **CONTESTED", "- **CONTRADICTORY")
    r.index_first = all(s.startswith(ours) or not s.strip() for s in ours_before)
    for j in added:
        line = shown[j]
        kind = ("header" if line.startswith("> kgbridge") else "footer" if line.endswith("kg_contested._")
                else "disputed" if line.startswith(("- **CONTESTED", "- **CONTRADICTORY")) else
                "heading" if line.startswith("#") else "blank" if not line.strip() else "addition")
        r.marks[f"index {kind}"] += 1
        if kind in ("disputed", "addition"):
            r.notes.append(f"MEMORY.md: + {line}")
    for i, j in zip(hit, sorted(set(range(len(shown))) - set(added))):
        if i in marked:
            mark = _MARK.search(shown[j])
            text = mark.group(1) if mark else shown[j]
            for part in text.split(" · "):
                r.marks["index " + ("now says" if " now says " in part else part.split(" ", 1)[-1])] += 1
            r.notes.append(f"MEMORY.md: {shown[j]}")


def _topic(r: Folder, name: str, orig: list[str], shown_text: str) -> None:
    author, marker, appendix = shown_text.partition(APPENDIX_MARKER)
    if marker:  # the blank line before the appendix is ours; without one the file is the author's
        author = author.rstrip("\n") + "\n" if author.strip() else ""
    shown = _lines(author)
    hit, _ = _diff(orig, shown)
    r.kept += len(hit)
    r.changed += len(orig) - len(hit)
    if len(hit) < len(orig):
        r.notes.append(f"{name}: {len(orig) - len(hit)} author lines changed")
    for line in _lines(appendix):
        voice = _VOICE.match(line)
        if voice:
            r.marks[f"topic {voice.group(1)}"] += 1
            r.notes.append(f"{name}: {line}")
        elif line.startswith("- no longer says"):
            r.marks["topic no longer says"] += 1
            r.notes.append(f"{name}: {line}")


def check(folder: Path, work: Path, through_mount: bool) -> Folder:
    r = Folder(folder.name)
    slot = work / "slot" / folder.name
    shutil.copytree(folder, slot, symlinks=True)
    root = work / "root" / folder.name
    if through_mount:
        Ontology(root, "corpus", create=True).close()
        mount(root, "corpus", slot, state_dir=work / "state" / folder.name)
        view = None
    else:
        onto = Ontology(root, "corpus", create=True)
        ingest_host_files(onto, slot)
        view = ProjectionView(onto)
    try:
        def read(name: str) -> bytes | None:
            if view is None:
                try:
                    return (slot / name).read_bytes()
                except OSError:
                    return None
            return view.read(name)

        for name in _author_files(folder):
            data = (folder / name).read_bytes()
            shown = read(name)
            r.files += 1
            r.bytes_in += len(data)
            if shown is None:
                if view is None or ("/" not in name and name.endswith(".md")):
                    r.missing.append(name)
                continue  # the view alone projects only the top level's .md files
            if shown == data and name.endswith(".md") and name != MEMORY_NAME:  # as on disk: every line kept
                r.lines += len(_lines(_text(data)))
                r.kept += len(_lines(_text(data)))
                r.raw_exact += 1
                r.identical += 1
                continue
            if not name.endswith(".md"):
                r.raw_exact += shown == data
                r.identical += shown == data
                r.changed += shown != data
                continue
            orig = _lines(_text(data))
            r.lines += len(orig)
            r.raw_exact += shown.startswith(data)
            r.identical += shown == data
            if name == MEMORY_NAME:
                _memory(r, orig, _lines(shown.decode("utf-8", "replace")))
            else:
                _topic(r, name, orig, _text(shown))  # compared as the original is: BOM and CRLF read as the agent does
            author = len(_text(data).encode())
            r.bytes_added += max(0, len(shown) - author)
        named = full_index_named((read(MEMORY_NAME) or b"").decode("utf-8", "replace"))
        full = read(named) if named else None  # the file the cut MEMORY.md's footer names
        if (folder / MEMORY_NAME).exists() and full is not None:
            r.full_index = _text(full) == _text((folder / MEMORY_NAME).read_bytes())
        memory = read(MEMORY_NAME) or b""
        r.memory_bytes, r.memory_lines = len(memory), len(_lines(memory.decode("utf-8", "replace")))
        r.over_budget = r.memory_lines > MAX_LINES or r.memory_bytes > MAX_BYTES
        if (folder / MEMORY_NAME).exists():
            text = _text((folder / MEMORY_NAME).read_bytes())
            r.index_bytes, r.index_lines = len(text.encode()), len(_lines(text))
            whole = native_load(text) == text.strip().split("\n")
            r.over_budget = r.over_budget and not (whole and memory.decode("utf-8", "replace") == text.strip() + "\n")
    finally:
        if view is None:
            unmount(slot, work / "state" / folder.name)
        else:
            view.ontology.close()
    return r


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:6.2f}%" if whole else "     - "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--mount", action="store_true", help="read through a real FUSE mount over a copy")
    parser.add_argument("--marks", action="store_true", help="print every line kgbridge added or changed")
    args = parser.parse_args()
    if args.mount and not fuse_available():
        sys.exit("--mount needs FUSE (/dev/fuse and fusermount)")
    folders = [p for d in args.dirs for p in ([d] if any(d.glob("*.md")) and not any(
        (c / MEMORY_NAME).exists() for c in d.iterdir() if c.is_dir()) else sorted(d.iterdir())) if p.is_dir()]
    results: list[Folder] = []
    with tempfile.TemporaryDirectory(prefix="kg-fidelity-") as tmp:
        print(f"{'folder':38} {'files':>5} {'lines':>6} {'kept':>8} {'+mark':>5} {'chg':>4} {'miss':>4} "
              f"{'exact':>5} {'added B':>8} {'index L/B':>11} {'MEMORY L/B':>11} marks")
        for folder in folders:
            r = check(folder, Path(tmp), args.mount)
            results.append(r)
            shown_marks = ", ".join(f"{k} {v}" for k, v in sorted(r.marks.items())
                                    if not k.endswith(("header", "footer", "blank", "heading")))
            print(f"{r.name[:38]:38} {r.files:5} {r.lines:6} {_pct(r.kept + r.marked, r.lines)} {r.marked:5} "
                  f"{r.changed:4} {len(r.missing):4} {r.raw_exact:5} {r.bytes_added:8} "
                  f"{r.index_lines:4}/{r.index_bytes:6} {r.memory_lines:4}/{r.memory_bytes:6}"
                  f"{'' if r.index_first else ' INDEX-NOT-FIRST'}"
                  f"{'' if r.full_index is None else ' whole index in ' + FULL_INDEX_NAME if r.full_index else ' BAD-FULL'}"
                  f" {shown_marks}")
            if args.marks:
                for note in r.notes:
                    print(f"    {note}")
                for name in r.missing:
                    print(f"    MISSING {name}")
    total = Counter()
    for r in results:
        total.update({"files": r.files, "lines": r.lines, "kept": r.kept, "marked": r.marked, "changed": r.changed,
                      "missing": len(r.missing), "exact": r.raw_exact, "identical": r.identical, "bytes_in": r.bytes_in,
                      "bytes_added": r.bytes_added})
        total.update(r.marks)
    over = [r.name for r in results if r.over_budget]
    print(f"\n{len(results)} folders, {total['files']} files, {total['lines']} author lines: kept verbatim "
          f"{_pct(total['kept'] + total['marked'], total['lines'])} ({total['marked']} with a mark appended), "
          f"changed or cut {total['changed']}, files missing {total['missing']}, byte-exact files "
          f"{total['exact']}/{total['files']} (identical {total['identical']}); "
          f"bytes added {total['bytes_added']} to {total['bytes_in']}; "
          f"MEMORY.md over budget: {len(over)}; index not first: {sum(not r.index_first for r in results)}")
    print("marks: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items()) if k.startswith(("index ", "topic "))))
    sys.exit(1 if over or total["missing"] else 0)


if __name__ == "__main__":
    main()
