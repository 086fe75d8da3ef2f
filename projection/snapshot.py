"""Read the graph into the plain data the renderers take. Standard library only (the hook uses it
for the SessionStart fallback), so it works on a plain sqlite3 connection.

Invariant: callers pass a connection inside one read transaction, so a snapshot is consistent. A
memory file is named by its own file name everywhere (`memory_files`); other concepts by their key.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from dataclasses import replace
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from ontology import queries
from ontology.extract import file_key
from ontology.normalize import case_apart
from ontology.schema import in_chunks
from ontology.scope import own_subject_fact
from projection.hostindex import parse_index
from projection.rank import ConceptStats, rank
from projection.render import MAX_LINES, RULE_TYPES, ConceptLine, DisputedLine, MemorySnapshot, clip, full_index_name
from projection.topic import MemoryTopic, Stand, Voice

MEMORY_NAME = "MEMORY.md"
SIDE_CHARS = 160  # each side of a dispute names its sources within this many characters
NOW_SAYS_CHARS = 100  # what a linked file says now, beside an index line it supersedes
_NON_WORD = re.compile(r"[\W_]+")


def graph_version(conn: sqlite3.Connection, database: Path) -> tuple[int, int, int]:
    last, count = conn.execute("SELECT coalesce(max(id), 0), count(*) FROM artifacts").fetchone()
    try:
        inode = database.stat().st_ino
    except OSError:
        inode = 0
    return int(last), int(count), inode


_SERIES_RE = re.compile(r"[\d\s_.-]+")


def source_name(identity: str) -> str:
    """A source as a reader knows it: the file name, `ledger <session>`, or the document's name."""
    kind, _, rest = identity.partition(":")
    if kind == "memory":
        return rest.rsplit("/", 1)[-1]
    if kind == "ledger":
        return f"ledger {rest.split('#', 1)[0]}"
    return rest or identity


def memory_files(conn: sqlite3.Connection) -> dict[str, str]:
    """Memory file name -> its concept key, for every memory file the graph holds."""
    return {r[0]: r[1] for r in conn.execute(
        "SELECT filename, concept FROM memory_files WHERE kind = 'memory' AND concept IS NOT NULL "
        "AND substr(filename, -3) = '.md' AND filename != ? ORDER BY filename", (MEMORY_NAME,))}


# The sources the agent reads under their own names: every memory file the projection shows (`memory_files`
# above) and the index. A deleted or renamed-away file is not among them, and holds no stance either.
_SHOWN_SOURCES = """SELECT source_id FROM memory_files WHERE (kind = 'memory' AND concept IS NOT NULL
    AND substr(filename, -3) = '.md' AND filename != 'MEMORY.md') OR (kind = 'memory_index' AND filename = 'MEMORY.md')"""

# Concepts that get a page of their own (`<key>.md`, and a line in MEMORY.md) when no memory file is theirs:
# a bare one (no claims), or one with a claim that a source the agent does NOT read under its own name holds
# (a ledger entry, a document). A concept whose every standing claim is held by shown files only, such as
# the concept of a file the agent merged into another or renamed (Write the new name, `rm` the old) and
# deleted, has nothing to add to those files: a page for it is the deleted file come back under a name the
# author never wrote (harm13). One whose every claim was withdrawn (its file deleted, ADR 0012) has none
# either. The caller leaves out concepts that have a memory file (they are shown under its name).
_HELD_UNSHOWN = f"""EXISTS (SELECT 1 FROM assertions a JOIN stances st ON st.assertion_id = a.id WHERE a.concept_id = c.id
               AND st.source_id NOT IN ({_SHOWN_SOURCES}))"""
PAGED_CONCEPTS = f"""SELECT c.key FROM concepts c WHERE NOT EXISTS (SELECT 1 FROM assertions a WHERE a.concept_id = c.id)
    OR {_HELD_UNSHOWN} ORDER BY c.key"""
# Memory files the graph had and no longer shows (deleted or renamed away, ADR 0012).
FORGOTTEN_FILES = """SELECT DISTINCT a.filename FROM artifacts a JOIN sources s ON s.id = a.source_id
    WHERE a.kind IN ('memory', 'tombstone') AND a.filename NOT IN (SELECT filename FROM memory_files)"""


def forgotten_keys(filenames: Iterable[str]) -> set[str]:
    """The concepts of memory files the agent deleted or renamed away: none gets a page, whatever a ledger
    entry or a document still says of it. Its page was the deleted file come back, often under its own
    name (`search.md`), listed "not in the index" and holding the file's old lines as withdrawn claims
    beside the ledger's (harm14); what the ledger says stays in search and kg_concept."""
    return {file_key(PurePosixPath(name).stem) for name in filenames}


def beside_a_file(key: str, folded_files: frozenset[str] | set[str]) -> bool:
    """Would the page of fileless concept `key` be named like a memory file but for case (`architecture.md`
    beside `Architecture.md`)? Such a page is a near-duplicate file the folder never had (and on a
    case-blind disk, macOS or Windows, the same name): none is made (ADR 0005, "Session 14 (case14)").
    `folded_files`: the memory files' names, casefolded."""
    return f"{key}.md".casefold() in folded_files


def _paged(conn: sqlite3.Connection, keys: Sequence[str]) -> set[str]:
    """Those of `keys` (concepts with claims) that PAGED_CONCEPTS gives a page: asked of these only, since a
    graph of memory files has few concepts without a file (the whole query is ~30 ms at 10k concepts)."""
    out: set[str] = set()
    for marks, chunk in in_chunks(sorted(keys)):
        out.update(r[0] for r in conn.execute(f"SELECT c.key FROM concepts c WHERE c.key IN ({marks}) AND {_HELD_UNSHOWN}",
                                              chunk))
    return out


def host_index_bytes(conn: sqlite3.Connection) -> bytes | None:
    """The newest MEMORY.md the host wrote, its bytes as written (BOM, CRLF and all), or None."""
    row = conn.execute("SELECT text, raw FROM memory_files WHERE kind = 'memory_index' AND filename = ?",
                       (MEMORY_NAME,)).fetchone()
    return None if row is None else bytes(row[1]) if row[1] is not None else row[0].encode("utf-8")


def host_index(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT text FROM memory_files WHERE kind = 'memory_index' AND filename = ?",
                       (MEMORY_NAME,)).fetchone()
    return row[0] if row else None


# A markdown file's name written anywhere in the index, as a word: what surrounds it (backticks, brackets,
# quotes, emphasis, punctuation) is markup, a folder before it a path.
_NAMED_RE = re.compile(r"[^\s`'\"()\[\]<>{}|,;:*]+\.md(?![\w.-])", re.IGNORECASE)


def _loose(filename: str) -> str:
    """`Feedback_X.md`, `feedback-x.md` and `feedback_x` name the same file in an index link; so do a
    link's `%20` and a space, and a composed and a decomposed `café` (macOS writes NFD names). Letters of
    every script count: an ASCII-only form made every Cyrillic or CJK name "", so one such index line
    found another file and the linked file was re-added as "not in the index"."""
    name = unicodedata.normalize("NFC", unquote(filename)).casefold().removesuffix(".md")
    return _NON_WORD.sub("-", name).strip("-") or name


def _marks(affirmed: int, contested: int, contradicted: int) -> str:
    parts = [f"{contested} disputed" if contested else "", f"{contradicted} superseded" if contradicted else "",
             f"{affirmed} confirmed" if affirmed else ""]
    return " · ".join(p for p in parts if p)


def _now_says(conn: sqlite3.Connection) -> dict[str, dict[str | None, str]]:
    """Concept key -> the index line its file supersedes (a later status, count or value than the line
    states: ADR 0009, "Index lines"), verbatim, -> what the file says now; the newest statement wins.
    A row without its line (a graph written before lines were kept, read before it is rebuilt: schema 26)
    marks nothing: which of the lines linking the file is stale is not known, and marking all of them
    tells the agent a current line is out of date (judge12)."""
    out: dict[str, dict[str, str]] = {}
    for key, line, text in conn.execute(
            """SELECT c.key, u.line, u.new_text FROM updates u JOIN assertions a ON a.id = u.newer_id
               JOIN concepts c ON c.id = a.concept_id WHERE u.rule = 'supersede:index' AND u.line IS NOT NULL
               ORDER BY u.id"""):
        if line.strip():
            out.setdefault(key, {})[line.strip()] = text
    return out


def _sides(rows: list[queries.EvidenceRow], stance: int) -> str:
    """The sources on one side, each with the day it states; a file that states none says so (the day it
    was ingested, a mount's first pass for a whole folder, says nothing about when it was written)."""
    names = ", ".join(f"{source_name(r.source)} {r.timestamp[:10] if r.stated else '(undated)'}"
                      for r in rows if r.stance == stance)
    return clip(names or "-", SIDE_CHARS)


def memory_snapshot(conn: sqlite3.Connection, ontology: str, limit: int = MAX_LINES) -> MemorySnapshot:
    """Rules first, then the rest, ranked, and the most conflicted real disputes, at most `limit` of
    each (a MEMORY.md of `limit` lines can never show more); the host's index verbatim, with the concept
    each of its links reaches; totals go to the footer."""
    # The `assertions` view's two tables, joined here by hand: as the right side of a LEFT JOIN the view
    # (itself a LEFT JOIN) cannot be flattened, and SQLite materialized all of it and built an automatic
    # index on it for every snapshot. The gist (column 10) is looked up only for a line shown without a
    # description (`line` below), not for every concept (BENCHMARKS "Session 14 — tests (ci14)").
    rows = conn.execute(
        """SELECT c.key, coalesce(c.title, c.name), coalesce(c.description, ''), c.updated_at, c.type,
                  coalesce(sum(v.belief), 0), coalesce(sum(v.n_pos + v.n_neg > 0), 0),
                  coalesce(sum(v.status = 'AFFIRMATIVE'), 0), coalesce(sum(v.status = 'CONTESTED'), 0),
                  coalesce(sum(v.status = 'CONTRADICTORY'), 0), NULL, count(r.id)
           FROM concepts c LEFT JOIN assertion_rows r ON r.concept_id = c.id
           LEFT JOIN verdicts v ON v.assertion_id = r.id GROUP BY c.id""").fetchall()
    degree = {r[0]: r[1] for r in conn.execute(
        """SELECT k, count(DISTINCT other) FROM (SELECT src AS k, dst AS other FROM relations
           UNION ALL SELECT dst, src FROM relations) GROUP BY k""")}
    files = memory_files(conn)
    file_of: dict[str, str] = {}
    for filename, key in files.items():
        file_of.setdefault(key, filename)
    # A bare hint (no claims, no file) says nothing; nor does a concept whose every claim was withdrawn
    # (its file deleted: ADR 0012), nor one whose claims only files shown under their own names hold (a
    # merged or renamed-away file's concept: PAGED_CONCEPTS).
    paged = _paged(conn, [r[0] for r in rows if r[6] and r[0] not in file_of])
    if paged:  # nearly always empty in a graph of memory files: the artifacts are scanned only then
        paged -= forgotten_keys(r[0] for r in conn.execute(FORGOTTEN_FILES))
        folded = {name.casefold() for name in files}
        paged = {key for key in paged if not beside_a_file(key, folded)}
    by_key = {r[0]: r for r in rows if r[0] in file_of or (r[6] and r[0] in paged)}

    def line(key: str, confirmed: bool = True) -> ConceptLine:  # built only for what a MEMORY.md can show
        r = by_key[key]
        gist = r[2] or _gist(conn, key) or ""
        return ConceptLine(key, file_of.get(key, f"{key}.md"), clip(r[1], 120), clip(gist, 200), r[4],
                           _marks(int(r[7]) if confirmed else 0, int(r[8]), int(r[9])))

    index = host_index(conn)
    indexed: dict[str, ConceptLine] = {}
    if index is not None:
        by_loose = {_loose(name): name for name in files}
        for block in parse_index(index):
            for target in block.targets:  # every file a line links is in the index, not only its first
                # The exact name first: `Deploy.md` and `deploy.md` are two files on a case-sensitive disk.
                name = target if target in files else by_loose.get(_loose(target))
                if name is not None and files[name] in by_key:
                    # No "N confirmed" on the author's own line: another memory file of the same folder
                    # restating a claim (a cross-reference's blurb, a boilerplate note) is no confirmation,
                    # and a count the agent cannot trace to a claim tells it nothing (ADR 0005).
                    indexed[target] = line(files[name], confirmed=False)
    # The author's line stays verbatim; where the linked file states a later value, the mark on the line
    # that states the old one says what the file says now. Another line linking the same file ("Owners:
    # [Mail](mail.md) — Dana") states nothing out of date and keeps its own marks (judge11).
    now_says = _now_says(conn) if indexed else {}
    line_marks: dict[tuple[str, str], str] = {}
    for target, c in list(indexed.items()):
        disputed = [m for m in c.marks.split(" · ") if m.endswith("disputed")]
        for stale, text in now_says.get(c.key, {}).items():
            line_marks[(target, stale)] = " · ".join([f"{c.file} now says “{clip(text, NOW_SAYS_CHARS)}”", *disputed])
    linked = {c.key for c in indexed.values()}
    if index is not None:
        # A file the author names in the index in other markup (`scratch.md` in a code span, a bare name,
        # a path) is in the index too: listing it "not in the index" contradicts the author (judge12).
        named = {_loose(PurePosixPath(name).name) for name in _NAMED_RE.findall(index)}
        linked |= {key for name, key in files.items() if _loose(name) in named}
    ranked = [s.key for s in rank([ConceptStats(r[0], float(r[5]), degree.get(r[0], 0), r[3])
                                   for r in by_key.values()]) if s.key not in linked]
    rules = [key for key in ranked if by_key[key][4] in RULE_TYPES]
    rest = [key for key in ranked if by_key[key][4] not in RULE_TYPES]
    ordered = [line(key) for key in (rules[:limit] + rest[:limit])[:limit]]
    # The OR form is the partial index's own condition (schema.verdicts_disputed); an IN list is not read as it.
    real = "(a.status = 'CONTESTED' OR a.status = 'CONTRADICTORY') AND a.n_for > 0 AND a.n_against > 0"
    # One line per dispute: the values of one slot ("db: postgres" / "db: mysql") are one disagreement.
    disputes, slots = [], set()
    for a in conn.execute(f"""SELECT a.id, c.key, a.text, a.status, a.slot FROM assertions a
                              JOIN concepts c ON c.id = a.concept_id WHERE {real} ORDER BY a.conflict DESC, a.id"""):
        if len(disputes) == limit:
            break
        if a[4] is None or a[4] not in slots:
            slots.add(a[4])
            disputes.append(a)
    evidence = queries.evidence_for(conn, [a[0] for a in disputes])
    disputed = [DisputedLine(_topic_of(a[1], evidence[a[0]], file_of, files, paged), clip(a[2], 200), a[3],
                             f"for: {_sides(evidence[a[0]], 1)} / against: {_sides(evidence[a[0]], -1)}")
                for a in disputes]
    n_disputed = conn.execute(f"SELECT count(DISTINCT coalesce(a.slot, '#' || a.id)) FROM assertions a "
                              f"WHERE {real}").fetchone()[0]
    # The header counts what stands: a claim every source withdrew (its file deleted, ADR 0012) and a
    # concept left with only such claims and no file are history, not memory.
    forgotten = sum(1 for r in rows if r[11] and not r[6] and r[0] not in file_of)
    by_status = dict(conn.execute(f"SELECT status, count(*) FROM assertions WHERE {queries.STANDING} GROUP BY status"))
    generated = max((r[3] for r in rows), default="")
    return MemorySnapshot(ontology, generated, {"concepts": len(rows) - forgotten, "assertions": sum(by_status.values()),
                                                **by_status}, ordered, disputed,
                          host_index=index, indexed=indexed, line_marks=line_marks, concepts_total=len(ranked),
                          disputed_total=n_disputed, full_index_name=full_index_name(files))


def _gist(conn: sqlite3.Connection, key: str) -> str | None:
    """The claim a concept's line shows when it has no description: its strongest one some source
    still states."""
    row = conn.execute("""SELECT (SELECT a.text FROM assertions a WHERE a.concept_id = c.id AND a.n_pos + a.n_neg > 0
                                  ORDER BY a.belief DESC, a.id LIMIT 1) FROM concepts c WHERE c.key = ?""",
                       (key,)).fetchone()
    return row[0] if row is not None else None


def _topic_of(key: str, rows: Sequence[queries.EvidenceRow], file_of: dict[str, str], files: dict[str, str],
              paged: set[str]) -> str:
    """The file a disputed line points to: the concept's memory file, or its page; a concept with no page
    (every claim held by files shown under their own names) points to the first such file that holds it."""
    if key in file_of or key in paged:
        return file_of.get(key, f"{key}.md")
    return next((r.filename for r in rows if r.stance == 1 and files.get(r.filename) is not None),
                next((r.filename for r in rows if files.get(r.filename) is not None), f"{key}.md"))


_ORDER = {Stand.SUPERSEDES: 0, Stand.DISPUTES: 1, Stand.AGREES: 2, Stand.ADDS: 3}


def memory_topic(conn: sqlite3.Connection, filename: str) -> MemoryTopic | None:
    """A memory file's newest text and what every other source says about its claims and subject."""
    return memory_topics(conn, [filename]).get(filename)


def memory_topics(conn: sqlite3.Connection, filenames: Sequence[str]) -> dict[str, MemoryTopic]:
    """`memory_topic` of each of `filenames` that is a memory file, in a fixed number of set queries
    (a listing of thousands of files must not cost a dozen queries per file)."""
    files: dict[str, tuple[str, int, str, str]] = {}  # filename -> (concept key, source id, text, identity)
    raws: dict[str, bytes] = {}  # filename -> its bytes as written, where they are not the UTF-8 of its text
    for marks, chunk in in_chunks(sorted(set(filenames))):
        for name, key, source_id, text, identity, raw in conn.execute(
                f"""SELECT m.filename, m.concept, m.source_id, m.text, s.identity, m.raw FROM memory_files m
                    JOIN sources s ON s.id = m.source_id WHERE m.kind = 'memory' AND m.filename IN ({marks})""", chunk):
            files[name] = (key, source_id, text, identity)
            if raw is not None:
                raws[name] = bytes(raw)
    if not files:
        return {}
    sources = sorted({f[1] for f in files.values()})
    own: dict[int, set[int]] = {}  # source -> assertions it takes a stance on
    versions: dict[int, list[tuple[int, str]]] = {}
    dropped: dict[int, dict[str, int]] = {}  # source -> claim it no longer makes -> since which version
    for marks, chunk in in_chunks(sources):
        for source_id, aid in conn.execute(
                f"SELECT source_id, assertion_id FROM stances WHERE source_id IN ({marks})", chunk):
            own.setdefault(source_id, set()).add(aid)
        for source_id, version, timestamp in conn.execute(
                f"""SELECT source_id, version, timestamp FROM artifacts WHERE source_id IN ({marks})
                    ORDER BY source_id, timestamp DESC, version DESC""", chunk):
            versions.setdefault(source_id, []).append((int(version), timestamp[:10]))
        for source_id, version, said in conn.execute(
                f"""SELECT h.source_id, ar.version, a.text FROM stance_history h
                    JOIN artifacts ar ON ar.id = h.artifact_id JOIN assertions a ON a.id = h.assertion_id
                    WHERE h.source_id IN ({marks}) AND h.stance = 0
                    AND NOT EXISTS (SELECT 1 FROM stances st WHERE st.source_id = h.source_id
                                    AND st.assertion_id = h.assertion_id)
                    ORDER BY h.timestamp DESC, h.id DESC""", chunk):
            dropped.setdefault(source_id, {}).setdefault(said, int(version))
    about: dict[str, set[int]] = {}  # concept key -> its assertions
    for marks, chunk in in_chunks(sorted({f[0] for f in files.values()})):
        for key, aid in conn.execute(f"""SELECT c.key, a.id FROM assertions a JOIN concepts c ON c.id = a.concept_id
                                         WHERE c.key IN ({marks})""", chunk):
            about.setdefault(key, set()).add(aid)
    wanted = sorted(set().union(*own.values(), *about.values()))
    texts: dict[int, str] = {}
    for marks, chunk in in_chunks(wanted):
        texts.update(conn.execute(f"SELECT id, text FROM assertions WHERE id IN ({marks})", chunk).fetchall())
    evidence = queries.evidence_for(conn, wanted)
    superseding: dict[int, list[queries.UpdateView]] = {}  # claim -> later revisions of it, in record order
    for update in queries.updates(conn, older=wanted):
        superseding.setdefault(update.older_id, []).append(update)  # type: ignore[arg-type]
    # A revision its own file revised again ("installed 3.22 (not 3.16)", then "upgraded to 3.24" in the same
    # file) is an intermediate version: (intermediate, later, file) pairs, so only the latest is shown.
    revised = {(u.older_id, u.newer_id, u.source) for u in queries.updates(
        conn, older={u.newer_id for us in superseding.values() for u in us if u.newer_id is not None})}
    return {name: replace(_memory_topic(name, key, text, identity, own.get(source_id, set()) | about.get(key, set()),
                                        texts, evidence, superseding, versions.get(source_id, []),
                                        dropped.get(source_id, {}), revised), raw=raws.get(name))
            for name, (key, source_id, text, identity) in files.items()}


def _states_too(rows: Iterable[queries.EvidenceRow], identity: str, other: str) -> bool:
    """Whether this file states the newer claim as the other source does: a copy of a file that revises
    its own claim is not superseded by the original's revision, nor the original by the copy's (blind8)."""
    stances = {r.source: r.stance for r in rows}
    return identity in stances and stances[identity] == stances.get(other)


def _case_differs(a: str, b: str) -> bool:
    """`userId` and `userID` are two names for code (judge12); the grouping keeps them apart too (judge14)."""
    return case_apart(a, b)


def _one_series(a: str, b: str) -> bool:
    """Whether two file names differ only by their digits and separators: one subject's dated series
    ("status_2026-04-01.md", "status_2026-04-08.md")."""
    return _SERIES_RE.sub("", a.rsplit(".", 1)[0]) == _SERIES_RE.sub("", b.rsplit(".", 1)[0])


def _memory_topic(filename: str, key: str, text: str, identity: str, ids: set[int], texts: dict[int, str],
                  evidence: dict[int, list[queries.EvidenceRow]], superseding: dict[int, list[queries.UpdateView]],
                  versions: list[tuple[int, str]], dropped: dict[str, int],
                  revised: set[tuple[int | None, int | None, str]]) -> MemoryTopic:
    voices: list[Voice] = []
    alone = 0
    for aid in sorted(ids):
        rows = evidence.get(aid)
        if rows is None:
            continue
        own = next((r for r in rows if r.source == identity), None)
        others = [r for r in rows if r.source != identity]
        if own is not None and not others:
            alone += 1
        for other in others:
            # "Supersedes" only on a later day that both files state: files ingested together (a mount's
            # first pass, a rebuild) differ by milliseconds of arrival, and an undated file delivered on a
            # later day says nothing about which is newer either (the voice would follow arrival order).
            stand = (Stand.ADDS if own is None else Stand.AGREES if other.stance == own.stance
                     else Stand.SUPERSEDES if other.stated and own.stated and other.timestamp[:10] > own.timestamp[:10]
                     else Stand.DISPUTES)
            if stand is Stand.AGREES and other.source.startswith("memory:") and own_subject_fact(own.text) \
                    and own_subject_fact(other.text) and not _one_series(filename, other.filename):
                # "Owner: search team" in two services' files is each file's own subject's (blind11); in a
                # dated series of one subject ("status_2026-04-01.md", "status_2026-04-08.md") it agrees.
                continue
            if stand is Stand.AGREES and _case_differs(own.text, other.text):
                continue  # `userId` and `userID` are two names for code: neither file confirms the other's
            voices.append(Voice(stand, texts.get(aid, ""), other.text, source_name(other.source), other.timestamp[:10],
                                other.stated))
    # A claim of this file that a later revision supersedes (ADR 0009): the revision says what holds now,
    # dated by the day it states (its own, its section's, its file's), never by when it was ingested.
    updates = sorted((u for aid in ids for u in superseding.get(aid, ())), key=lambda u: u.id)
    for u in updates:
        if any((u.newer_id, later.newer_id, u.source) in revised for later in updates
               if later.older_id == u.older_id and later.source == u.source and later.newer_id != u.newer_id):
            continue  # its own file revised it again, and that later revision is shown (judge12)
        if u.source != identity and not _states_too(evidence.get(u.newer_id or -1, ()), identity, u.source):
            voices.append(Voice(Stand.SUPERSEDES, texts.get(u.older_id, u.older_text or ""), u.new_text,
                                source_name(u.source), (u.date or u.received_at)[:10], u.date is not None))
    voices.sort(key=lambda v: (v.source, v.said))
    voices.sort(key=lambda v: v.date, reverse=True)  # newest first within each stand (sorts are stable)
    voices.sort(key=lambda v: _ORDER[v.stand])
    return MemoryTopic(filename, key, text, voices, versions, [(v, t) for t, v in dropped.items()], alone)
