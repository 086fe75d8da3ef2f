"""Ingesting into a real SQLite graph: labels from real artifacts, merge, history, idempotence,
rejections that spare the batch, and a rebuild that reproduces everything."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, graph_snapshot, ledger, memory
from ontology import queries
from ontology.artifact import Channel
from ontology.ingest import Ontology, Status


def _by_text(onto: Ontology) -> dict[str, queries.AssertionView]:
    with onto.reader() as conn:
        return {a.text: a for a in queries.assertions(conn)}


def _only(onto: Ontology) -> queries.AssertionView:
    items = list(_by_text(onto).values())
    assert len(items) == 1, [a.text for a in items]
    return items[0]


def _ingest_all(onto, items):
    return [onto.ingest(name, data, Channel.CLI) for name, data in items]


def _ledgers(stances):
    """One ledger entry per independent session, each saying the claim or its negation."""
    out = []
    for i, says in enumerate(stances):
        line = "- Run the migrations before deploying" if says else "- Never run the migrations before deploying"
        out.append((f"2026-04-0{i + 1}T1000Z_e001.md", ledger(f"s{i}", f"Key decisions:\n{line}")))
    return out


@pytest.mark.parametrize(("stances", "label"), [
    ([True], "INSUFFICIENT_DATA"),
    ([True, True], "AFFIRMATIVE"),
    ([True, False], "CONTESTED"),
    ([True, True, False, False], "CONTESTED"),
    ([True, True, False, False, False], "CONTESTED"),
    # An assertion reads as first worded: two sessions saying "Never run ..." support that wording.
    ([False, False], "AFFIRMATIVE"),
    ([True, False, False, False], "CONTRADICTORY"),
])
def test_canonical_cases_from_real_artifacts(onto, stances, label):
    results = _ingest_all(onto, _ledgers(stances))
    assert all(r.status is Status.NEW for r in results)
    assert _only(onto).status == label


def test_zero_for_two_against_is_contradictory(onto):
    """Exclusive alternatives give evidence against a claim nobody else supports (a key naming its
    subject: a bare "database" in a topic file is that file's own, ADR 0009)."""
    _ingest_all(onto, [
        ("a.md", memory("db-a", "Orders DB: postgres")),
        ("b.md", memory("db-b", "Orders DB: mysql")),
        ("c.md", memory("db-c", "Orders DB: mysql")),
        ("d.md", memory("db-d", "The Orders DB is MySQL")),
    ])
    by_text = _by_text(onto)
    postgres = by_text["Orders DB: postgres"]
    assert (postgres.n_for, postgres.n_against) == (1, 3)
    assert postgres.status == "CONTRADICTORY"
    mysql = by_text["Orders DB: mysql"]
    assert (mysql.n_for, mysql.n_against, mysql.status) == (3, 1, "AFFIRMATIVE")


def test_value_conflict_is_labelled_on_both_sides(onto):
    _ingest_all(onto, [("a.md", memory("db-a", "Orders DB: postgres")), ("b.md", memory("db-b", "Orders DB: mysql"))])
    by_text = _by_text(onto)
    for text in ("Orders DB: postgres", "Orders DB: mysql"):
        assert by_text[text].status == "CONTESTED"
        implied = [s for s in by_text[text].sources if s.implied]
        assert len(implied) == 1 and implied[0].stance == -1


def test_paraphrase_and_negation_merge_into_one_proposition(onto):
    _ingest_all(onto, [
        ("testing.md", memory("testing", "Integration tests must hit a real database", type_="feedback")),
        ("2026-04-05T1000Z_e001.md", ledger("s1", "- integration tests hit the real database")),
        ("2026-04-06T1000Z_e001.md", ledger("s2", "- Integration tests should never hit a real database.")),
    ])
    item = _only(onto)
    assert item.concept == "testing"
    assert (item.n_for, item.n_against, item.status) == (2, 1, "CONTESTED")
    assert {s.source for s in item.sources} == {"memory:shop/testing.md", "ledger:s1#1", "ledger:s2#1"}


def test_version_shift_replaces_stance_and_keeps_history(onto):
    v1 = memory("deploys", "Deploy on Fridays", type_="project").replace(b"type: project", b"type: project\nmodified: 2026-05-01T00:00:00Z")
    v2 = memory("deploys", "Never deploy on Fridays", type_="project").replace(b"type: project", b"type: project\nmodified: 2026-06-01T00:00:00Z")
    assert onto.ingest("deploys.md", v1, Channel.DROP).version == 1
    assert onto.ingest("deploys.md", v2, Channel.HTTP).version == 2
    item = _only(onto)
    assert (item.n_for, item.n_against) == (0, 1), "one source, its current stance only"
    with onto.reader() as conn:
        hist = queries.history(conn, item.id)
    assert [(h["stance"], h["version"]) for h in hist] == [("for", 1), ("against", 2)]


def test_late_arriving_older_version_does_not_override(onto):
    new = memory("deploys", "Never deploy on Fridays").replace(b"---\nname", b"---\nmodified: 2026-06-01T00:00:00Z\nname")
    old = memory("deploys", "Deploy on Fridays").replace(b"---\nname", b"---\nmodified: 2026-05-01T00:00:00Z\nname")
    _ingest_all(onto, [("deploys.md", new), ("deploys.md", old)])
    item = _only(onto)
    assert item.text == "Never deploy on Fridays" and (item.n_for, item.n_against) == (1, 0)
    with onto.reader() as conn:
        assert len(queries.history(conn, item.id)) == 2


def test_a_version_restored_with_its_old_date_is_what_the_agent_reads(onto):
    """blind14: a note reverted A -> B -> A (`git checkout`, a backup, an undo) brings A's `modified:` back.
    The older date kept B current: the folder said "Fridays" again and the agent read "Never". Bytes the
    source had before are its next version whatever their date (ADR 0003); unseen older bytes stay history."""
    from projection.view import ProjectionView

    old = memory("deploys", "Deploy on Fridays").replace(b"---\nname", b"---\nmodified: 2026-05-01T00:00:00Z\nname")
    new = memory("deploys", "Never deploy on Fridays").replace(b"---\nname", b"---\nmodified: 2026-06-01T00:00:00Z\nname")
    _ingest_all(onto, [("deploys.md", old), ("deploys.md", new), ("deploys.md", old)])
    item = _only(onto)
    assert item.text == "Deploy on Fridays" and (item.n_for, item.n_against) == (1, 0)
    assert ProjectionView(onto).read("deploys.md").startswith(old)
    with onto.reader() as conn:
        assert sorted((h["version"], h["stance"]) for h in queries.history(conn, item.id)) == \
            [(1, "for"), (2, "against"), (3, "for")]


def test_withdrawn_statement_leaves_the_combination_but_not_history(onto):
    _ingest_all(onto, [("x.md", memory("x", "Cache the wheels", "- Pin the toolchain"))])
    _ingest_all(onto, [("x.md", memory("x", "Cache the wheels"))])
    pin = _by_text(onto)["Pin the toolchain"]
    assert (pin.n_for, pin.n_against, pin.status) == (0, 0, "INSUFFICIENT_DATA")
    with onto.reader() as conn:
        assert [h["stance"] for h in queries.history(conn, pin.id)] == ["for", "withdrawn"]


def test_reingesting_the_same_bytes_is_a_noop(onto):
    data = (FIXTURES / "corpus" / "memory" / "testing-real-db.md").read_bytes()
    assert onto.ingest("testing-real-db.md", data, Channel.DROP).status is Status.NEW
    with onto.reader() as conn:
        before = queries.counts(conn)
    for channel in (Channel.DROP, Channel.HTTP, Channel.MCP):
        assert onto.ingest("testing-real-db.md", data, channel).status is Status.DUPLICATE
    with onto.reader() as conn:
        assert queries.counts(conn) == before
    assert sum(1 for _ in onto.archive.entries()) == 1


def test_bad_input_is_rejected_with_reason_while_the_batch_goes_on(onto):
    good = sorted((FIXTURES / "corpus").rglob("*.md"))
    bad = sorted((FIXTURES / "bad").iterdir())
    extra = [("big.md", b"x" * (1024 * 1024 + 1)), ("../escape.md", b"hello there friend\n"),
             ("blob.bin", bytes(range(1, 32)) * 50)]
    batch = [(p.name, p.read_bytes()) for p in bad] + extra + [(p.name, p.read_bytes()) for p in good]
    results = _ingest_all(onto, batch)
    rejected = [r for r in results if r.status is Status.REJECTED]
    assert len(rejected) == len(bad) + len(extra)
    assert all(r.reason for r in rejected)
    assert all(r.status is Status.NEW for r in results if r.status is not Status.REJECTED)
    assert len([r for r in results if r.status is Status.NEW]) == len(good)
    reasons = sorted(onto.paths.rejected.glob("*.reason.json"))
    assert len(reasons) == len(rejected)
    assert all(json.loads(p.read_text())["reason"] for p in reasons)
    assert not (onto.paths.root / "ontology" / "escape.md").exists()


def test_corpus_builds_concepts_relations_and_sections(onto):
    for path in sorted((FIXTURES / "corpus").rglob("*.md")):
        onto.ingest_path(path)
    with onto.reader() as conn:
        testing = queries.concept(conn, "testing-real-db")
        keys = {r[0] for r in conn.execute("SELECT key FROM concepts")}
    assert {"testing-real-db", "ci-setup", "key-decisions", "open-threads"} <= keys
    assert "release-checklist" not in keys, "an index line linking a missing file annotates, never creates"
    assert {"concept": "ci-setup", "kind": "wikilink"} in testing["relations"]["out"]
    assert {"concept": "ci-setup", "kind": "link"} in testing["relations"]["in"]
    assert testing["type"] == "feedback"
    mock = next(a for a in testing["assertions"] if a["text"].startswith("Never mock"))
    assert mock["status"] == "CONTESTED"  # the memory and session def456 against session abc123


def test_rebuild_reproduces_concepts_assertions_labels_and_numbers(onto):
    for path in sorted((FIXTURES / "corpus").rglob("*.md")):
        onto.ingest_path(path)
    onto.ingest("deploys.md", memory("deploys", "Never deploy on Fridays"), Channel.HTTP)
    onto.close()
    before = graph_snapshot(onto.paths.database)
    assert before["assertions"]
    assert onto.rebuild() == 11
    assert graph_snapshot(onto.paths.database) == before


def test_near_duplicates_merge_among_many_unrelated_assertions(onto):
    for i in range(300):
        onto.ingest(f"n{i}.md", memory(f"note-{i}", f"Service {i} exposes metrics on port {9000 + i}"), Channel.CLI)
    onto.ingest("a.md", memory("alpha", "The billing worker retries failed invoices with exponential backoff"), Channel.CLI)
    onto.ingest("b.md", memory("beta", "billing worker retries failed invoices using exponential backoff"), Channel.CLI)
    hit = [a for a in _by_text(onto).values() if "invoices" in a.text]
    assert len(hit) == 1 and hit[0].n_for == 2
