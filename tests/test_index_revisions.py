"""Self-stated revisions in MEMORY.md index lines (ADR 0009): the hook after a link goes through the
same revision rules as a claim and is recorded with the index as its source, against the linked
file's summary claim; the index itself still makes no claims. Our own fixtures, in both orders."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontology.artifact import Channel
from ontology.ingest import Ontology

FILES = {
    "reference_tide_api.md": "---\nname: Tide API history\ndescription: Tide API serves daily history back to 2019 "
                             "on the free plan\ntype: reference\n---\n\nQuery one day per call.\n",
    "project_loom_pivot.md": "---\nname: Loom pivot\ndescription: Loom now builds a batch importer\ntype: project\n"
                             "---\n\nThe importer reads CSV exports.\n",
    "project_quiet.md": "---\nname: Quiet\ndescription: Notes on the quiet build\ntype: project\n---\n\nNothing new.\n",
    "MEMORY.md": "# Index\n\n"
                 "- [Tide 歷史資料](reference_tide_api.md) — 每日歷史回溯到2019免費;可做回測(先前誤判付費)\n"
                 "- [Loom pivot](project_loom_pivot.md) — pivoted from Streaming Sync to Batch Importer\n"
                 "- [Quiet](project_quiet.md) — if we switched from Make to Ninja, builds would be faster\n",
}
EXPECTED = {
    ("MEMORY.md", "revision:correction", "付費", "Tide 歷史資料 — 每日歷史回溯到2019免費;可做回測",
     "Tide API serves daily history back to 2019 on the free plan"),
    ("MEMORY.md", "revision:from_to", "Streaming Sync", "Batch Importer", "Loom now builds a batch importer"),
}  # not the conditional "if we switched from Make to Ninja"


def _updates(onto: Ontology) -> set[tuple[str, ...]]:
    with onto.reader() as conn:
        rows = conn.execute(
            "SELECT ar.filename, u.rule, u.old_text, u.new_text, na.text FROM updates u "
            "JOIN artifacts ar ON ar.id = u.artifact_id JOIN assertions na ON na.id = u.newer_id").fetchall()
    return {tuple(r) for r in rows}


@pytest.mark.parametrize("index_first", [False, True])
def test_index_line_revisions_are_recorded_against_the_linked_file(tmp_path: Path, index_first: bool):
    folder = tmp_path / "memory"
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
    paths = sorted(folder.glob("*.md"), key=lambda p: (p.name != "MEMORY.md") == index_first)
    onto = Ontology(tmp_path / "graph", "idx", create=True)
    assert all(r.status.value == "new" for r in onto.ingest_paths(paths, Channel.CLI))
    assert _updates(onto) == EXPECTED
    with onto.reader() as conn:  # the index makes no claims of its own
        assert conn.execute("SELECT count(*) FROM stances st JOIN artifacts ar ON ar.id = st.artifact_id "
                            "WHERE ar.filename = 'MEMORY.md'").fetchone()[0] == 0
    edited = folder / "MEMORY.md"  # a new index without the hooks: their updates go
    edited.write_text("# Index\n\n- [Loom pivot](project_loom_pivot.md) — the importer\n", encoding="utf-8")
    assert onto.ingest_paths([edited], Channel.CLI)[0].status.value in ("new", "updated")
    assert _updates(onto) == set()
    onto.close()

