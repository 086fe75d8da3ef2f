"""Shared fixtures: a fresh knowledge root per test and a helper to build artifacts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ontology.ingest import Ontology
# Nothing a test starts outlives it: leftover processes and mounts under its tmp_path are stopped.
from support.leftovers import (_nothing_left_behind, pytest_sessionfinish,  # noqa: F401
                               pytest_terminal_summary)

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "Knowledge"
    path.mkdir()
    return path


@pytest.fixture
def onto(root: Path):
    ontology = Ontology(root, "shop", create=True)
    yield ontology
    ontology.close()


def memory(name: str, description: str, body: str = "", type_: str = "project") -> bytes:
    return f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n{body}\n".encode()


def ledger(session: str, body: str, *, epoch: int = 1, timestamp: str = "2026-04-05T14:45:00Z") -> bytes:
    return (f"---\nsession: {session}\nepoch: {epoch}\ncontext_pct: 40\ntimestamp: {timestamp}\n"
            f"phase: progress\n---\n{body}\n").encode()


def graph_snapshot(path: Path) -> dict[str, object]:
    """What a graph says (concepts, assertions with labels and numbers, history size, relations),
    without ids or receipt times, so two graphs built differently can be compared."""
    conn = sqlite3.connect(path)
    try:
        return {
            "concepts": conn.execute("SELECT key, name, type, title, description FROM concepts ORDER BY key").fetchall(),
            "assertions": conn.execute(
                "SELECT a.key, a.text, c.key, a.status, round(a.belief, 12), round(a.plausibility, 12), "
                "round(a.conflict, 12), a.n_for, a.n_against FROM assertions a JOIN concepts c ON c.id = a.concept_id "
                "ORDER BY a.key").fetchall(),
            "stances": conn.execute("SELECT count(*) FROM stance_history").fetchone(),
            "relations": conn.execute("SELECT src, dst, kind FROM relations ORDER BY 1, 2, 3").fetchall(),
            "updates": conn.execute(
                "SELECT u.rule, n.key, o.key, u.old_text, u.new_text FROM updates u JOIN assertions n ON n.id = u.newer_id "
                "LEFT JOIN assertions o ON o.id = u.older_id ORDER BY 1, 2, 3, 4, 5").fetchall(),
        }
    finally:
        conn.close()
