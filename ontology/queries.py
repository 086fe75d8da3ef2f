"""Read-side views of the graph: evidence rows, assertions, concepts, search, counts.

Invariant: read-only SQL over one connection; every function sees one consistent snapshot when the
caller wraps it in a read transaction. `evidence_rows` is the single definition of which sources
count for and against an assertion: the writer weighs exactly what readers show.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class EvidenceRow:
    source: str  # source identity
    source_kind: str
    reliability: float
    stance: int  # +1 supports the assertion as worded, -1 denies it
    text: str  # what the source said
    filename: str
    version: int
    timestamp: str
    implied: bool  # True when the stance comes from an exclusive alternative ("X is Y" vs "X is Z")

    @property
    def stance_word(self) -> str:
        return "for" if self.stance > 0 else "against"


@dataclass(frozen=True)
class AssertionView:
    id: int
    concept: str
    text: str
    status: str
    belief: float
    plausibility: float
    conflict: float
    n_for: int
    n_against: int
    updated_at: str
    sources: tuple[EvidenceRow, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["sources"] = [dict(asdict(s), stance=s.stance_word) for s in self.sources]
        return data


_EVIDENCE_SQL = """
SELECT s.identity, s.kind, s.reliability, st.stance, st.text, a.filename, a.version, a.timestamp, 0 AS implied
FROM stances st JOIN sources s ON s.id = st.source_id JOIN artifacts a ON a.id = st.artifact_id
WHERE st.assertion_id = :id
UNION ALL
SELECT s.identity, s.kind, s.reliability, -1, st.text, a.filename, a.version, a.timestamp, 1
FROM assertions me JOIN assertions sib ON sib.slot = me.slot AND sib.id != me.id AND sib.value != me.value
JOIN stances st ON st.assertion_id = sib.id AND st.stance = 1
JOIN sources s ON s.id = st.source_id JOIN artifacts a ON a.id = st.artifact_id
WHERE me.id = :id AND me.slot IS NOT NULL
  AND st.source_id NOT IN (SELECT source_id FROM stances WHERE assertion_id = :id)
"""


def evidence_rows(conn: sqlite3.Connection, assertion_id: int) -> list[EvidenceRow]:
    """One row per independent source, stance relative to the assertion as worded."""
    polarity = conn.execute("SELECT polarity FROM assertions WHERE id=?", (assertion_id,)).fetchone()[0]
    rows: dict[str, EvidenceRow] = {}
    for r in conn.execute(_EVIDENCE_SQL, {"id": assertion_id}):
        # An implied denial comes from a positive claim of another value; a source stating several
        # other values still counts once.
        if r[0] in rows:
            continue
        rows[r[0]] = EvidenceRow(r[0], r[1], r[2], r[3] * polarity, r[4], r[5], r[6], r[7], bool(r[8]))
    return sorted(rows.values(), key=lambda e: (e.timestamp, e.source))


_ASSERTION_COLS = """a.id, c.key, a.text, a.status, a.belief, a.plausibility, a.conflict, a.n_for, a.n_against,
a.updated_at"""


def _views(conn: sqlite3.Connection, rows: list[sqlite3.Row], with_sources: bool) -> list[AssertionView]:
    return [AssertionView(*r, sources=tuple(evidence_rows(conn, r[0])) if with_sources else ()) for r in rows]


def assertions(conn: sqlite3.Connection, *, status: str | None = None, concept: str | None = None,
               limit: int | None = None, with_sources: bool = True) -> list[AssertionView]:
    sql = f"SELECT {_ASSERTION_COLS} FROM assertions a JOIN concepts c ON c.id = a.concept_id WHERE 1=1"
    params: list[object] = []
    if status:
        sql += " AND a.status = ?"
        params.append(status)
    if concept:
        sql += " AND c.key = ?"
        params.append(concept)
    sql += " ORDER BY a.id"
    if limit:
        sql += " LIMIT ?"
        params.append(limit)
    return _views(conn, conn.execute(sql, params).fetchall(), with_sources)


def history(conn: sqlite3.Connection, assertion_id: int) -> list[dict[str, object]]:
    """Every observation of the assertion, oldest first: what each source said, version by version."""
    polarity = conn.execute("SELECT polarity FROM assertions WHERE id=?", (assertion_id,)).fetchone()[0]
    out = []
    for r in conn.execute(
        """SELECT s.identity, h.stance, h.text, h.timestamp, a.version, a.filename FROM stance_history h
           JOIN sources s ON s.id = h.source_id JOIN artifacts a ON a.id = h.artifact_id
           WHERE h.assertion_id = ? ORDER BY h.timestamp, h.id""",
        (assertion_id,),
    ):
        stance = r[1] * polarity
        word = "withdrawn" if stance == 0 else ("for" if stance > 0 else "against")
        out.append({"source": r[0], "stance": word, "text": r[2], "timestamp": r[3], "version": r[4],
                    "filename": r[5]})
    return out


def concept(conn: sqlite3.Connection, ref: str) -> dict[str, object] | None:
    """One concept by key (or numeric id) with its assertions, their evidence and history, relations."""
    row = conn.execute(
        "SELECT id, key, name, type, title, description, created_at, updated_at FROM concepts WHERE key=? OR "
        "(CAST(id AS TEXT)=? AND ? GLOB '[0-9]*')", (ref, ref, ref)).fetchone()
    if row is None:
        return None
    items = assertions(conn, concept=row["key"])
    return {
        **dict(row),
        "assertions": [dict(a.to_json(), history=history(conn, a.id)) for a in items],
        "relations": {
            "out": [dict(r) for r in conn.execute(
                "SELECT DISTINCT dst AS concept, kind FROM relations WHERE src=? ORDER BY dst, kind", (row["key"],))],
            "in": [dict(r) for r in conn.execute(
                "SELECT DISTINCT src AS concept, kind FROM relations WHERE dst=? ORDER BY src, kind", (row["key"],))],
        },
    }


def _fts_query(text: str) -> str:
    """User text to a safe FTS5 query: each word quoted, any of them may match (ranked by bm25)."""
    words = re.findall(r"\w+", text.lower())[:16]
    return " OR ".join(f'"{w}"' for w in words)


def search(conn: sqlite3.Connection, q: str, limit: int = 20) -> list[dict[str, object]]:
    query = _fts_query(q)
    if not query:
        return []
    hits: list[dict[str, object]] = []
    for r in conn.execute(
        """SELECT c.key, c.title, c.description, bm25(concepts_fts) AS score FROM concepts_fts
           JOIN concepts c ON c.id = concepts_fts.rowid WHERE concepts_fts MATCH ? ORDER BY score LIMIT ?""",
        (query, limit)):
        hits.append({"kind": "concept", "concept": r[0], "text": r[2] or r[1] or r[0], "score": -r[3]})
    for r in conn.execute(
        """SELECT a.id, c.key, a.text, a.status, a.belief, bm25(assertions_fts) AS score FROM assertions_fts
           JOIN assertions a ON a.id = assertions_fts.rowid JOIN concepts c ON c.id = a.concept_id
           WHERE assertions_fts MATCH ? ORDER BY score LIMIT ?""", (query, limit)):
        hits.append({"kind": "assertion", "id": r[0], "concept": r[1], "text": r[2], "status": r[3],
                     "belief": r[4], "score": -r[5]})
    hits.sort(key=lambda h: (-float(h["score"]), str(h["concept"]), str(h["text"])))
    return hits[:limit]


def counts(conn: sqlite3.Connection) -> dict[str, object]:
    by_status = {r[0]: r[1] for r in conn.execute("SELECT status, count(*) FROM assertions GROUP BY status")}
    return {
        "concepts": conn.execute("SELECT count(*) FROM concepts").fetchone()[0],
        "assertions": conn.execute("SELECT count(*) FROM assertions").fetchone()[0],
        "artifacts": conn.execute("SELECT count(*) FROM artifacts").fetchone()[0],
        "sources": conn.execute("SELECT count(*) FROM sources").fetchone()[0],
        "by_status": by_status,
    }
