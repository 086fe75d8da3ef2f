"""The single writer of one ontology's graph: applies artifacts' extractions inside a transaction.

Invariants: all or nothing per artifact (a savepoint inside a batch's BEGIN IMMEDIATE ... COMMIT);
a source holds one current stance per assertion (a newer version replaces it, an older one arriving
late only joins history); every observation and withdrawal is kept in `stance_history`; stances change
only through `set_stances`, which moves the stored evidence aggregates by the same delta, and labels are
recomputed from those aggregates for every assertion whose evidence changed and its slot rivals.
Values written come from the artifact and its archive record only, never the wall clock, so a rebuild
is identical.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Iterable, Iterator, Mapping

from ontology import aggregate, queries, search, supersession, timeline
from ontology.aggregate import Held, Term
from ontology.artifact import Artifact, Kind
from ontology.clock import utc_text
from ontology.evidence import RELIABILITY, SourceKind, weight_units
from ontology.extract import ConceptDecl, Extraction, Statement, fold_key
from ontology.timeline import FILE_SUBJECT, IDENTIFIER_SUBJECT, Said
from ontology.neardup import NearDuplicateIndex
from ontology.schema import in_chunks

# Which concept owns an assertion that several concepts state: a memory file over a document over a
# ledger section, so a topic file shows what its own memory says.
_OWNER_RANK = {"section": 1, "ledger": 1, "document": 2}
# Rows of one subject read to derive its supersessions: the newest this many (bounded work per ingest
# however often a subject is restated, e.g. a version in every ledger entry).
MAX_SUBJECT_ROWS = 400
# Key prefix of the derived "`x` is in use" assertions: no extracted proposition key starts with it.
_IN_USE_KEY = "\x00in-use\x00"


@dataclass(frozen=True)
class Applied:
    artifact_id: int
    version: int
    current: bool  # False when an older version arrived after a newer one
    assertions: int  # statements applied
    touched: int  # assertions re-weighed


def _many(conn: sqlite3.Connection, sql: str, rows: list[tuple[object, ...]]) -> None:
    """`executemany`, skipped when there are no rows: an empty call still looks its statement up and
    resets it, and a single POST makes about ten of them (apply11)."""
    if rows:
        conn.executemany(sql, rows)


def normalize_ts(value: str | None, fallback: str) -> str:
    """An ISO timestamp in UTC with fixed width, so that string order is time order."""
    for candidate in (value, fallback):
        if not candidate:
            continue
        try:
            parsed = datetime.fromisoformat(candidate.strip().replace("Z", "+00:00"))
        except ValueError:
            continue
        return utc_text(parsed)
    return fallback


def source_kind(artifact: Artifact) -> SourceKind:
    if artifact.kind is Kind.LEDGER:
        return SourceKind.LEDGER
    if artifact.kind is Kind.DOCUMENT:
        return SourceKind.DOCUMENT
    if artifact.kind in (Kind.MEMORY, Kind.MEMORY_INDEX):
        return SourceKind(artifact.memory_type) if artifact.memory_type else SourceKind.MEMORY
    if artifact.kind is Kind.TOMBSTONE:
        return SourceKind.MEMORY  # only when the file was never seen: a source already known keeps its kind
    raise AssertionError(f"unhandled kind {artifact.kind}")


def _owner_rank(concept_type: str) -> int:
    return _OWNER_RANK.get(concept_type, 3)


def newest_sha(conn: sqlite3.Connection, identity: str) -> str | None:
    """The sha256 of the source's newest version, None for a source the graph does not know."""
    row = conn.execute("SELECT a.sha256 FROM artifacts a JOIN sources s ON s.id=a.source_id WHERE s.identity=? "
                       "ORDER BY a.id DESC LIMIT 1", (identity,)).fetchone()
    return row[0] if row else None


class GraphWriter:
    """Owns the write connection; callers serialize through the ontology's writer lock."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.near = NearDuplicateIndex(conn)
        # Within one artifact, the concept each key was last upserted from and its id: upserting the
        # same declaration again (a memory file's concept, once per statement) changes nothing.
        self._upserted: dict[str, tuple[ConceptDecl, int]] = {}
        # Search-index writes, held until the transaction's end (`_index_pending`): FTS5 flushes what it
        # holds into a new segment at every savepoint, so written per artifact they made a segment per
        # artifact, each merged again later. Held here: the artifact's own until its savepoint is
        # released (a rolled-back artifact's are dropped), then the batch's, applied in order.
        self._search_artifact: list[tuple[bool, int, object, bool]] = []
        self._search_batch: list[tuple[bool, int, object, bool]] = []
        self._concept_fields: dict[int, tuple[str, str, str, str]] = {}  # held fields, newest, per concept
        # Per assertion, the change of its direct aggregates (w_pos, n_pos, w_neg, n_neg, w_cross, n_cross)
        # that this artifact's stance changes make, held until `_reweigh` reads the row anyway and writes
        # it once with its verdict: one read-modify-write per row instead of an UPDATE by delta, then a
        # read, then an UPDATE of the verdict (apply13). Empty outside `_apply` / `_forget`.
        self._verdict_deltas: dict[int, list[int]] = {}
        # Within one artifact (`_apply`): the owning concept of each assertion its statements may restate
        # and the type of each concept involved, read for all of them in one statement before the
        # statements are applied and kept current as the artifact moves owners or writes concepts, so
        # that `_maybe_move_owner` reads nothing for a claim the graph already knew (apply13).
        self._owners: dict[int, int] = {}
        self._types: dict[int, str] = {}
        # Each source's (reliability, kind), as `_record` read it: set once when the source is created.
        self._source_meta: dict[int, tuple[float, str]] = {}
        # Within one artifact (`_apply`): the lower-cased keys its headings, mentions, wikilinks and links
        # name that reach a file whose key keeps capitals, to that file's (key, id, type) (`_case_targets`).
        self._case: dict[str, tuple[str, int, str]] = {}
        # Within one transaction: the lower-cased keys `case_keys` files a key under (None: not read yet). A
        # prefilter only: what a key reaches is read from the graph when an artifact names one of these.
        self._folds: set[str] | None = None

    def seen(self, identity: str, sha256: str) -> bool:
        """A duplicate: the same bytes as the source's newest version. Older bytes coming back (an edit
        A -> B -> A, a file restored after its tombstone, ADR 0012) are its next version, so the graph
        follows the file."""
        return newest_sha(self.conn, identity) == sha256

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction: everything inside commits together or not at all."""
        self.conn.execute("BEGIN IMMEDIATE")
        self._folds = None  # another writer may have committed since
        try:
            self.near.begin()
            yield
            self._index_pending()
            self.near.settle()
        except BaseException:
            self._search_artifact.clear()
            self._search_batch.clear()
            self._concept_fields.clear()
            self._folds = None
            self.near.forget()  # rolled-back ids may be handed out again
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def apply(self, artifact: Artifact, extraction: Extraction, channel: str, received_at: str, *,
              alone: bool = False) -> Applied:
        """Apply one artifact inside the open transaction, all or nothing (a savepoint), so a batch
        can keep going past an artifact that fails. `alone`: nothing else was written in this
        transaction and nothing else will be (one POST): no savepoint, whose copies of the pages it
        dirtied and RELEASE were about 3 % of a single POST's work; a failure rolls the transaction
        back and opens a new one, which undoes exactly what the savepoint would have."""
        conn = self.conn
        if not alone:
            conn.execute("SAVEPOINT artifact")
        try:
            result = self._apply(artifact, extraction, channel, received_at)
        except BaseException:
            self._verdict_deltas.clear()
            self._clear_artifact_state()
            self._folds = None  # a rolled-back artifact's `case_keys` rows are gone
            self.near.forget()  # rolled-back ids may be handed out again
            self._search_artifact.clear()
            self._concept_fields = {op[1]: op[2] for op in self._search_batch if not op[0]}  # type: ignore[misc]
            if conn.in_transaction:
                if alone:
                    conn.execute("ROLLBACK")
                    conn.execute("BEGIN IMMEDIATE")  # the caller's transaction goes on, empty
                else:
                    conn.execute("ROLLBACK TO artifact")
                    conn.execute("RELEASE artifact")
            raise
        if not alone:
            conn.execute("RELEASE artifact")
        self._search_batch.extend(self._search_artifact)
        self._search_artifact.clear()
        return result

    def _clear_artifact_state(self) -> None:
        """What one artifact's apply holds about rows it read: never carried to another artifact (a
        rolled-back source's id may be handed out again, with another kind)."""
        self._owners.clear()
        self._types.clear()
        self._source_meta.clear()
        self._case.clear()

    def _index_assertion(self, assertion_id: int, text: str, *, replace: bool) -> None:
        self._search_artifact.append((True, assertion_id, text, replace))

    def _index_concept(self, concept_id: int, fields: tuple[str, str, str, str], *, replace: bool) -> None:
        self._search_artifact.append((False, concept_id, fields, replace))
        self._concept_fields[concept_id] = fields

    def _index_pending(self) -> None:
        """Apply the held search-index writes, in the order they were made (ADR 0007, "Session 6")."""
        for is_assertion, row_id, value, replace in self._search_batch:
            if is_assertion:
                search.index_assertion(self.conn, row_id, value, replace=replace)  # type: ignore[arg-type]
            else:
                search.index_concept(self.conn, row_id, value, replace=replace)  # type: ignore[arg-type]
        self._search_batch.clear()
        self._concept_fields.clear()

    def applied_log_offset(self) -> int:
        """How far into the archive log this graph has applied (0 for a graph that never recorded it)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key='log_applied'").fetchone()
        return int(row[0]) if row else 0

    def record_log_offset(self, offset: int) -> None:
        # An upsert changes the row in place; INSERT OR REPLACE deleted and re-inserted it, which also
        # rewrote its key index: one more page per commit, for every single POST.
        self.conn.execute("INSERT INTO meta(key, value) VALUES('log_applied', ?) "
                          "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (str(offset),))

    # -- steps, all inside the transaction ------------------------------------------------------

    def _record(self, artifact: Artifact, extraction: Extraction, channel: str, received_at: str,
                ts: str) -> tuple[int, int, int, str | None, str | None]:
        """The artifact's row under its source (created on first sight): (source id, artifact id,
        version, the source's current timestamp and deletion time before this artifact)."""
        conn = self.conn
        kind = source_kind(artifact)
        conn.execute("INSERT OR IGNORE INTO sources(identity, kind, reliability) VALUES(?,?,?)",
                     (artifact.source_identity, kind.value, RELIABILITY[kind]))
        # The source's row and its next version number in one statement (apply11: each statement is
        # ~5-10 µs of a single POST's fixed cost whatever it reads).
        source_id, current_ts, deleted_at, version, reliability, kind_value = conn.execute(
            "SELECT id, current_ts, deleted_at, (SELECT count(*) + 1 FROM artifacts WHERE source_id=sources.id), "
            "reliability, kind FROM sources WHERE identity=?", (artifact.source_identity,)).fetchone()
        self._source_meta[source_id] = (reliability, kind_value)
        artifact_id = conn.execute(
            "INSERT INTO artifacts(sha256, source_id, filename, kind, channel, version, timestamp, received_at, notes)"
            " VALUES(?,?,?,?,?,?,?,?,?)",
            (artifact.sha256, source_id, artifact.filename, artifact.kind.value, channel, version, ts, received_at,
             "; ".join(artifact.notes + (("statements truncated",) if extraction.truncated else ())))).lastrowid
        return source_id, artifact_id, version, current_ts, deleted_at

    def _forget(self, artifact: Artifact, extraction: Extraction, channel: str, received_at: str) -> Applied:
        """A tombstone: the file is gone, so its source withdraws every current stance (kept in history
        as stance 0 under this artifact) and its text leaves the projection. Always current: the
        bridge sends events in the order they happened on disk, whatever the files' own dates say."""
        self._clear_artifact_state()
        ts = normalize_ts(artifact.timestamp, received_at)
        source_id, artifact_id, version, _, _ = self._record(artifact, extraction, channel, received_at, ts)
        touched = self._withdraw(source_id, artifact_id, ts)
        self._reweigh(touched, ts)
        return Applied(artifact_id, version, True, 0, len(touched))

    def _withdraw(self, source_id: int, artifact_id: int, ts: str) -> set[int]:
        _, others = self._identifier_stances(source_id, artifact_id, {}, ts, additive=False)  # its words go too
        held = self._held(source_id)
        touched = self.set_stances(source_id, artifact_id, ts, dict.fromkeys(held), held=held)
        for other, changes in sorted(others.items()):
            touched |= self.set_stances(other, self._last_artifact(other), ts, changes)
        self.conn.execute("UPDATE sources SET current_artifact=?, current_ts=max(coalesce(current_ts, ?), ?), "
                          "deleted_at=? WHERE id=?", (artifact_id, ts, ts, ts, source_id))
        self.conn.execute("DELETE FROM relations WHERE source_id=?", (source_id,))
        self.conn.execute("DELETE FROM memory_files WHERE source_id=?", (source_id,))
        self.clear_updates(source_id)  # its revisions go, and no claim of it is superseded any more
        self._timed_facts(source_id, artifact_id, None, [], None, additive=False)  # what it said goes
        return touched

    # -- updates and supersession (ADR 0009; the table `updates`) -------------------------------

    def record_update(self, source_id: int, artifact_id: int, rule: str, newer_id: int | None, old_text: str,
                      new_text: str, *, older_id: int | None = None, older_source_id: int | None = None,
                      subject: str | None = None, line: str | None = None, date: str | None = None) -> bool:
        """Record that assertion `newer_id` (stated by `source_id` in `artifact_id`) updates something:
        `older_id`, a claim of `older_source_id` it supersedes, or (None) an old value its own wording
        names (`old_text`). `rule` names the rule that found it ("revision:from_to", …); old_text and
        new_text are what a reader sees on each side. Rows are owned by both sources: `clear_updates`
        of either removes them, and the writer calls it before re-deriving a source's updates on each
        current version and on a tombstone. `subject` marks a supersession across sources derived from
        the timed_facts index (`_supersede` replaces those per subject). Returns False for a row already
        recorded. Updates are history, not stances: the evidence aggregates and labels never read them.
        `newer_id` is None only for a revision the index states with no claim behind it; `line` is then
        that index line verbatim, as it is for a stale index line (`supersede:index`: the one line marked). `date` is the day the newer side states (its own, its section's or its
        file's), None when it states none: what a reader is shown beside the update, never when it arrived."""
        conn = self.conn
        # Per subject: one pair superseded for two subjects is two rows, so that re-deriving one subject
        # (`_supersede` deletes its rows) leaves the other's (readers show the pair once: queries.updates).
        if conn.execute("SELECT 1 FROM updates WHERE source_id=? AND newer_id IS ? AND older_id IS ? AND rule=? "
                        "AND old_text=? AND new_text=? AND subject IS ?",
                        (source_id, newer_id, older_id, rule, old_text, new_text, subject)).fetchone():
            return False
        conn.execute("INSERT INTO updates(source_id, artifact_id, newer_id, older_id, older_source_id, rule, "
                     "old_text, new_text, subject, line, date) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                     (source_id, artifact_id, newer_id, older_id, older_source_id, rule, old_text, new_text, subject,
                      line if newer_id is None or rule == timeline.Rule.INDEX.value else None, date))
        return True

    def clear_updates(self, source_id: int, *, keep_own: bool = False) -> None:
        """Remove the updates a source records and those that supersede one of its claims (its own
        are kept for a ledger, whose entries add up)."""
        if not keep_own:
            self.conn.execute("DELETE FROM updates WHERE source_id=?", (source_id,))
        self.conn.execute("DELETE FROM updates WHERE older_source_id=? AND source_id!=?", (source_id, source_id))

    def _derive_updates(self, source_id: int, artifact_id: int, extraction: Extraction, statement_ids: list[int],
                        *, additive: bool) -> None:
        """The source's self-stated revisions, then the claims of other sources that state the old
        value of a revision (either side may have arrived first: both directions are re-read)."""
        self.clear_updates(source_id, keep_own=additive)
        for statement, newer_id in zip(extraction.statements, statement_ids):
            for revision in statement.revisions:
                older = statement_ids[revision.older] if revision.older is not None else None
                self.record_update(source_id, artifact_id, supersession.rule_name(revision.rule), newer_id,
                                   revision.old, revision.new, older_id=older,
                                   older_source_id=source_id if older is not None else None, date=statement.date)
        for line, revision in extraction.index_revisions:  # index prose: no claim on the newer side
            self.record_update(source_id, artifact_id, supersession.rule_name(revision.rule), None, revision.old,
                               revision.new, line=line, date=timeline.statement_date(line))
        for match in supersession.matches(self.conn, source_id):
            self.record_update(match.source_id, match.artifact_id, match.rule, match.newer_id, match.old_text,
                               match.new_text, older_id=match.older_id, older_source_id=match.older_source_id,
                               date=match.date)

    def _rekey(self, artifact: Artifact, extraction: Extraction) -> int | None:
        """A move: the old file's source takes the new name (one source, its history kept), and its
        concept the new key. Returns the old source when the new name is already a source of its
        own (delivered before the move was seen): that one is retired by the caller instead."""
        conn = self.conn
        old = conn.execute("SELECT id FROM sources WHERE identity=?", (artifact.moved_from,)).fetchone()
        if old is None or artifact.moved_from == artifact.source_identity:
            return None
        if conn.execute("SELECT 1 FROM sources WHERE identity=?", (artifact.source_identity,)).fetchone():
            return int(old[0])
        row = conn.execute("SELECT concept FROM memory_files WHERE source_id=? AND kind='memory'", (old[0],)).fetchone()
        conn.execute("UPDATE sources SET identity=? WHERE id=?", (artifact.source_identity, old[0]))
        conn.execute("DELETE FROM memory_files WHERE source_id=?", (old[0],))  # re-kept under the new name
        new_key = extraction.concepts[0].key if extraction.concepts else None
        if row and row[0] and new_key and row[0] != new_key and not conn.execute(
                "SELECT 1 FROM concepts WHERE key=?", (new_key,)).fetchone():
            conn.execute("UPDATE concepts SET key=? WHERE key=?", (new_key, row[0]))
            conn.execute("UPDATE OR IGNORE relations SET src=? WHERE src=?", (new_key, row[0]))
            conn.execute("UPDATE OR IGNORE relations SET dst=? WHERE dst=?", (new_key, row[0]))
            if fold_key(new_key) != new_key:  # moved to a name with capitals: reached by its lower-cased key
                conn.execute("INSERT OR IGNORE INTO case_keys(fold, key) VALUES(?,?)", (fold_key(new_key), new_key))
                if self._folds is not None:
                    self._folds.add(fold_key(new_key))
        return None

    def _apply(self, artifact: Artifact, extraction: Extraction, channel: str, received_at: str) -> Applied:
        if artifact.kind is Kind.TOMBSTONE:
            return self._forget(artifact, extraction, channel, received_at)
        conn = self.conn
        ts = normalize_ts(artifact.timestamp, received_at)
        self._upserted.clear()  # another artifact: another timestamp to record
        self._clear_artifact_state()
        retired = self._rekey(artifact, extraction) if artifact.moved_from else None
        source_id, artifact_id, version, current_ts, deleted_at = self._record(
            artifact, extraction, channel, received_at, ts)
        # A file back after its tombstone is what stands now, whatever date its frontmatter carries; so are
        # bytes this source had before (a revert A -> B -> A: `git checkout`, a backup, an undo), which bring
        # their old `modified:` back with them (blind14: the agent read B while the folder held A). An older
        # date on bytes never seen is a late delivery and stays history.
        current = deleted_at is not None or current_ts is None or ts >= current_ts or conn.execute(
            "SELECT 1 FROM artifacts WHERE source_id=? AND sha256=? AND id<? LIMIT 1",
            (source_id, artifact.sha256, artifact_id)).fetchone() is not None

        if artifact.kind in (Kind.MEMORY, Kind.MEMORY_INDEX):
            for decl in extraction.concepts:  # ledger and document sections appear only when used
                self._upsert_concept(decl, ts)
        self._case = self._case_targets(extraction)
        observed: dict[int, tuple[int, str]] = {}
        identifiers: dict[str, tuple[int, str, int, str | None]] = {}
        statement_ids: list[int] = []
        known = self._assertion_ids([statement.proposition.key for statement in extraction.statements])
        self._read_owners(known.values())
        for statement in extraction.statements:
            concept_id = self._resolve_concept(statement, extraction, ts)
            assertion_id = self._assertion_for(statement, concept_id, ts, known)
            statement_ids.append(assertion_id)
            observed[assertion_id] = (statement.proposition.polarity, statement.text)  # last word wins
            for ident, stance in statement.identifiers:  # a removal outweighs the source's own mentions
                if ident not in identifiers or stance < identifiers[ident][0]:
                    identifiers[ident] = (int(stance), statement.text, concept_id, next(
                        (f.date for f in statement.facts if f.subject == IDENTIFIER_SUBJECT + ident), None))
        others: dict[int, dict[int, tuple[int, str] | None]] = {}
        if current:
            derived, others = self._identifier_stances(source_id, artifact_id, identifiers, ts,
                                                       additive=artifact.kind is Kind.LEDGER)
            observed.update(derived)
        _many(conn, "INSERT INTO stance_history(assertion_id, source_id, artifact_id, stance, text, timestamp)"
                         " VALUES(?,?,?,?,?,?)", [(assertion_id, source_id, artifact_id, stance, text, ts)
                                                  for assertion_id, (stance, text) in observed.items()])

        touched: set[int] = set()
        if current:
            touched = self._replace_stances(source_id, artifact_id, observed, ts,
                                            additive=artifact.kind is Kind.LEDGER)
            for other, changes in sorted(others.items()):  # the other source's word, from its current artifact
                touched |= self.set_stances(other, artifact_id if other == source_id else self._last_artifact(other),
                                            ts, changes)
            conn.execute("UPDATE sources SET current_artifact=?, current_ts=?, deleted_at=NULL WHERE id=?",
                         (artifact_id, ts, source_id))
            if artifact.kind is not Kind.LEDGER:
                conn.execute("DELETE FROM relations WHERE source_id=?", (source_id,))
            case = self._case
            _many(conn, "INSERT OR IGNORE INTO relations(src, dst, kind, source_id) VALUES(?,?,?,?)",
                             [(case[r.src][0] if r.src in case else r.src, case[r.dst][0] if r.dst in case else r.dst,
                               r.kind, source_id) for r in extraction.relations])
            if artifact.kind in (Kind.MEMORY, Kind.MEMORY_INDEX):
                self._keep_memory_file(artifact, extraction, source_id, artifact_id, ts)
            self._derive_updates(source_id, artifact_id, extraction, statement_ids,
                                 additive=artifact.kind is Kind.LEDGER)
            owner = extraction.concepts[0].key if artifact.kind is Kind.MEMORY and extraction.concepts else None
            self._timed_facts(source_id, artifact_id, extraction, statement_ids, owner,
                              additive=artifact.kind is Kind.LEDGER)  # after _derive_updates: it clears our rows too
        if retired is not None:
            touched |= self._withdraw(retired, artifact_id, ts)
        self._reweigh(touched | set(observed), ts)
        return Applied(artifact_id, version, current, len(observed), len(touched))

    def _identifier_stances(self, source_id: int, artifact_id: int, found: Mapping[str, tuple[int, str, int, str | None]],
                            ts: str, *, additive: bool) -> tuple[dict[int, tuple[int, str]], dict[int, dict[int, tuple[int, str] | None]]]:
        """Record the source's identifier stances and pair removals with uses of other sources (ADR 0009).

        For every identifier the source named before or names now, the "`x` is in use" assertion holds
        exactly the stances of the index when some source removes it and another names it, else none.
        Returns the source's own derived stances (to join its observed ones) and the changes of other
        sources, by source: {assertion: (stance, text) | None}."""
        conn = self.conn
        old = {r[0]: r[1:] for r in conn.execute(
            "SELECT ident, stance, text, concept_id, date FROM identifier_stances WHERE source_id=?", (source_id,))}
        new = dict(found)
        if additive:
            for ident, row in old.items():
                if ident not in new or row[0] < new[ident][0]:
                    new[ident] = row
        conn.execute("DELETE FROM identifier_stances WHERE source_id=?", (source_id,))
        _many(conn, "INSERT INTO identifier_stances(ident, source_id, stance, artifact_id, concept_id, text, date)"
                         " VALUES(?,?,?,?,?,?,?)", [(ident, source_id, stance, artifact_id, concept_id, text, date)
                                                    for ident, (stance, text, concept_id, date) in sorted(new.items())])
        own: dict[int, tuple[int, str]] = {}
        others: dict[int, dict[int, tuple[int, str] | None]] = {}
        for ident in sorted(old.keys() | new.keys()):
            rows = conn.execute("SELECT source_id, stance, text, artifact_id, concept_id, date FROM identifier_stances "
                                "WHERE ident=? ORDER BY source_id", (ident,)).fetchall()
            removed, used = [r[5] for r in rows if r[1] < 0], [r[5] for r in rows if r[1] > 0]
            paired = bool(removed and used) and not timeline.removal_is_later(removed, used) \
                and not timeline.restored_after(removed, used)
            # dated: a removal after every use supersedes them; a use after every removal (a restore) is
            # what holds now, as in one file (extract._undone_removals; blind9)
            key = _IN_USE_KEY + ident
            existing = conn.execute("SELECT id FROM assertions WHERE key=?", (key,)).fetchone()
            if existing is None and not paired:
                continue
            if existing is None:
                concept_id = next(r[4] for r in rows if r[1] < 0)
                text = f"`{ident}` is in use"
                assertion_id = self._insert_assertion(concept_id, key, text, 1, ident, 1, None, None, ts)
                self._index_assertion(assertion_id, text, replace=False)
            else:
                assertion_id = existing[0]
            held = {r[0]: r[1] for r in conn.execute(
                "SELECT source_id, stance FROM stances WHERE assertion_id=?", (assertion_id,))}
            wanted = {r[0]: r for r in rows} if paired else {}
            for other in sorted(held.keys() | wanted.keys()):
                if other == source_id:
                    if other in wanted:
                        own[assertion_id] = (wanted[other][1], wanted[other][2])
                    elif additive:  # a ledger withdraws nothing by omission: say it
                        others.setdefault(other, {})[assertion_id] = None
                elif other not in wanted:
                    others.setdefault(other, {})[assertion_id] = None
                elif held.get(other) != wanted[other][1]:
                    others.setdefault(other, {})[assertion_id] = (wanted[other][1], wanted[other][2])
        return own, others

    # -- supersession across sources (ADR 0009; ontology.timeline) -------------------------------------

    def _timed_facts(self, source_id: int, artifact_id: int, extraction: Extraction | None, statement_ids: list[int],
                     owner: str | None, *, additive: bool) -> None:
        """Record what the source says that varies in time (versions, counts, statuses, metrics, its
        summary and marker, its index lines, links said as current), then re-derive the supersessions
        of every subject it said something about before or says now, in both directions: the result
        depends on the index only, not on which source arrived first. None withdraws it all."""
        conn = self.conn
        before = conn.execute("SELECT subject, kind, extra FROM timed_facts WHERE source_id=?", (source_id,)).fetchall()
        subjects = {r[0] for r in before}
        if not additive:
            conn.execute("DELETE FROM timed_facts WHERE source_id=?", (source_id,))
        rows = _timed_rows(source_id, extraction, statement_ids, owner,
                           {r: k for r, (k, _, _) in self._case.items()}) if extraction is not None else []
        _many(conn, "INSERT INTO timed_facts(subject, kind, value, date, upgrade, source_id, assertion_id, owner, "
                         "text, hook, extra) VALUES(?,?,?,?,?,?,?,?,?,?,?)", rows)
        subjects.update(r[0] for r in rows)
        summaries = [r[2] for r in before if r[1] == "summary"] + [str(r[10]) for r in rows if r[1] == "summary"]
        if summaries:  # this file's summary may be (or have been) the successor another file's marker names
            subjects.update(subject for subject, phrase in conn.execute(
                "SELECT DISTINCT subject, extra FROM timed_facts WHERE kind='marker' AND extra != ''")
                if any(timeline.successor_matches(phrase, text) for text in summaries))
        for subject in sorted(subjects):
            self._supersede(subject, artifact_id)

    def _supersede(self, subject: str, artifact_id: int) -> None:
        """Replace the updates derived for one subject with what its index rows say now."""
        conn = self.conn
        conn.execute("DELETE FROM updates WHERE subject=?", (subject,))
        said = [Said(r[0], r[1], r[2], bool(r[3]), r[4], r[5], r[6], r[7], bool(r[8]), r[9]) for r in conn.execute(
            "SELECT kind, value, date, upgrade, source_id, assertion_id, owner, text, hook, extra FROM timed_facts "
            "WHERE subject=? ORDER BY rowid DESC LIMIT ?", (subject, MAX_SUBJECT_ROWS))][::-1]
        if not said:
            return
        if subject.startswith(FILE_SUBJECT):
            summaries = [Said(r[0], r[1], r[2], bool(r[3]), r[4], r[5], r[6], r[7], bool(r[8]), r[9]) for r in conn.execute(
                "SELECT kind, value, date, upgrade, source_id, assertion_id, owner, text, hook, extra FROM timed_facts "
                "WHERE kind='summary' AND assertion_id IS NOT NULL ORDER BY rowid")] \
                if any(s.kind == "marker" and s.extra for s in said) else []
            pairs = timeline.file_updates(said, summaries)
            self._stale_lines(said)
            for summary, hook in timeline.hook_revisions(said):  # no summary: the linked file is not here
                old_text, new_text, line = (hook.extra.split("\n", 2) + ["", ""])[:3]
                self.record_update(hook.source, self._last_artifact(hook.source), hook.value,
                                   summary.assertion if summary is not None else None, old_text,
                                   new_text or hook.text, subject=subject, line=line or hook.text,
                                   date=timeline.statement_date(hook.text))
        else:
            pairs = timeline.value_updates(said)
        for newer, older, rule in pairs:
            assert newer.assertion is not None
            self.record_update(newer.source, self._last_artifact(newer.source), rule.value, newer.assertion,
                               older.text, newer.text, older_id=older.assertion, older_source_id=older.source,
                               subject=subject, line=older.extra if older.hook and older.extra else None,
                               date=newer.date)

    def _stale_lines(self, said: list[Said]) -> None:
        """An index line that echoes its file's description where both still state the old value of a
        revision the file records is stale: the revising statement supersedes it (`supersede:index`,
        shown as "now says" in MEMORY.md; ADR 0009, "Session 10")."""
        summary = next((s for s in said if s.kind == "summary" and s.assertion is not None), None)
        if summary is None:
            return
        for line in (s for s in said if s.kind == timeline.LINE):
            found = supersession.stale_line(self.conn, summary.source, summary.text, line.text, line.date)
            if found is not None:
                self.record_update(summary.source, self._last_artifact(summary.source), timeline.Rule.INDEX.value,
                                   found.newer_id, line.text, found.new_text, older_source_id=line.source,
                                   subject=FILE_SUBJECT + str(summary.owner), line=line.extra or None,
                                   date=found.date)

    def _last_artifact(self, source_id: int) -> int:
        return self.conn.execute("SELECT current_artifact FROM sources WHERE id=?", (source_id,)).fetchone()[0]

    def _keep_memory_file(self, artifact: Artifact, extraction: Extraction, source_id: int, artifact_id: int,
                          ts: str) -> None:
        """The newest version of a memory file (or the index) is what the projection shows verbatim."""
        concept = extraction.concepts[0].key if artifact.kind is Kind.MEMORY and extraction.concepts else None
        self.conn.execute("INSERT OR REPLACE INTO memory_files(filename, kind, concept, source_id, artifact_id, "
                          "timestamp, text, raw) VALUES(?,?,?,?,?,?,?,?)",
                          (artifact.filename, artifact.kind.value, concept, source_id, artifact_id, ts, artifact.text,
                           artifact.raw))

    def _upsert_concept(self, decl: ConceptDecl, ts: str) -> int:
        last = self._upserted.get(decl.key)
        if last is not None and last[0] == decl:
            return last[1]  # the row already holds what this declaration writes
        concept_id = self._write_concept(decl, ts)
        self._upserted[decl.key] = (decl, concept_id)
        return concept_id

    def _write_concept(self, decl: ConceptDecl, ts: str) -> int:
        conn = self.conn
        row = conn.execute("SELECT id, authoritative, name, title, description, type FROM concepts WHERE key=?",
                           (decl.key,)).fetchone()
        if row is None and fold_key(decl.key) != decl.key and self._adopt(fold_key(decl.key), decl.key):
            row = conn.execute("SELECT id, authoritative, name, title, description, type FROM concepts WHERE key=?",
                               (decl.key,)).fetchone()
        # The searchable fields the row holds after the write, from what it held and what is written (the
        # UPDATEs' coalesce, in Python), instead of reading the row back (apply13).
        if row is None:
            concept_id = conn.execute(
                "INSERT INTO concepts(key, name, type, title, description, authoritative, created_at, updated_at)"
                " VALUES(?,?,?,?,?,?,?,?)", (decl.key, decl.name, decl.type, decl.title, decl.description,
                                             int(decl.authoritative), ts, ts)).lastrowid
            self._types[concept_id] = decl.type
            indexed = (decl.key, decl.name, decl.title or "", decl.description or "")
        elif decl.authoritative:
            concept_id = row[0]
            self._types[concept_id] = decl.type
            conn.execute("UPDATE concepts SET name=?, type=?, title=coalesce(?, title), description=?, "
                         "authoritative=1, updated_at=max(updated_at, ?) WHERE id=?",
                         (decl.name, decl.type, decl.title, decl.description, ts, concept_id))
            title = decl.title if decl.title is not None else row[3]
            indexed = (decl.key, decl.name, title or "", decl.description or "")
        else:
            concept_id = row[0]
            self._types[concept_id] = row[5]  # a hint never changes the type
            conn.execute("UPDATE concepts SET title=coalesce(title, ?), description=coalesce(description, ?), "
                         "updated_at=max(updated_at, ?) WHERE id=?", (decl.title, decl.description, ts, concept_id))
            if decl.title is None and decl.description is None:
                return concept_id  # a bare hint changes no searchable field
            title = row[3] if row[3] is not None else decl.title
            description = row[4] if row[4] is not None else decl.description
            indexed = (decl.key, row[2], title or "", description or "")
        if row is not None:
            old = self._concept_fields.get(concept_id) or conn.execute(
                "SELECT key, name, title, description FROM concepts_fts WHERE rowid=?", (concept_id,)).fetchone()
            if old is not None and tuple(old) == indexed:
                return concept_id  # restated unchanged: the search index already says (or will say) this
        self._index_concept(concept_id, indexed, replace=row is not None)
        return concept_id

    def _adopt(self, fold: str, key: str) -> bool:
        """A memory file whose key keeps capitals (`Architecture`, extract.file_key) is new: file its key under
        the lower-cased key headings, mentions and wikilinks name it by (`architecture`), and, when it is the
        first file so named and no memory file holds that key itself, take over what was said under it before
        the file came (a ledger's "## Architecture" section, a wikilink's relation, a link said as current),
        as one key did before harm14: the result does not depend on which arrived first. Returns whether a
        concept was renamed to `key`. A file named `architecture.md` keeps its own (ADR 0005, case14)."""
        conn = self.conn
        conn.execute("INSERT OR IGNORE INTO case_keys(fold, key) VALUES(?,?)", (fold, key))
        if self._folds is not None:
            self._folds.add(fold)
        if conn.execute("SELECT count(*) FROM case_keys WHERE fold=?", (fold,)).fetchone()[0] > 1 \
                or conn.execute("SELECT 1 FROM memory_files WHERE concept=? AND kind='memory' LIMIT 1",
                                (fold,)).fetchone():
            return False  # not the first file so named, or `architecture.md` holds the key itself
        renamed = conn.execute("UPDATE concepts SET key=? WHERE key=?", (key, fold)).rowcount > 0
        if conn.execute("SELECT EXISTS(SELECT 1 FROM relations WHERE src=?) OR EXISTS(SELECT 1 FROM relations "
                        "WHERE dst=?)", (fold, fold)).fetchone()[0]:
            for column in ("src", "dst"):
                conn.execute(f"UPDATE OR IGNORE relations SET {column}=? WHERE {column}=?", (key, fold))
                conn.execute(f"DELETE FROM relations WHERE {column}=?", (fold,))  # one relation held under both
        conn.execute("UPDATE timed_facts SET subject=? WHERE subject=? AND kind='link'",
                     (FILE_SUBJECT + key, FILE_SUBJECT + fold))
        return renamed

    def _case_targets(self, extraction: Extraction) -> dict[str, tuple[str, int, str]]:
        """The lower-cased keys this extraction names (a ledger or document heading, a mention, a wikilink, a
        link said as current, a relation's end) that reach a file whose key keeps capitals: `architecture` ->
        `Architecture` when no concept holds `architecture` itself and exactly one file's key folds to it (two,
        `API.md` and `Api.md`, leave it to neither: precision first). `case_keys`' folds are read once per
        transaction; a graph of lower-case file names has none, and an artifact naming none reads nothing."""
        conn = self.conn
        if self._folds is None:
            self._folds = {fold for (fold,) in conn.execute("SELECT DISTINCT fold FROM case_keys")}
        if not self._folds:
            return {}
        folds = self._folds
        named: set[str] = set()
        for statement in extraction.statements:
            named.update(k for k in (statement.concept, *statement.mentions, *statement.links) if k in folds)
        named.update(k for relation in extraction.relations for k in (relation.src, relation.dst) if k in folds)
        unique: dict[str, tuple[str, int, str]] = {}
        for fold in sorted(named):  # rare: an artifact naming a capitalised file; fixed statements, no IN lists
            if conn.execute("SELECT 1 FROM concepts WHERE key=?", (fold,)).fetchone() is not None:
                continue  # `architecture.md` itself, or a section kept apart: the exact key wins
            hits = conn.execute("SELECT c.key, c.id, c.type FROM case_keys f JOIN concepts c ON c.key = f.key "
                                "WHERE f.fold=? LIMIT 2", (fold,)).fetchall()
            if len(hits) == 1:
                unique[fold] = (hits[0][0], hits[0][1], hits[0][2])
        return unique

    def _resolve_concept(self, statement: Statement, extraction: Extraction, ts: str) -> int:
        """The concept a statement belongs to: the first it mentions that the graph knows, else its own."""
        if statement.mentions:
            marks = ",".join("?" * len(statement.mentions))
            known = {r[0]: (r[1], r[2]) for r in self.conn.execute(
                f"SELECT key, id, type FROM concepts WHERE key IN ({marks}) AND type NOT IN ('section', 'ledger')",
                statement.mentions)}
            case = self._case
            for key in statement.mentions:
                if key in known:
                    concept_id, concept_type = known[key]
                    self._types[concept_id] = concept_type
                    return concept_id
                if case and key in case:  # names a file whose key keeps capitals (`Architecture.md`)
                    _, concept_id, concept_type = case[key]
                    self._types[concept_id] = concept_type
                    return concept_id
        decl = next((d for d in extraction.concepts if d.key == statement.concept),
                    ConceptDecl(statement.concept, statement.concept, "section", authoritative=False))
        if statement.concept in self._case:  # a heading naming such a file ("## Architecture"): its concept
            decl = replace(decl, key=self._case[statement.concept][0])
        return self._upsert_concept(decl, ts)

    def _assertion_ids(self, keys: list[str]) -> dict[str, int]:
        """The stored assertions of these keys, read in one statement, not one per statement of the
        artifact (apply11); `_assertion_for` adds the ones it creates, so a key stated twice in one
        artifact finds the assertion its first statement made, as a lookup per statement did."""
        found: dict[str, int] = {}
        for marks, chunk in in_chunks(sorted(set(keys))):
            found.update(self.conn.execute(f"SELECT key, id FROM assertion_rows WHERE key IN ({marks})", chunk))
        return found

    def _read_owners(self, assertion_ids: Iterable[int]) -> None:
        """The owning concept of each of these assertions and its type, in one statement (apply13)."""
        for marks, chunk in in_chunks(sorted(set(assertion_ids))):
            for assertion_id, concept_id, concept_type in self.conn.execute(
                    f"SELECT a.id, a.concept_id, c.type FROM assertion_rows a JOIN concepts c ON c.id = a.concept_id "
                    f"WHERE a.id IN ({marks})", chunk):
                self._owners[assertion_id] = concept_id
                self._types[concept_id] = concept_type

    def _assertion_for(self, statement: Statement, concept_id: int, ts: str, known: dict[str, int]) -> int:
        """Find the assertion this statement restates (exact key, looked up in `known`, else
        near-duplicate), or create it (and add it to `known`)."""
        prop = statement.proposition
        assertion_id = known.get(prop.key)
        keys = None
        if assertion_id is None:
            assertion_id, keys = self.near.find(prop, statement.text)
        if assertion_id is None:
            assertion_id = self._insert_assertion(concept_id, prop.key, statement.text, prop.polarity,
                                                  " ".join(sorted(prop.tokens)), len(prop.tokens), prop.slot,
                                                  prop.value, ts)
            known[prop.key] = assertion_id
            self._owners[assertion_id] = concept_id
            self.near.add(assertion_id, keys, prop)
            self._index_assertion(assertion_id, statement.text, replace=False)
            return assertion_id
        self._maybe_move_owner(assertion_id, concept_id, statement)
        return assertion_id

    def _insert_assertion(self, concept_id: int, key: str, text: str, polarity: int, tokens: str, n_tokens: int,
                          slot: str | None, value: str | None, ts: str) -> int:
        """A new assertion: its text row, and its evidence row (no evidence yet) filed under its slot."""
        assertion_id = self.conn.execute(
            "INSERT INTO assertion_rows(concept_id, key, text, tokens, n_tokens, slot, value, created_at)"
            " VALUES(?,?,?,?,?,?,?,?)", (concept_id, key, text, tokens, n_tokens, slot, value, ts)).lastrowid
        self.conn.execute("INSERT INTO verdicts(slot, assertion_id, value, polarity, updated_at) VALUES(?,?,?,?,?)",
                          (slot or "", assertion_id, value, polarity, ts))
        return assertion_id

    def _maybe_move_owner(self, assertion_id: int, concept_id: int, statement: Statement) -> None:
        """A memory file's own statement re-anchors an assertion first heard in a ledger or document."""
        conn = self.conn
        owner = self._owners.get(assertion_id)
        owner_type = self._types.get(owner) if owner is not None else None  # type: ignore[arg-type]
        new_type = self._types.get(concept_id)
        if owner_type is None or new_type is None:  # a near-duplicate, or a concept not read yet
            owner, owner_type, new_type = conn.execute(
                "SELECT a.concept_id, c.type, (SELECT type FROM concepts WHERE id=?) FROM assertion_rows a "
                "JOIN concepts c ON c.id=a.concept_id WHERE a.id=?", (concept_id, assertion_id)).fetchone()
            self._owners[assertion_id] = owner
            self._types[owner] = owner_type
            self._types[concept_id] = new_type
        if _owner_rank(new_type) > _owner_rank(owner_type):
            self._owners[assertion_id] = concept_id
            conn.execute("UPDATE assertion_rows SET concept_id=?, text=? WHERE id=?",
                         (concept_id, statement.text, assertion_id))
            conn.execute("UPDATE verdicts SET polarity=? WHERE assertion_id=?",
                         (statement.proposition.polarity, assertion_id))
            self.near.changed(assertion_id)
            self._index_assertion(assertion_id, statement.text, replace=True)

    def _replace_stances(self, source_id: int, artifact_id: int, observed: dict[int, tuple[int, str]],
                         ts: str, *, additive: bool) -> set[int]:
        """Make `observed` the source's current stances; return the assertions whose evidence changed."""
        held = self._held(source_id)
        changes: dict[int, tuple[int, str] | None] = {} if additive else dict.fromkeys(held.keys() - observed.keys())
        changes.update(observed)
        return self.set_stances(source_id, artifact_id, ts, changes, held=held)

    def set_stances(self, source_id: int, artifact_id: int, ts: str,
                    changes: Mapping[int, tuple[int, str] | None], *, held: Mapping[int, Held] | None = None) -> set[int]:
        """Give one source a new current (stance, text) on some assertions, or withdraw it (None; kept
        in history as stance 0), and move the stored aggregates by the difference: O(the source's own
        stances in the slots involved), whatever the number of other sources. Returns the assertions
        whose evidence changed; the caller re-weighs them (`_reweigh`, which adds slot siblings)."""
        conn = self.conn
        before = dict(held) if held is not None else self._held(source_id)
        place = queries.slots_of(conn, changes.keys() - before.keys())
        place.update((a, (h.slot, h.value)) for a, h in before.items())
        after = dict(before)
        for assertion_id, change in changes.items():
            if change is None:
                after.pop(assertion_id, None)
            else:
                after[assertion_id] = Held(assertion_id, change[0], *place[assertion_id])
        meta = self._source_meta.get(source_id)
        reliability, kind = meta if meta is not None else conn.execute(
            "SELECT reliability, kind FROM sources WHERE id=?", (source_id,)).fetchone()
        self._move_aggregates(aggregate.delta(before, after, memory=aggregate.is_memory_kind(kind)), weight_units(reliability))

        withdrawn = sorted(a for a, change in changes.items() if change is None and a in before)
        _many(conn, "DELETE FROM stances WHERE assertion_id=? AND source_id=?",
                         [(assertion_id, source_id) for assertion_id in withdrawn])
        _many(conn, "INSERT INTO stance_history(assertion_id, source_id, artifact_id, stance, text, timestamp)"
                         " VALUES(?,?,?,0,'',?)", [(assertion_id, source_id, artifact_id, ts)
                                                   for assertion_id in withdrawn])
        _many(conn, "INSERT OR REPLACE INTO stances(assertion_id, source_id, stance, artifact_id, text)"
                         " VALUES(?,?,?,?,?)", [(assertion_id, source_id, change[0], artifact_id, change[1])
                                                for assertion_id, change in changes.items() if change is not None])
        return {a for a in changes if (before[a].stance if a in before else None) !=
                (after[a].stance if a in after else None)}

    def _held(self, source_id: int) -> dict[int, Held]:
        """The source's current stances with their assertions' slots."""
        return {r[0]: Held(*r) for r in self.conn.execute(
            "SELECT st.assertion_id, st.stance, a.slot, a.value FROM stances st JOIN assertions a "
            "ON a.id = st.assertion_id WHERE st.source_id=?", (source_id,))}

    def _move_aggregates(self, delta: dict[aggregate.Key, int], units: int) -> None:
        """Add (sign x the source's weight, sign x one source) to each term's stored aggregate."""
        columns = {Term.FOR: 0, Term.AGAINST: 1, Term.CROSS: 2}
        per_assertion: dict[int, list[int]] = {}
        slots: list[tuple[object, ...]] = []
        values: list[tuple[object, ...]] = []
        for (term, key), sign in delta.items():  # additions commute: any order gives the same sums
            if term in columns:
                per_assertion.setdefault(key, [0, 0, 0])[columns[term]] += sign  # type: ignore[arg-type]
            elif term is Term.CLAIM:
                slots.append((key, sign * units, sign))
            elif term is Term.ONLY:
                values.append((*key, sign * units, sign))  # type: ignore[misc]
            else:
                raise AssertionError(f"unhandled term {term}")
        conn = self.conn
        pending = self._verdict_deltas
        for aid, (p, n, c) in per_assertion.items():  # written by `_reweigh`, with the row's verdict
            held = pending.get(aid)
            if held is None:
                pending[aid] = [p * units, p, n * units, n, c * units, c]
            else:
                for i, add in enumerate((p * units, p, n * units, n, c * units, c)):
                    held[i] += add
        _many(conn, "INSERT INTO slots(slot, w_claim, n_claim) VALUES(?,?,?) ON CONFLICT(slot) DO UPDATE "
                         "SET w_claim=w_claim+excluded.w_claim, n_claim=n_claim+excluded.n_claim", slots)
        _many(conn, "INSERT INTO slot_values(slot, value, w_only, n_only) VALUES(?,?,?,?) ON CONFLICT(slot, value)"
                         " DO UPDATE SET w_only=w_only+excluded.w_only, n_only=n_only+excluded.n_only", values)
        _many(conn, "DELETE FROM slots WHERE slot=? AND n_claim=0", [(r[0],) for r in slots if r[2] < 0])
        _many(conn, "DELETE FROM slot_values WHERE slot=? AND value=? AND n_only=0",
                         [r[:2] for r in values if r[3] < 0])

    def _reweigh(self, assertion_ids: set[int], ts: str) -> None:
        """Recompute verdicts from the stored aggregates for changed assertions and every exclusive
        alternative in their slots: O(assertions involved), never O(sources). A slot's rows are
        adjacent in `verdicts`, so its k alternatives are read and rewritten on a page or two."""
        conn = self.conn
        pending, self._verdict_deltas = self._verdict_deltas, {}
        targets = set(assertion_ids)
        for marks, chunk in in_chunks(sorted(assertion_ids)):
            targets.update(r[0] for r in conn.execute(
                f"SELECT sib.assertion_id FROM verdicts a JOIN verdicts sib ON sib.slot = a.slot "
                f"WHERE a.assertion_id IN ({marks}) AND a.slot != ''", chunk))
        # A change of aggregates outside the rows re-weighed is written alone, as it always was (the
        # terms of one source's change stay within the slots of the assertions it changed, so this is
        # normally empty).
        _many(conn, "UPDATE verdicts SET w_pos=w_pos+?, n_pos=n_pos+?, w_neg=w_neg+?, n_neg=n_neg+?, "
                    "w_cross=w_cross+?, n_cross=n_cross+? WHERE assertion_id=?",
              [(*pending[aid], aid) for aid in sorted(pending.keys() - targets)])
        relabelled, same_label = [], []
        none = (0, 0, 0, 0, 0, 0)
        for slot, assertion_id, polarity, *stored, status in queries.aggregates(conn, targets, with_slot=True,
                                                                               with_status=True):
            add = pending.get(assertion_id, none)
            if add is not none:
                for i in range(6):
                    stored[i] += add[i]
            verdict = aggregate.weigh_stored(polarity, *stored)
            values = (*add, verdict.belief, verdict.plausibility, verdict.conflict, verdict.n_for, verdict.n_against,
                      ts, slot, assertion_id)
            if verdict.label.value == status:
                same_label.append(values)
            else:
                relabelled.append((verdict.label.value, *values))
        # One write per row: the aggregates' change (kept in memory since `set_stances`) and the verdict.
        # SQLite rewrites an index entry whenever its column is SET, even to the value it holds: most
        # re-weighs keep the label, and leaving `status` out of their UPDATE spares the status index
        # (5.7 of a repetitive single POST's 56 WAL pages; ADR 0007, "Session 7").
        _many(conn, "UPDATE verdicts SET status=?, " + _AGGREGATE_SET + ", belief=?, plausibility=?, conflict=?, "
                    "n_for=?, n_against=?, updated_at=max(updated_at, ?) WHERE slot=? AND assertion_id=?", relabelled)
        _many(conn, "UPDATE verdicts SET " + _AGGREGATE_SET + ", belief=?, plausibility=?, conflict=?, n_for=?, "
                    "n_against=?, updated_at=max(updated_at, ?) WHERE slot=? AND assertion_id=?", same_label)


# The stored aggregates' columns, moved by what `_move_aggregates` held for the row.
_AGGREGATE_SET = ("w_pos=w_pos+?, n_pos=n_pos+?, w_neg=w_neg+?, n_neg=n_neg+?, w_cross=w_cross+?, "
                  "n_cross=n_cross+?")


def _timed_rows(source_id: int, extraction: Extraction, statement_ids: list[int],
                owner: str | None, case: Mapping[str, str]) -> list[tuple[object, ...]]:
    """The `timed_facts` rows of one extraction (ontology.timeline): each statement's time-varying
    values and links said as current (a lower-cased wikilink to the file whose key keeps capitals it names:
    `case`), a memory file's summary and marker, the index's lines."""
    rows: list[tuple[object, ...]] = []
    for statement, assertion_id in zip(extraction.statements, statement_ids):
        for fact in statement.facts:
            rows.append((fact.subject, fact.kind.value, fact.value, fact.date, int(fact.upgrade), source_id,
                         assertion_id, owner, statement.text, 0, ""))
        for key in statement.links:
            key = case.get(key, key)
            if key != owner:
                rows.append((FILE_SUBJECT + key, "link", "", None, 0, source_id, assertion_id, owner, statement.text, 0, ""))
    summary = extraction.summary
    if summary is not None and owner is not None and summary.statement is not None:
        assertion_id = statement_ids[summary.statement]
        text = extraction.statements[summary.statement].text
        decl = extraction.concepts[0]
        status = summary.status.name.lower() if summary.status is not None else ""
        rows.append((FILE_SUBJECT + owner, "summary", status, summary.date, 0, source_id, assertion_id, owner, text, 0,
                     f"{decl.description or ''}\n{decl.title or ''}"))
        if summary.marker is not None:
            rows.append((FILE_SUBJECT + owner, "marker", summary.marker[0].value, summary.date, 0, source_id,
                         assertion_id, owner, text, 0, summary.marker[1] or ""))
    for hook in extraction.hooks:
        if hook.status is not None:
            rows.append((FILE_SUBJECT + hook.target, "status", hook.status.name.lower(), timeline.statement_date(hook.text),
                         0, source_id, None, hook.target, hook.text, 1, hook.line))  # extra: the line, for its mark
        if hook.marker is not None:
            rows.append((FILE_SUBJECT + hook.target, "marker", hook.marker[0].value, None, 0, source_id, None,
                         hook.target, hook.text, 1, hook.marker[1] or ""))
        for fact in hook.facts:
            rows.append((fact.subject, fact.kind.value, fact.value, fact.date, int(fact.upgrade), source_id, None,
                         hook.target, hook.text, 1, hook.line))
        for revision in hook.revisions:  # recorded against the linked file's summary (`_supersede`)
            rows.append((FILE_SUBJECT + hook.target, timeline.REVISION, supersession.rule_name(revision.rule), None, 0,
                         source_id, None, hook.target, hook.text, 1, f"{revision.old}\n{revision.new}\n{hook.line}"))
        if not hook.revisions:  # read against the file's own value revisions (`_supersede`); extra: the line
            rows.append((FILE_SUBJECT + hook.target, timeline.LINE, "", timeline.statement_date(hook.text), 0,
                         source_id, None, hook.target, hook.text, 1, hook.line))
    return rows
