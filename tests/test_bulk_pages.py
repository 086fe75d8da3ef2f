"""Bulk ingest's cost in pages, not time: what one commit writes to the WAL, table by table (the WAL's
frame headers, mapped to tables with SQLite's dbstat). A slot's rival values are re-weighed on a page or
two however far apart their assertions were created, and new near-duplicate keys go to the small
`subsets_recent` until it is full, then join `subsets` in one pass (ADR 0007, "Session 6"). One
artifact's keys are appended there in arrival order, and a re-weigh that keeps a label leaves the
status index alone (ADR 0007, "Session 7"); the status index holds only the disputed labels, so new
undisputed claims leave it alone (ADR 0007, "Session 9")."""

from __future__ import annotations

import random
import sqlite3
import struct
from collections import Counter
from pathlib import Path

from conftest import ledger, memory
from ontology import neardup, queries
from ontology.artifact import Channel
from ontology.ingest import Ontology

_rng = random.Random(5)
_LETTERS = "bcdfghjklmnpqrstvwxz"


def _word() -> str:
    return "".join(_rng.choice(_LETTERS) + _rng.choice("aeiou") for _ in range(4))


def _filler(n: int) -> list[str]:
    """Statements of distinct made-up words: each a new assertion, none a near-duplicate of another."""
    return [f"{_word()} {_word()} {_word()} {_word()}" for _ in range(n)]


def _pages_written(database: Path) -> Counter[str]:
    """Distinct pages in the WAL, by the table or index that owns them."""
    wal = Path(f"{database}-wal").read_bytes()
    page_size = struct.unpack(">I", wal[8:12])[0]
    pages = {struct.unpack(">I", wal[offset:offset + 4])[0] for offset in range(32, len(wal) - 23, 24 + page_size)}
    conn = sqlite3.connect(database)
    try:
        owner = dict(conn.execute("SELECT pageno, name FROM dbstat"))
    finally:
        conn.close()
    return Counter(owner.get(page, "?") for page in pages)


def _checkpoint(database: Path) -> None:
    conn = sqlite3.connect(database)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def test_a_new_value_re_weighs_its_rivals_on_a_page_or_two(root):
    """40 values of one slot, each created among 25 other new assertions (about 40 pages of assertions
    apart): a 41st value re-weighs all 40 (each gains an implied denial), and that rewrites only a
    few pages of evidence. Stored beside each assertion's text, it was a page per rival."""
    onto = Ontology(root, "shop", create=True)
    entries = [(f"2026-04-05T1445Z_e{i:03d}.md",
                ledger(f"s{i}", "Key decisions:\n" + "\n".join(f"- {s}" for s in _filler(25) + [f"colour: {_word()}"])),
                Channel.CLI) for i in range(40)]
    onto.ingest_many(entries)
    onto.close()
    database = onto.paths.database
    _checkpoint(database)
    again = Ontology(root, "shop")
    again.ingest("2026-04-05T1445Z_e999.md", ledger("s999", f"Key decisions:\n- colour: {_word()}"), Channel.CLI)
    written = _pages_written(database)  # before close, whose checkpoint empties the WAL
    again.close()
    conn = sqlite3.connect(database)
    try:
        rivals = conn.execute("SELECT count(*), min(n_against), max(id) - min(id) FROM assertions "
                              "WHERE slot = (SELECT slot FROM assertions WHERE slot IS NOT NULL LIMIT 1)").fetchone()
    finally:
        conn.close()
    assert rivals[0] == 41 and rivals[1] >= 1 and rivals[2] > 40 * 25, rivals  # all re-weighed, far apart
    assert written["verdicts"] <= 4, written  # the group (~4 KiB) and a split it may cause
    assert written["assertion_rows"] <= 1, written  # the new value's own row; no rival's text is rewritten


def test_new_near_duplicate_keys_wait_in_a_small_table_then_join_the_big_one_in_one_pass(root, monkeypatch):
    """Keys of new assertions go to subsets_recent, so a commit writes no page of subsets; once the
    small table holds RECENT_ROWS rows, a commit moves them all, and a restatement of an early claim
    is still found through the keys that moved."""
    onto = Ontology(root, "shop", create=True)
    onto.ingest_many((f"note-{i}.md", memory(f"note-{i}", f"{_word()} {_word()} {_word()} {_word()} {_word()}",
                                             "\n".join(f"- {s}" for s in _filler(4))), Channel.CLI) for i in range(60))
    database = onto.paths.database
    with onto.reader() as conn:
        first = conn.execute("SELECT text FROM assertions WHERE n_tokens = 5 ORDER BY id LIMIT 1").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM subsets").fetchone()[0] == 0
        recent = conn.execute("SELECT count(*) FROM subsets_recent").fetchone()[0]
    assert recent >= 60 * 6
    onto.close()
    _checkpoint(database)
    again = Ontology(root, "shop")
    again.ingest("note-x.md", memory("note-x", f"{_word()} {_word()} {_word()} {_word()} {_word()}"), Channel.CLI)
    assert _pages_written(database)["subsets"] == 0
    monkeypatch.setattr(neardup, "RECENT_ROWS", recent)  # full now: the next commit moves them
    again.ingest("note-y.md", memory("note-y", f"{_word()} {_word()} {_word()} {_word()} {_word()}"), Channel.CLI)
    with again.reader() as conn:
        assert conn.execute("SELECT count(*) FROM subsets_recent").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM subsets").fetchone()[0] == recent + 2 * 6
        before = conn.execute("SELECT count(*) FROM assertions").fetchone()[0]
    # Four of its five words: J = 4/5, a restatement of the first claim, found under a key that moved.
    restated = " ".join(first.split()[:4])
    again.ingest("note-z.md", memory("note-z", restated), Channel.CLI)
    with again.reader() as conn:
        assert conn.execute("SELECT count(*) FROM assertions").fetchone()[0] == before
        assert conn.execute("SELECT count(*) FROM stances st JOIN assertions a ON a.id = st.assertion_id "
                            "WHERE a.text = ?", (first,)).fetchone()[0] == 2
    again.close()


def test_search_index_writes_wait_for_the_end_of_the_batch(root):
    """FTS5 flushes what it holds into a new segment at every savepoint: written inside each artifact's
    savepoint, a batch made a segment per artifact. They are held until the batch's end, and a
    rolled-back artifact's are dropped with it; what search finds is the same."""
    onto = Ontology(root, "shop", create=True)
    statements: list[str] = []
    onto.ingest_many([(f"note-{i}.md", memory(f"note-{i}", f"{_word()} {_word()} {_word()} {_word()}",
                                              "\n".join(f"- {s}" for s in _filler(3))), Channel.CLI)
                      for i in range(3)])
    writer = onto._writer  # noqa: SLF001 - the connection whose statements are counted
    writer.conn.set_trace_callback(statements.append)
    try:
        onto.ingest_many([(f"note-{i}.md", memory(f"note-{i}", f"{_word()} {_word()} {_word()} {_word()}",
                                                  "\n".join(f"- {s}" for s in _filler(3))), Channel.CLI)
                          for i in range(3, 20)])
    finally:
        writer.conn.set_trace_callback(None)
    inside, depth, fts_inside, fts_total = 0, 0, 0, 0
    for sql in statements:
        if sql.startswith("SAVEPOINT artifact"):
            depth += 1
        elif sql.startswith("RELEASE artifact"):
            depth -= 1
        elif "_fts" in sql and sql.startswith("INSERT"):
            fts_total += 1
            fts_inside += depth > 0
    assert fts_total >= 17 * 4 and fts_inside == 0, (fts_total, fts_inside)
    with onto.reader() as conn:
        assert conn.execute("SELECT count(*) FROM assertions_fts").fetchone()[0] == \
            conn.execute("SELECT count(*) FROM assertions").fetchone()[0]
    onto.close()


def test_one_artifact_files_its_near_duplicate_keys_on_the_last_page_or_two(root):
    """A single POST's new statements file ~6 keys each. Kept in key order, those keys landed on a
    random leaf each (31 of a Zipf POST's 75 WAL pages); appended in arrival order, they share the
    table's last page or two, and a restatement is still found through them."""
    onto = Ontology(root, "shop", create=True)
    onto.ingest_many((f"note-{i}.md", memory(f"note-{i}", f"{_word()} {_word()} {_word()} {_word()} {_word()}",
                                             "\n".join(f"- {s} {_word()}" for s in _filler(5))), Channel.CLI)
                     for i in range(300))
    database = onto.paths.database
    with onto.reader() as conn:
        waiting = conn.execute("SELECT count(*) FROM subsets_recent").fetchone()[0]
    assert waiting >= 300 * 5 * 6  # many leaves: random keys would land on one each
    onto.close()
    _checkpoint(database)
    again = Ontology(root, "shop")
    fresh = [f"{s} {_word()}" for s in _filler(5)]
    again.ingest("note-x.md", memory("note-x", f"{_word()} {_word()} {_word()} {_word()} {_word()}",
                                     "\n".join(f"- {s}" for s in fresh)), Channel.CLI)
    written = _pages_written(database)
    with again.reader() as conn:
        assert conn.execute("SELECT count(*) FROM subsets_recent").fetchone()[0] >= waiting + 5 * 6
        before = conn.execute("SELECT count(*) FROM assertions").fetchone()[0]
    assert written["subsets_recent"] <= 2, written
    # Four of its five words (J = 4/5): the same claim, found through a key this commit appended.
    # (its description is a sentence: a bare label like "another note" is no claim, ADR 0009)
    restated = "- " + " ".join(fresh[0].split()[:4])
    again.ingest("note-y.md", memory("note-y", "restates four of those five words", restated), Channel.CLI)
    with again.reader() as conn:
        assert conn.execute("SELECT count(*) FROM assertions").fetchone()[0] == before + 1  # note-y's title only
        assert conn.execute("SELECT count(*) FROM stances st JOIN assertions a ON a.id = st.assertion_id "
                            "WHERE a.text = ?", (fresh[0],)).fetchone()[0] == 2
    again.close()


def test_near_duplicate_keys_another_writer_filed_are_found(root):
    """The writer looks recent keys up in memory; a second writer (another process, between this one's
    transactions) may have filed some. Its claim is found, not stored twice."""
    first = Ontology(root, "shop", create=True)
    first.ingest("note-a.md", memory("note-a", "first", f"- {_filler(1)[0]} {_word()}"), Channel.CLI)
    second = Ontology(root, "shop")
    claim = f"{_filler(1)[0]} {_word()}"
    second.ingest("note-b.md", memory("note-b", "second", f"- {claim}"), Channel.CLI)
    second.close()
    restated = " ".join(claim.split()[:4])
    first.ingest("note-c.md", memory("note-c", "third", f"- {restated}"), Channel.CLI)
    with first.reader() as conn:
        assert conn.execute("SELECT count(*) FROM assertions WHERE text = ?", (restated,)).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM stances st JOIN assertions a ON a.id = st.assertion_id "
                            "WHERE a.text = ?", (claim,)).fetchone()[0] == 2
    first.close()


def test_a_re_weigh_that_keeps_the_label_leaves_the_status_index_alone(root):
    """A claim restated by one more source is re-weighed; when its label stays, SQLite would still
    rewrite its status-index entry if `status` were in the UPDATE (a page per restated claim)."""
    onto = Ontology(root, "shop", create=True)
    claim = f"{_word()} {_word()} {_word()} {_word()}"
    onto.ingest_many([(f"2026-04-05T1445Z_e{i:03d}.md", ledger(f"s{i}", "Key decisions:\n" + "\n".join(
        f"- {s}" for s in _filler(25) + ([claim] if i < 3 else []))), Channel.CLI) for i in range(200)])
    onto.close()
    database = onto.paths.database

    def label() -> tuple[str, int]:
        conn = sqlite3.connect(database)
        try:
            return conn.execute("SELECT status, n_for FROM assertions WHERE text = ?", (claim,)).fetchone()
        finally:
            conn.close()
    status, sources = label()
    _checkpoint(database)
    again = Ontology(root, "shop")
    again.ingest("2026-04-05T1445Z_e999.md", ledger("s999", f"Key decisions:\n- {claim}"), Channel.CLI)
    written = _pages_written(database)
    again.close()
    assert label() == (status, sources + 1)  # re-weighed, same label
    assert written["verdicts"] >= 1 and written["verdicts_disputed"] == 0, written


def test_a_new_file_appends_to_the_artifact_tables(root):
    """A new file's artifact row and its entry by source land on the last pages of their B-trees (both
    keys grow): a commit writes no older page of them. An index by sha256, which nothing reads, put
    each new artifact on a random page of its own."""
    onto = Ontology(root, "shop", create=True)
    onto.ingest_many([(f"note-{i}.md", memory(f"note-{i}", f"{_word()} {_word()} {_word()}"), Channel.CLI)
                      for i in range(3000)])
    onto.close()
    database = onto.paths.database
    _checkpoint(database)
    again = Ontology(root, "shop")
    again.ingest_many([(f"new-{i}.md", memory(f"new-{i}", f"{_word()} {_word()} {_word()}"), Channel.CLI)
                       for i in range(20)])
    written = _pages_written(database)
    again.close()
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT count(*) FROM artifacts").fetchone()[0] == 3020
    assert sum(n for name, n in written.items() if name.startswith("artifacts")) <= 4, written


def _subsets_probes(onto: Ontology, filename: str, body: str) -> int:
    """Ingest one memory file; return how many `subsets` keys its lookups asked SQLite for."""
    asked: list[str] = []
    with onto._exclusive() as writer:
        writer.conn.set_trace_callback(asked.append)
    try:
        onto.ingest(filename, memory(filename[:-3], "probe", body), Channel.CLI)
    finally:
        with onto._exclusive() as writer:
            writer.conn.set_trace_callback(None)
    return sum(sql.count("FROM subsets WHERE key=") for sql in asked)


def test_keys_subsets_lacks_are_not_looked_up(root, monkeypatch):
    """At 100k Zipf artifacts three in four keys of a lookup are in neither table, and each cost a
    descent to a random leaf of `subsets`. The writer keeps a filter of the keys the table holds: a
    statement of new words asks SQLite for none of its keys, and a restatement of a claim whose keys
    moved there is still found through them (ADR 0007, "Session 8")."""
    monkeypatch.setattr(neardup, "RECENT_ROWS", 1)  # every commit moves its keys into subsets
    onto = Ontology(root, "shop", create=True)
    onto.ingest_many((f"note-{i}.md", memory(f"note-{i}", "filler", "\n".join(f"- {s}" for s in _filler(4))),
                      Channel.CLI) for i in range(30))
    claim = f"{_filler(1)[0]} {_word()}"
    onto.ingest("note-a.md", memory("note-a", "claim", f"- {claim}"), Channel.CLI)
    with onto.reader() as conn:
        assert conn.execute("SELECT count(*) FROM subsets").fetchone()[0] >= 31 * 6
    assert _subsets_probes(onto, "note-b.md", f"- {_filler(1)[0]} {_word()}") == 0
    restated = " ".join(claim.split()[:4])  # J = 4/5: the same claim
    assert _subsets_probes(onto, "note-c.md", f"- {restated}") >= 1
    with onto.reader() as conn:
        assert conn.execute("SELECT count(*) FROM assertions WHERE text = ?", (restated,)).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM stances st JOIN assertions a ON a.id = st.assertion_id "
                            "WHERE a.text = ?", (claim,)).fetchone()[0] == 2
    onto.close()


def test_keys_another_writer_moved_into_subsets_are_found(root, monkeypatch):
    """A writer's key filter holds the keys `subsets` had when it looked; another writer (another process,
    between this one's transactions) may move its keys there. The filter is dropped when the graph
    changed under it, and the other writer's claim is found, not stored twice."""
    first = Ontology(root, "shop", create=True)
    first.ingest("note-a.md", memory("note-a", "first", f"- {_filler(1)[0]} {_word()}"), Channel.CLI)
    monkeypatch.setattr(neardup, "RECENT_ROWS", 1)
    second = Ontology(root, "shop")
    claim = f"{_filler(1)[0]} {_word()}"
    second.ingest("note-b.md", memory("note-b", "second", f"- {claim}"), Channel.CLI)
    second.close()
    with first.reader() as conn:
        assert conn.execute("SELECT count(*) FROM subsets_recent").fetchone()[0] == 0  # all moved
    monkeypatch.setattr(neardup, "RECENT_ROWS", 10**9)
    restated = " ".join(claim.split()[:4])
    first.ingest("note-c.md", memory("note-c", "third", f"- {restated}"), Channel.CLI)
    with first.reader() as conn:
        assert conn.execute("SELECT count(*) FROM assertions WHERE text = ?", (restated,)).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM stances st JOIN assertions a ON a.id = st.assertion_id "
                            "WHERE a.text = ?", (claim,)).fetchone()[0] == 2
    first.close()


def _mem(name: str, body: str) -> bytes:
    return f"---\nname: {name}\ndescription: db\nmodified: 2026-04-01T10:00:00Z\n---\n{body}\n".encode()


def test_new_undisputed_claims_leave_the_status_index_alone(root):
    """Every new assertion took an entry in an index of all labels, on a random page (its key began with
    the label, then the slot): 328 of a 99k batch's 3,683 WAL pages. Only disputed labels are looked up
    by status, and only those are indexed: 20 files of new claims write no page of it."""
    onto = Ontology(root, "shop", create=True)
    onto.ingest("a.md", _mem("a", "- Orders DB: postgres"), Channel.CLI)
    onto.ingest("b.md", _mem("b", "- Orders DB: mysql"), Channel.CLI)
    onto.ingest_many([(f"2026-04-05T1445Z_e{i:03d}.md", ledger(f"s{i}", "Key decisions:\n" + "\n".join(
        f"- {s}" for s in _filler(25))), Channel.CLI) for i in range(200)])
    onto.close()
    database = onto.paths.database
    _checkpoint(database)
    again = Ontology(root, "shop")
    again.ingest_many([(f"2026-04-06T1445Z_n{i:03d}.md", ledger(f"n{i}", "Key decisions:\n" + "\n".join(
        f"- {s}" for s in _filler(25))), Channel.CLI) for i in range(20)])
    written = _pages_written(database)
    again.close()
    with sqlite3.connect(database) as conn:
        indexes = [r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='index' AND tbl_name='verdicts'")]
    status_indexes = [name for name in indexes if name != "verdicts_assertion" and not name.startswith("sqlite_")]
    assert status_indexes, indexes
    assert written["verdicts"] >= 1 and all(written[name] == 0 for name in status_indexes), written


def test_each_label_is_found_by_status_and_the_disputed_through_the_index(onto):
    """`status = ?` bound to a disputed label reads the partial index; bound to any other label it must
    not (the index lacks those rows) and finds them by scanning: each label's list is the assertions
    that carry it."""
    onto.ingest("a.md", _mem("a", "- Orders DB: postgres"), Channel.CLI)
    onto.ingest("b.md", _mem("b", "- Orders DB: postgres"), Channel.CLI)
    onto.ingest("c.md", _mem("c", "- Orders DB: mysql\n- The billing service retries three times"), Channel.CLI)
    with onto.reader() as conn:
        every = {a.id: a.status for a in queries.assertions(conn, with_sources=False)}
        assert {"CONTESTED", "INSUFFICIENT_DATA"} <= set(every.values()), every
        for label in ("AFFIRMATIVE", "CONTESTED", "CONTRADICTORY", "INSUFFICIENT_DATA"):
            found = [a.id for a in queries.assertions(conn, status=label, with_sources=False)]
            assert found == sorted(i for i, s in every.items() if s == label), label
        plan = " ".join(str(r[-1]) for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM assertions WHERE status = ?", ("CONTESTED",)))
    assert "verdicts_disputed" in plan, plan
