"""What a single ingest asks SQLite, statement by statement (ADR 0007, "Session 11"): the stored
assertions an artifact's statements restate are read in one query, not one per statement, and a
key the artifact itself creates is found again by its later statements."""

from __future__ import annotations

import re

from conftest import ledger, memory
from ontology import queries
from ontology.artifact import Channel
from ontology.ingest import Ontology, Status

_BULLETS = ["Deploys go through the staging cluster first", "The nightly job rebuilds the search index",
            "Invoices are rendered with the old template", "Feature flags live in the settings table",
            "Backups are copied to the cold bucket weekly"]


def _traced(onto: Ontology, name: str, data: bytes) -> list[str]:
    """The SQL the writer runs for one single ingest (the writer is opened before tracing)."""
    onto.catch_up()
    assert onto._writer is not None
    statements: list[str] = []
    onto._writer.conn.set_trace_callback(statements.append)
    try:
        result = onto.ingest(name, data, Channel.HTTP)
    finally:
        onto._writer.conn.set_trace_callback(None)
    assert result.status is Status.NEW, result
    return statements


def test_an_artifacts_keys_are_read_in_one_query(root):
    onto = Ontology(root, "shop", create=True)
    body = "\n".join(f"- {b}" for b in _BULLETS)
    onto.ingest("first.md", memory("first", "what we settled", body), Channel.HTTP)
    restated = "\n".join(f"- {b}" for b in reversed(_BULLETS))  # all five known, by exact key
    statements = _traced(onto, "second.md", memory("second", "the same, said again", restated))
    by_key = [s for s in statements if re.search(r"FROM assertion(s|_rows)\b.* WHERE key\s*=", s)]
    in_list = [s for s in statements if re.search(r"FROM assertion_rows WHERE key IN \(", s)]
    assert by_key == [] and len(in_list) == 1, (by_key, in_list)
    with onto.reader() as conn:
        views = [a for a in queries.assertions(conn) if a.text in _BULLETS]
    assert len(views) == len(_BULLETS)  # every restatement found its assertion
    assert all(v.n_for == 2 for v in views), [(v.text, v.n_for) for v in views]
    onto.close()


def test_a_key_said_twice_in_one_file_is_one_assertion(root):
    """Too short for the near-duplicate index (under 3 tokens): only the exact key can find the
    assertion its first statement created a moment before, in the same artifact."""
    onto = Ontology(root, "shop", create=True)
    result = onto.ingest("notes.md", memory("notes", "short rules", "- Use uv\n- Prefer ruff\n- Use uv"),
                         Channel.HTTP)
    assert result.status is Status.NEW, result
    with onto.reader() as conn:
        texts = sorted(a.text for a in queries.assertions(conn))
    assert texts.count("Use uv") == 1, texts
    onto.close()


def test_the_owners_of_restated_claims_are_read_with_the_artifact(root):
    """A memory file restating claims a ledger entry made first takes them over (its own statement
    re-anchors them); which concept owns each, and its type, is read for all of them in one statement,
    not once per statement (apply13), and kept current as the artifact moves them. A later ledger entry
    restating them leaves them with the memory file."""
    onto = Ontology(root, "shop", create=True)
    body = "\n".join(f"- {b}" for b in _BULLETS)
    onto.ingest("2026-04-05T1445Z_e000001.md", ledger("s1", f"Key decisions:\n{body}"), Channel.HTTP)
    restated = "\n".join(f"- {b}" for b in reversed(_BULLETS))
    statements = _traced(onto, "deploys.md", memory("deploys", "how we ship", restated))
    per_statement = [s for s in statements if re.search(r"SELECT a\.concept_id, c\.type, \(SELECT type|SELECT c\.type, \(SELECT type", s)]
    batched = [s for s in statements if re.search(r"SELECT a\.id, a\.concept_id, c\.type FROM assertion_rows", s)]
    assert per_statement == [] and len(batched) == 1, (per_statement, batched)
    _traced(onto, "2026-04-06T1445Z_e000002.md", ledger("s2", f"Key decisions:\n{body}", timestamp="2026-04-06T14:45:00Z"))
    with onto.reader() as conn:
        owners = {r[0]: r[1] for r in conn.execute(
            "SELECT a.text, c.key FROM assertions a JOIN concepts c ON c.id = a.concept_id")}
    assert {owners[b] for b in _BULLETS} == {"deploys"}, owners
    onto.close()


def test_a_concept_is_indexed_as_written_without_reading_it_back(root):
    """The search index of a memory file's concept holds the fields its row holds after the write (a
    new version without `name:` keeps the title, takes the new description), worked out from the row as
    read before the write, not read back after it (apply13)."""
    onto = Ontology(root, "shop", create=True)
    onto.ingest("queue.md", b"---\nname: Queue notes\ndescription: which broker we run\ntype: project\n---\n"
                            b"- Broker: kafka\n", Channel.HTTP)
    onto.ingest("other.md", memory("other", "the broker again", "- Broker: nats"), Channel.HTTP)
    statements = _traced(onto, "queue.md", b"---\ndescription: the broker we moved to\ntype: project\n---\n"
                                           b"- Broker: rabbitmq\n")
    read_back = [s for s in statements if s.startswith("SELECT key, name, title, description FROM concepts ")]
    assert read_back == [], read_back
    with onto.reader() as conn:
        rows = {r[0]: tuple(r[1:]) for r in conn.execute(
            "SELECT id, key, name, coalesce(title, ''), coalesce(description, '') FROM concepts")}
        indexed = {r[0]: tuple(r[1:]) for r in conn.execute(
            "SELECT rowid, key, name, title, description FROM concepts_fts")}
    assert indexed == rows, (indexed, rows)
    assert ("queue", "queue", "Queue notes", "the broker we moved to") in rows.values(), rows
    onto.close()
