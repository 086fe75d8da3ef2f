"""Claims that hold up on real-shaped memory folders: each failure class seen on real folders,
reproduced with our own fixtures (tests/fixtures/claims/<class>/), ingested into a real graph."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from conftest import FIXTURES
from ontology import queries
from ontology.artifact import Channel
from ontology.ingest import Ontology

CLAIMS = FIXTURES / "claims"
DISPUTED = ("CONTESTED", "CONTRADICTORY")


def _ingest(onto: Ontology, folder: str) -> dict[str, queries.AssertionView]:
    paths = sorted((CLAIMS / folder).glob("*.md"))
    results = onto.ingest_paths(paths, Channel.CLI)
    assert all(r.status.value == "new" for r in results), results
    with onto.reader() as conn:
        return {a.text: a for a in queries.assertions(conn)}


def _disputed(claims: dict[str, queries.AssertionView]) -> list[str]:
    return [text for text, a in claims.items() if a.status in DISPUTED]


def test_link_lists_are_relations_not_claims(onto):
    claims = _ingest(onto, "linklists")
    assert not _disputed(claims)
    for text in claims:
        assert not any(word in text for word in ("Related", "相关", "관련", "[[", "See ", "pricing-service")), text
    assert "Credit notes need a second approver" in claims
    with onto.reader() as conn:
        targets = {r[0] for r in conn.execute("SELECT dst FROM relations WHERE src LIKE '%billing-rules'")}
    assert {"cache-layer", "ledger-export", "pricing-service"} <= targets


def test_a_list_item_pointing_at_another_note_is_a_relation_not_a_claim(onto):
    """ "- [[ledger-export]] — nightly CSV export…" in a Related section says what another note holds, as an
    index line's hook does: two notes pointing at the same note "agreed" with each other and the reader
    learned nothing (judge11). The link is still a relation; a sentence that links mid-way is still a claim,
    and a fact both notes state still agrees."""
    from projection.snapshot import memory_topic

    claims = _ingest(onto, "pointers")
    assert not any("nightly CSV export" in text or "thresholds that hold" in text for text in claims), list(claims)
    assert claims["Refunds over 500 EUR need a second approver"].n_for == 2
    assert any(text.startswith("A refund reaches the card within five working days") for text in claims)
    with onto.reader() as conn:
        for name in ("project_payments.md", "project_refunds.md"):
            topic = memory_topic(conn, name)
            assert topic is not None and [v.said for v in topic.voices] == \
                ["Refunds over 500 EUR need a second approver"], topic.voices
        targets = {r[0] for r in conn.execute("SELECT dst FROM relations WHERE src LIKE '%refunds'")}
    assert "ledger-export" in targets and any("fraud" in t for t in targets), targets


def test_an_elaboration_agrees_with_the_value_it_elaborates(onto):
    claims = _ingest(onto, "elaboration")
    assert not _disputed(claims), _disputed(claims)
    swarm = next(a for t, a in claims.items() if t.startswith("Docker Swarm"))
    flag = next(a for t, a in claims.items() if t.startswith("report.include_raw_rows"))
    assert (swarm.n_for, swarm.n_against) == (2, 0)
    assert (flag.n_for, flag.n_against) == (2, 0)


def test_cjk_statements_are_compared_on_all_their_text(onto):
    claims = _ingest(onto, "multiscript")
    shared = claims["原始日志先压缩再上传到对象存储"]
    assert shared.n_for == 2  # the same Chinese statement in two files is one claim
    zh = claims["NLP 模型 2026-05-01 之后每周重新训练一次"]
    ja = claims["NLP 2026-05-01 の会議で予算が承認された"]
    assert zh.id != ja.id and zh.n_for == ja.n_for == 1  # sharing "NLP" and a date is not agreeing
    assert "存储和传输都非常低效" in claims
    assert "シリコーン型は毎回洗浄してから使う" in claims
    assert "설정 파일은 `~/.config/lab/pipeline.toml` 에 둔다" in claims


def test_claim_text_keeps_the_authors_identifiers_byte_for_byte(onto):
    claims = _ingest(onto, "noise")
    texts = "\n".join(claims)
    for kept in ("`actor.calculate_sum_pi_squared=True`", "~/cool/x", "2~3-part", "snake_case_names",
                 "export_batch_size"):
        assert kept in texts, kept


def test_headings_labels_code_formulas_and_tables_are_not_claims(onto):
    claims = _ingest(onto, "noise")
    assert set(claims) == {
        "Working notes about the exporter",
        "The exporter writes one file per tenant",
        "Set `actor.calculate_sum_pi_squared=True` before the nightly run",
        "Scratch files live in ~/cool/x and runs take 2~3-part batches",
        "snake_case_names such as export_batch_size stay as written",
    }, sorted(claims)


def test_portuguese_no_is_not_a_negation(onto):
    claims = _ingest(onto, "negation")
    pt = [a for t, a in claims.items() if t.startswith("O deploy")]
    assert pt and all(a.status not in DISPUTED and a.n_against == 0 for a in pt)


def test_spanish_no_is_a_negation(onto):
    claims = _ingest(onto, "negation")
    es = claims["Usar Docker en producción para el despliegue"]
    assert es.status == "CONTESTED" and (es.n_for, es.n_against) == (1, 1)


def test_a_generic_subject_is_not_a_slot(onto):
    claims = _ingest(onto, "generic")
    assert not _disputed(claims), _disputed(claims)


def test_different_numbers_are_different_claims(onto):
    claims = _ingest(onto, "numbers")
    tests = [a for t, a in claims.items() if "tests green" in t]
    assert len(tests) == 2 and all(a.n_for == 1 for a in tests)


@pytest.mark.parametrize("folder", sorted(p.name for p in CLAIMS.iterdir()))
def test_every_fixture_folder_ingests_and_rebuilds_to_the_same_graph(tmp_path: Path, folder: str):
    from conftest import graph_snapshot

    onto = Ontology(tmp_path, "claims", create=True)
    _ingest(onto, folder)
    before = graph_snapshot(onto.paths.database)
    onto.rebuild()
    assert graph_snapshot(onto.paths.database) == before
    onto.close()


def _in_use(onto: Ontology) -> dict[str, tuple[str, tuple[tuple[str, int], ...]]]:
    """Each "`x` is in use" assertion: its label and its sides (file, stance), in file order."""
    with onto.reader() as conn:
        rows = conn.execute("SELECT a.text, a.status, s.identity, st.stance FROM assertions a "
                            "JOIN stances st ON st.assertion_id = a.id JOIN sources s ON s.id = st.source_id "
                            "WHERE a.text LIKE '%` is in use' ORDER BY a.text, s.identity").fetchall()
    out: dict[str, tuple[str, tuple[tuple[str, int], ...]]] = {}
    for text, status, identity, stance in rows:
        label, sides = out.get(text, (status, ()))
        out[text] = (label, sides + ((Path(identity).name, stance),))
    return out


REMOVED_VS_IN_USE = {
    "`lab sweep` is in use": ("CONTESTED", (("project_cli_cleanup.md", -1), ("project_cli_usage.md", 1))),
    "`pipeline/legacy_cache` is in use": ("CONTESTED", (("project_cli_cleanup.md", -1), ("project_cli_usage.md", 1))),
    "`exportLegacyCsv` is in use": ("CONTESTED", (("project_cli_cleanup.md", -1), ("project_cli_usage.md", 1))),
}


def test_an_identifier_removed_in_one_file_and_used_in_another_is_disputed(onto):
    claims = _ingest(onto, "removals")
    assert _in_use(onto) == REMOVED_VS_IN_USE
    # Not disputed: a removal that is negated ("was not removed") or planned ("will remove"), a mention
    # that is historical ("was … (replaced)", "Iter 1:", "→"), and identifiers nobody removes.
    assert sorted(_disputed(claims)) == sorted(REMOVED_VS_IN_USE)


def test_a_removal_pairs_with_a_mention_ingested_before_it_and_a_source_never_disputes_itself(tmp_path: Path):
    files = {p.name: p for p in (CLAIMS / "removals").glob("*.md")}
    onto = Ontology(tmp_path / "reverse", "claims", create=True)
    order = ["project_cli_usage.md", "project_cli_history.md", "project_cli_cleanup.md"]  # mentions first
    assert all(r.status.value == "new" for r in onto.ingest_paths([files[n] for n in order]))
    assert _in_use(onto) == REMOVED_VS_IN_USE
    onto.close()
    alone = Ontology(tmp_path / "alone", "claims", create=True)  # removes and names legacy_cache itself
    alone.ingest_paths([files["project_cli_cleanup.md"]])
    assert _in_use(alone) == {}
    alone.close()


def test_a_mention_withdrawn_by_a_new_version_ends_the_dispute(onto, tmp_path: Path):
    _ingest(onto, "removals")
    usage = (CLAIMS / "removals" / "project_cli_usage.md").read_text(encoding="utf-8")
    newer = tmp_path / "project_cli_usage.md"
    newer.write_text(usage.replace("- The loader reads warm data from `pipeline/legacy_cache/` on every start.\n", ""),
                     encoding="utf-8")
    assert onto.ingest_paths([newer])[0].status.value in ("new", "updated")
    views = _in_use(onto)
    assert "`pipeline/legacy_cache` is in use" not in views
    assert views["`lab sweep` is in use"] == REMOVED_VS_IN_USE["`lab sweep` is in use"]


def test_a_deleted_file_takes_its_mentions_out_of_the_dispute_and_a_restore_brings_them_back(onto):
    _ingest(onto, "removals")
    tombstone = b'{"kgbridge": "tombstone", "file": "project_cli_usage.md", "at": "2026-11-30T04:00:00Z"}'
    assert onto.ingest("tombstone.0123456789ab.project_cli_usage.md", tombstone, Channel.CLI).status.value == "new"
    assert _in_use(onto) == {}  # the remover's stance is withdrawn too: nothing left to dispute
    usage = (CLAIMS / "removals" / "project_cli_usage.md").read_bytes()
    assert onto.ingest("project_cli_usage.md", usage, Channel.CLI).status.value == "new"
    assert _in_use(onto) == REMOVED_VS_IN_USE


def test_a_flow_arrow_elsewhere_leaves_a_use_and_an_arrow_beside_the_identifier_is_a_change():
    from ontology.removals import IdentifierStance, identifier_stances

    flow = "22:00 nightly push — `jobs/nightly_digest.py` reads the watchlist, builds the report→sends to LINE"
    assert dict(identifier_stances(flow, 1)).get("nightly_digest") is IdentifierStance.IN_USE
    for change in ("Renamed `old_digest` → `nightly_digest`", "moved `jobs/old_digest.py`→`jobs/nightly_digest.py`"):
        assert "old_digest" not in dict(identifier_stances(change, 1)), change
    assert "old_digest" not in dict(identifier_stances("Iter 2: `old_digest` wired in", 1))  # an iteration log


def test_a_list_item_rewrapped_before_a_number_stays_one_statement(onto):
    """A bullet wrapped at "... from Java 17 to Java" with "  21. The Android app ..." on the next line is
    one item (CommonMark: a list starting at 21 cannot interrupt a paragraph), not an item that says
    "moved to Java" and a second one; a nested list starting at 1 still makes items of its own."""
    claims = _ingest(onto, "wrapped_numbers")
    assert any("from Java 17 to Java 21. The Android app" in text for text in claims), list(claims)
    assert not any(text.startswith("21.") or text.endswith("to Java") for text in claims), list(claims)
    assert "run the smoke tests" in claims
    with onto.reader() as conn:
        assert not [u for u in queries.updates(conn) if u.new_text.strip() == "Java"]


def test_a_log_copied_under_another_name_updates_nothing(onto):
    """A day log counting "MoverJob 4 workers" on one day and "8 workers" on another counts two runs,
    not a newer value; its copy under a second name (a later session restating it) says both counts too,
    so neither copy supersedes the other's first day."""
    _ingest(onto, "copied_log")
    with onto.reader() as conn:
        assert [f"{u.old_text} -> {u.new_text}" for u in queries.updates(conn)] == []


def test_a_hard_wrapped_sentence_is_read_whole(onto):
    """A paragraph wrapped mid-sentence ("... rested on an outdated" / "guess that nobody had checked.
    Instead:") and a list item wrapped before a code span go on on their next line: that line is not a
    label or a command line of its own, so the statement keeps all its words. A label after a finished
    sentence ("**How to apply:**") is still a label."""
    claims = _ingest(onto, "hard_wrapped")
    assert "The retry plan written on 2026-03-10 rested on an outdated guess that nobody had checked" in claims
    assert "Public best: `0.912` from `runs/blend_v3_seed7.csv` (ensemble of three seeds)" in claims
    assert "once the export alarm goes off, open the manifest before anything else" in claims
    assert not any(text.endswith("an outdated") or "Instead" in text for text in claims), list(claims)


def test_a_list_item_wrapped_after_its_colon_is_one_claim(onto):
    """ "- Deploy target:" with its value on the next, indented line is one item (CommonMark reads one
    paragraph): one claim with its label, not a label over a value left standing alone. A label item
    over a nested list is still a label."""
    claims = _ingest(onto, "wrapped_labels")
    assert "Deploy target: the staging cluster in eu-west-1, through the `ship` script" in claims, list(claims)
    assert "Sign-off owner: Dana from the platform team" in claims, list(claims)
    assert not any(text.startswith(("the staging cluster", "Dana from")) for text in claims), list(claims)
    assert "run the smoke suite twice" in claims
    assert not any(text.startswith("Checklist") for text in claims), list(claims)


def test_a_self_correction_does_not_outdate_a_line_about_a_code_named_file_of_the_old_product(onto):
    """ "(the current offering, not Pages)" corrects the same file's "builds on Lumen Pages"; its line about
    the "Lumen Pages `_rewrites` file" is about that file (which the correction does not mention), not a claim
    that the site is on Pages: it is not marked outdated."""
    _ingest(onto, "self_correction")
    with onto.reader() as conn:
        olds = [u.old_text for u in queries.updates(conn)]
    assert any(old.startswith("Builds: every push") for old in olds), olds
    assert not any("`_rewrites`" in old for old in olds), olds


def test_a_catalogue_of_what_a_tool_offers_is_no_use_of_a_removed_identifier(onto):
    """ "Supported alert events: `idle_ping`, …" lists what the harness offers; the
    other file's "`idle_ping` was removed" removes it from this machine's hooks: no dispute. A plain use
    ("The `bell_sound` hook plays a chime") of an identifier removed elsewhere is still disputed."""
    claims = _ingest(onto, "catalogue")
    assert "`bell_sound` is in use" in _disputed(claims), _disputed(claims)
    assert "`idle_ping` is in use" not in _disputed(claims), _disputed(claims)


@pytest.mark.parametrize(("text", "old"), [
    ("Now we use `uv-tool`, previously `pip-tools`", "pip-tools"),
    ("We now deploy with `argo-sync`; formerly `fab-deploy`", "fab-deploy"),
    ("Очередь теперь на `nats-js`, раньше был `rabbit-mq`", "rabbit-mq"),
    ("अब हम `uv-tool` इस्तेमाल करते हैं, पहले `pip-tools` था।", "pip-tools"),
    ("Hiện nay dùng `axum-web` cho máy chủ HTTP, trước đây là `actix-web`.", "actix-web"),
    (unicodedata.normalize("NFD", "Hiện nay dùng `axum-web` cho máy chủ HTTP, trước đây là `actix-web`."), "actix-web"),
    ("از این به بعد با `podman-cli` می‌سازیم؛ قبلاً `docker-cli` بود.", "docker-cli"),
])
def test_now_y_formerly_x_declares_x_out_of_use(text, old):
    """"Now Y …, formerly X" in one statement: X is what it replaced (removed), Y is in use (blind10's
    languages; only identifiers, as every removal)."""
    from ontology.removals import IdentifierStance, identifier_stances

    assert dict(identifier_stances(text, 1)).get(old) is IdentifierStance.REMOVED, text


@pytest.mark.parametrize("text", [
    "पहले `migrate --plan` देखें",  # "first check …": no "now", so no history
    "Previously `pip-tools` was fine, now too",  # the "formerly" is not after a "now"
    "We now also support `pip-tools`, previously only `poetry-core`",  # an addition, not a replacement
    "Now `pip-tools` still works, previously `poetry-core` too",
    "`pip-tools` is what we use now",
])
def test_a_formerly_without_a_replacing_now_removes_nothing(text):
    from ontology.removals import IdentifierStance, identifier_stances

    assert IdentifierStance.REMOVED not in dict(identifier_stances(text, 1)).values(), text


@pytest.mark.parametrize(("text", "old"), [
    ("Ми більше не викочуємо вручну через `fab deploy`; тепер усе йде через `argo-sync`", "fab deploy"),
    ("Od maja używamy `pnpm-cli` zamiast `yarn-cli`", "yarn-cli"),
    ("Мы больше не используем `celery-beat`", "celery-beat"),
    (unicodedata.normalize("NFD", "Máy chủ không còn dùng `actix-web`"), "actix-web"),
])
def test_a_clause_saying_no_longer_or_instead_of_names_no_use(text, old):
    """"No longer via `x`", "`y` instead of `x`" in blind10's languages: x is not named as in use (a file
    removing x would have been disputed by the very statement that agrees with it)."""
    from ontology.removals import IdentifierStance, identifier_stances

    assert dict(identifier_stances(text, 1)).get(old) is not IdentifierStance.IN_USE, text


def test_a_request_to_forget_a_memory_confirms_nothing_and_states_nothing(onto):
    """Codex writes the user's "forget …" and "delete from memory …" requests as ad-hoc notes that name what
    to drop (ADR 0010, "Session 14 (codex14)"). Read as claims they agreed with the very lines they ask to drop
    (the summary's "Prefers tabs …" AFFIRMATIVE, two sources). A request states nothing; a reminder
    ("Don't forget: …") and the rest of the note still do."""
    claims = _ingest(onto, "forget_requests")
    assert not _disputed(claims)
    for line in ("Prefers tabs over spaces in Makefiles", "The admin console's unit tests use SQLite in memory",
                 "The payments service deploys with `make ship`", "Reviews are written in German",
                 "Wants commit messages in the imperative mood",
                 # the request as a label over a list, a heading over a section, a tag
                 "Feature flags live in `flags.yaml`", "The staging database is reset every Monday",
                 "Pull requests need two approvals",
                 # a label saying that what follows is no longer true
                 "Uses pnpm for the admin console", "Release notes go to the #releases channel"):
        assert [s.filename for s in claims[line].sources] == ["memory_summary.md"], (line, claims[line].sources)
    asked = [t for t in claims if any(w in t for w in ("Forget", "forget that", "Delete from memory", "Vergiss",
                                                       "忘れて", "[delete]", "Obsolete", "[outdated]"))]
    assert asked == [], asked  # no request to drop a memory is a claim of its own either
    assert "They use spaces everywhere now" in claims  # what the note says beside the request stays
    assert "The staging database is reset every Sunday night" in claims  # its "## Add" section too
    assert "Release notes go to the changelog page now" in claims  # the line after the stale one
    assert "Don't forget: run migrations before the integration tests" in claims  # a reminder is a claim
