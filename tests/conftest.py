"""Shared fixtures: a fresh knowledge root per test and a helper to build artifacts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontology.ingest import Ontology

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
