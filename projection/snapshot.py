"""Read the graph into the plain data the renderer takes, and cache renders per graph version.

Invariant: one read transaction per snapshot (consistent view); a rendered file is reused only
while the graph version (last artifact id, artifact count, database inode) is unchanged, so a new
ingest shows up on the next read and nothing stale is ever served.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from ontology import queries
from ontology.ingest import Ontology
from projection.rank import ConceptStats, rank
from projection.render import ConceptLine, DisputedLine, MemorySnapshot, clip, render_memory, render_topic

MEMORY_NAME = "MEMORY.md"


def graph_version(conn: sqlite3.Connection, database: Path) -> tuple[int, int, int]:
    last, count = conn.execute("SELECT coalesce(max(id), 0), count(*) FROM artifacts").fetchone()
    try:
        inode = database.stat().st_ino
    except OSError:
        inode = 0
    return int(last), int(count), inode


def memory_snapshot(conn: sqlite3.Connection, ontology: str) -> MemorySnapshot:
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
    for stats in ranked:
        r = by_key[stats.key]
        label = ("CONTESTED" if r[7] else "CONTRADICTORY" if r[8] else "AFFIRMATIVE" if r[6]
                 else "INSUFFICIENT_DATA" if r[5] else "no claims")
        lines.append(ConceptLine(r[0], clip(r[1], 120), clip(r[2] or r[10] or "", 200), label, float(r[9]), int(r[5])))
    disputed = []
    for a in conn.execute(
            """SELECT a.id, c.key, a.text, a.status, a.n_for, a.n_against, a.belief, a.plausibility
               FROM assertions a JOIN concepts c ON c.id = a.concept_id
               WHERE a.status IN ('CONTESTED', 'CONTRADICTORY') ORDER BY a.conflict DESC, a.id""").fetchall():
        sides = queries.evidence_rows(conn, a[0])
        pro = ", ".join(s.source_kind for s in sides if s.stance > 0)[:80]
        con = ", ".join(s.source_kind for s in sides if s.stance < 0)[:80]
        disputed.append(DisputedLine(a[1], clip(a[2], 200), a[3], a[4], a[5], a[6], a[7],
                                     f"for: {pro or '-'} / against: {con or '-'}"))
    counts = queries.counts(conn)
    generated = max((r[3] for r in rows), default="")
    return MemorySnapshot(ontology, generated, {"concepts": counts["concepts"], "assertions": counts["assertions"],
                                                **counts["by_status"]}, lines, disputed)


class ProjectionView:
    """The projected files of one ontology: MEMORY.md plus `<concept key>.md`, rendered on demand."""

    def __init__(self, ontology: Ontology) -> None:
        self.ontology = ontology
        self._lock = threading.Lock()
        self._version: tuple[int, int, int] | None = None
        self._keys: list[str] = []
        self._cache: dict[str, bytes] = {}
        self._last_stamp: tuple[object, ...] = ()

    def _stamp(self) -> tuple[object, ...]:
        """Changes whenever a commit lands (WAL size/mtime) or the file is replaced (rebuild)."""
        out: list[object] = []
        for path in (self.ontology.paths.database, Path(f"{self.ontology.paths.database}-wal")):
            try:
                st = path.stat()
                out += [st.st_ino, st.st_mtime_ns, st.st_size]
            except OSError:
                out.append(None)
        return tuple(out)

    def _refresh(self, conn: sqlite3.Connection) -> None:
        version = graph_version(conn, self.ontology.paths.database)
        if version != self._version:
            self._version = version
            self._keys = [r[0] for r in conn.execute("SELECT key FROM concepts ORDER BY key")]
            self._cache = {}

    def _fresh(self) -> bool:
        """True when nothing was committed since the last check: serve from cache, no SQL at all."""
        stamp = self._stamp()
        if self._version is not None and stamp == self._last_stamp:
            return True
        self._last_stamp = stamp
        return False

    def names(self) -> list[str]:
        with self._lock:
            if not self._fresh():
                with self.ontology.reader() as conn:
                    self._refresh(conn)
            return [MEMORY_NAME] + [f"{key}.md" for key in self._keys if f"{key}.md" != MEMORY_NAME]

    def read(self, name: str) -> bytes | None:
        """The file's current bytes, or None if the projection has no such file."""
        with self._lock:
            if self._fresh() and name in self._cache:
                return self._cache[name]
            if not name.endswith(".md"):
                return None
            return self._render(name)

    def _render(self, name: str) -> bytes | None:
        with self.ontology.reader() as conn:
            self._refresh(conn)
            if name in self._cache:
                return self._cache[name]
            if name == MEMORY_NAME:
                data = render_memory(memory_snapshot(conn, self.ontology.slug)).encode("utf-8")
            elif name.endswith(".md") and name[:-3] in self._keys:
                concept = queries.concept(conn, name[:-3])
                data = render_topic(concept).encode("utf-8") if concept else None
            else:
                return None
            if data is not None:
                self._cache[name] = data
            return data


def materialize(view: ProjectionView, target: Path) -> list[str]:
    """`kgbridge project --to DIR`: write every projected file atomically; returns the names."""
    from ontology.archive import atomic_write

    names = view.names()
    for name in names:
        data = view.read(name)
        if data is not None:
            atomic_write(target / name, data, mode=0o644)
    return names
