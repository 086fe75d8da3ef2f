"""Evolving memory folders: the same traps as bench.traps, over a folder's life across sessions.

Run: .venv/bin/python -m bench.evolving [DIR] [--strict] [-v] [--steps]
DIR (default tests/fixtures/evolving) holds one scenario per folder, each a sequence of full folder
states `01/`, `02/`, … Each state is delivered as the hooks deliver it: a new or changed file as its
source's next version, a vanished one as a tombstone, or as a move when a new file carries its
content (kgbridge.forgetting decides, as the hook does). What the agent reads after the LAST state is
judged against `expected.json` (bench.traps' format); --steps prints what it reads after every state.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench.traps import Case, Finding, read_findings, report, verdicts
from kgbridge import forgetting
from ontology.artifact import Channel, Kind
from ontology.ingest import Ontology
from ontology.layout import drop_name

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "evolving"


@dataclass
class _Known:
    """What the folder held at the last delivery (the shape `forgetting.vanished` reads)."""

    files: dict[str, dict[str, object]] = field(default_factory=dict)
    data: dict[str, bytes] = field(default_factory=dict)


def deliveries(known: _Known, state: Path, at: str) -> list[tuple[str, bytes, Channel]]:
    """The artifacts the hooks send when the folder goes from `known` to `state`; updates `known`."""
    present = {p.name: p.read_bytes() for p in sorted(state.glob("*.md")) if not p.name.startswith(".")}
    items: list[tuple[str, bytes, Channel]] = []
    moved: set[str] = set()
    for gone, successor in forgetting.vanished(known, present.keys(), present):  # type: ignore[arg-type]
        if successor is None:
            record = forgetting.tombstone(gone, at)
            items.append((drop_name("tombstone", record, gone), record, Channel.CLI))
        else:
            record = forgetting.move(gone, successor, present[successor], at)
            items.append((drop_name("move", record, successor), record, Channel.CLI))
            moved.add(successor)
        del known.files[gone]
        known.data.pop(gone, None)
    for name, data in present.items():
        if name not in moved and known.data.get(name) != data:
            items.append((drop_name(Kind.MEMORY.value, data, name), data, Channel.CLI))
        known.files[name] = forgetting.fingerprint(data)
        known.data[name] = data
    return items


def states(scenario: Path) -> list[Path]:
    return sorted(p for p in scenario.iterdir() if p.is_dir())


def run(scenario: Path, work: Path, *, each_step: bool = False) -> list[list[Finding]]:
    """Deliver every state of `scenario` in order (one day apart); the findings after each state
    (only the last one unless `each_step`)."""
    onto = Ontology(work / scenario.name, "evolving", create=True)
    known = _Known()
    seen: list[list[Finding]] = []
    try:
        steps = states(scenario)
        for n, state in enumerate(steps, 1):
            at = f"2026-05-{n:02d}T09:00:00Z"
            onto.ingest_many(deliveries(known, state, at), received_at=at)
            if each_step or n == len(steps):
                seen.append(read_findings(onto))
        return seen
    finally:
        onto.close()


def judge(scenario: Path, expected: dict[str, list[str]], work: Path, *, each_step: bool = False) -> Case:
    seen = run(scenario, work, each_step=each_step)
    if each_step:
        for n, found in enumerate(seen[:-1], 1):
            for f in found:
                print(f"  {scenario.name}/{n:02d}: {f.kind}: {f.shown[:300]}")
    return verdicts(scenario.name, seen[-1], expected)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--strict", action="store_true", help="exit 1 on any false positive or miss")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print the right findings")
    parser.add_argument("--steps", action="store_true", help="print what the agent reads after every state")
    args = parser.parse_args()
    expected = json.loads((args.dir / "expected.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="kg-evolving-") as tmp:
        cases = [judge(s, expected.get(s.name, {}), Path(tmp), each_step=args.steps)
                 for s in sorted(p for p in args.dir.iterdir() if p.is_dir())]
    sys.exit(report(cases, expected, strict=args.strict, verbose=args.verbose))


if __name__ == "__main__":
    main()
