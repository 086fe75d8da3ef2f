"""Issue 13, low finding: mounting over and listing a memory slot of thousands of files. A remount
re-reads every host file: unchanged ones are duplicates and must not be extracted again. A topic
file's size is its rendering's, so `ls -l` renders every file; it must do so in a bounded number of
queries, each file's bytes exactly those it gets alone, and through a real mount every size `ls -l`
shows is what `cat` then reads."""

from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager

from conftest import memory
from ontology.artifact import Channel
from ontology.ingest import Ontology
from projection.mount import ingest_host_files
from projection.snapshot import memory_topic
from projection.topic import render_memory_topic
from projection.view import ProjectionView
from support.fuse_helpers import requires_fuse, unmount

FILES = 150  # more than two topic batches
DATABASES = ("postgres", "mysql", "sqlite")


def note(i: int, extra: str = "") -> bytes:
    # Files share services and values, so their appendices quote one another (agree, dispute).
    return memory(f"note-{i}", f"host note {i}", f"- Service {i % 7} restarts after {i % 3} failures\n"
                                                 f"- Service {i % 7} database: {DATABASES[i % 3]}\n{extra}")


def ontology_with_notes(root, folder) -> Ontology:
    folder.mkdir()
    for i in range(FILES):
        (folder / f"note-{i:03d}.md").write_bytes(note(i))
    onto = Ontology(root, "shop", create=True)
    ingest_host_files(onto, folder)
    # A second version of one file: its appendix lists versions and what it no longer says.
    onto.ingest("note-100.md", memory("note-100", "host note 100", "- Service 2 restarts after 9 failures\n"),
                Channel.CLI)
    return onto


def test_a_remount_over_unchanged_files_extracts_nothing_and_a_file_back_to_old_bytes_is_a_new_version(
        root, tmp_path, monkeypatch):
    from ontology import ingest

    folder = tmp_path / "memory"
    onto = ontology_with_notes(root, folder)
    (folder / "note-100.md").write_bytes(note(100))  # the host file: back to its first version's bytes
    extracted: list[str] = []
    plain_extract = ingest.extract
    monkeypatch.setattr(ingest, "extract", lambda artifact: extracted.append(artifact.filename) or plain_extract(artifact))
    results = ingest_host_files(onto, folder)
    with onto.reader() as conn:
        versions = conn.execute("SELECT max(version) FROM artifacts WHERE filename = 'note-100.md'").fetchone()[0]
    onto.close()
    assert results == FILES
    assert extracted == ["note-100.md"] and versions == 3  # A -> B -> A: the graph follows the file


def test_listing_many_topic_files_costs_few_queries_and_each_file_reads_as_it_would_alone(root, tmp_path):
    onto = ontology_with_notes(root, tmp_path / "memory")
    statements: list[str] = []
    plain_reader = onto.reader

    @contextmanager
    def traced_reader():
        with plain_reader() as conn:
            conn.set_trace_callback(statements.append)
            yield conn

    onto.reader = traced_reader  # type: ignore[method-assign]
    view = ProjectionView(onto)
    names = [n for n in view.names() if n.startswith("note-")]
    listed = {name: view.read(name) for name in reversed(names)}  # any order: sizes as `ls -l` asks them
    listing_statements = len(statements)
    onto.reader = plain_reader  # type: ignore[method-assign]
    with onto.reader() as conn:
        alone = {name: render_memory_topic(memory_topic(conn, name)).encode() for name in names}
    onto.close()
    assert len(names) == FILES
    assert listed == alone
    assert "no longer says" in listed["note-100.md"].decode() and "disputes" in listed["note-003.md"].decode()
    # One file at a time took about a dozen statements per file (1,800 here).
    assert listing_statements < FILES, listing_statements


@requires_fuse
def test_ls_l_over_many_host_files_shows_the_sizes_cat_reads_before_and_after_a_change(tmp_path):
    from support.bridge_env import BridgeEnv

    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    for i in range(FILES):
        (bridge.memory_dir / f"note-{i:03d}.md").write_bytes(note(i))
    assert bridge.cli("mount").returncode == 0
    try:
        def sizes_and_bytes() -> tuple[dict[str, int], dict[str, int]]:
            listing = subprocess.run(["ls", "-ln", str(bridge.memory_dir)], capture_output=True, text=True,
                                     check=True, timeout=120).stdout.splitlines()[1:]
            shown = {line.split()[-1]: int(line.split()[4]) for line in listing}
            read = {name: len((bridge.memory_dir / name).read_bytes()) for name in shown}
            return shown, read

        shown, read = sizes_and_bytes()
        assert len(shown) == FILES + 1 and shown == read  # + MEMORY.md
        onto = Ontology(bridge.root, "shop")  # a new version of one file; the files it disputes quote it
        onto.ingest("note-001.md", note(1, "- Service 1 database: oracle\n"), Channel.CLI)
        onto.close()
        again, read_again = sizes_and_bytes()
        assert again == read_again and again["note-001.md"] > shown["note-001.md"]
        assert os.stat(bridge.memory_dir / "note-148.md").st_size == read_again["note-148.md"]
    finally:
        bridge.cli("unmount")
        unmount(bridge.memory_dir)
