"""Self-stated revisions in MEMORY.md index lines (ADR 0009): the hook after a link goes through the
same revision rules as a claim and is recorded with the index as its source, against the linked
file's summary claim; the index itself still makes no claims. Our own fixtures, in both orders."""

from __future__ import annotations

from pathlib import Path

import pytest

from ontology.artifact import Channel
from ontology import queries
from ontology.ingest import Ontology

FILES = {
    "reference_tide_api.md": "---\nname: Tide API history\ndescription: Tide API serves daily history back to 2019 "
                             "on the free plan\ntype: reference\n---\n\nQuery one day per call.\n",
    "project_loom_plan.md": "---\nname: Loom plan\ndescription: Loom now builds a batch importer\ntype: project\n"
                             "---\n\nThe importer reads CSV exports.\n",
    "project_quiet.md": "---\nname: Quiet\ndescription: Notes on the quiet build\ntype: project\n---\n\nNothing new.\n",
    "MEMORY.md": "# Index\n\n"
                 "- [Tide 歷史資料](reference_tide_api.md) — 免費方案也能查2019年以來的每日資料(之前誤以為要付費)\n"
                 "- [Loom plan](project_loom_plan.md) — switched from Streaming Sync to Batch Importer\n"
                 "- [Quiet](project_quiet.md) — if we switched from Make to Ninja, builds would be faster\n",
}
EXPECTED = {
    ("MEMORY.md", "revision:correction", "要付費", "Tide 歷史資料 — 免費方案也能查2019年以來的每日資料",
     "Tide API serves daily history back to 2019 on the free plan"),
    ("MEMORY.md", "revision:from_to", "Streaming Sync", "Batch Importer", "Loom now builds a batch importer"),
}  # not the conditional "if we switched from Make to Ninja"


def _updates(onto: Ontology) -> set[tuple[str, ...]]:
    with onto.reader() as conn:
        rows = conn.execute(
            "SELECT ar.filename, u.rule, u.old_text, u.new_text, na.text FROM updates u "
            "JOIN artifacts ar ON ar.id = u.artifact_id JOIN assertions na ON na.id = u.newer_id").fetchall()
    return {tuple(r) for r in rows}


def _ingest_folder(tmp_path: Path, files: dict[str, str], index_first: bool) -> tuple[Path, Ontology]:
    """The files written to a folder and ingested, the index first or last."""
    folder = tmp_path / "memory"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    paths = sorted(folder.glob("*.md"), key=lambda p: (p.name != "MEMORY.md") == index_first)
    onto = Ontology(tmp_path / "graph", "idx", create=True)
    assert all(r.status.value == "new" for r in onto.ingest_paths(paths, Channel.CLI))
    return folder, onto


@pytest.mark.parametrize("index_first", [False, True])
def test_index_line_revisions_are_recorded_against_the_linked_file(tmp_path: Path, index_first: bool):
    folder, onto = _ingest_folder(tmp_path, FILES, index_first)
    assert _updates(onto) == EXPECTED
    with onto.reader() as conn:  # the index makes no claims of its own
        assert conn.execute("SELECT count(*) FROM stances st JOIN artifacts ar ON ar.id = st.artifact_id "
                            "WHERE ar.filename = 'MEMORY.md'").fetchone()[0] == 0
    edited = folder / "MEMORY.md"  # a new index without the hooks: their updates go
    edited.write_text("# Index\n\n- [Loom plan](project_loom_plan.md) — the importer\n", encoding="utf-8")
    assert onto.ingest_paths([edited], Channel.CLI)[0].status.value in ("new", "updated")
    assert _updates(onto) == set()
    onto.close()



# An update whose source is the index and which has no claim on the newer side: a link line whose
# file is not in the folder, and index prose (a blockquote over two lines). Neither a mapping of
# values ("1→2/3→4 … 전환") nor a conditional is an update.
PROSE = ("> Trimmed 2026-05-02. ⚠ **The earlier \"cache misses stay under 3%\" note was an unverified guess**\n"
         "> — the real rate was 11% on 2026-05-01.")
INDEX_ONLY = {
    "project_quiet.md": FILES["project_quiet.md"],
    "MEMORY.md": "# Index\n\n" + PROSE + "\n\n"
                 "- [Harbor 配額](reference_harbor_quota.md) — 每日配額查詢免費;可批次查(先前誤判收費)\n"
                 "- [Quiet](project_quiet.md) — notes\n\n"
                 "- 자동 진급, 1→2/3→4 학년 자동 전환, 반 입력\n"
                 "- if we switched from Make to Ninja, builds would be faster\n",
}
HARBOR_LINE = "- [Harbor 配額](reference_harbor_quota.md) — 每日配額查詢免費;可批次查(先前誤判收費)"
PROSE_TEXT = ("Trimmed 2026-05-02. ⚠ The earlier \"cache misses stay under 3%\" note was an unverified guess — "
              "the real rate was 11% on 2026-05-01.")
INDEX_ONLY_EXPECTED = {
    ("MEMORY.md", "revision:correction", "", PROSE_TEXT, PROSE),
    ("MEMORY.md", "revision:correction", "收費", "Harbor 配額 — 每日配額查詢免費;可批次查", HARBOR_LINE),
}


def _index_updates(onto: Ontology) -> set[tuple[str, ...]]:
    with onto.reader() as conn:
        return {(u.filename, u.rule, u.old_text, u.new_text, u.newer_text) for u in queries.updates(conn)
                if u.newer_id is None}


@pytest.mark.parametrize("index_first", [False, True])
def test_index_revisions_without_a_claim_on_the_newer_side(tmp_path: Path, index_first: bool):
    folder, onto = _ingest_folder(tmp_path, INDEX_ONLY, index_first)
    assert _index_updates(onto) == INDEX_ONLY_EXPECTED
    with onto.reader() as conn:  # the index makes no claims, and its projection is the author's bytes
        assert conn.execute("SELECT count(*) FROM stances st JOIN artifacts ar ON ar.id = st.artifact_id "
                            "WHERE ar.filename = 'MEMORY.md'").fetchone()[0] == 0
        assert conn.execute("SELECT text FROM memory_files WHERE filename = 'MEMORY.md'").fetchone()[0] \
            == INDEX_ONLY["MEMORY.md"]
    harbor = folder / "reference_harbor_quota.md"  # the linked file arrives: its summary is the newer side
    harbor.write_text("---\nname: Harbor quota\ndescription: Harbor quota lookups are free per day\ntype: reference\n"
                      "---\n\nOne lookup per call.\n", encoding="utf-8")
    assert onto.ingest_paths([harbor], Channel.CLI)[0].status.value == "new"
    assert _index_updates(onto) == INDEX_ONLY_EXPECTED - {INDEX_ONLY_EXPECTED_HARBOR}
    assert _updates(onto) == {("MEMORY.md", "revision:correction", "收費", "Harbor 配額 — 每日配額查詢免費;可批次查",
                               "Harbor quota lookups are free per day")}
    tombstone = b'{"kgbridge": "tombstone", "file": "reference_harbor_quota.md", "at": "2026-11-30T04:00:00Z"}'
    assert onto.ingest("tombstone.0123456789ab.reference_harbor_quota.md", tombstone, Channel.CLI).status.value == "new"
    assert _index_updates(onto) == INDEX_ONLY_EXPECTED  # gone again: the index line alone
    with onto.reader() as conn:
        before = conn.execute("SELECT * FROM updates ORDER BY id").fetchall()
    onto.rebuild()
    with onto.reader() as conn:
        assert conn.execute("SELECT * FROM updates ORDER BY id").fetchall() == before
    edited = folder / "MEMORY.md"  # a new version without the prose: its update goes
    edited.write_text("# Index\n\n" + HARBOR_LINE + "\n", encoding="utf-8")
    assert onto.ingest_paths([edited], Channel.CLI)[0].status.value in ("new", "updated")
    assert _index_updates(onto) == INDEX_ONLY_EXPECTED - {INDEX_ONLY_EXPECTED_PROSE}
    index_tombstone = b'{"kgbridge": "tombstone", "file": "MEMORY.md", "at": "2026-11-30T05:00:00Z"}'
    assert onto.ingest("tombstone.0123456789ab.MEMORY.md", index_tombstone, Channel.CLI).status.value == "new"
    assert _index_updates(onto) == set()
    onto.close()


INDEX_ONLY_EXPECTED_PROSE, INDEX_ONLY_EXPECTED_HARBOR = sorted(INDEX_ONLY_EXPECTED, key=lambda r: r[2])
