"""An index line that still states the old value of a revision its own file records is marked with what
the file now says, in MEMORY.md (ADR 0009, "Session 10"). Our own trap folder
(tests/fixtures/traps/index_echoes_revision/): two stale lines (en, de) and three that must stay
silent (a line about another file, a line dated after the revision, a line that states the new value);
a line about something else of the same file that names the old value stays silent too, and so does a
second line linking the stale line's file that states nothing out of date (judge11: every line linking
the file was marked)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import FIXTURES, graph_snapshot
from ontology.artifact import Channel
from ontology.ingest import Ontology
from ontology.schema import connect
from projection.render import render_memory
from projection.snapshot import memory_snapshot

FOLDER = FIXTURES / "traps" / "index_echoes_revision"
MARKED = {
    "Mail": "⟨kg: project_mail.md now says “Outbound mail goes out through Corvid Direct (current setup, "
            "not Relay)”⟩",
    "Kunden-DB": "⟨kg: project_kunden_db.md now says “Kunden-DB am 2026-02-10 von Quarzit Cloud auf Basalt "
                            "Cluster umgestellt”⟩",
}


def _marks(onto: Ontology) -> dict[str, str]:
    """Title -> its MEMORY.md line's mark, for every index line carrying one."""
    with onto.reader() as conn:
        text = render_memory(memory_snapshot(conn, onto.slug))
    out = {}
    for line in text.splitlines():
        if line.startswith("- [") and " ⟨kg: " in line:
            out[line[3:line.index("](")]] = line[line.index("⟨kg: "):]
    for line in (FOLDER / "MEMORY.md").read_text(encoding="utf-8").splitlines():
        assert line in text  # the author's words stay as written
    return out


def _ingest(root: Path, order: list[Path]) -> Ontology:
    onto = Ontology(root, "echo", create=True)
    assert all(r.status.value == "new" for r in onto.ingest_paths(order, Channel.CLI))
    return onto


def test_a_line_echoing_an_old_value_its_file_revised_is_marked_and_look_alikes_are_not(tmp_path: Path):
    for n, order in enumerate((sorted(FOLDER.glob("*.md")), sorted(FOLDER.glob("*.md"), reverse=True))):
        onto = _ingest(tmp_path / str(n), order)  # the index first, then last: the same marks
        assert _marks(onto) == MARKED
        before = graph_snapshot(onto.paths.database)
        onto.rebuild()
        assert graph_snapshot(onto.paths.database) == before
        onto.close()


def test_the_mark_goes_when_the_file_drops_its_revision(tmp_path: Path):
    onto = _ingest(tmp_path / "graph", sorted(FOLDER.glob("*.md")))
    edited = tmp_path / "project_mail.md"
    edited.write_text((FOLDER / edited.name).read_text(encoding="utf-8").replace(" (current setup, not Relay)", ""),
                      encoding="utf-8")
    assert onto.ingest_paths([edited], Channel.CLI)[0].status.value in ("new", "updated")
    assert _marks(onto) == {k: v for k, v in MARKED.items() if k != "Mail"}
    onto.close()


def test_a_line_about_something_else_that_names_the_old_value_is_not_stale(tmp_path: Path):
    """"Status page alerts also sent via Corvid Relay", linked to the mail file, names the old value
    beside the same name, but does not echo the file's description: it may well still hold. (MEMORY.md
    marks every line linking a file the file has moved past, so this is read from the updates rows.)"""
    folder = tmp_path / "folder"
    folder.mkdir()
    for path in FOLDER.glob("*.md"):
        (folder / path.name).write_bytes(path.read_bytes())
    index = folder / "MEMORY.md"
    index.write_text(index.read_text(encoding="utf-8") + "- [Status page](project_mail.md) — status page alerts "
                     "also sent via Corvid Relay\n", encoding="utf-8")
    onto = _ingest(tmp_path / "graph", sorted(folder.glob("*.md")))
    with onto.reader() as conn:
        stale = {r[0] for r in conn.execute("SELECT old_text FROM updates WHERE rule = 'supersede:index'")}
    assert stale == {"Mail — outbound mail via Corvid Relay, bounce reports weekly",
                     "Kunden-DB — Kunden-DB läuft auf Quarzit Cloud, nächtliche Sicherung"}
    onto.close()


def test_a_graph_written_before_lines_were_kept_marks_only_the_stale_line_once_opened(tmp_path: Path):
    """A graph of schema 25 (before judge11 kept the stale line) holds `supersede:index` rows without their
    line, and its LINE rows without the line either, so re-ingesting the file alone cannot find it again:
    MEMORY.md marked every line linking the revised file ("Mail contacts" too). Opened by this version,
    the graph is rebuilt from the archive (schema 26) and only the stale line is marked; read before that
    (a read-only connection), a row without its line marks nothing."""
    onto = _ingest(tmp_path / "graph", sorted(FOLDER.glob("*.md")))
    onto.close()
    conn = sqlite3.connect(onto.paths.database)
    with conn:  # what a graph written by session 11's predecessors holds
        conn.execute("UPDATE updates SET line = NULL WHERE rule = 'supersede:index'")
        conn.execute("UPDATE timed_facts SET extra = '' WHERE kind = 'line'")
        conn.execute("UPDATE meta SET value = '25' WHERE key = 'schema_version'")
    conn.close()
    with connect(onto.paths.database, readonly=True) as old:
        assert "now says" not in render_memory(memory_snapshot(old, "echo"))
    reopened = Ontology(tmp_path / "graph", "echo")
    assert _marks(reopened) == MARKED
    with reopened.reader() as conn:
        assert conn.execute("SELECT count(*) FROM updates WHERE rule = 'supersede:index' AND line IS NULL"
                            ).fetchone()[0] == 0
    reopened.close()
