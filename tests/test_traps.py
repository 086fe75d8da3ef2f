"""Adversarial precision (ADR 0009): memory folders full of traps that must yield no dispute, update or
mark, beside the real disagreements that must still be found. Our own fixtures (tests/fixtures/traps/,
`expected.json` names the real ones); `python -m bench.traps` scores the whole set."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ledger, memory
from ontology import queries
from ontology.artifact import Channel
from ontology.ingest import Ontology

TRAPS = FIXTURES / "traps"
EXPECTED = json.loads((TRAPS / "expected.json").read_text(encoding="utf-8"))
DISPUTED = ("CONTESTED", "CONTRADICTORY")


def _ingest(onto: Ontology, folder: str) -> None:
    results = onto.ingest_paths(sorted((TRAPS / folder).glob("*.md")), Channel.CLI)
    assert all(r.status.value == "new" for r in results), results


def _disputed(onto: Ontology) -> list[str]:
    with onto.reader() as conn:
        return [a.text for a in queries.assertions(conn) if a.status in DISPUTED]


def _updates(onto: Ontology) -> list[str]:
    with onto.reader() as conn:
        return [f"{u.rule}: {u.old_text} -> {u.newer_text}" for u in queries.updates(conn)]


@pytest.mark.parametrize("folder", ["generic_keys", "alternatives", "templates", "questions", "quoted_errors",
                                    "examples", "conditionals", "scoped_keys", "diary", "removals",
                                    "heading_negation", "two_projects_flat", "env_qualifiers_langs",
                                    "env_headings_scripts"])
def test_a_trap_folder_yields_no_dispute(onto, folder):
    """"Owner: dana" in the alpha service's file and "Owner: lee" in the beta service's, a template's
    "Database: <db>", "Queue: RabbitMQ?", "Error: timeout" of two incidents, "Wrong: …" of two rules,
    "Cache: disabled (on CI only)": each describes its own file's subject, a question or a condition."""
    _ingest(onto, folder)
    assert _disputed(onto) == []


@pytest.mark.parametrize("folder", ["counts", "diary", "tables", "generic_keys", "units", "removals", "markers",
                                    "index_status", "index_scope"])
def test_a_value_in_another_scope_supersedes_nothing(onto, folder):
    """A canary's replica count is not production's later count; a diary's days count different runs;
    step 1.2 of one plan is not step 1.2 of another; 0.710 is 0.71; "`tmp/` is deleted after each run"
    and "deleted `x` by mistake, then restored it" remove nothing; "How we handle DEPRECATED flags" marks
    no file; "All done except step 2.4" does not say the index's "step 2.4 pending" is stale, nor "phase 1
    done" that "phase 2 pending" is; "Best score: 0.69 on the private split" is not the public split's."""
    _ingest(onto, folder)
    assert _updates(onto) == []


def test_real_updates_are_still_found(onto):
    _ingest(onto, "real")
    updates = _updates(onto)
    for wanted in EXPECTED["real"]["update"]:
        assert any(wanted in text for text in updates), (wanted, updates)


def test_a_specific_key_under_one_heading_still_disputes(onto):
    _ingest(onto, "real")
    disputed = _disputed(onto)
    for wanted in EXPECTED["real"]["dispute"]:
        assert any(wanted in text for text in disputed), (wanted, disputed)


def test_the_trap_set_scores_clean():
    """The whole set through the script a person reads (run as a process: tests never import bench)."""
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-m", "bench.traps", str(TRAPS), "--strict"], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_a_session_ledger_still_disputes_a_memory_files_generic_value(onto):
    """A topic file's "database: postgres" implies no denial of another topic file's value, but a
    session's notes (the project as a whole) saying "database: mysql" still dispute it."""
    onto.ingest("a.md", memory("a", "service a", "- database: postgres"), Channel.CLI)
    onto.ingest("b.md", memory("b", "service b", "- database: sqlite"), Channel.CLI)
    assert _disputed(onto) == []
    onto.ingest("2026-04-03T0900Z_e001.md", ledger("s7", "- database: mysql", timestamp="2026-04-03T09:00:00Z"),
                Channel.CLI)
    assert set(_disputed(onto)) == {"database: postgres", "database: sqlite"}


def test_someone_elses_quoted_words_record_no_revision_of_ours():
    from ontology.revisions import revisions
    quoted = 'Quote from the vendor: "we migrated from MySQL to Postgres last year" (their system, not ours)'
    assert revisions(quoted) == ()
    assert revisions("We migrated the warehouse from MySQL to Postgres") != ()
    assert revisions('The proxy notes said “the token was replaced by a session cookie”') == ()


def test_an_index_line_linking_two_files_is_read_for_each_of_them(onto):
    """Index-line supersession read only a line's first link: "[Stack](…) · [Runners](…) — RunnerPool 4
    workers" said nothing about the runners file, which says 6 now. Each link gets its own part of the line."""
    onto.ingest("project_runners.md", memory("Runners", "CI runners", "- RunnerPool 6 workers serve the CI queue."),
                Channel.CLI)
    onto.ingest("project_stack.md", memory("Stack", "the stack", "- The app is a Django monolith."), Channel.CLI)
    onto.ingest("MEMORY.md", b"# Memory\n\n- [Stack](project_stack.md) \xc2\xb7 [Runners](project_runners.md)"
                             b" \xe2\x80\x94 RunnerPool 4 workers\n", Channel.CLI)
    updates = _updates(onto)
    assert any(u.startswith("supersede:index") and "RunnerPool 6 workers" in u for u in updates), updates
    assert not any("Django" in u for u in updates), updates


def test_the_same_words_under_two_scope_headings_still_agree(onto):
    """A heading that names a scope keeps a negation there from denying another scope's statement, but
    two files saying the same thing under different headings still agree (near-duplicates)."""
    onto.ingest("a.md", memory("a", "staging", "## Staging\n- Deploys run from the release branch."), Channel.CLI)
    onto.ingest("b.md", memory("b", "production", "## Production\n- Deploys run from the release branch."),
                Channel.CLI)
    with onto.reader() as conn:
        views = [a for a in queries.assertions(conn) if "release branch" in a.text]
    assert len(views) == 1 and views[0].n_for == 2, views


def test_a_switch_on_and_off_never_agree(onto):
    """"on" is a stopword, so "Debug logging is on" and "… is off" differed by one token and merged as
    near-duplicates: production's file "agreed" with staging's that debug logging is on."""
    onto.ingest("a.md", memory("a", "staging", "- Debug logging is on for the API."), Channel.CLI)
    onto.ingest("b.md", memory("b", "production", "- Debug logging is off for the API."), Channel.CLI)
    with onto.reader() as conn:
        views = [a for a in queries.assertions(conn) if "Debug logging" in a.text]
    assert len(views) == 2 and all(v.n_for == 1 for v in views), views


def test_a_category_acronym_alone_does_not_name_one_thing(onto):
    """Two projects' files in one folder each say what fills a role: "API framework: Django" and
    "API framework: FastAPI", "CI: Jenkins" and "CI: Codemagic" (blind7). The acronym names a kind of
    thing, not one thing, so the topic files do not dispute; "Orders DB" and "Search API" still name one."""
    onto.ingest("project_falcon.md", memory("falcon", "storefront", "- API framework: Django\n- CI: Jenkins\n"
                                            "- Orders DB: Postgres"), Channel.CLI)
    onto.ingest("project_heron.md", memory("heron", "internal tool", "- API framework: FastAPI\n- CI: Codemagic\n"
                                           "- Orders DB: MySQL"), Channel.CLI)
    assert sorted(_disputed(onto)) == ["Orders DB: MySQL", "Orders DB: Postgres"]
    onto.ingest("2026-04-03T0900Z_e001.md", ledger("s7", "- CI: Buildkite", timestamp="2026-04-03T09:00:00Z"),
                Channel.CLI)
    assert {"CI: Jenkins", "CI: Codemagic"} <= set(_disputed(onto)), "a session's value still disputes them"


def test_values_said_for_two_places_are_no_rivals_in_any_language(onto):
    """blind10: "Orders DB: Postgres (production)" in one file disputed "Orders DB: SQLite (local)" in
    another, in every language, English included (the parenthesis says where each value holds); values
    under "## Продакшен" and "## Локально" disputed too (a heading in a script we have no word lists for
    scoped nothing). Two values for one place still dispute."""
    onto.ingest("a.md", memory("a", "a", "- Orders DB: Postgres (production)\n- Billing DB: Postgres (прод)\n"
                                          "## Продакшен\n- Search API: Typesense"), Channel.CLI)
    onto.ingest("b.md", memory("b", "b", "- Orders DB: SQLite (local)\n- Billing DB: SQLite (локально)\n"
                                          "## Локально\n- Search API: Meilisearch"), Channel.CLI)
    assert _disputed(onto) == []
    onto.ingest("c.md", memory("c", "c", "- Orders DB: MySQL (production)\n## Продакшен\n- Search API: Solr"),
                Channel.CLI)
    assert sorted(_disputed(onto)) == ["Orders DB: MySQL (production)", "Orders DB: Postgres (production)",
                                       "Search API: Solr", "Search API: Typesense"]


def test_a_removal_from_one_place_leaves_the_thing_in_use_elsewhere(onto):
    """blind7: "We removed `node_modules` from the Docker context" disputed a file saying `node_modules`
    is installed in the build stage. Taken out of one place, it is not gone; out of the codebase, it is."""
    onto.ingest("session_cleanup.md", memory("cleanup", "cleanup", "- We removed `node_modules` from the Docker "
                                             "context.\n- Removed `legacy_sync` from the codebase."), Channel.CLI)
    onto.ingest("reference_build.md", memory("build", "build", "- `node_modules` is installed in the build stage.\n"
                                             "- The nightly job calls `legacy_sync` after the export."), Channel.CLI)
    disputed = _disputed(onto)
    assert not any("node_modules" in d for d in disputed), disputed
    assert any("legacy_sync" in d for d in disputed), disputed


def test_a_mention_under_a_condition_is_not_a_use(onto):
    """blind7: "If you see `legacy_sync` in a stack trace, the worker image is stale" disputed the file that
    says `legacy_sync` was removed; it says what to do should it turn up, not that it runs. Nor does a line
    saying why it "went away"."""
    onto.ingest("project_sync.md", memory("sync", "sync removal", "- `legacy_sync` was removed on 2026-05-12."),
                Channel.CLI)
    onto.ingest("reference_debug.md", memory("debug", "debugging", "- If you see `legacy_sync` in a stack trace, "
                                             "the worker image is stale: redeploy it.\n- The changelog for 4.0 "
                                             "explains why `legacy_sync` went away."), Channel.CLI)
    assert _disputed(onto) == []
    onto.ingest("reference_jobs.md", memory("jobs", "jobs", "- The nightly job calls `legacy_sync` after the export."),
                Channel.CLI)
    assert any("legacy_sync" in d for d in _disputed(onto)), "a plain use still disputes the removal"


def test_an_index_line_is_not_stale_against_another_setup_or_a_hypothetical(onto):
    """blind7: MEMORY.md said "project_model.md now says Best score: 0.701 with the baseline features" on
    the line "Best score: 0.742" (the file's 0.742 is the ensemble's), and "now says RunnerPool 4 workers
    would be enough" on "RunnerPool 6 workers". Another setup's value and a hypothetical say nothing stale;
    a value of the line's own scope still does."""
    onto.ingest("project_model.md", memory("model", "scores", "- Best score: 0.701 with the baseline features.\n"
                                           "- The ensemble reached 0.742."), Channel.CLI)
    onto.ingest("project_runners.md", memory("runners", "runners", "- RunnerPool 4 workers would be enough for "
                                             "nightly jobs, per the estimate."), Channel.CLI)
    onto.ingest("project_bots.md", memory("bots", "bots", "- BotFleet 9 agents sur cluster Nord."), Channel.CLI)
    onto.ingest("MEMORY.md", "# Memory\n\n- [Model](project_model.md) — Best score: 0.742\n"
                             "- [Runners](project_runners.md) — RunnerPool 6 workers\n"
                             "- [Bots](project_bots.md) — BotFleet 10 agents cluster Nord\n".encode(), Channel.CLI)
    stale = [u for u in _updates(onto) if u.startswith("supersede:index")]
    assert len(stale) == 1 and "BotFleet 9 agents" in stale[0], stale


def test_rewrites_that_keep_the_meaning_make_nothing_new_on_the_trap_set():
    """Precision fuzzing (ADR 0009, sessions 8 and 9): every trap folder re-wrapped at 60 columns, with every
    file copied under a second name, and with each long file split in two at a section must show the agent
    no dispute, update or mark the folder did not, and keep every agreement (re-wrap, copy). Run as a
    process, like the scorer: tests never import bench."""
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-m", "bench.metamorphic", str(TRAPS), "--only", "rewrap,copy_session,split"],
                         cwd=root, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
