"""Adversarial precision: memory folders full of traps that must not yield a dispute, an update or a mark.

Run: .venv/bin/python -m bench.traps [DIR] [--strict] [-v]
DIR (default tests/fixtures/traps) holds one memory folder per trap family and `expected.json`,
which names, per folder, the disputes and updates that are real (substrings of either side; "miss": real
ones the rules do not find yet, counted in recall, not failing --strict). Each
folder is ingested as `kgbridge mount` does; every dispute, update and mark the agent would read is
judged against it. --strict exits 1 on any false positive or missed real disagreement.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ontology import queries
from ontology.ingest import Ontology
from projection.mount import ingest_host_files
from projection.snapshot import MEMORY_NAME
from projection.topic import APPENDIX_MARKER
from projection.view import ProjectionView

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "traps"
_MARK = re.compile(r" ⟨kg: ([^⟩]*)⟩$")
_VOICE = re.compile(r"^- .+? \([^()]*\) (disputes|supersedes): ")
_LINKED = re.compile(r"\]\(([^)\s]+)\)")
_DISPUTED_LINE = ("- **CONTESTED", "- **CONTRADICTORY")


@dataclass
class Finding:
    kind: str  # dispute | update | mark
    texts: tuple[str, ...]  # every side, to match an expectation against
    shown: str  # one line for the report
    verdict: str = ""  # right | wrong | allowed
    files: tuple[str, ...] = ()  # an index line's "N disputed" mark: the files the line links


@dataclass
class Case:
    name: str
    findings: list[Finding] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # "kind: expected substring"
    known: list[str] = field(default_factory=list)  # real ones listed under "miss": not found yet, known


def _findings(folder: Path, work: Path) -> list[Finding]:
    onto = Ontology(work / folder.name, "traps", create=True)
    try:
        ingest_host_files(onto, folder)
        return read_findings(onto)
    finally:
        onto.close()


def read_findings(onto: Ontology) -> list[Finding]:
    """Every dispute, update and mark the agent would read from `onto` now (MEMORY.md, topic files)."""
    out: list[Finding] = []
    with onto.reader() as conn:
        for aid, text, status in conn.execute(
                "SELECT id, text, status FROM assertions WHERE status IN ('CONTESTED','CONTRADICTORY') ORDER BY id"):
            rows = queries.evidence_for(conn, [aid]).get(aid, [])
            sides = tuple(f"{r.filename}: {r.text}" for r in rows)
            out.append(Finding("dispute", (text,) + sides, f"{status}: {text} <= " + " | ".join(sides)))
        for u in queries.updates(conn):
            sides = (u.old_text, u.new_text, u.newer_text, u.older_text or "")
            older = f" / older {u.older_filename}: {u.older_text}" if u.older_id is not None else ""
            out.append(Finding("update", sides, f"{u.rule}: {u.old_text!r} -> {u.new_text!r} "
                               f"({u.filename}: {u.newer_text}{older})"))
    view = ProjectionView(onto)
    for name in view.names():
        data = view.read(name)
        if data is None:
            continue
        text = data.decode()
        if name == MEMORY_NAME:
            for line in text.split("\n"):
                mark = _MARK.search(line)
                if mark and " now says " in mark.group(1):
                    out.append(Finding("mark", (line,), f"{name}: {line}"))
                elif mark and "disputed" in mark.group(1):
                    out.append(Finding("mark", (line,), f"{name}: {line}", files=tuple(_LINKED.findall(line))))
                elif line.startswith(_DISPUTED_LINE):
                    out.append(Finding("mark", (line,), f"{name}: {line}"))
            continue
        _, _, appendix = text.partition(APPENDIX_MARKER)
        for line in appendix.split("\n"):
            if _VOICE.match(line):
                out.append(Finding("mark", (line,), f"{name}: {line}"))
    return out


def judge(folder: Path, expected: dict[str, list[str]], work: Path) -> Case:
    return verdicts(folder.name, _findings(folder, work), expected)


def verdicts(name: str, findings: list[Finding], expected: dict[str, list[str]]) -> Case:
    """Judge `findings` against `expected` (the real disputes and updates, known misses, allowed)."""
    case = Case(name)
    case.findings = findings
    real = [(kind, s) for kind in ("dispute", "update") for s in expected.get(kind, [])]
    # "miss": real disagreements the rules are known not to find yet. A finding matching one is right;
    # not finding it counts against recall but does not fail --strict.
    known = [("update", s) for s in expected.get("miss", [])]
    allowed = expected.get("allow", [])
    hit: set[tuple[str, str]] = set()
    for f in sorted(case.findings, key=lambda f: bool(f.files)):  # index marks last: they count disputes
        if f.files:  # "⟨kg: N disputed⟩" on an index line: right when a real dispute involves the file
            disputed = [d for d in case.findings if d.kind == "dispute" and d.verdict == "right"]
            f.verdict = "right" if any(t.startswith(f"{n}:") for d in disputed for t in d.texts for n in f.files) \
                else "wrong"
            continue
        # A mark is right when it shows a real dispute or update of this folder.
        kinds = ("dispute", "update") if f.kind == "mark" else (f.kind,)
        matched = [(k, s) for k, s in real + known
                   if (k in kinds or (k, s) in known) and any(s in t for t in f.texts)]
        if matched:
            f.verdict = "right"
            if f.kind != "mark":
                hit.update(matched)
        elif any(s in t for s in allowed for t in f.texts):
            f.verdict = "allowed"
        else:
            f.verdict = "wrong"
    case.missed = [f"{k}: {s}" for k, s in real if (k, s) not in hit]
    case.known = [f"known miss: {s}" for k, s in known if (k, s) not in hit]
    return case


def _ratio(a: int, b: int) -> str:
    return f"{a}/{b} = {100 * a / b:.1f} %" if b else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--strict", action="store_true", help="exit 1 on any false positive or miss")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print the right findings")
    args = parser.parse_args()
    expected = json.loads((args.dir / "expected.json").read_text(encoding="utf-8"))
    folders = sorted(p for p in args.dir.iterdir() if p.is_dir())
    cases: list[Case] = []
    with tempfile.TemporaryDirectory(prefix="kg-traps-") as tmp:
        for folder in folders:
            cases.append(judge(folder, expected.get(folder.name, {}), Path(tmp)))
    sys.exit(report(cases, expected, strict=args.strict, verbose=args.verbose))


def report(cases: list[Case], expected: dict, *, strict: bool, verbose: bool) -> int:
    """Print each case's findings and the totals; the exit status (1: --strict and something wrong)."""
    totals = {k: [0, 0] for k in ("dispute", "update", "mark")}  # right, wrong
    for case in cases:
        counts = {k: [sum(f.kind == k and f.verdict == v for f in case.findings) for v in ("right", "wrong")]
                  for k in totals}
        for k, (r, w) in counts.items():
            totals[k][0] += r
            totals[k][1] += w
        flag = "" if not any(w for _, w in counts.values()) and not case.missed else "  <-"
        print(f"{case.name:22} " + "  ".join(f"{k}s {r} right {w} wrong" for k, (r, w) in counts.items())
              + f"  missed {len(case.missed)}{flag}")
        for f in case.findings:
            if f.verdict == "wrong" or verbose:
                print(f"    {f.verdict.upper():7} {f.kind}: {f.shown[:300]}")
        for m in case.missed:
            print(f"    MISSED  {m}")
        if verbose:
            for m in case.known:
                print(f"    MISSED  {m}")
    real = sum(len(e.get("dispute", [])) + len(e.get("update", [])) + len(e.get("miss", []))
               for n, e in expected.items() if not n.startswith("_"))
    missed = sum(len(c.missed) + len(c.known) for c in cases)
    right = totals["dispute"][0] + totals["update"][0]
    wrong = totals["dispute"][1] + totals["update"][1]
    print(f"\nprecision (disputes + updates): {_ratio(right, right + wrong)}"
          f"   disputes {_ratio(totals['dispute'][0], sum(totals['dispute']))}"
          f"   updates {_ratio(totals['update'][0], sum(totals['update']))}")
    known = sum(len(c.known) for c in cases)
    print(f"recall (real disagreements found): {_ratio(real - missed, real)}"
          + (f" ({known} of the missed listed as known misses)" if known else ""))
    print(f"marks the agent reads: {_ratio(totals['mark'][0], sum(totals['mark']))} right")
    return 1 if strict and (wrong or missed - known or totals["mark"][1]) else 0


if __name__ == "__main__":
    main()
