"""Evolving memory folders: the same traps as bench.traps, over a folder's life across sessions.

Run: .venv/bin/python -m bench.evolving [DIR] [--strict] [-v] [--steps]
DIR (default tests/fixtures/evolving) holds one scenario per folder, each a sequence of full folder
states `01/`, `02/`, … Each state is delivered as the hooks deliver it: a new or changed file as its
source's next version, a vanished one as a tombstone, or as a move when a new file carries its
content (kgbridge.forgetting decides, as the hook does). What the agent reads after the LAST state is
judged against `expected.json` (bench.traps' format); --steps prints what it reads after every state.
--final-only also delivers each scenario's last state alone, at once, into a fresh graph, and prints
whatever the agent reads in one and not the other: a folder's history must not change what it shows.
"""

from __future__ import annotations

import argparse
import json
import re
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


_DAY = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def _said(findings: list[Finding]) -> set[tuple[str, str]]:
    """What findings say, without delivery days (a file's day differs between the two deliveries)."""
    return {(f.kind, _DAY.sub("…", " | ".join(f.texts))) for f in findings}


def final_only(scenario: Path, work: Path) -> list[Finding]:
    """The findings when the scenario's last state is delivered alone, at once, into a fresh graph."""
    onto = Ontology(work / f"{scenario.name}-final", "evolving", create=True)
    try:
        last = states(scenario)[-1]
        at = f"2026-05-{len(states(scenario)):02d}T09:00:00Z"
        onto.ingest_many(deliveries(_Known(), last, at), received_at=at)
        return read_findings(onto)
    finally:
        onto.close()


def history_differences(scenario: Path, work: Path) -> list[str]:
    """What the agent reads after the scenario's life and not after its last state alone, or back."""
    lived, once = _said(run(scenario, work)[-1]), _said(final_only(scenario, work))
    return [f"only over time: {k}: {t[:240]}" for k, t in sorted(lived - once)] + \
        [f"only at once:   {k}: {t[:240]}" for k, t in sorted(once - lived)]


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
    parser.add_argument("--final-only", action="store_true",
                        help="compare with each last state delivered alone (exit 1 on any difference)")
    args = parser.parse_args()
    if args.final_only:
        sys.exit(_compare(args.dir))
    expected = json.loads((args.dir / "expected.json").read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="kg-evolving-") as tmp:
        cases = [judge(s, expected.get(s.name, {}), Path(tmp), each_step=args.steps)
                 for s in sorted(p for p in args.dir.iterdir() if p.is_dir())]
    sys.exit(report(cases, expected, strict=args.strict, verbose=args.verbose))


def _compare(root: Path) -> int:
    differ = 0
    with tempfile.TemporaryDirectory(prefix="kg-evolving-") as tmp:
        for scenario in sorted(p for p in root.iterdir() if p.is_dir()):
            found = history_differences(scenario, Path(tmp))
            differ += bool(found)
            print(f"{scenario.name:34} {'differs' if found else 'same'}")
            for line in found:
                print(f"    {line}")
    print(f"\n{differ} scenario(s) show something only over time or only at once")
    return 1 if differ else 0


if __name__ == "__main__":
    main()
