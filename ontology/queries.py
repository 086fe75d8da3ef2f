"""Read-side views of the graph: evidence rows, assertions, concepts, counts (search: ontology/search.py).

Invariant: read-only SQL over one connection; every function sees one consistent snapshot when the
caller wraps it in a read transaction. `evidence_for` is the single definition of which sources
count for and against an assertion; the writer keeps aggregates of exactly those by delta
(`aggregates`), and tests/test_evidence_aggregates.py checks the two agree.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Iterable

from ontology.aggregate import implies, is_memory_kind
from ontology.schema import in_chunks


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
    received_at: str = ""  # when the artifact arrived; `timestamp` equals it when the file states no date

    @property
    def stated(self) -> bool:
        """Does `timestamp` come from the file itself (`modified:`, `date:` …), not from its arrival?"""
        return self.timestamp != self.received_at

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


_STANCE_SQL = """
SELECT st.assertion_id, st.source_id, s.identity, s.kind, s.reliability, st.stance, st.text, a.filename,
       a.version, a.timestamp, a.received_at
FROM stances st JOIN sources s ON s.id = st.source_id JOIN artifacts a ON a.id = st.artifact_id
WHERE st.assertion_id IN ({marks}) ORDER BY st.assertion_id, st.source_id
"""


def _evidence(conn: sqlite3.Connection, assertion_ids: list[int] | set[int]) -> dict[int, dict[str, tuple]]:
    """For each assertion, identity -> (stance as worded, implied, source_id, kind, reliability, text,
    filename, version, timestamp, received_at): its direct stances, and an implied denial from each source that
    positively claims another value of the same slot (counted once per source, never over the
    source's own direct stance). One pass over the stances of the assertions and their slot siblings,
    so weighing a whole slot group costs as much as reading it once."""
    wanted = sorted(set(assertion_ids))
    members: dict[int, tuple[int, str | None, str | None]] = {}
    for marks, chunk in in_chunks(wanted):
        for aid, polarity, slot, value in conn.execute(
                f"SELECT id, polarity, slot, value FROM assertions WHERE id IN ({marks})", chunk):
            members[aid] = (polarity, slot, value)
    slots = sorted({slot for _, slot, _ in members.values() if slot})
    siblings: dict[str, list[tuple[int, str | None]]] = {}
    for marks, chunk in in_chunks(slots):
        for aid, slot, value in conn.execute(
                f"SELECT id, slot, value FROM assertions WHERE slot IN ({marks}) ORDER BY id", chunk):
            siblings.setdefault(slot, []).append((aid, value))
    involved = sorted(set(members) | {aid for group in siblings.values() for aid, _ in group})
    stances: dict[int, list[tuple]] = {}
    for marks, chunk in in_chunks(involved):
        for row in conn.execute(_STANCE_SQL.format(marks=marks), chunk):
            stances.setdefault(row[0], []).append(row[1:])
    # Per slot, each source's positive claims in sibling order: (sibling id, value, row).
    claims: dict[str, list[tuple[int, str | None, tuple]]] = {}
    for slot, group in siblings.items():
        claims[slot] = [(sib, value, row) for sib, value in group for row in stances.get(sib, ())
                        if row[4] == 1 and implies(slot, is_memory_kind(row[2]))]
    out: dict[int, dict[str, tuple]] = {}
    for aid in wanted:
        if aid not in members:
            continue
        polarity, slot, value = members[aid]
        rows: dict[str, tuple] = {}
        for source_id, identity, kind, rel, stance, text, filename, version, ts, received in stances.get(aid, ()):
            rows[identity] = (stance * polarity, False, source_id, kind, rel, text, filename, version, ts, received)
        if slot:
            direct = {r[2] for r in rows.values()}
            for sib, sib_value, (source_id, identity, kind, rel, _, text, filename, version, ts, received) in claims[slot]:
                # A source stating several other values still counts once.
                if sib != aid and sib_value != value and source_id not in direct and identity not in rows:
                    rows[identity] = (-polarity, True, source_id, kind, rel, text, filename, version, ts, received)
        out[aid] = rows
    return out


def slots_of(conn: sqlite3.Connection, assertion_ids: Iterable[int]) -> dict[int, tuple[str | None, str | None]]:
    """(slot, value) of each assertion."""
    out: dict[int, tuple[str | None, str | None]] = {}
    for marks, chunk in in_chunks(sorted(set(assertion_ids))):
        out.update((r[0], (r[1], r[2])) for r in conn.execute(
            f"SELECT id, slot, value FROM assertions WHERE id IN ({marks})", chunk))
    return out


_AGGREGATE_SQL = """
SELECT a.slot, a.assertion_id, a.polarity, a.w_pos, a.n_pos, a.w_neg, a.n_neg, a.w_cross, a.n_cross,
       coalesce(s.w_claim, 0), coalesce(s.n_claim, 0), coalesce(v.w_only, 0), coalesce(v.n_only, 0){status}
FROM verdicts a LEFT JOIN slots s ON s.slot = a.slot LEFT JOIN slot_values v ON v.slot = a.slot AND v.value = a.value
WHERE a.assertion_id IN ({marks})
"""


def aggregates(conn: sqlite3.Connection, assertion_ids: Iterable[int], *,
               with_slot: bool = False, with_status: bool = False) -> list[tuple[int, ...]]:
    """The stored evidence aggregates of each assertion and its slot (see `aggregate.weigh_stored`):
    id, polarity, then (weight units, sources) for direct for, direct against, cross, slot claim, only.
    `with_slot` puts the assertion's key in `verdicts` first ('' for none), in key order; `with_status`
    adds its stored label last."""
    out: list[tuple[int, ...]] = []
    sql = _AGGREGATE_SQL.replace("{status}", ", a.status" if with_status else "")
    for marks, chunk in in_chunks(sorted(set(assertion_ids))):
        out.extend(tuple(r) for r in conn.execute(sql.format(marks=marks), chunk))
    return sorted(out) if with_slot else [r[1:] for r in sorted(out, key=lambda r: r[1])]


def evidence_for(conn: sqlite3.Connection, assertion_ids: list[int] | set[int]) -> dict[int, list[EvidenceRow]]:
    """For each assertion, one row per independent source, stance relative to the assertion as worded,
    in time order (see `_evidence` for which sources count)."""
    return {aid: sorted((EvidenceRow(identity, r[3], r[4], r[0], r[5], r[6], r[7], r[8], r[1], r[9])
                         for identity, r in rows.items()), key=lambda e: (e.timestamp, e.source))
            for aid, rows in _evidence(conn, assertion_ids).items()}


def stance_weights(conn: sqlite3.Connection, assertion_ids: list[int] | set[int]) -> dict[int, list[tuple[int, float]]]:
    """(stance, reliability) per source for each assertion: exactly what `evidence_for` shows, without
    the display fields (the writer weighs many assertions per artifact)."""
    return {aid: [(r[0], r[4]) for _, r in sorted(rows.items(), key=lambda item: (item[1][8], item[0]))]
            for aid, rows in _evidence(conn, assertion_ids).items()}


_ASSERTION_COLS = """a.id, c.key, a.text, a.status, a.belief, a.plausibility, a.conflict, a.n_for, a.n_against,
a.updated_at"""


def _views(conn: sqlite3.Connection, rows: list[sqlite3.Row], with_sources: bool) -> list[AssertionView]:
    evidence = evidence_for(conn, [r[0] for r in rows]) if with_sources else {}
    return [AssertionView(*r, sources=tuple(evidence.get(r[0], ()))) for r in rows]


def assertions(conn: sqlite3.Connection, *, status: str | None = None, concept: str | None = None,
               limit: int | None = None, with_sources: bool = True, standing: bool = False) -> list[AssertionView]:
    """Assertions in id order; `standing`: only those some source still holds (not every stance withdrawn)."""
    sql = f"SELECT {_ASSERTION_COLS} FROM assertions a JOIN concepts c ON c.id = a.concept_id WHERE 1=1"
    if standing:
        sql += f" AND a.{STANDING}"
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
        """SELECT s.identity, h.stance, h.text, h.timestamp, a.version, a.filename, a.kind FROM stance_history h
           JOIN sources s ON s.id = h.source_id JOIN artifacts a ON a.id = h.artifact_id
           WHERE h.assertion_id = ? ORDER BY h.timestamp, h.id""",
        (assertion_id,),
    ):
        stance = r[1] * polarity
        word = ("deleted" if r[6] == "tombstone" else "withdrawn") if stance == 0 else ("for" if stance > 0 else "against")
        out.append({"source": r[0], "stance": word, "text": r[2], "timestamp": r[3], "version": r[4],
                    "filename": r[5]})
    return out


def concept(conn: sqlite3.Connection, ref: str) -> dict[str, object] | None:
    """One concept by key (or numeric id) with its assertions, their evidence and history, relations."""
    row = conn.execute(
        "SELECT id, key, name, type, title, description, created_at, updated_at FROM concepts WHERE key=? OR "
        "(CAST(id AS TEXT)=? AND ? GLOB '[0-9]*')", (ref, ref, ref)).fetchone()
    if row is None:  # `architecture` for `Architecture.md`: the one file whose key folds to it (ADR 0005, case14)
        found = conn.execute("SELECT c.id, c.key, c.name, c.type, c.title, c.description, c.created_at, c.updated_at "
                             "FROM case_keys f JOIN concepts c ON c.key = f.key WHERE f.fold=? LIMIT 2",
                             (ref,)).fetchall()
        row = found[0] if len(found) == 1 else None
    if row is None:
        return None
    items = assertions(conn, concept=row["key"])
    ids = [a.id for a in items]
    superseded: dict[int, list[dict[str, object]]] = {}
    revises: dict[int, list[dict[str, object]]] = {}
    for u in updates(conn, newer=ids, older=ids):
        if u.older_id in ids:
            superseded.setdefault(u.older_id, []).append(  # type: ignore[arg-type]
                {"by": u.newer_text, "source": u.source, "date": u.date, "received": u.received_at[:10],
                 "rule": u.rule})
        if u.newer_id in ids:
            revises.setdefault(u.newer_id, []).append(
                {"old": u.older_text or u.old_text, "new": u.new_text, "rule": u.rule,
                 "older_source": u.older_source})
    return {
        **dict(row),
        "assertions": [dict(a.to_json(), history=history(conn, a.id), superseded_by=superseded.get(a.id, []),
                            updates=revises.get(a.id, [])) for a in items],
        "relations": {
            "out": [dict(r) for r in conn.execute(
                "SELECT DISTINCT dst AS concept, kind FROM relations WHERE src=? ORDER BY dst, kind", (row["key"],))],
            "in": [dict(r) for r in conn.execute(
                "SELECT DISTINCT src AS concept, kind FROM relations WHERE dst=? ORDER BY src, kind", (row["key"],))],
        },
    }


@dataclass(frozen=True)
class UpdateView:
    """One recorded update (ADR 0009): `newer` holds now; `older` (another claim) or `old_text` (a value
    the newer statement's own wording names) no longer does."""

    id: int
    rule: str  # "revision:<rule>" (a statement about itself), "old-value:<rule>", or another writer's rule
    newer_id: int | None  # None for a revision MEMORY.md states (the index makes no claims)
    newer_text: str  # the newer claim as the graph words it, else the index line verbatim
    new_text: str  # what the update says holds now
    old_text: str  # what it says no longer holds
    older_id: int | None
    older_text: str | None
    source: str  # the newer side's source identity, its file and date
    filename: str
    timestamp: str
    older_source: str | None
    older_filename: str | None
    older_timestamp: str | None
    date: str | None  # the day the newer side states (its own, its section's, its file's), None when none
    received_at: str  # when the newer side's artifact arrived (shown, labelled, only when `date` is None)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _states_too(claim: str, source: str, other: str) -> str:
    """SQL: `source` states `claim` as `other` does (same stance)."""
    return (f"EXISTS (SELECT 1 FROM stances a JOIN stances b ON b.assertion_id = a.assertion_id AND b.source_id = {other} "
            f"AND b.stance = a.stance WHERE a.assertion_id = {claim} AND a.source_id = {source})")


# Two sources that each state both claims as the other does (a file and its copy under another name) say
# nothing newer than each other: neither replaces the other's older claim (blind8). A newer file that carries
# the old claim forward beside the change still replaces a file that states the old claim only.
_UPDATE_SQL = f"""
SELECT u.id, u.rule, u.newer_id, coalesce(na.text, u.line, ''), u.new_text, u.old_text, u.older_id, oa.text, s.identity, ar.filename,
       ar.timestamp, os.identity, oar.filename, oar.timestamp, u.date, ar.received_at
FROM updates u LEFT JOIN assertions na ON na.id = u.newer_id JOIN sources s ON s.id = u.source_id
JOIN artifacts ar ON ar.id = u.artifact_id LEFT JOIN assertions oa ON oa.id = u.older_id
LEFT JOIN sources os ON os.id = u.older_source_id LEFT JOIN artifacts oar ON oar.id = os.current_artifact
WHERE (u.older_source_id IS NULL OR u.source_id = u.older_source_id
       OR NOT ({_states_too("u.older_id", "u.source_id", "u.older_source_id")}
               AND {_states_too("u.newer_id", "u.older_source_id", "u.source_id")}))
"""


def updates(conn: sqlite3.Connection, *, newer: Iterable[int] | None = None,
            older: Iterable[int] | None = None) -> list[UpdateView]:
    """Recorded updates, all of them or those whose newer / older side is one of the given assertions,
    in the order they were recorded; a pair recorded for several subjects (one row each) once."""
    if newer is None and older is None:
        return _once(UpdateView(*r) for r in conn.execute(_UPDATE_SQL + " ORDER BY u.id"))
    out: dict[int, UpdateView] = {}
    for column, ids in (("u.newer_id", newer), ("u.older_id", older)):
        for marks, chunk in in_chunks(sorted(set(ids or ()))):
            out.update((r[0], UpdateView(*r)) for r in conn.execute(
                _UPDATE_SQL + f" AND {column} IN ({marks})", chunk))
    return _once(out[k] for k in sorted(out))


def _once(views: Iterable[UpdateView]) -> list[UpdateView]:
    seen: set[tuple[object, ...]] = set()
    out = []
    for u in views:
        key = (u.rule, u.newer_id, u.newer_text, u.older_id, u.old_text, u.new_text, u.source)
        if key not in seen:
            seen.add(key)
            out.append(u)
    return out


# A claim stands while some source states it (for or against); one every source withdrew (its files
# deleted or rewritten without it: ADR 0012) is history, shown by `history` but never counted.
STANDING = "n_pos + n_neg > 0"


def counts(conn: sqlite3.Connection) -> dict[str, object]:
    """What the agent can see, counted as MEMORY.md's header counts it: claims that stand, concepts
    with a memory file or a standing claim (or no claim at all, a bare hint), sources not deleted.
    `withdrawn` and `artifacts` count the history the archive keeps."""
    by_status = {r[0]: r[1] for r in conn.execute(
        f"SELECT status, count(*) FROM assertions WHERE {STANDING} GROUP BY status")}
    forgotten = conn.execute(
        f"""SELECT count(*) FROM concepts c WHERE EXISTS (SELECT 1 FROM assertions a WHERE a.concept_id = c.id)
            AND NOT EXISTS (SELECT 1 FROM assertions a WHERE a.concept_id = c.id AND a.{STANDING})
            AND NOT EXISTS (SELECT 1 FROM memory_files m WHERE m.concept = c.key AND m.kind = 'memory'
                            AND substr(m.filename, -3) = '.md' AND m.filename != 'MEMORY.md')""").fetchone()[0]
    total = conn.execute("SELECT count(*) FROM assertions").fetchone()[0]
    return {
        "concepts": conn.execute("SELECT count(*) FROM concepts").fetchone()[0] - forgotten,
        "assertions": sum(by_status.values()),
        "withdrawn": total - sum(by_status.values()),
        "artifacts": conn.execute("SELECT count(*) FROM artifacts").fetchone()[0],
        "sources": conn.execute("SELECT count(*) FROM sources WHERE deleted_at IS NULL").fetchone()[0],
        "by_status": by_status,
    }
