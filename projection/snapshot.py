"""Read the graph into the plain data the renderer takes. Standard library only (the hook uses it
for the SessionStart fallback), so it works on a plain sqlite3 connection.

Invariant: callers pass a connection inside one read transaction, so a snapshot is consistent.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ontology import queries
from projection.rank import ConceptStats, rank
from projection.render import MAX_LINES, ConceptLine, DisputedLine, MemorySnapshot, clip

MEMORY_NAME = "MEMORY.md"


def graph_version(conn: sqlite3.Connection, database: Path) -> tuple[int, int, int]:
    last, count = conn.execute("SELECT coalesce(max(id), 0), count(*) FROM artifacts").fetchone()
    try:
        inode = database.stat().st_ino
    except OSError:
        inode = 0
    return int(last), int(count), inode


def memory_snapshot(conn: sqlite3.Connection, ontology: str, limit: int = MAX_LINES) -> MemorySnapshot:
    """The ranked concepts and the most conflicted claims, at most `limit` of each: a MEMORY.md of
    `limit` lines can never show more, so their evidence is not gathered; totals go to the footer."""
    rows = conn.execute(
        """SELECT c.key, coalesce(c.title, c.name), coalesce(c.description, ''), c.updated_at,
                  coalesce(sum(a.belief), 0), count(a.id),
                  coalesce(sum(a.status = 'AFFIRMATIVE'), 0), coalesce(sum(a.status = 'CONTESTED'), 0),
                  coalesce(sum(a.status = 'CONTRADICTORY'), 0), coalesce(max(a.belief), 0),
                  (SELECT a2.text FROM assertions a2 WHERE a2.concept_id = c.id ORDER BY a2.belief DESC, a2.id LIMIT 1)
           FROM concepts c LEFT JOIN assertions a ON a.concept_id = c.id GROUP BY c.id""").fetchall()
    degree = {r[0]: r[1] for r in conn.execute(
        """SELECT k, count(DISTINCT other) FROM (SELECT src AS k, dst AS other FROM relations
           UNION ALL SELECT dst, src FROM relations) GROUP BY k""")}
    by_key = {r[0]: r for r in rows}
    ranked = rank([ConceptStats(r[0], float(r[4]), degree.get(r[0], 0), r[3]) for r in rows])
    lines = []
    for stats in ranked[:limit]:
        r = by_key[stats.key]
        label = ("CONTESTED" if r[7] else "CONTRADICTORY" if r[8] else "AFFIRMATIVE" if r[6]
                 else "INSUFFICIENT_DATA" if r[5] else "no claims")
        lines.append(ConceptLine(r[0], clip(r[1], 120), clip(r[2] or r[10] or "", 200), label, float(r[9]), int(r[5])))
    disputed = []
    disputes = conn.execute(
        """SELECT a.id, c.key, a.text, a.status, a.n_for, a.n_against, a.belief, a.plausibility
           FROM assertions a JOIN concepts c ON c.id = a.concept_id
           WHERE a.status IN ('CONTESTED', 'CONTRADICTORY') ORDER BY a.conflict DESC, a.id LIMIT ?""",
        (limit,)).fetchall()
    evidence = queries.evidence_for(conn, [a[0] for a in disputes])
    for a in disputes:
        sides = evidence[a[0]]
        pro = ", ".join(s.source_kind for s in sides if s.stance > 0)[:80]
        con = ", ".join(s.source_kind for s in sides if s.stance < 0)[:80]
        disputed.append(DisputedLine(a[1], clip(a[2], 200), a[3], a[4], a[5], a[6], a[7],
                                     f"for: {pro or '-'} / against: {con or '-'}"))
    counts = queries.counts(conn)
    generated = max((r[3] for r in rows), default="")
    return MemorySnapshot(ontology, generated, {"concepts": counts["concepts"], "assertions": counts["assertions"],
                                                **counts["by_status"]}, lines, disputed,
                          concepts_total=len(ranked),
                          disputed_total=counts["by_status"].get("CONTESTED", 0)
                          + counts["by_status"].get("CONTRADICTORY", 0))
