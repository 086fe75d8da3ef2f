"""Batches, the pack archive and replay: bulk ingest says what one-at-a-time ingest says, a failing
artifact is kept and spares its batch, and the graph catches up with whatever the archive holds
(a crash between archive and commit, a deleted database, a torn log line, another process's rebuild)."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sqlite3
import threading

from conftest import FIXTURES, graph_snapshot, ledger, memory
from ontology import queries
from ontology.archive import Incoming
from ontology.artifact import Channel
from ontology.clock import utc_now
from ontology.ingest import Ontology, Status
from ontology.store import GraphWriter


def _corpus() -> list[tuple[str, bytes, Channel]]:
    items = [(p.name, p.read_bytes(), Channel.CLI) for p in sorted((FIXTURES / "corpus").rglob("*.md"))]
    items += [(f"2026-04-0{i}T1000Z_e001.md", ledger(f"s{i}", "Key decisions:\n- database: "
                                                    + ("postgres" if i % 2 else "mysql")), Channel.CLI)
              for i in range(1, 6)]
    return items


def _texts(onto: Ontology) -> dict[str, queries.AssertionView]:
    with onto.reader() as conn:
        return {a.text: a for a in queries.assertions(conn)}


def test_bulk_ingest_builds_the_same_graph_as_one_at_a_time(root):
    single = Ontology(root, "one", create=True)
    for name, data, channel in _corpus():
        single.ingest(name, data, channel)
    single.close()
    bulk = Ontology(root, "bulk", create=True)
    results = bulk.ingest_many(_corpus())
    bulk.close()
    assert [r.status for r in results].count(Status.NEW) == len(results) - sum(
        r.status is Status.REJECTED for r in results)
    assert graph_snapshot(bulk.paths.database) == graph_snapshot(single.paths.database)


def test_a_batch_sees_its_own_duplicates(onto):
    note = memory("deploys", "Never deploy on Fridays")
    results = onto.ingest_many([("a.md", note, Channel.CLI), ("a.md", note, Channel.CLI)])
    assert [r.status for r in results] == [Status.NEW, Status.DUPLICATE]
    assert sum(1 for _ in onto.archive.entries()) == 1


def test_an_artifact_that_fails_to_merge_is_kept_and_spares_its_batch(onto, monkeypatch, caplog):
    original = GraphWriter._apply

    def failing(self, artifact, *args):
        if artifact.filename == "bad.md":
            self.conn.execute("INSERT INTO concepts(key, name, type, created_at, updated_at) "
                              "VALUES('half-written', 'x', 'memory', '', '')")  # work the savepoint must undo
            raise ValueError("simulated defect")
        return original(self, artifact, *args)

    monkeypatch.setattr(GraphWriter, "_apply", failing)
    with caplog.at_level(logging.ERROR):
        results = onto.ingest_many([("a.md", memory("a", "Use uv for installs"), Channel.CLI),
                                    ("bad.md", memory("bad", "Something"), Channel.CLI),
                                    ("c.md", memory("c", "Pin the python version"), Channel.CLI)])
    assert [r.status for r in results] == [Status.NEW, Status.REJECTED, Status.NEW]
    assert "simulated defect" in results[1].reason
    kept = [p for p in onto.paths.rejected.iterdir() if p.name.endswith("bad.md")]
    assert kept and kept[0].read_bytes() == memory("bad", "Something")
    with onto.reader() as conn:
        keys = {r[0] for r in conn.execute("SELECT key FROM concepts")}
    assert {"a", "c"} <= keys and "half-written" not in keys and "bad" not in keys
    assert [e.filename for e, _ in onto.archive.entries()] == ["a.md", "c.md"]  # the log holds no reject
    # nor the pack: its frame went out before the merge failed and was cut off again, so no power cut
    # can bring its line back (recover_log)
    assert memory("bad", "Something") not in onto.archive.pack_path(1).read_bytes()


def test_archived_artifacts_the_graph_lacks_are_applied_when_the_writer_opens(root):
    """A crash after the archive sync and before the commit leaves log lines the graph lacks."""
    onto = Ontology(root, "shop", create=True)
    onto.ingest("a.md", memory("a", "Use uv for installs"), Channel.CLI)
    onto.close()
    lost = memory("b", "Pin the python version")
    onto.archive.put_many([Incoming(__import__("hashlib").sha256(lost).hexdigest(), "b.md", "cli", utc_now(), lost)])
    reopened = Ontology(root, "shop")
    assert "Pin the python version" in _texts(reopened)
    assert reopened.ingest("b.md", lost, Channel.CLI).status is Status.DUPLICATE  # applied once, not twice
    reopened.close()


def test_an_archived_artifact_that_fails_to_merge_again_is_skipped_and_the_writer_opens(root, monkeypatch, caplog):
    """A crash between a frame's write and its cutting off (its merge failed) leaves the frame,
    which the next open restores and replays: the defect must not keep the writer shut."""
    onto = Ontology(root, "shop", create=True)
    onto.close()
    good, bad = memory("good", "Use uv for installs"), memory("bad", "Something")
    onto.archive.put_many([Incoming(hashlib.sha256(data).hexdigest(), name, "cli", utc_now(), data)
                           for name, data in (("bad.md", bad), ("good.md", good))])
    onto.archive.close()
    original = GraphWriter._apply

    def failing(self, artifact, *args):
        if artifact.filename == "bad.md":
            raise ValueError("simulated defect")
        return original(self, artifact, *args)

    monkeypatch.setattr(GraphWriter, "_apply", failing)
    again = Ontology(root, "shop")
    with caplog.at_level(logging.WARNING):
        assert "Use uv for installs" in _texts(again)
    assert "bad.md could not be merged" in caplog.text
    again.close()


def test_the_pack_sync_runs_beside_the_graph_work_and_the_commit_waits_for_it(onto, monkeypatch):
    """ADR 0007, "Single POST path": the frames are in the pack before the graph work starts, their
    fsync runs in another thread meanwhile, and nothing commits (or answers) before it is done."""
    onto.ingest("a.md", memory("a", "Use uv for installs"), Channel.HTTP)  # the writer and files open
    pack = onto.archive.pack_path(1)
    committed, seen = threading.Event(), {}
    real_fsync, real_apply, real_transaction = os.fsync, GraphWriter.apply, GraphWriter.transaction

    def slow_fsync(fd):
        if os.fstat(fd).st_ino == pack.stat().st_ino:
            seen["committed during the sync"] = committed.wait(1.0)  # a commit that did not wait shows here
            seen["sync thread"] = threading.current_thread().name
        real_fsync(fd)

    def apply(self, artifact, *args, **kwargs):
        seen["frame before the graph work"] = memory("b", "Pin the python version") in pack.read_bytes()
        return real_apply(self, artifact, *args, **kwargs)

    @contextlib.contextmanager
    def transaction(self):
        with real_transaction(self):
            yield
        committed.set()

    monkeypatch.setattr(os, "fsync", slow_fsync)
    monkeypatch.setattr(GraphWriter, "apply", apply)
    monkeypatch.setattr(GraphWriter, "transaction", transaction)
    assert onto.ingest("b.md", memory("b", "Pin the python version"), Channel.HTTP).status is Status.NEW
    assert seen == {"frame before the graph work": True, "committed during the sync": False,
                    "sync thread": seen["sync thread"]}
    assert seen["sync thread"] != threading.current_thread().name
    assert "Pin the python version" in _texts(onto)


def test_a_deleted_database_is_regenerated_from_the_archive(root):
    onto = Ontology(root, "shop", create=True)
    onto.ingest_many(_corpus())
    onto.close()
    before = graph_snapshot(onto.paths.database)
    for suffix in ("", "-wal", "-shm"):
        onto.paths.database.with_name(onto.paths.database.name + suffix).unlink(missing_ok=True)
    again = Ontology(root, "shop")
    assert _texts(again)
    again.close()
    assert graph_snapshot(again.paths.database) == before


def test_a_torn_log_line_is_sealed_and_later_entries_survive(onto):
    onto.ingest("a.md", memory("a", "Use uv for installs"), Channel.CLI)
    with open(onto.archive.log_path, "ab") as log:
        log.write(b'{"sha256": "abc", "filen')  # a crash mid-append
    onto.ingest("c.md", memory("c", "Pin the python version"), Channel.CLI)
    assert [e.filename for e, _ in onto.archive.entries()] == ["a.md", "c.md"]
    onto.close()
    assert onto.rebuild() == 2


def test_corrupt_archived_bytes_are_skipped_by_rebuild_with_a_warning(onto, caplog):
    onto.ingest_many([("a.md", memory("a", "Use uv for installs"), Channel.CLI),
                      ("c.md", memory("c", "Pin the python version"), Channel.CLI)])
    first, _ = next(onto.archive.entries())
    pack = onto.archive.pack_path(first.pack)
    data = bytearray(pack.read_bytes())
    data[first.offset] ^= 0xFF
    pack.write_bytes(bytes(data))
    onto.close()
    with caplog.at_level(logging.WARNING):
        assert onto.rebuild() == 1
    assert "do not match their sha256" in caplog.text
    assert list(_texts(onto)) == ["Pin the python version"]


def test_archives_from_before_packs_are_still_read(onto):
    """Entries written by the first archive format point at objects/<aa>/<sha256>."""
    data = memory("legacy", "Keep the changelog in sync")
    sha = __import__("hashlib").sha256(data).hexdigest()
    blob = onto.archive.legacy_blob_path(sha)
    blob.parent.mkdir(parents=True)
    blob.write_bytes(data)
    onto.archive.log_path.write_text(
        f'{{"channel": "cli", "filename": "legacy.md", "received_at": "{utc_now()}", "sha256": "{sha}"}}\n')
    assert onto.rebuild() == 1
    assert "Keep the changelog in sync" in _texts(onto)


def test_a_writer_follows_a_rebuild_done_by_another_process(root):
    server = Ontology(root, "shop", create=True)
    server.ingest("a.md", memory("a", "Use uv for installs"), Channel.CLI)
    Ontology(root, "shop").rebuild()  # e.g. `kgbridge rebuild` while the server runs
    server.ingest("c.md", memory("c", "Pin the python version"), Channel.CLI)
    server.close()
    conn = sqlite3.connect(server.paths.database)
    try:
        names = {r[0] for r in conn.execute("SELECT filename FROM artifacts")}
    finally:
        conn.close()
    assert names == {"a.md", "c.md"}


def test_concurrent_single_ingests_are_grouped_and_each_answered_once(onto):
    """Group commit: threads calling ingest() at once are applied together, each answered alone."""
    import threading

    answers: dict[str, list[Status]] = {}
    lock = threading.Lock()

    def post(worker: int) -> None:
        for i in range(25):
            name = f"w{worker}-{i}.md"
            result = onto.ingest(name, memory(f"w{worker}-{i}", f"Worker {worker} step {i} keeps its own note"),
                                 Channel.HTTP)
            shared = onto.ingest("shared.md", memory("shared", "Every worker says this"), Channel.HTTP)
            with lock:
                answers.setdefault(name, []).append(result.status)
                answers.setdefault("shared.md", []).append(shared.status)

    threads = [threading.Thread(target=post, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(statuses == [Status.NEW] for name, statuses in answers.items() if name != "shared.md")
    assert answers["shared.md"].count(Status.NEW) == 1 and len(answers["shared.md"]) == 200
    entries = [e.filename for e, _ in onto.archive.entries()]
    assert len(entries) == len(set(entries)) == 201
    with onto.reader() as conn:
        concepts = {r[0] for r in conn.execute("SELECT key FROM concepts")}
    assert concepts == {f"w{w}-{i}" for w in range(8) for i in range(25)} | {"shared"}


def test_a_graph_from_another_schema_version_is_rebuilt_from_the_archive(root):
    onto = Ontology(root, "shop", create=True)
    onto.ingest_many(_corpus())
    onto.close()
    before = graph_snapshot(onto.paths.database)
    conn = sqlite3.connect(onto.paths.database)
    conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    conn.execute("DELETE FROM assertion_rows")  # an older graph that would read differently
    conn.commit()
    conn.close()
    again = Ontology(root, "shop")
    assert again.ingest("late.md", memory("late", "Pin the python version"), Channel.CLI).status is Status.NEW
    again.close()
    after = graph_snapshot(again.paths.database)
    assert {c[0] for c in after["concepts"]} == {c[0] for c in before["concepts"]} | {"late"}
    assert set(before["assertions"]) <= set(after["assertions"])


def _power_cut(onto: Ontology, keep_log_bytes: int) -> None:
    """What a power cut may leave: the pack synced, the log's unsynced tail gone (torn mid-line)."""
    onto.close()
    with open(onto.archive.log_path, "r+b") as log:
        log.truncate(keep_log_bytes)


def test_log_lines_a_power_cut_lost_are_written_again_from_the_pack(root):
    """One fsync per batch: the pack frames are synced, the log is appended unsynced, so a power cut
    can take log lines of acknowledged artifacts; the next writer restores them byte for byte."""
    onto = Ontology(root, "shop", create=True)
    for i in range(5):  # five single ingests: five batches, five frames
        assert onto.ingest(f"n{i}.md", memory(f"n{i}", f"Service {i} retries with backoff"), Channel.HTTP).status \
            is Status.NEW
    log = onto.archive.log_path.read_bytes()
    live = graph_snapshot(onto.paths.database)
    first_line = log.index(b"\n") + 1
    _power_cut(onto, first_line + 17)  # the first line kept, the second torn, the rest lost
    again = Ontology(root, "shop")
    assert again.ingest("n4.md", memory("n4", "Service 4 retries with backoff"), Channel.HTTP).status \
        is Status.DUPLICATE  # the graph was ahead of the log: nothing applied twice
    assert again.archive.log_path.read_bytes() == log
    again.close()
    assert graph_snapshot(again.paths.database) == live
    again.rebuild()
    assert graph_snapshot(again.paths.database) == live


def test_a_lost_log_tail_is_restored_past_torn_pack_bytes_and_regenerates_the_graph(root):
    """A crash mid-append left torn bytes (even a frame's start) in the pack; frames after them are
    still found, and a graph lost with the log (not synced either) is regenerated whole."""
    onto = Ontology(root, "shop", create=True)
    onto.ingest("a.md", memory("a", "Use uv for installs"), Channel.HTTP)
    kept = len(onto.archive.log_path.read_bytes())
    onto.close()
    pack = onto.archive.pack_path(1)
    with open(pack, "ab") as handle:
        handle.write(b"\x00kgframe 999 {\"sha256\": \"torn")
    onto.ingest_many([("b.md", memory("b", "Pin the python version"), Channel.CLI),
                      ("c.md", memory("c", "Deploys run on Fridays"), Channel.CLI)])
    onto.ingest("d.md", memory("d", "Keep the changelog in sync"), Channel.HTTP)
    _power_cut(onto, kept)
    for suffix in ("", "-wal", "-shm"):
        onto.paths.database.with_name(onto.paths.database.name + suffix).unlink(missing_ok=True)
    again = Ontology(root, "shop")
    assert {"Use uv for installs", "Pin the python version", "Deploys run on Fridays",
            "Keep the changelog in sync"} <= set(_texts(again))
    assert [e.filename for e, _ in again.archive.entries()] == ["a.md", "b.md", "c.md", "d.md"]
    again.close()


def test_the_successor_marker_lookup_reads_its_own_index_not_every_timed_fact(onto):
    """Each arriving summary asks which markers name a successor (store._timed_facts). Answered by a
    scan of every timed fact, it made ingest cost O(memory files) per artifact (BENCHMARKS, issue 15)."""
    onto.ingest("a.md", memory("a", "Use uv for installs"), Channel.CLI)
    with onto.reader() as conn:
        plan = " ".join(str(r[-1]) for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT DISTINCT subject, extra FROM timed_facts WHERE kind='marker' AND extra != ''"))
    assert "timed_facts_successors" in plan, plan


def test_a_single_ingest_that_fails_to_merge_leaves_nothing_of_it(onto, monkeypatch):
    """One artifact alone in its transaction (a POST) is applied without a savepoint: its failure
    rolls the transaction back and opens a new one, so its half-written rows go, its frame is cut
    off, and the next ingest commits as usual."""
    original = GraphWriter._apply

    def failing(self, artifact, *args):
        if artifact.filename == "bad.md":
            self.conn.execute("INSERT INTO concepts(key, name, type, created_at, updated_at) "
                              "VALUES('half-written', 'x', 'memory', '', '')")
            raise ValueError("simulated defect")
        return original(self, artifact, *args)

    monkeypatch.setattr(GraphWriter, "_apply", failing)
    assert onto.ingest("a.md", memory("a", "Use uv for installs"), Channel.HTTP).status is Status.NEW
    bad = onto.ingest("bad.md", memory("bad", "Something"), Channel.HTTP)
    assert bad.status is Status.REJECTED and "simulated defect" in bad.reason
    assert onto.ingest("c.md", memory("c", "Pin the python version"), Channel.HTTP).status is Status.NEW
    with onto.reader() as conn:
        keys = {r[0] for r in conn.execute("SELECT key FROM concepts")}
    assert {"a", "c"} <= keys and "half-written" not in keys and "bad" not in keys
    assert [e.filename for e, _ in onto.archive.entries()] == ["a.md", "c.md"]
    assert memory("bad", "Something") not in onto.archive.pack_path(1).read_bytes()
    assert onto.ingest("a.md", memory("a", "Use uv for installs"), Channel.HTTP).status is Status.DUPLICATE
