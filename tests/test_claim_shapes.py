"""Claim shapes where a near match or a sentence split put words together that the author kept apart:
short statements that share only names, label-like descriptions, quotations, a synonym swapped in place.
Our own fixtures (tests/fixtures/claims/<class>/), ingested into a real graph."""

from __future__ import annotations

from pathlib import Path

from test_claims import _ingest
from ontology import queries
from ontology.artifact import Channel
from ontology.ingest import Ontology


def test_short_statements_that_share_only_names_or_differ_by_a_name_do_not_agree(onto):
    """An agreement makes two sources evidence for one fact: "block_k: [32, 64]" (a setting) and "block_k=64
    same as block_k=32" (a finding) share only a name and numbers, and "shard3" is not "shard3/shard7".
    Restatements of a short claim still agree."""
    claims = _ingest(onto, "short_values")
    for text in ("block_k: [32, 64]", "block_k=64 same as block_k=32", "shard3: FAIL checksum",
                 "shard3/shard7: FAIL checksum"):
        assert claims[text].n_for == 1, text
    assert claims["QUEUE_DEPTH=12: forces the slow fallback copy"].n_for == 2
    assert claims["12 smoke tests — 12/12 passing"].n_for == 2


def test_a_description_that_is_a_bare_label_is_no_claim(onto):
    """ "Weekly status" in three status files names the kind of file; it is not one fact three sources
    agree on. A short description that says something still is a claim, and agrees."""
    claims = _ingest(onto, "labels")
    assert not any("Weekly status" in text for text in claims), list(claims)
    assert claims["Prefers squash merges"].n_for == 2
    assert len([t for t in claims if t.startswith("The mobile release waits")]) == 3


def test_a_quoted_question_is_not_split_inside_its_quotation(onto):
    """A sentence end inside a balanced quotation ("…? Then I commit.", ¿…?, «…», 「…」) ends the quoted
    sentence, not the author's; the author's next sentence is a claim of its own and agrees."""
    claims = _ingest(onto, "quotes")
    for text in ('Before every commit, ask the user: "Is the build green? Then I commit."',
                 'Al terminar, preguntar: "¿Lo probaste? ¿Hago el merge?"',
                 "Antes de publicar, preguntar «¿Está bien así? Lo subo.»",
                 "リリース前に「本当に大丈夫？ 確認した？」と聞く。"):
        assert text in claims, list(claims)
    assert not any(t.startswith(("Then I commit", "¿Hago", "Lo subo", "確認した")) for t in claims), list(claims)
    assert claims["Never commit without an explicit yes"].n_for == 2


def test_sentences_split_outside_quotations_in_linear_time():
    from ontology.extract import _sentences

    assert _sentences('A 5" screen. Then "x? Y" z. End here.') == ['A 5" screen.', 'Then "x? Y" z.', "End here."]
    assert _sentences("Er sagte „Ist das so? Ja.“ Dann ging er.") == ["Er sagte „Ist das so? Ja.“", "Dann ging er."]
    # unmatched and mismatched marks hold no split, and each is scanned once (bench figures: docs/BENCHMARKS.md)
    hostile = "„" * 20000 + "”" * 20000 + ". A" * 3000 + "«" * 20000
    assert len(_sentences(hostile)) == 3001


def test_a_synonym_swapped_in_place_is_two_claims_and_no_dispute(tmp_path: Path):
    """Since the swap rule, "uses" / "utilizes" in place keep apart: recall lost, but no harm — neither is
    a rival value of the other, so no dispute and no update, and each file keeps its own words."""
    from conftest import memory

    onto = Ontology(tmp_path, "claims", create=True)
    try:
        onto.ingest("a.md", memory("a", "session store", "- The billing API uses Redis for its session store\n"),
                    Channel.CLI)
        onto.ingest("b.md", memory("b", "session cache", "- The billing API utilizes Redis for its session store\n"),
                    Channel.CLI)
        with onto.reader() as conn:
            claims = {a.text: a for a in queries.assertions(conn) if "billing API" in a.text}
            assert not list(queries.updates(conn))
        assert {t: (a.n_for, a.n_against, a.status) for t, a in claims.items()} == {
            "The billing API uses Redis for its session store": (1, 0, "INSUFFICIENT_DATA"),
            "The billing API utilizes Redis for its session store": (1, 0, "INSUFFICIENT_DATA")}
    finally:
        onto.close()


def test_restatements_in_scripts_that_write_vowels_as_marks_still_agree(tmp_path: Path):
    """A word with a vowel sign ("उपयोग") is a plain word, not a name: the rule that keeps wordings sharing
    only names apart must not keep apart two Hindi restatements of one fact."""
    from conftest import memory

    onto = Ontology(tmp_path, "claims", create=True)
    try:
        # every word the two share carries a vowel sign, so none is letters only
        onto.ingest("a.md", memory("a", "notes", "- सभी नोट्स हिंदी में लिखें\n"), Channel.CLI)
        onto.ingest("b.md", memory("b", "language", "- सभी नोट्स हिंदी में ही लिखें\n"), Channel.CLI)
        with onto.reader() as conn:
            assert [(a.text, a.n_for) for a in queries.assertions(conn) if "नोट्स" in a.text] == [
                ("सभी नोट्स हिंदी में लिखें", 2)]
    finally:
        onto.close()
