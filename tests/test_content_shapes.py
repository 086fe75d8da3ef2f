"""Content shapes of memory folders from users we had not met (blind11, ADR 0009): an open task box
is a thing to do, not a fact."""

from __future__ import annotations

from pathlib import Path

from ontology.ingest import Ontology
from projection.mount import ingest_host_files
from projection.topic import APPENDIX_MARKER
from projection.view import ProjectionView


def _note(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {name} notes\ntype: project\n---\n\n{body}"


def _view(tmp_path: Path, files: dict[str, str]) -> tuple[Ontology, ProjectionView]:
    folder = tmp_path / "memory"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    onto = Ontology(tmp_path / "K", "shapes", create=True)
    ingest_host_files(onto, folder)
    return onto, ProjectionView(onto)


def _appendix(view: ProjectionView, name: str) -> str:
    return view.read(name).decode().partition(APPENDIX_MARKER)[2]


def test_an_open_task_box_states_nothing_a_ticked_one_does(tmp_path):
    """"- [ ] Status page live" in the launch plan says the page is not live yet: it must not agree
    with the session that ticked it, and its wrapped second line is not glued to the item before."""
    onto, view = _view(tmp_path, {
        "project_launch.md": _note("launch", "1. [x] Error tracking wired to the crash reporter\n"
                                             "2. [ ] Status page live on the public domain\n"
                                             "3. [ ] Support inbox routed\n"
                                             "   to the shared mailbox\n"),
        "session_0612.md": _note("session", "- [x] Status page live on the public domain\n"),
    })
    try:
        with onto.reader() as conn:
            stated = {text: n for text, n in conn.execute(
                "SELECT a.text, count(*) FROM assertions a JOIN stances s ON s.assertion_id = a.id GROUP BY a.id")}
        assert stated.get("Status page live on the public domain") == 1, stated  # the ticked item only
        assert not any("mailbox" in text or "inbox" in text for text in stated), stated
        assert " agrees: " not in _appendix(view, "project_launch.md")
        assert " agrees: " not in _appendix(view, "session_0612.md")
    finally:
        onto.close()
