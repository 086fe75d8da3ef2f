"""Issue 13, integrity findings: a half-written drop is never ingested and cut (D1), the live graph
equals a rebuild after a failed commit (D2), `fstat` on an open projected file reports the size
of the snapshot that handle reads (D3), and a projection refresh that failed is not taken for fresh."""

from __future__ import annotations

import errno
import hashlib
import os
import time
from pathlib import Path

import pytest

from conftest import graph_snapshot, memory
from ontology.artifact import Channel
from ontology.ingest import Ontology
from support.fuse_helpers import requires_fuse, unmount
from support.server_proc import ServerProcess, artifact_rows, wait_drained


def test_a_writer_pausing_across_a_rescan_tick_loses_nothing(root):
    from ontology.watcher import QUIET_SECONDS, RESCAN_SECONDS

    ingest = root / "ontology" / "shop" / "ingest"
    ingest.mkdir(parents=True)
    first = memory("paused", "written in two halves", "First half of the body.\n")
    second = b"Second half, written after a pause longer than a rescan tick.\n"
    with ServerProcess(root):
        with open(ingest / "paused.md", "wb") as handle:  # written in place: no rename, no close yet
            handle.write(first)
            handle.flush()
            time.sleep(RESCAN_SECONDS + 1.5)
            assert RESCAN_SECONDS + 1.5 < QUIET_SECONDS
            handle.write(second)
        wait_drained(ingest, timeout=30)
    rows = artifact_rows(root / "ontology" / "shop" / "graph.db")
    assert rows == [("memory:shop/paused.md", hashlib.sha256(first + second).hexdigest())]


def _current_versions(db: Path) -> list[tuple[str, str]]:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT s.identity, a.sha256 FROM sources s JOIN artifacts a ON a.id = s.current_artifact"
                            " ORDER BY 1").fetchall()
    finally:
        conn.close()


def test_live_graph_equals_rebuild_after_a_commit_that_failed_after_archiving(root, monkeypatch):
    onto = Ontology(root, "shop", create=True)
    version = [memory("a", f"version {i}", f"- Deploys run on day {i}.") for i in range(4)]
    onto.ingest_many([("a.md", version[1], Channel.CLI)])
    real_complete = onto.archive.complete
    failures = []

    def archive_then_fail(pending):  # the disk fills between the archive append and the commit
        offset = real_complete(pending)
        if not failures:
            failures.append(offset)
            raise OSError(errno.ENOSPC, "No space left on device")
        return offset
    monkeypatch.setattr(onto.archive, "complete", archive_then_fail)
    with pytest.raises(OSError):
        onto.ingest_many([("a.md", version[2], Channel.CLI)])
    onto.ingest_many([("a.md", version[3], Channel.CLI)])  # a newer version arrives meanwhile
    retried = onto.ingest_many([("a.md", version[2], Channel.CLI)])  # the watcher retries the failed file
    live, live_current = graph_snapshot(onto.paths.database), _current_versions(onto.paths.database)
    log_lines = onto.archive.log_path.read_bytes().count(b"\n")
    onto.rebuild()
    onto.close()
    assert _current_versions(onto.paths.database) == live_current
    assert graph_snapshot(onto.paths.database) == live
    assert live_current == [("memory:shop/a.md", hashlib.sha256(version[3]).hexdigest())]
    assert log_lines == 3 and retried[0].status.value == "duplicate"


@requires_fuse
def test_fstat_on_an_open_projected_file_reports_its_snapshots_size(tmp_path):
    from support.bridge_env import BridgeEnv

    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    onto = Ontology(bridge.root, "shop")
    onto.ingest("one.md", memory("one", "the only memory"), Channel.CLI)
    onto.close()
    assert bridge.cli("mount").returncode == 0
    try:
        path = bridge.memory_dir / "MEMORY.md"
        fd = os.open(path, os.O_RDONLY)
        try:
            onto = Ontology(bridge.root, "shop")
            for i in range(5):  # MEMORY.md grows while the handle is open
                onto.ingest(f"more-{i}.md", memory(f"more-{i}", f"another memory with a long description {i}"),
                            Channel.CLI)
            onto.close()
            size = os.fstat(fd).st_size
            data = b""
            while chunk := os.read(fd, 65536):
                data += chunk
        finally:
            os.close(fd)
        assert size == len(data), (size, len(data))
        assert os.stat(path).st_size == len(path.read_bytes()) > len(data)  # a new open sees the new version
    finally:
        bridge.cli("unmount")
        unmount(bridge.memory_dir)


def test_a_refresh_that_failed_is_tried_again_not_taken_for_fresh(root):
    """The projection serves from its cache while the graph's stamp is unchanged; a refresh that
    failed (the graph unreadable for a moment) must not record the new stamp, or the old bytes would
    be served as current until the next commit."""
    import sqlite3
    from contextlib import contextmanager

    from projection.view import ProjectionView

    onto = Ontology(root, "shop", create=True)
    onto.ingest("a.md", memory("a", "first", "- The queue drains nightly"), Channel.CLI)
    view = ProjectionView(onto)
    before = view.read("a.md")
    onto.ingest("a.md", memory("a", "second", "- The queue drains hourly"), Channel.CLI)
    plain_reader = onto.reader

    @contextmanager
    def unreadable():
        raise sqlite3.OperationalError("database is locked")
        yield  # pragma: no cover

    onto.reader = unreadable  # type: ignore[method-assign]
    with pytest.raises(sqlite3.OperationalError):
        view.read("a.md")
    onto.reader = plain_reader  # type: ignore[method-assign]
    after = view.read("a.md")
    onto.close()
    assert b"hourly" in after and after != before
