"""Stored evidence aggregates, kept by delta, equal a full recount from the sources after every step of
any sequence of ingests, version shifts and re-ingests, through a real SQLite graph; a rebuild
reproduces them exactly."""

from __future__ import annotations

import math
import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ledger
from ontology import aggregate, queries
from ontology.artifact import Channel
from ontology.evidence import weight_units, weigh
from ontology.ingest import Ontology

# Prose restated and negated, and two exclusive slots (as prose and as `key: value` facts) whose rival
# values, negations and self-contradicting sources exercise the implied denials.
STATEMENTS = [
    "Run the migrations before deploying", "Never run the migrations before deploying",
    "Tests run with pytest", "Tests never run with pytest",
    "The database is postgres", "The database is not postgres", "database: mysql", "The database is mysql",
    "The database is not mysql", "database: sqlite",
    "The queue uses kafka", "The queue does not use kafka", "The queue uses rabbitmq", "The queue uses nats",
]
MEMORY_TYPES = ["user", "project", "reference", "feedback", None]

bullets = st.lists(st.sampled_from(STATEMENTS), min_size=0, max_size=5)
memory_step = st.tuples(st.just("memory"), st.integers(0, 3), st.integers(1, 9), st.sampled_from(MEMORY_TYPES),
                        bullets)
ledger_step = st.tuples(st.just("ledger"), st.integers(0, 2), st.integers(1, 2), st.integers(1, 9), bullets)
document_step = st.tuples(st.just("document"), st.integers(0, 1), st.just(0), st.just(None), bullets)
reingest_step = st.tuples(st.just("reingest"), st.integers(0, 50), st.just(0), st.just(None), st.just([]))
steps = st.lists(st.one_of(memory_step, ledger_step, document_step, reingest_step), min_size=1, max_size=14)


def _artifact(step: tuple, n: int) -> tuple[str, bytes]:
    kind, who, when, extra, said = step
    body = "\n".join(f"- {s}" for s in said)
    if kind == "memory":  # versions of one file: an older `modified` only joins history
        type_line = f"type: {extra}\n" if extra else ""
        return f"m{who}.md", (f"---\nname: m{who}\ndescription: notes {who}\n{type_line}"
                              f"modified: 2026-04-0{when}T10:00:00Z\n---\n{body}\n").encode()
    if kind == "ledger":  # entries of one session+epoch add to its stances
        return (f"2026-04-0{extra}T1000Z_e{n:03d}.md",
                ledger(f"s{who}", f"Key decisions:\n{body}", epoch=when, timestamp=f"2026-04-0{extra}T10:00:00Z"))
    return f"doc{who}.txt", f"Notes {n}\n\n{body}\n".encode()


def _sides_recounted(rows: list[tuple[int, float]]) -> tuple[int, int, int, int]:
    pros = [weight_units(r) for s, r in rows if s > 0]
    cons = [weight_units(r) for s, r in rows if s < 0]
    return sum(pros), len(pros), sum(cons), len(cons)


def assert_stored_equals_recount(path: Path) -> None:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM assertions")]
        recount = queries.stance_weights(conn, ids)
        stored_rows = {r[0]: r for r in conn.execute(
            "SELECT id, status, belief, plausibility, conflict, n_for, n_against FROM assertions")}
        for aid, polarity, *stored in queries.aggregates(conn, ids):
            assert aggregate.sides(polarity, *stored) == _sides_recounted(recount[aid]), aid
            expected = weigh(recount[aid])
            _, status, belief, plausibility, conflict, n_for, n_against = stored_rows[aid]
            assert (status, n_for, n_against) == (expected.label.value, expected.n_for, expected.n_against), aid
            for got, want in ((belief, expected.belief), (plausibility, expected.plausibility),
                              (conflict, expected.conflict)):
                assert math.isclose(got, want, abs_tol=1e-9), (aid, got, want)
    finally:
        conn.close()


def _dump(path: Path) -> list[list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return [conn.execute(sql).fetchall() for sql in (
            "SELECT key, status, belief, plausibility, conflict, n_for, n_against, w_pos, n_pos, w_neg, n_neg, "
            "w_cross, n_cross FROM assertions ORDER BY key",
            "SELECT * FROM slots ORDER BY slot", "SELECT * FROM slot_values ORDER BY slot, value")]
    finally:
        conn.close()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_stored_aggregates_equal_a_recount_after_every_step(plan):
    with tempfile.TemporaryDirectory() as tmp:
        onto = Ontology(Path(tmp), "shop", create=True)
        try:
            with onto.reader():
                pass  # the graph exists even if every step is a re-ingest of nothing
            sent: list[tuple[str, bytes]] = []
            for n, step in enumerate(plan):
                if step[0] == "reingest":
                    if not sent:
                        continue
                    name, data = sent[step[1] % len(sent)]
                else:
                    name, data = _artifact(step, n)
                    sent.append((name, data))
                onto.ingest(name, data, Channel.CLI)
                assert_stored_equals_recount(onto.paths.database)
            before = _dump(onto.paths.database)
            onto.rebuild()
            assert _dump(onto.paths.database) == before
        finally:
            onto.close()


def test_a_withdrawn_rival_value_stops_denying_the_others(onto):
    """One file moves from `Orders DB: mysql` to `Orders DB: postgres`: mysql loses its support and
    postgres its implied denial from that file, in one delta each. (A key that names its subject:
    a bare "database" in a topic file is that file's own slot, ADR 0009.)"""
    def mem(name: str, when: int, body: str) -> bytes:
        return f"---\nname: {name}\ndescription: db\nmodified: 2026-04-0{when}T10:00:00Z\n---\n{body}\n".encode()
    onto.ingest("a.md", mem("a", 1, "- Orders DB: postgres"), Channel.CLI)
    onto.ingest("b.md", mem("b", 1, "- Orders DB: postgres"), Channel.CLI)
    onto.ingest("c.md", mem("c", 1, "- Orders DB: mysql"), Channel.CLI)
    with onto.reader() as conn:
        status = {a.text: a.status for a in queries.assertions(conn, with_sources=False)}
    assert status == {"Orders DB: postgres": "CONTESTED", "Orders DB: mysql": "CONTESTED"}  # 2:1 and 1:2
    onto.ingest("c.md", mem("c", 2, "- Orders DB: postgres"), Channel.CLI)
    with onto.reader() as conn:
        views = {a.text: a for a in queries.assertions(conn, with_sources=False)}
    assert (views["Orders DB: postgres"].status, views["Orders DB: postgres"].n_against) == ("AFFIRMATIVE", 0)
    assert (views["Orders DB: mysql"].status, views["Orders DB: mysql"].n_for) == ("CONTRADICTORY", 0)
    assert_stored_equals_recount(onto.paths.database)


def test_each_verdict_row_is_written_once_per_artifact(onto):
    """The aggregates' change and the verdict computed from it reach a row in one UPDATE: the writer keeps
    the delta in memory until it re-weighs the row (apply13), instead of an UPDATE by delta, a read and a
    second UPDATE. A source switching slot values changes both rivals' aggregates and both verdicts."""
    def mem(name: str, when: int, body: str) -> bytes:
        return f"---\nname: {name}\ndescription: db\nmodified: 2026-04-0{when}T10:00:00Z\n---\n{body}\n".encode()
    onto.ingest("a.md", mem("a", 1, "- Orders DB: postgres\n- Tests run with pytest"), Channel.CLI)
    onto.ingest("b.md", mem("b", 1, "- Orders DB: mysql\n- Tests run with pytest"), Channel.CLI)
    statements: list[str] = []
    with onto._exclusive() as writer:
        writer.conn.set_trace_callback(statements.append)
    try:
        onto.ingest("b.md", mem("b", 2, "- Orders DB: postgres\n- Tests never run with pytest"), Channel.CLI)
    finally:
        with onto._exclusive() as writer:
            writer.conn.set_trace_callback(None)
    written: dict[str, int] = {}
    for sql in statements:
        if sql.startswith("UPDATE verdicts"):
            row = sql.rsplit("assertion_id=", 1)[1]
            written[row] = written.get(row, 0) + 1
    assert len(written) == 3 and set(written.values()) == {1}, written  # both rivals and the negated claim
    # and the source's weight comes from the row the writer read for its version, not a second read
    assert not [s for s in statements if s.startswith("SELECT reliability, kind FROM sources")], statements
    assert_stored_equals_recount(onto.paths.database)
