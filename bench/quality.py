"""Claim quality on real memory folders: what became a claim, what was lost, what is disputed.

Run: .venv/bin/python -m bench.quality --corpus DIR [--agreements]
Each sub-folder of DIR (or DIR itself if it holds .md files) is ingested into its own temporary
ontology. The line classifier below is independent of `ontology.extract` on purpose: it judges the
extractor from outside (which lines state something, which claims are noise), so a person can read
every disputed claim with both sides and their files and judge precision in minutes.
"""

from __future__ import annotations

import argparse
import enum
import re
import sqlite3
import tempfile
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ontology import queries
from ontology.artifact import Channel
from ontology.ingest import Ontology
from ontology.parse import decode, split_frontmatter
from ontology.tokens import Script, script_counts


class LineKind(enum.Enum):
    STATEMENT = "statement"
    HEADING = "heading"
    LABEL = "label"
    LINK_LIST = "link list"
    CODE = "code"
    FORMULA = "formula"
    TABLE = "table"
    COMMENT = "comment"
    BLANK = "blank"


NOISE_KINDS = (LineKind.HEADING, LineKind.LABEL, LineKind.LINK_LIST, LineKind.CODE, LineKind.FORMULA)

_LINK = re.compile(r"\[\[[^\]]*\]\]|!?\[[^\]]*\]\([^)]*\)|https?://\S+")
_LABEL = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?[^*:：]{1,60}(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*$")
_LINK_LEAD = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*)?(?:related|see also|see|相关|相關|관련|연관|関連|参照)\s*(?:\*\*)?\s*[:：]",
                        re.IGNORECASE)
_COMMAND = re.compile(r"^\s*(?:\$ |> \$ |(?:sudo|git|npm|npx|pip|uv|cd|ls|cat|python3?|bash|curl|docker|kubectl)"
                      r" [-\w./~=\"']+(?: [-\w./~=\"'|&>]+)*\s*$)")
_IDENT = re.compile(r"(?<![\w`])[\w.\-/]*(?:\w_\w|~)[\w.\-/~]*")


def classify_line(line: str, in_code: bool) -> LineKind:
    s = line.strip()
    if in_code:
        return LineKind.CODE
    if not s:
        return LineKind.BLANK
    if s.startswith("#") and re.match(r"^#{1,6}\s", s):
        return LineKind.HEADING
    if s.startswith("|"):
        return LineKind.TABLE
    if s.startswith("<!--") or s.startswith("-->"):
        return LineKind.COMMENT
    if s.startswith("$$") or s.startswith("\\[") or s.startswith("\\begin{") or re.search(r"\\frac|\\sum|\\int", s):
        return LineKind.FORMULA
    if _LINK_LEAD.match(s):
        rest = _LINK.sub("", s[_LINK_LEAD.match(s).end():])
        if len(re.sub(r"[\W_]", "", rest)) < 12:
            return LineKind.LINK_LIST
    links = _LINK.findall(s)
    if links and len(re.sub(r"[\W_]", "", _LINK.sub("", s))) < 4:
        return LineKind.LINK_LIST if len(links) >= 2 or not re.match(r"^\s*[-*+]", s) else LineKind.LINK_LIST
    if _LABEL.match(s):
        return LineKind.LABEL
    if _COMMAND.match(s):
        return LineKind.CODE
    if line.startswith("    ") and not re.match(r"^\s*(?:[-*+]|\d+[.)])\s", line) and re.search(r"[(){};=]", s):
        return LineKind.CODE
    if sum(ch.isalpha() for ch in s) < 2:
        return LineKind.BLANK
    return LineKind.STATEMENT


def script_of(text: str) -> str:
    """The script a line is written in: CJK lines routinely carry ASCII identifiers, so a line is
    non-Latin when its non-Latin letters are at least a third of its Latin ones."""
    counts = script_counts(text)
    if not counts:
        return "none"
    latin = counts.get(Script.LATIN, 0)
    others = {k: v for k, v in counts.items() if k is not Script.LATIN}
    if others and sum(others.values()) * 3 >= latin:
        top = max(others, key=lambda k: others[k])
        return "CJK" if top in (Script.HAN, Script.KANA) else top.value
    return "Latin"


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", unicodedata.normalize("NFKC", _LINK.sub(lambda m: m.group(0).split("]")[0], text))).casefold()


@dataclass
class Report:
    files: int = 0
    rejected: list[str] = field(default_factory=list)
    claims: int = 0
    lines: Counter[str] = field(default_factory=Counter)  # script -> statement lines
    reached: Counter[str] = field(default_factory=Counter)  # script -> lines that reached a claim
    missed: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    identifiers: int = 0
    identifiers_kept: int = 0
    lost_identifiers: list[str] = field(default_factory=list)
    noise: Counter[str] = field(default_factory=Counter)
    noise_examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    labels: Counter[str] = field(default_factory=Counter)
    disputes: list[str] = field(default_factory=list)
    agreements: list[str] = field(default_factory=list)
    supersessions: list[str] = field(default_factory=list)


def _file_lines(path: Path) -> list[tuple[LineKind, str]]:
    try:
        _, body, _ = split_frontmatter(decode(path.read_bytes()))
    except Exception:  # noqa: BLE001 - a rejected file is reported by ingest itself
        return []
    out: list[tuple[LineKind, str]] = []
    in_code = False
    for line in body.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
            out.append((LineKind.CODE, line))
            continue
        out.append((classify_line(line, in_code), line))
    return out


def _claims_by_file(conn: sqlite3.Connection) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for filename, text in conn.execute(
            "SELECT DISTINCT ar.filename, h.text FROM stance_history h JOIN artifacts ar ON ar.id = h.artifact_id "
            "WHERE h.stance != 0 ORDER BY h.id"):
        out[filename].append(text)
    return out


def _side(conn: sqlite3.Connection, assertion_id: int) -> list[str]:
    rows = queries.evidence_for(conn, [assertion_id]).get(assertion_id, [])
    return [f"    {r.stance_word:7} {'(implied) ' if r.implied else ''}{r.filename}: {r.text}" for r in rows]


def measure_folder(folder: Path, report: Report, with_agreements: bool) -> None:
    files = sorted(p for p in folder.iterdir() if p.suffix == ".md" and p.is_file() and p.name != "README.md"
                   or p.name == "MEMORY.md")
    files = sorted(set(files))
    with tempfile.TemporaryDirectory() as tmp:
        onto = Ontology(Path(tmp), "quality", create=True)
        results = onto.ingest_paths(files, Channel.CLI)
        report.files += len(files)
        report.rejected += [f"{folder.name}/{r.filename}: {r.reason}" for r in results if r.status.value == "rejected"]
        with onto.reader() as conn:
            claims = _claims_by_file(conn)
            report.claims += sum(len(v) for v in claims.values())
            for status, n in conn.execute("SELECT status, count(*) FROM assertions GROUP BY status"):
                report.labels[status] += n
            for path in files:
                _measure_file(folder.name, path, claims.get(path.name, []), report)
            for (aid, text, status) in conn.execute(
                    "SELECT id, text, status FROM assertions WHERE status IN ('CONTESTED','CONTRADICTORY') ORDER BY id"):
                report.disputes.append(f"[{folder.name}] {status}: {text}\n" + "\n".join(_side(conn, aid)))
            if with_agreements:
                for (aid, text) in conn.execute("SELECT id, text FROM assertions WHERE n_for >= 2 ORDER BY id"):
                    report.agreements.append(f"[{folder.name}] {text}\n" + "\n".join(_side(conn, aid)))
            for u in queries.updates(conn):
                report.supersessions.append(_update_lines(folder.name, u))
        onto.close()


def _update_lines(folder: str, u: queries.UpdateView) -> str:
    """An update with both sides, the rule that found it and the source files."""
    lines = [f"[{folder}] {u.rule}: {u.old_text!r} -> {u.new_text!r}",
             f"    newer {u.filename} ({u.timestamp[:10]}): {u.newer_text}"]
    if u.older_id is not None:
        lines.append(f"    older {u.older_filename} ({(u.older_timestamp or '')[:10]}): {u.older_text}")
    elif u.older_filename is not None and u.older_filename != u.filename:  # an index line (not a claim)
        lines.append(f"    older {u.older_filename} ({(u.older_timestamp or '')[:10]}): {u.old_text}")
    return "\n".join(lines)


def _measure_file(folder: str, path: Path, claims: list[str], report: Report) -> None:
    normed = [(_norm(c), c) for c in claims]
    lines = _file_lines(path)
    for kind, line in lines:
        if kind is not LineKind.STATEMENT:
            continue
        script = script_of(line)
        n = _norm(line)
        if not n:
            continue
        report.lines[script] += 1
        hit = [c for cn, c in normed if len(cn) >= 4 and (cn in n or n in cn)]
        if hit:
            report.reached[script] += 1
            code_free = _LINK.sub(" ", re.sub(r"`[^`]*`", " ", line))  # links are relations, not words
            for ident in _IDENT.findall(code_free.replace("\\_", "_")):
                ident = ident.strip("_~.-/")
                if len(ident) < 3 or not re.search(r"[_~]", ident):
                    continue
                report.identifiers += 1
                # In any claim of the file: a wrapped line's sentence may start on the line before.
                if any(ident in c for c in hit) or any(ident in c for _, c in normed):
                    report.identifiers_kept += 1
                else:
                    report.lost_identifiers.append(f"{folder}/{path.name}: {ident!r} in {hit[0]!r}")
        else:
            report.missed[script].append(f"{folder}/{path.name}: {line.strip()[:120]}")
    by_norm: dict[str, LineKind] = {}
    for kind, line in lines:
        by_norm.setdefault(_norm(line), kind)
    for _, claim in normed:
        kind = _noise_kind(claim, lines)
        if kind is not None:
            report.noise[kind.value] += 1
            report.noise_examples[kind.value].append(f"{folder}/{path.name}: {claim[:120]}")


def _noise_kind(claim: str, lines: list[tuple[LineKind, str]]) -> LineKind | None:
    if claim.rstrip().endswith((":", "：")):
        return LineKind.LABEL
    cn = _norm(claim)
    if len(cn) < 4:
        return None
    kinds = [kind for kind, line in lines if (n := _norm(line)) and (cn in n or (len(n) >= 8 and n in cn))]
    if not kinds or LineKind.STATEMENT in kinds or LineKind.TABLE in kinds:
        return None
    noisy = [k for k in kinds if k in NOISE_KINDS]
    return noisy[0] if noisy else None


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} = {100 * a / b:.1f} %" if b else f"{a}/0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--agreements", action="store_true", help="also print every agreement (n_for >= 2)")
    parser.add_argument("--missed", action="store_true", help="also print statement lines that reached no claim")
    parser.add_argument("--noise", action="store_true", help="also print every noise claim")
    args = parser.parse_args()
    corpus: Path = args.corpus
    folders = sorted(p for p in corpus.iterdir() if p.is_dir()) or [corpus]
    report = Report()
    agreements_total = 0
    for folder in folders:
        measure_folder(folder, report, True)
    agreements_total = len(report.agreements)
    print(f"folders: {len(folders)}  files: {report.files}  rejected: {len(report.rejected)}")
    for line in report.rejected:
        print("  rejected", line)
    print(f"claims: {report.claims}  per file: {report.claims / max(report.files, 1):.1f}")
    print("statement lines reaching a claim, by script:")
    for script in sorted(report.lines):
        print(f"  {script:8} {_pct(report.reached[script], report.lines[script])}")
    latin = report.lines["Latin"]
    non_latin = sum(report.lines.values()) - latin - report.lines["none"]
    print(f"  non-Latin {_pct(sum(report.reached.values()) - report.reached['Latin'] - report.reached['none'], non_latin)}")
    print(f"identifiers (_ or ~) kept verbatim: {_pct(report.identifiers_kept, report.identifiers)}")
    for line in report.lost_identifiers[:30]:
        print("  lost", line)
    total_noise = sum(report.noise.values())
    print(f"noise claims: {_pct(total_noise, report.claims)}  by kind: {dict(report.noise)}")
    if args.noise:
        for kind, examples in report.noise_examples.items():
            for example in examples:
                print(f"  {kind}: {example}")
    print(f"labels: {dict(sorted(report.labels.items()))}")
    print(f"agreements (two or more sources for): {agreements_total}")
    print(f"updates and supersessions: {len(report.supersessions)}")
    for i, line in enumerate(report.supersessions, 1):
        print(f"  ^{i} " + line)
    print(f"\ndisputed claims: {len(report.disputes)}")
    for i, dispute in enumerate(report.disputes, 1):
        print(f"\n#{i} {dispute}")
    if args.agreements:
        print(f"\nagreements: {agreements_total}")
        for i, agreement in enumerate(report.agreements, 1):
            print(f"\n+{i} {agreement}")
    if args.missed:
        print("\nmissed statement lines:")
        for script, lines in sorted(report.missed.items()):
            for line in lines:
                print(f"  [{script}] {line}")


if __name__ == "__main__":
    main()
