"""Precision fuzzing: meaning-preserving rewrites of a memory folder must not make anything new appear.

Run: .venv/bin/python -m bench.metamorphic DIR [DIR ...] [--only T,T] [-v]
DIR is a memory folder or a folder of them (the trap set, a corpus). Each folder is ingested as
`kgbridge mount` does, then once per rewrite (split, merge, rename, reorder, ...) and once per arrival
order (the same files delivered reversed, shuffled); every dispute, update or mark the agent would read
only after the rewrite, and every agreement the rewrite loses, is reported.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import sys
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.traps import Finding, _findings, read_findings
from ontology import queries
from ontology.artifact import Channel, Kind
from ontology.ingest import Ontology
from ontology.layout import drop_name
from projection.mount import ingest_host_files
from projection.snapshot import MEMORY_NAME

Files = dict[str, str]  # file name -> text, the folder being rewritten

_FENCE = re.compile(r"^\s*(```|~~~)")
_BULLET = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+")
_HEADING = re.compile(r"^(#{2,6})\s+(.*)$")
_LINK = re.compile(r"\]\(([^)\s]+\.md)\)")
_QUOTED = re.compile(r"“([^”]*)”")
_MARKUP = re.compile(r"[*_`~]+")
_FILE_NAME = re.compile(r"[\w.-]+\.md\b")
# What starts a block even inside a paragraph (CommonMark): a bullet, a list from 1, a heading, a quote.
HEAD_CHARS = 50  # a mark clips a quoted statement at projection.topic's CLAIM_CHARS; compare less than that
_BLOCK_START = re.compile(r"^(?:[-*+]\s|1[.)]\s|#|>|\||```|~~~|<)")


# ---- the rewrites ----------------------------------------------------------------------------------

def _split_front(text: str) -> tuple[str, list[str]]:
    """(frontmatter block with its fences or "", body lines)."""
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                return "\n".join(lines[:i + 1]) + "\n", lines[i + 1:]
    return "", lines


def _prose(lines: list[str]) -> list[bool]:
    """Per line: outside a code fence (and not a fence line itself)."""
    out, inside = [], False
    for line in lines:
        if _FENCE.match(line):
            out.append(False)
            inside = not inside
            continue
        out.append(not inside)
    return out


def _topics(files: Files) -> list[str]:
    return sorted(n for n in files if n != MEMORY_NAME)


def rename(files: Files) -> Files:
    """Every topic file gets a new name (ingested in the reverse order); links and mentions follow."""
    names = _topics(files)
    new = {old: f"t{len(names) - i:03d}_{old}" for i, old in enumerate(names)}
    out: Files = {}
    for name, text in files.items():
        for old, fresh in sorted(new.items(), key=lambda kv: -len(kv[0])):
            text = re.sub(rf"(?<![\w.-]){re.escape(old)}", fresh, text)
        out[new.get(name, name)] = text
    return out


def _items(lines: list[str], prose: list[bool], start: int) -> tuple[list[list[str]], int]:
    """The top-level list items of the bullet block starting at `start`, each with its continuation
    lines, and the index after the block."""
    indent = len(_BULLET.match(lines[start]).group(1))
    items: list[list[str]] = []
    i = start
    while i < len(lines) and prose[i]:
        m = _BULLET.match(lines[i])
        if m and len(m.group(1)) == indent:
            items.append([lines[i]])
        elif lines[i].strip() and (len(lines[i]) - len(lines[i].lstrip())) > indent and items:
            items[-1].append(lines[i])
        else:
            break
        i += 1
    return items, i


def _map_body(files: Files, fn: Callable[[list[str]], list[str]], index_too: bool = True) -> Files:
    out: Files = {}
    for name, text in files.items():
        if name == MEMORY_NAME and not index_too:
            out[name] = text
            continue
        front, body = _split_front(text)
        out[name] = front + "\n".join(fn(body))
    return out


def reorder_bullets(files: Files) -> Files:
    """Every bullet list in reverse order (nested items move with their parent)."""
    def fn(lines: list[str]) -> list[str]:
        prose, out, i = _prose(lines), [], 0
        while i < len(lines):
            if prose[i] and _BULLET.match(lines[i]):
                items, j = _items(lines, prose, i)
                if len(items) > 1 and j > i:
                    out += [line for item in reversed(items) for line in item]
                    i = j
                    continue
            out.append(lines[i])
            i += 1
        return out
    return _map_body(files, fn)


def reorder_sections(files: Files) -> Files:
    """The `##` sections of each topic file in reverse order (the part before the first stays first)."""
    def fn(lines: list[str]) -> list[str]:
        prose = _prose(lines)
        starts = [i for i, line in enumerate(lines) if prose[i] and line.startswith("## ")]
        if len(starts) < 2:
            return lines
        head = lines[:starts[0]]
        sections = [lines[a:b] for a, b in zip(starts, starts[1:] + [len(lines)])]
        sections = [s + [""] if s[-1].strip() else s for s in sections]
        return head + [line for s in reversed(sections) for line in s]
    return _map_body(files, fn, index_too=False)


def rewrap(files: Files) -> Files:
    """Long prose lines and bullets wrapped at 60 columns (a bullet's continuation indented)."""
    def fn(lines: list[str]) -> list[str]:
        prose, out = _prose(lines), []
        for line, p in zip(lines, prose):
            if not p or len(line) <= 60 or line.lstrip().startswith(("|", "#", ">")) or "](" in line:
                out.append(line)
                continue
            m = _BULLET.match(line)
            lead = m.group(0) if m else re.match(r"\s*", line).group(0)
            rest = " " * len(lead)
            wrapped = textwrap.wrap(line, 60, initial_indent="", subsequent_indent=rest,
                                    break_long_words=False, break_on_hyphens=False) or [line]
            for piece in wrapped:  # never break before what would start a block of its own
                if out and piece is not wrapped[0] and _BLOCK_START.match(piece.strip()):
                    out[-1] += " " + piece.strip()
                else:
                    out.append(piece)
        return out
    return _map_body(files, fn)


def markers(files: Files) -> Files:
    """`-` bullets become `*`, `##` headings lower-case, a bullet's final full stop dropped or added."""
    def fn(lines: list[str]) -> list[str]:
        prose, out = _prose(lines), []
        for i, (line, p) in enumerate(zip(lines, prose)):
            if p:
                h = _HEADING.match(line)
                m = _BULLET.match(line)
                if h:
                    line = f"{h.group(1)} {h.group(2).lower()}"
                elif m and m.group(2) == "-" and "](" not in line:
                    body = line[m.end():].rstrip()
                    following = lines[i + 1] if i + 1 < len(lines) else ""
                    last = not following.strip() or _BULLET.match(following) or following.startswith("#")
                    if last and body.endswith("."):  # the item's own last line only
                        body = body[:-1]
                    elif last and body and body[-1].isalnum():
                        body += "."
                    line = f"{m.group(1)}* {body}"
            out.append(line)
        return out
    return _map_body(files, fn, index_too=False)


def _index_line(name: str, files: Files) -> str:
    front, _ = _split_front(files[name])
    title = re.search(r"^name:\s*(.+)$", front, re.M)
    return f"- [{title.group(1).strip() if title else name}]({name})"


def _with_index_line(files: Files, after: str, line: str) -> None:
    index = files.get(MEMORY_NAME, "")
    lines = index.split("\n")
    at = next((i for i, x in enumerate(lines) if f"]({after})" in x), None)
    if at is None:
        lines.append(line)
    else:
        lines.insert(at + 1, line)
    files[MEMORY_NAME] = "\n".join(lines)


def split(files: Files) -> Files:
    """Each topic file with two or more sections (or six bullets) cut in two files at a boundary; the
    second half gets the same frontmatter and its own index line."""
    out = dict(files)
    for name in _topics(files):
        front, body = _split_front(files[name])
        prose = _prose(body)
        cuts = [i for i, line in enumerate(body) if prose[i] and line.startswith("## ")][1:]
        if not cuts:
            tops = [i for i, line in enumerate(body) if prose[i] and re.match(r"[-*+] ", line)]
            cuts = tops[len(tops) // 2:len(tops) // 2 + 1] if len(tops) >= 6 else []
        if not cuts:
            continue
        cut = cuts[len(cuts) // 2] if len(cuts) > 1 else cuts[0]
        second = f"{Path(name).stem}_part2.md"
        out[name] = front + "\n".join(body[:cut]) + "\n"
        out[second] = front + "\n".join(body[cut:])
        _with_index_line(out, name, _index_line(second, out))
    return out


def merge(files: Files) -> Files:
    """Topic files merged in pairs (1+2, 3+4, ...): the second's body under a heading of its name, its
    index line pointing at the merged file."""
    out = dict(files)
    names = _topics(files)
    for a, b in zip(names[::2], names[1::2]):
        front_b, body_b = _split_front(files[b])
        title = re.search(r"^name:\s*(.+)$", front_b, re.M)
        heading = f"## {title.group(1).strip() if title else Path(b).stem}"
        out[a] = files[a].rstrip("\n") + "\n\n" + heading + "\n\n" + "\n".join(body_b).strip("\n") + "\n"
        del out[b]
        if MEMORY_NAME in out:
            out[MEMORY_NAME] = out[MEMORY_NAME].replace(f"]({b})", f"]({a})")
    return out


def copy_session(files: Files) -> Files:
    """Every topic file copied unchanged under a second name (a later session restating it)."""
    out = dict(files)
    for name in _topics(files):
        out[f"zz_copy_{name}"] = files[name]
    return out


_UNRELATED = """---
name: Garden plan
description: the user's balcony garden, unrelated to the project
type: user
---
- Tomatoes are watered every 2 days; basil every day in summer.
- The balcony gets sun from 11:00 to 16:00.
- Seeds were ordered from a shop in Leiden; delivery takes 5 days.
- Compost is turned on Saturdays.
"""


def add_unrelated(files: Files) -> Files:
    """An unrelated topic file (and its index line) added."""
    out = dict(files)
    out["user_garden_plan.md"] = _UNRELATED
    if MEMORY_NAME in out:
        out[MEMORY_NAME] = out[MEMORY_NAME].rstrip("\n") + "\n- [Garden plan](user_garden_plan.md) — balcony\n"
    return out


def move_fact(files: Files) -> Files:
    """The index's own statements (lines that link nothing) moved into a new topic file it links."""
    index = files.get(MEMORY_NAME)
    if index is None:
        return dict(files)
    lines = index.split("\n")
    prose = _prose(lines)
    keep, moved = [], []
    for line, p in zip(lines, prose):
        if p and _BULLET.match(line) and "](" not in line and len(line.split()) >= 4:
            moved.append(line)
        else:
            keep.append(line)
    if not moved:
        return dict(files)
    out = dict(files)
    out["moved_from_index.md"] = ("---\nname: Moved from the index\ndescription: facts the index held\n"
                                  "type: project\n---\n" + "\n".join(moved) + "\n")
    out[MEMORY_NAME] = "\n".join(keep).rstrip("\n") + "\n- [Moved from the index](moved_from_index.md)\n"
    return out


REWRITES: dict[str, Callable[[Files], Files]] = {
    "rename": rename, "reorder_bullets": reorder_bullets, "reorder_sections": reorder_sections,
    "rewrap": rewrap, "markers": markers, "split": split, "merge": merge, "copy_session": copy_session,
    "add_unrelated": add_unrelated, "move_fact": move_fact,
}
# Arrival orders: the same files, unchanged, delivered in another order (the hooks deliver files as the
# agent writes them, so any order happens). Nothing the agent reads may depend on it.
ARRIVALS = ("arrive_reversed", "arrive_shuffled")
SHUFFLE_SEED = 10
# Rewrites after which every agreement must still stand (merge joins two sources into one; split and
# reorder may cut one restated bullet list apart).
KEEPS_AGREEMENTS = ("rename", "rewrap", "markers", "copy_session", "add_unrelated", "reorder_bullets",
                    "reorder_sections")


# ---- comparing -------------------------------------------------------------------------------------

def norm(text: str) -> str:
    """A statement as a rewrite leaves it: no markup, list marker, case, spacing or final stop."""
    text = _MARKUP.sub("", _FILE_NAME.sub("", text))  # an index line's link text may be its file's (renamed) name
    text = _BULLET.sub("", text)
    text = re.sub(r"\s+", " ", text).strip().lower()
    return text.rstrip(".;:,!")


def _head(text: str) -> str:
    """The start of a statement as a mark quotes it (clipped with "…"), normalised: enough to tell claims apart."""
    return norm(text.rstrip("…"))[:HEAD_CHARS]


def _side(text: str) -> str:
    """A dispute side "file.md: text" without its file name."""
    return norm(re.sub(r"^[^:\s]+\.md: ", "", text))


def keys(f: Finding) -> set[tuple[str, ...]]:
    """What a finding says, independent of file names, of which source an assertion's wording came
    from, and of the rewrites' surface changes. A finding is new when none of its keys was seen."""
    if f.kind == "dispute":
        return {("dispute", _side(t)) for t in f.texts[1:]}
    if f.kind == "update":
        old, new, newer, older = (norm(t) for t in f.texts)
        return {("update", old, new), ("update", older or old, newer),
                ("superseded", _head(f.texts[2]), _head(f.texts[3] or f.texts[0]))}
    line = f.texts[0]
    if f.files or line.startswith("- **CONTE"):  # which side names a dispute depends on ingestion order
        return {("mark", "disputed index line")}
    quoted = _QUOTED.findall(line)
    if " supersedes: " in line and len(quoted) == 2:
        # A topic file told another file "supersedes" its claim says what an update says: after a split the
        # file's own correction is shown this way, and it is new only if no update (or mark on the same two
        # statements) said it before.
        return {("superseded", _head(quoted[0]), _head(quoted[1])), ("mark",) + tuple(sorted(norm(q) for q in quoted))}
    if quoted:
        return {("mark",) + tuple(sorted(norm(q) for q in quoted))}
    says = re.search(r"now says (.*)⟩$", line)
    if says:
        return {("mark", "now says", norm(says.group(1)))}
    return {("mark", norm(re.sub(r"\([^)]*\.md\)", "", line)))}


def _write(folder: Path, files: Files) -> None:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


def _agreed(onto: Ontology) -> set[frozenset[str]]:
    with onto.reader() as conn:
        ids = [aid for (aid,) in conn.execute("SELECT id FROM assertions WHERE n_for >= 2")]
        rows = queries.evidence_for(conn, ids)
        return {frozenset(norm(r.text) for r in rows.get(aid, []) if r.stance_word == "for") for aid in ids}


def _agreements(folder: Path, work: Path) -> set[frozenset[str]]:
    """Each agreement as the set of its supporting statements' words."""
    onto = Ontology(work, "meta", create=True)
    try:
        ingest_host_files(onto, folder)
        return _agreed(onto)
    finally:
        onto.close()


def _is_arrival(name: str) -> bool:
    """An arrival order: reversed, shuffled (SHUFFLE_SEED), or shuffled with its own seed ("arrive_shuffled@3")."""
    return name in ARRIVALS or (name.startswith("arrive_shuffled@") and name.partition("@")[2].isdigit())


def arrival_order(names: list[str], arrival: str) -> list[str]:
    """The file names in the order `arrival` delivers them."""
    ordered = sorted(names, reverse=arrival == "arrive_reversed")
    if arrival.startswith("arrive_shuffled"):
        seed = int(arrival.partition("@")[2] or SHUFFLE_SEED)
        random.Random(seed).shuffle(ordered)
    return ordered


def _arrived(folder: Path, work: Path, arrival: str) -> tuple[list[Finding], set[frozenset[str]]]:
    """Findings and agreements after the folder's files arrive in the order `arrival` gives, in one
    batched call as `kgbridge mount` makes (ingest_host_files, which sorts by name)."""
    onto = Ontology(work, "meta", create=True)
    try:
        names = arrival_order([p.name for p in folder.glob("*.md")], arrival)
        onto.ingest_many([(drop_name(Kind.MEMORY.value, data, name), data, Channel.CLI)
                          for name in names for data in [(folder / name).read_bytes()]])
        return read_findings(onto), _agreed(onto)
    finally:
        onto.close()


@dataclass
class Report:
    folder: str
    rewrite: str
    new: list[str]
    lost: list[str]


def read_folder(folder: Path) -> Files:
    return {p.name: p.read_bytes().decode("utf-8", "replace") for p in sorted(folder.glob("*.md"))
            if p.is_file() and not p.name.startswith(".")}


def check(folder: Path, rewrites: list[str], work: Path) -> list[Report]:
    files = read_folder(folder)
    base = work / "base"
    _write(base, files)
    found = _findings(base, work / "db-base")
    before = set().union(*(keys(f) for f in found))
    agreed = _agreements(base, work / "agr-base")
    out: list[Report] = []
    for name in (r for r in rewrites if _is_arrival(r)):
        after, kept = _arrived(base, work / f"db-{name}", name)
        new = sorted({f.shown for f in after if not keys(f) & before})
        lost = sorted(" = ".join(sorted(a)) for a in agreed if not any(a <= b for b in kept))
        shown = set().union(*(keys(f) for f in after))  # the same files: a finding must not depend on order
        lost += sorted({f"finding {f.shown}" for f in found if not keys(f) & shown})
        out.append(Report(folder.name, name, new, lost))
    for name in (r for r in rewrites if not _is_arrival(r)):
        changed = REWRITES[name](files)
        if changed == files:
            continue
        target = work / name
        _write(target, changed)
        after = _findings(target, work / f"db-{name}")
        new = sorted({f.shown for f in after if not keys(f) & before})
        lost: list[str] = []
        if name in KEEPS_AGREEMENTS:
            kept = _agreements(target, work / f"agr-{name}")
            lost = sorted(" = ".join(sorted(a)) for a in agreed if not any(a <= b for b in kept))
        out.append(Report(folder.name, name, new, lost))
    return out


def _folders(paths: list[Path]) -> list[Path]:
    out = []
    for p in paths:
        inner = sorted(d for d in p.iterdir() if d.is_dir() and any(d.glob("*.md")))
        out += inner or [p]  # a folder of memory folders (its own README aside), or one memory folder
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path)
    parser.add_argument("--only", default=",".join((*REWRITES, *ARRIVALS)),
                        help="comma-separated rewrites (and arrival orders) to apply")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list folders with nothing new")
    parser.add_argument("--seeds", type=int, default=0,
                        help="also deliver the files in this many more shuffled orders (arrive_shuffled@1..N)")
    args = parser.parse_args()
    rewrites = [r for r in args.only.split(",") if r] + [f"arrive_shuffled@{n}" for n in range(1, args.seeds + 1)]
    unknown = [r for r in rewrites if r not in REWRITES and not _is_arrival(r)]
    if unknown:
        parser.error(f"unknown rewrite(s): {', '.join(unknown)}; known: {', '.join((*REWRITES, *ARRIVALS))}")
    totals = {r: [0, 0] for r in rewrites}  # new findings, lost agreements
    for folder in _folders(args.dirs):
        with tempfile.TemporaryDirectory(prefix="kg-meta-") as tmp:
            reports = check(folder, rewrites, Path(tmp))
        for rep in reports:
            totals[rep.rewrite][0] += len(rep.new)
            totals[rep.rewrite][1] += len(rep.lost)
            if rep.new or rep.lost or args.verbose:
                print(f"{rep.folder:28} {rep.rewrite:17} new {len(rep.new)}  lost agreements {len(rep.lost)}")
            for s in rep.new:
                print(f"    NEW   {s[:300]}")
            for s in rep.lost:
                print(f"    LOST  {s[:300]}")
    print("\nper rewrite: " + ", ".join(f"{r} {n}/{lost}" for r, (n, lost) in totals.items())
          + "   (new findings / lost agreements)")
    sys.exit(1 if any(n or lost for n, lost in totals.values()) else 0)


if __name__ == "__main__":
    main()
