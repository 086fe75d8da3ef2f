"""Issue 13, low findings: one `serve` per knowledge root (and it says who holds it), a killed
rebuild leaves nothing behind, NFC/NFD spellings of one file name are one source, rejected/ stays bounded."""

from __future__ import annotations

import subprocess
import unicodedata

from conftest import memory
from ontology.artifact import Channel
from ontology.ingest import Ontology
from support.server_proc import KGBRIDGE, ServerProcess, free_port


def test_a_second_serve_on_the_same_root_refuses_and_names_the_holder(root):
    (root / "ontology" / "shop" / "ingest").mkdir(parents=True)
    with ServerProcess(root) as first:
        second = subprocess.run([*KGBRIDGE, "serve", "--root", str(root), "--port", str(free_port())],
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        assert f"pid {first.proc.pid}" in second.stderr and f":{first.port}" in second.stderr, second.stderr


def test_leftovers_of_a_killed_rebuild_are_removed_when_the_writer_opens(root):
    onto = Ontology(root, "shop", create=True)
    onto.ingest("a.md", memory("a", "one"), Channel.CLI)
    onto.close()
    base = root / "ontology" / "shop"
    for name in ("graph.db.rebuild", "graph.db.rebuild-wal", "graph.db.rebuild-shm"):
        (base / name).write_bytes(b"\0" * 4096)  # what `kill -9` during `kgbridge rebuild` leaves
    onto = Ontology(root, "shop")
    onto.ingest("b.md", memory("b", "two"), Channel.CLI)
    onto.close()
    assert not list(base.glob("graph.db.rebuild*"))


def test_nfc_and_nfd_spellings_of_a_file_name_are_one_source(root):
    onto = Ontology(root, "shop", create=True)
    names = [unicodedata.normalize("NFC", "Café.md"), unicodedata.normalize("NFD", "Café.md")]
    for i, name in enumerate(names):
        onto.ingest(name, memory("cafe", f"version {i}", f"- The espresso machine is on floor {i}."), Channel.CLI)
    with onto.reader() as conn:
        sources = [tuple(r) for r in conn.execute("SELECT identity FROM sources")]
        versions = conn.execute("SELECT max(version) FROM artifacts").fetchone()[0]
    onto.close()
    assert sources == [("memory:shop/Café.md",)] and versions == 2


def test_rejected_dir_stays_bounded_newest_kept_and_a_big_input_kept_as_a_prefix(root, monkeypatch):
    from ontology import archive

    monkeypatch.setattr(archive, "REJECTED_MAX_ENTRIES", 20)  # the real bound is 5,000; same code path
    onto = Ontology(root, "shop", create=True)
    for i in range(50):
        onto.ingest(f"empty-{i:02d}.md", b"", Channel.CLI)
    onto.ingest("big.md", b"x" * (3 * 1024 * 1024), Channel.CLI)
    onto.close()
    rejected = onto.paths.rejected
    kept = sorted(p.name for p in rejected.iterdir() if not p.name.endswith(".reason.json"))
    assert len(kept) <= 20 and any(name.endswith("empty-49.md") for name in kept)
    assert not any(name.endswith("empty-00.md") for name in kept)
    big = next(p for p in rejected.iterdir() if p.name.endswith("-big.md"))
    assert big.stat().st_size == archive.PREFIX_BYTES


def test_a_graph_written_by_another_schema_is_rebuilt_even_when_the_new_ddl_cannot_run_on_it(root):
    """An upgrade: the old graph's tables lack columns the new schema indexes. Running the new DDL on
    it first failed ("no such column") before the version was read, so every write failed for good."""
    import re
    import sqlite3

    from ontology import schema

    onto = Ontology(root, "shop", create=True)
    onto.ingest("a.md", memory("a", "one", "- Service a listens on port 8001"), Channel.CLI)
    onto.close()
    database = onto.paths.database
    for suffix in ("", "-wal", "-shm"):
        database.with_name(database.name + suffix).unlink(missing_ok=True)
    old = sqlite3.connect(database)  # every table of another shape, as an older version left them
    for table in re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)\(", schema.DDL):
        old.execute(f"CREATE TABLE {table}(key TEXT, value TEXT)" if table == "meta" else f"CREATE TABLE {table}(x)")
    old.execute("INSERT INTO meta VALUES('schema_version', ?)", (str(schema.SCHEMA_VERSION - 1),))
    old.commit()
    old.close()
    onto = Ontology(root, "shop")
    result = onto.ingest("b.md", memory("b", "two", "- Service b listens on port 8002"), Channel.CLI)
    with onto.reader() as conn:
        files = sorted(r[0] for r in conn.execute("SELECT filename FROM artifacts"))
    onto.close()
    assert result.status.value == "new" and files == ["a.md", "b.md"]
