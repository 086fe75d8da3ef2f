"""What a single ingest asks SQLite, statement by statement (ADR 0007, "Session 11"): the stored
assertions an artifact's statements restate are read in one query, not one per statement, and a
key the artifact itself creates is found again by its later statements."""

from __future__ import annotations

import re

from conftest import memory
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
