"""The background checkpointer of the single-ingest path (ADR 0007, "Session 9"): it really copies
WAL frames into the database file while single ingests go on, readers see every committed artifact,
and closing or rebuilding stops it and still leaves a checkpointed file."""

from __future__ import annotations

import shutil
import sqlite3
import threading

import pytest

from conftest import memory
from ontology import checkpoint
from ontology.artifact import Channel
from ontology.ingest import Ontology, Status

# Small enough that a dozen one-artifact commits (tens of frames each) pass it several times.
FRAMES = 64


@pytest.fixture
def small_rounds(monkeypatch):
    monkeypatch.setattr(checkpoint, "BACKGROUND_FRAMES", FRAMES)


def _item(i: int) -> tuple[str, bytes]:
    return f"note-{i}.md", memory(f"note-{i}", f"Service {i} runs on port {8000 + i}",
                                  f"- The worker pool of service {i} keeps {i + 2} threads\n"
                                  f"- Deploys of service {i} go through stage {i % 3}\n")


def _artifacts(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM artifacts").fetchone()[0]


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "kg-checkpoint"]


def test_single_ingests_are_checkpointed_behind_the_writer(root, small_rounds):
    onto = Ontology(root, "shop", create=True)
    try:
        backlogs = []
        for i in range(24):
            assert onto.ingest(*_item(i), Channel.HTTP).status is Status.NEW
            ckpt = onto._checkpointer
            assert ckpt is not None and ckpt.wait_idle(30)
            backlogs.append(ckpt.backlog())
        # Each commit that left FRAMES or more behind woke a round that copied them: the backlog never
        # builds up (without the thread it grows by every commit's frames, to thousands here).
        assert ckpt.checkpoints >= 3
        assert max(backlogs) < FRAMES, backlogs
        with onto.reader() as conn:  # a reader sees every committed artifact
            assert _artifacts(conn) == 24
    finally:
        onto.close()
    assert not _checkpoint_threads()


def test_close_leaves_a_checkpointed_file_and_no_thread(root, tmp_path, small_rounds):
    onto = Ontology(root, "shop", create=True)
    for i in range(10):
        onto.ingest(*_item(i), Channel.HTTP)
    assert _checkpoint_threads()
    onto.close()
    assert not _checkpoint_threads()
    # The database file alone (no -wal beside it) holds every artifact: the writer closed last.
    alone = tmp_path / "alone.db"
    shutil.copyfile(onto.paths.database, alone)
    conn = sqlite3.connect(alone)
    try:
        assert _artifacts(conn) == 10
    finally:
        conn.close()


def test_rebuild_stops_the_checkpointer_and_single_ingests_go_on(root, small_rounds):
    onto = Ontology(root, "shop", create=True)
    try:
        for i in range(8):
            onto.ingest(*_item(i), Channel.HTTP)
        assert onto.rebuild() == 8
        assert not _checkpoint_threads()
        for i in range(8, 16):
            assert onto.ingest(*_item(i), Channel.HTTP).status is Status.NEW
        assert len(_checkpoint_threads()) == 1
        with onto.reader() as conn:
            assert _artifacts(conn) == 16
    finally:
        onto.close()
