"""Updates and supersession (ADR 0009): statements that record a change of their own ("switched from
X to Y", "(was X)", "X, not Y", "originally … now …") in every corpus language, and the claims of
other sources that still state the old value, through a real graph; both arrival orders, a new
version, a tombstone and a rebuild."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, graph_snapshot
from ontology import queries
from ontology.artifact import Channel
from ontology.ingest import Ontology
from projection.snapshot import memory_topic
from projection.topic import Stand, render_memory_topic, render_topic

FOLDER = FIXTURES / "claims" / "revisions"
DISPUTED = ("CONTESTED", "CONTRADICTORY")

# (file, rule, old value, new value) of every revision a statement states about itself.
SELF_STATED = {
    ("project_auth_zh.md", "revision:from_to", '最初的"Session Cookie"方案', '"Bearer Token"'),
    ("project_cache_fr.md", "revision:replaced", "Le cache Memcached", "Valkey"),
    ("project_deploy_ko.md", "revision:from_to", "`compose`", "`k8s`"),
    ("project_deploy_ko.md", "revision:not", "Lambda", "Fargate 작업"),
    ("project_hosting_now.md", "revision:not", "AWS Lambda", "AWS Fargate tasks"),
    ("project_hosting_now.md", "revision:from_to", "session cookies", "Bearer tokens"),
    ("project_hosting_now.md", "revision:was", "`/orders`", "`/my-orders`"),
    ("project_logging.md", "revision:was", "`debug`", "`warn`"),  # not the file it is set in (judge14)
    ("project_hosting_now.md", "revision:replaced", "The legacy importer", "the streaming loader"),
    ("project_hosting_now.md", "revision:correction", "it was the slow part", "The report cache actually costs 2 ms"),
    ("project_pivot.md", "revision:original_now", "First idea: build a custom scheduler on cron jobs",
     "Today's choice (since 2026-03-01): adopt Temporal workflows and drop the custom scheduler"),
    ("project_schema_es.md", "revision:original_now", "`created_on`", "`created_at`"),
    ("project_schema_es.md", "revision:not", "20", "22"),
    ("project_search_de.md", "revision:from_to", "`grep`", "`ripgrep`"),
    ("project_search_de.md", "revision:no_longer", "`legacyMode`", ""),
    ("project_search_ja.md", "revision:from_to", "「全文検索」", "「ベクトル検索」"),
}
STALE = "API handlers run on AWS Lambda behind the Kong gateway"
REVISION = "Hosting model for the Kong gateway: AWS Fargate tasks (current setup, not AWS Lambda)"


def _ingest(onto: Ontology, names: list[str] | None = None) -> None:
    paths = sorted(FOLDER.glob("*.md"))
    if names is not None:
        by_name = {p.name: p for p in paths}
        paths = [by_name[n] for n in names]
    results = onto.ingest_paths(paths, Channel.CLI)
    assert all(r.status.value in ("new", "updated") for r in results), results


def _self_stated(onto: Ontology) -> set[tuple[str, str, str, str]]:
    with onto.reader() as conn:
        return {(u.filename, u.rule, u.old_text, u.new_text) for u in queries.updates(conn)
                if u.rule.startswith("revision:")}


def _superseded(onto: Ontology) -> set[tuple[str, str, str, str]]:
    """(older claim, its file, newer claim, its file) of every claim another statement supersedes."""
    with onto.reader() as conn:
        return {(u.older_text, u.older_filename, u.newer_text, u.filename) for u in queries.updates(conn)
                if u.older_id is not None and u.older_filename != u.filename}


def test_a_statement_that_records_a_change_is_an_update_with_its_rule_and_both_values(onto):
    _ingest(onto)
    assert _self_stated(onto) == SELF_STATED
    # Not updates: plans ("will switch", 计划, 予定), questions, an arrow without a change word, a rule
    # ("prefer X instead of Y"), a generic "not" ("UTC, not local time").
    with onto.reader() as conn:
        assert not [a.text for a in queries.assertions(conn) if a.status in DISPUTED]


# A number is superseded only where the same name qualifies it ("NodeJS 20", not "La versión 20"), and
# a negation in another sentence of the statement does not hide the value it states.
PINNED = "NodeJS 20 fijado. No actualizar hasta la próxima versión LTS"
UPGRADE = "Se instaló NodeJS 22 (no 20)"
SUPERSEDED = {(STALE, "project_hosting.md", REVISION, "project_hosting_now.md"),
              (PINNED, "project_runtime_es.md", UPGRADE, "project_schema_es.md")}
SUPERSEDED_LAMBDA = (STALE, "project_hosting.md", REVISION, "project_hosting_now.md")


def test_a_claim_stating_the_old_value_is_superseded_whichever_file_arrives_first(tmp_path: Path):
    names = sorted(p.name for p in FOLDER.glob("*.md"))
    graphs = []
    for label, order in (("forward", names), ("reverse", names[::-1])):
        onto = Ontology(tmp_path / label, "claims", create=True)
        _ingest(onto, order)
        assert _superseded(onto) == SUPERSEDED
        with onto.reader() as conn:
            # Not a dispute: the older claim keeps its label and names what replaced it.
            claims = {a.text: a for a in queries.assertions(conn)}
            assert claims[STALE].status == "INSUFFICIENT_DATA"
            concept = queries.concept(conn, "project-hosting")
            stale = next(a for a in concept["assertions"] if a["text"] == STALE)
            assert [(u["by"], u["source"].rsplit("/", 1)[-1], u["rule"]) for u in stale["superseded_by"]] == [
                (REVISION, "project_hosting_now.md", "old-value:not")]
            others = [a for a in concept["assertions"] if a["text"] != STALE]
            assert others and not any(a["superseded_by"] for a in others)  # Redis Streams, the Git → CI flow
        graphs.append(graph_snapshot(onto.paths.database))
        onto.close()
    assert graphs[0]["updates"] == graphs[1]["updates"]


def test_the_topic_appendix_and_the_generated_topic_say_superseded_by_whom(onto):
    _ingest(onto)
    with onto.reader() as conn:
        topic = memory_topic(conn, "project_hosting.md")
        assert topic is not None
        voice = next(v for v in topic.voices if v.stand is Stand.SUPERSEDES)
        assert (voice.claim, voice.said, voice.source) == (STALE, REVISION, "project_hosting_now.md")
        appendix = render_memory_topic(topic).split("kgbridge)", 1)[1]
        assert "project_hosting_now.md" in appendix and "supersedes" in appendix and STALE in appendix
        assert render_memory_topic(topic).startswith((FOLDER / "project_hosting.md").read_text(encoding="utf-8").rstrip())
        generated = render_topic(queries.concept(conn, "project-hosting"))
        assert f"superseded by: {REVISION}" in generated


def test_a_new_version_without_the_old_value_or_a_tombstone_ends_the_supersession(onto, tmp_path: Path):
    _ingest(onto)
    stale_file = tmp_path / "project_hosting.md"
    stale_file.write_text((FOLDER / "project_hosting.md").read_text(encoding="utf-8").replace(
        "- API handlers run on AWS Lambda behind the Kong gateway.\n", ""), encoding="utf-8")
    assert onto.ingest_paths([stale_file])[0].status.value == "new"
    assert _superseded(onto) == SUPERSEDED - {SUPERSEDED_LAMBDA}
    onto.ingest_paths([FOLDER / "project_hosting.md"])  # the stale line is back: superseded again
    assert _superseded(onto) == SUPERSEDED
    tombstone = b'{"kgbridge": "tombstone", "file": "project_hosting_now.md", "at": "2026-11-30T04:00:00Z"}'
    assert onto.ingest("tombstone.0123456789ab.project_hosting_now.md", tombstone, Channel.CLI).status.value == "new"
    assert _superseded(onto) == SUPERSEDED - {SUPERSEDED_LAMBDA}
    assert not {row for row in _self_stated(onto) if row[0] == "project_hosting_now.md"}
    assert onto.ingest_paths([FOLDER / "project_hosting_now.md"])[0].status.value == "new"
    assert _superseded(onto) == SUPERSEDED


def test_a_rebuild_regenerates_the_same_updates(onto):
    _ingest(onto)
    def dump() -> list[tuple]:
        conn = sqlite3.connect(onto.paths.database)
        try:
            return conn.execute("SELECT * FROM updates ORDER BY id").fetchall()
        finally:
            conn.close()
    before = dump()
    assert len(before) == len(SELF_STATED) + len(SUPERSEDED)
    onto.rebuild()
    assert dump() == before


def test_kgbridge_show_says_what_superseded_an_older_claim(root: Path):
    onto = Ontology(root, "claims", create=True)
    _ingest(onto)
    onto.close()
    done = subprocess.run([sys.executable, "-m", "kgbridge.cli", "show", "project-hosting", "--root", str(root),
                           "--ontology", "claims"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "400"})
    assert done.returncode == 0, done.stderr
    assert f"superseded by “{REVISION}” (memory:" in done.stdout and "project_hosting_now.md" in done.stdout
    assert "old-value:not" in done.stdout
    shown = subprocess.run([sys.executable, "-m", "kgbridge.cli", "show", "project-hosting", "--json", "--root",
                            str(root), "--ontology", "claims"], capture_output=True, text=True, timeout=120)
    stale = next(a for a in json.loads(shown.stdout)["assertions"] if a["text"] == STALE)
    assert [u["by"] for u in stale["superseded_by"]] == [REVISION]  # what MCP kg_concept returns too


def test_an_update_is_shown_with_the_day_its_source_states_not_the_day_it_arrived(tmp_path: Path):
    """The appendix line "X (date) supersedes: …", the generated topic and `kgbridge show --json` date an
    update by the day the newer statement states (here its section's); one that states none says it
    is undated and when it arrived, never passing the day of ingest off as the day it was said."""
    root = tmp_path / "K"
    onto = Ontology(root, "claims", create=True)
    dated = tmp_path / "dated" / "project_hosting_now.md"
    dated.parent.mkdir()
    head, sep, body = (FOLDER / dated.name).read_text(encoding="utf-8").partition("---\n\n")
    dated.write_text(head + sep + "## Setup as of 2026-03-04\n\n" + body, encoding="utf-8")
    received = onto.ingest_paths([FOLDER / "project_hosting.md", FOLDER / "project_hosting_now.md"], Channel.CLI)
    assert all(r.status.value == "new" for r in received)
    with onto.reader() as conn:
        today = conn.execute("SELECT max(received_at) FROM artifacts").fetchone()[0][:10]
        topic = render_memory_topic(memory_topic(conn, "project_hosting.md"))
    assert f"- project_hosting_now.md (undated, received {today}) supersedes: “{REVISION}” on “{STALE}”" in topic
    assert onto.ingest_paths([dated], Channel.CLI)[0].status.value == "new"
    with onto.reader() as conn:
        topic = render_memory_topic(memory_topic(conn, "project_hosting.md"))
        generated = render_topic(queries.concept(conn, "project-hosting"))
    onto.close()
    assert f"- project_hosting_now.md (2026-03-04) supersedes: “{REVISION}” on “{STALE}”" in topic, topic
    assert f"superseded by: {REVISION} (`memory:claims/project_hosting_now.md`, 2026-03-04)" in generated, generated
    shown = subprocess.run([sys.executable, "-m", "kgbridge.cli", "show", "project-hosting", "--json", "--root",
                            str(root), "--ontology", "claims"], capture_output=True, text=True, timeout=120)
    stale = next(a for a in json.loads(shown.stdout)["assertions"] if a["text"] == STALE)
    assert [(u["by"], u["date"], u["received"]) for u in stale["superseded_by"]] == [(REVISION, "2026-03-04", today)]


@pytest.mark.parametrize("text", [
    "Upgraded CI from Node 18 to Node 20; laptops stay on Node 18 until the native module is fixed.",
    "Switched YAML files from tabs to spaces (yamllint complained); Makefiles keep tabs.",
    "Replaced Jest with Vitest in the web app, but the API still runs Jest.",
    "Moved from Heroku to Fly in March, then back to Heroku in May.",
    "Went from 3 to 5 replicas during the sale, back to 3 after.",
    "The script migrates rows from `orders_old` to `orders` in batches of 500.",
    "The modal switches from edit mode to view mode on save.",
    "The redirect moves users from /login to /dashboard after auth.",
    "The cache entry is replaced by a fresh one every 10 minutes.",
    "Keys are rotated: the old key is replaced by the new key every 90 days.",
    "Placeholders like `{name}` are replaced with the user's name in emails.",
])
def test_a_change_that_says_the_old_value_still_holds_elsewhere_revises_nothing(text):
    """blind7: "from Node 18 to Node 20; laptops stay on Node 18" recorded Node 18 as no longer holding,
    while the same sentence says where it still does; "then back to Heroku" undoes the change. A scoped or
    undone change is not a replacement, and what a thing does ("the script migrates rows from A to B")
    is no change at all."""
    from ontology.revisions import revisions
    assert revisions(text) == ()


def test_a_change_whose_old_value_is_only_named_again_still_revises():
    from ontology.revisions import revisions
    assert [(r.old, r.new) for r in revisions("Migrated from Node 18 to Node 20; Node 18 images were deleted.")] \
        == [("Node 18", "Node 20")]
    assert [(r.old, r.new) for r in revisions("Switched the queue from Celery to RQ; RQ still needs Redis.")] \
        == [("Celery", "RQ")]
    assert [(r.old, r.new) for r in revisions("Celery was replaced by RQ in March.")] == [("Celery", "RQ")]
    assert [r.old for r in revisions("The old broker (Celery) has been replaced with RQ.")] in ([], ["Celery"]), \
        "an auxiliary, or a piece of one, is no old value"


@pytest.mark.parametrize(("text", "old", "new"), [
    ("Set `permissions.mode` to `auto` in `~/.tool/settings.json` (was `ask`)", "`ask`", "`auto`"),
    ("`retry_limit` set in `worker.toml` (was `app.ini`)", "`app.ini`", "`worker.toml`"),  # the place moved
    ("Cache stored in `~/.cache/kb` (was `~/.kb`)", "`~/.kb`", "`~/.cache/kb`"),
    ("Set `a` to `b`; the file is in `c.json` (was `d.json`)", "`d.json`", "`c.json`"),  # another clause
])
def test_was_revises_the_value_set_not_the_file_it_is_set_in(text, old, new):
    """judge14: "Set `key` to `value` in `file` (was `old`)" was recorded as `old` -> `file`, and
    kg_concept showed the file's path as the setting's new value. A span after "in" / "at" is the place
    only when an earlier span of the same clause is what "to" / "=" sets."""
    from ontology.revisions import revisions
    assert [(r.rule.name, r.old, r.new) for r in revisions(text)] == [("WAS", old, new)]
