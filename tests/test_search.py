"""Search over a real SQLite graph: every query word counts, concept and assertion hits share one
scale, evidence breaks ties, filters narrow, and CJK words are found by substring."""

from __future__ import annotations

import json
import subprocess

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import ledger, memory
from support.server_proc import KGBRIDGE
from ontology import search
from ontology.artifact import Channel
from ontology.ingest import Ontology


def _hits(onto, q, limit=10, **filters):
    with onto.reader() as conn:
        return search.search(conn, q, limit=limit, filters=search.parse_filters(**filters))


def _ingest(onto, *items):
    for name, data in items:
        onto.ingest(name, data, Channel.CLI)


def _texts(hits):
    return [h.text for h in hits]


# Short notes that each use one query word, and one longer note that uses them all: BM25 over "any
# word" prefers the short notes; every-word-counts puts the long one first.
_ONE_WORD = [f"- Kubernetes {w} stays small" for w in ("pods", "nodes", "jobs", "quotas", "probes")]
_ALL_WORDS = ("- Before a release we check that the rollback script for kubernetes still restores "
              "the previous image of every deployment in the staging namespace")


def test_hits_with_every_query_word_come_before_hits_on_one_word(onto):
    _ingest(onto, ("k8s.md", memory("k8s", "cluster notes", "\n".join(_ONE_WORD))),
            ("release.md", memory("release", "release checklist", _ALL_WORDS)),
            ("undo.md", memory("undo", "undo notes", "- Rollback fast")))
    hits = _hits(onto, "kubernetes rollback")
    assert hits[0].text == _ALL_WORDS.removeprefix("- ")
    assert hits[0].matched == 2 and hits[0].match is not search.Match.PARTIAL
    # What fills the page after it contains only one of the words, and says so.
    assert hits[1:] and all(h.match is search.Match.PARTIAL and h.matched == 1 for h in hits[1:])


def test_phrase_ranks_above_near_above_scattered_words(onto):
    _ingest(onto, ("a.md", memory("a", "alpha", "- The build cache lives on the runner disk")),
            ("b.md", memory("b", "bravo", "- Cache entries for the build expire weekly")),
            ("c.md", memory("c", "charlie", "- Cache misses are rare when the runner, the toolchain and the "
                                            "lockfile are all unchanged, so we never build twice")))
    hits = [h for h in _hits(onto, "build cache") if h.kind is search.HitKind.ASSERTION]
    assert [h.match for h in hits] == [search.Match.PHRASE, search.Match.NEAR, search.Match.ALL]
    assert hits[0].text.startswith("The build cache")


def test_a_common_word_alone_does_not_fill_the_page(onto):
    _ingest(onto, *[(f"n{i}.md", memory(f"n{i}", f"note {i}", f"- The database backup {i} ran")) for i in range(12)],
            ("pg.md", memory("pg", "postgres", "- Postgres listens on 5433 here")))
    hits = _hits(onto, "postgres database")
    assert _texts(hits)[:1] == ["Postgres listens on 5433 here"] or any(h.concept == "pg" for h in hits[:1])
    assert not any("backup" in h.text for h in hits)  # "database" carries too little of the query


def test_concept_and_assertion_hits_are_ordered_on_one_scale(onto):
    # Many concepts are named after one of the words, few assertions say either: raw BM25 rates a word
    # low in the concept table and high in the assertion table, so comparing the two raw scores put
    # "Vacuum now" above the one concept named by both words.
    _ingest(onto, ("ledger-vacuum.md", memory("ledger-vacuum", "maintenance notes", "- Compact tables monthly")),
            ("v0.md", memory("v0", "misc", "- Vacuum now")),
            *[(f"{w}-{i}.md", memory(f"{w}-{i}", "filler", f"- Note {w[:2]}{i} has nothing to add"))
              for w in ("vacuum", "ledger") for i in range(5)])
    hits = _hits(onto, "vacuum ledger", limit=20)
    assert (hits[0].kind, hits[0].concept, hits[0].matched) == (search.HitKind.CONCEPT, "ledger-vacuum", 2)
    now = next(h for h in hits if h.text == "Vacuum now")
    assert now.match is search.Match.PARTIAL and now.score < hits[0].score
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_description_is_one_hit_not_two(onto):
    _ingest(onto, ("ops.md", memory("ops", "The nightly vacuum keeps the ledger compact")))
    hits = _hits(onto, "vacuum ledger")
    assert [(h.kind, h.text) for h in hits] == [(search.HitKind.ASSERTION, "The nightly vacuum keeps the ledger compact")]


def test_grounded_and_disputed_claims_rank_above_withdrawn_ones_at_equal_relevance(onto):
    claim = "- Warm the cache before {x} traffic"
    _ingest(onto, ("aa.md", memory("aa", "first", claim.format(x="morning"))),
            ("aa.md", memory("aa", "first", "- Nothing else to say")),  # the only source withdraws it
            ("zz.md", memory("zz", "second", claim.format(x="evening"))),
            ("zy.md", memory("zy", "third", claim.format(x="evening"))))
    hits = [h for h in _hits(onto, "warm cache traffic") if h.kind is search.HitKind.ASSERTION]
    assert _texts(hits) == ["Warm the cache before evening traffic", "Warm the cache before morning traffic"]
    assert hits[0].status == "AFFIRMATIVE" and hits[1].n_for == 0


def _disputed_corpus(onto):
    _ingest(onto, ("db1.md", memory("db1", "storage", "- The Orders database is postgres")),
            ("db2.md", memory("db2", "storage", "- The Orders database is mysql")),
            ("cfg.md", memory("cfg", "config", "- The database pool has 10 connections")))


def test_status_filter_keeps_only_that_label(onto):
    _disputed_corpus(onto)
    hits = _hits(onto, "database", status="CONTESTED")
    assert hits and {h.status for h in hits} == {"CONTESTED"} and {h.kind for h in hits} == {search.HitKind.ASSERTION}
    assert {h.text for h in _hits(onto, "database", status=["disputed"])} == {
        "The Orders database is postgres", "The Orders database is mysql"}


def test_concept_filter_keeps_that_concept_and_its_assertions(onto):
    _disputed_corpus(onto)
    hits = _hits(onto, "database", concept="cfg")
    assert _texts(hits) and {h.concept for h in hits} == {"cfg"}


def test_since_filter_keeps_what_changed_on_or_after_the_date(onto):
    _ingest(onto, ("2026-01-05T1000Z_e001.md", ledger("s1", "Key decisions:\n- Pin the compiler to 1.2",
                                                     timestamp="2026-01-05T10:00:00Z")),
            ("2026-06-05T1000Z_e001.md", ledger("s2", "Key decisions:\n- Pin the compiler flags in CI",
                                                timestamp="2026-06-05T10:00:00Z")))
    assert len([h for h in _hits(onto, "pin compiler") if h.kind is search.HitKind.ASSERTION]) == 2
    assert _texts(h for h in _hits(onto, "pin compiler", since="2026-03-01")
                  if h.kind is search.HitKind.ASSERTION) == ["Pin the compiler flags in CI"]


def test_limit_caps_the_page(onto):
    _ingest(onto, *[(f"n{i}.md", memory(f"n{i}", f"note {i}", f"- Shard {i} holds the orders table")) for i in range(8)])
    assert len(_hits(onto, "orders shard", limit=3)) == 3


@pytest.mark.parametrize(("filters", "message"), [
    ({"status": "CONFIRMED"}, "unknown status"),
    ({"since": "last tuesday"}, "not a date"),
    ({"concept": "nope"}, "no concept"),
])
def test_bad_filters_are_clear_errors(onto, filters, message):
    _disputed_corpus(onto)
    with pytest.raises(search.SearchError, match=message):
        _hits(onto, "database", **filters)


def test_cjk_words_are_found_by_substring(onto):
    _ingest(onto, ("mold.md", memory("mold", "シリコーンの硬度メモ", "- シリコーン型は硬度40を使う\n- 서버 설정은 PowerShell로 한다")),
            ("other.md", memory("other", "unrelated", "- 型紙は棚3にある")))
    # A description in any script is also a claim of its file (issue 11: non-Latin text reaches claims),
    # so the description comes back once, as that claim.
    assert {(h.kind, h.text) for h in _hits(onto, "シリコーン")} == {
        (search.HitKind.ASSERTION, "シリコーンの硬度メモ"), (search.HitKind.ASSERTION, "シリコーン型は硬度40を使う")}
    assert _texts(_hits(onto, "서버")) == ["서버 설정은 PowerShell로 한다"]  # two syllables: below a trigram
    assert _texts(_hits(onto, "PowerShell 설정")) == ["서버 설정은 PowerShell로 한다"]
    assert _texts(_hits(onto, "powershell")) == ["서버 설정은 PowerShell로 한다"]  # one token to the word index
    assert "型紙は棚3にある" in _texts(_hits(onto, "型"))


def test_an_emoji_alone_is_a_search_term(onto):
    """Memory marks lines with emoji (🚀 releases, ✅ done, ⚠️ care); no word tokenizer keeps one, so an emoji
    alone found nothing. Rows holding a pictograph go to the substring index too."""
    _ingest(onto, ("ship.md", memory("ship", "release notes", "- 🚀 Releases go out on Tuesday\n"
                                                               "- ✅ The orders migration is done\n"
                                                               "- ⚠️ Never rotate the signing key by hand\n"
                                                               "- 👩‍💻 Pairing on Fridays\n")),
            ("plain.md", memory("plain", "unrelated", "- The orders migration runs at night\n")))
    assert _texts(_hits(onto, "🚀")) == ["🚀 Releases go out on Tuesday"]
    assert _texts(_hits(onto, "⚠️")) == ["⚠️ Never rotate the signing key by hand"]  # the query's U+FE0F or not
    assert _texts(_hits(onto, "👩‍💻")) == ["👩‍💻 Pairing on Fridays"]
    assert _texts(_hits(onto, "✅ migration"))[0] == "✅ The orders migration is done"


def test_an_emoji_with_words_reads_the_words_as_words(onto):
    """ "✅ migrations" asks for the done migration: the words are matched as the word index reads them
    (stems, folded accents, phrase and near tiers) and the emoji must be in the row too. Read as
    substrings, "migrations" missed "✅ The orders migration is done", which then ranked as a partial
    hit beside lines with neither the emoji nor that meaning."""
    _ingest(onto, ("ship.md", memory("ship", "release notes", "- ✅ The orders migration is done\n"
                                                               "- ✅ Login page done\n"
                                                               "- ⚠️ Never rotate the signing key by hand\n"
                                                               "- ✅ Café menu translated\n")),
            ("plain.md", memory("plain", "unrelated", "- The orders migration runs at night\n"
                                                      "- Key rotation is yearly\n")))
    hits = _hits(onto, "✅ migrations")
    assert (hits[0].text, hits[0].match.value) == ("✅ The orders migration is done", "all"), _texts(hits)
    assert all(h.match.value == "partial" for h in hits[1:])
    hits = _hits(onto, "⚠️ rotating keys")
    assert (hits[0].text, hits[0].match.value) == ("⚠️ Never rotate the signing key by hand", "near"), _texts(hits)
    assert [(h.text, h.match.value) for h in _hits(onto, "✅ cafe")] == [("✅ Café menu translated", "all")]
    assert [(h.text, h.match.value) for h in _hits(onto, "✅ login pages")] == [("✅ Login page done", "phrase")]


def test_identifiers_are_one_term_and_come_back_verbatim(onto):
    description = "Set actor.calculate_sum_pi_squared=True and keep ~/cool/x for 2~3-part runs"
    _ingest(onto, ("id.md", memory("id", description)),
            ("noise.md", memory("noise", "calculate the sum of squares", "- Pi is squared here")))
    hits = _hits(onto, "calculate_sum_pi_squared")
    assert [h.text for h in hits] == [description]
    assert _hits(onto, "~/cool/x")[0].text == description


def test_parse_query_keeps_identifiers_and_drops_framing_words():
    terms = search.parse_query("what is `snake_case_name` in ~/app/cfg.toml シリコーン型")
    assert [t.literal for t in terms] == ["snake_case_name", "~/app/cfg.toml", "シリコーン型"]
    assert terms[0].fts == '"snake case name"' and terms[2].cjk
    assert [t.literal for t in search.parse_query("what is")] == ["what", "is"]  # nothing else left


def test_cli_search_takes_the_same_filters(onto, root):
    _disputed_corpus(onto)
    onto.close()
    base = [*KGBRIDGE, "search", "database", "--root", str(root), "--ontology", "shop"]
    out = subprocess.run([*base, "--status", "contested", "--limit", "1", "--json"], capture_output=True,
                         text=True, timeout=60, check=True)
    hits = json.loads(out.stdout)["hits"]
    assert len(hits) == 1 and hits[0]["status"] == "CONTESTED" and hits[0]["match"] == "all"
    bad = subprocess.run([*base, "--since", "someday"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not a date" in bad.stderr and "Traceback" not in bad.stderr


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    ontology = Ontology(tmp_path_factory.mktemp("Knowledge"), "shop", create=True)
    _disputed_corpus(ontology)
    _ingest(ontology, ("mold.md", memory("mold", "シリコーンの硬度", "- 서버 설정은 PowerShell로 한다")))
    yield ontology
    ontology.close()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
@example("\x00𠀀")  # a NUL ended the text OpenCC converted: its empty variant was an FTS5 syntax error
@example("数据库\x00軟體")
def test_any_query_text_is_answered_without_an_error(seeded, text):
    hits = _hits(seeded, text)
    assert len(hits) <= 10 and [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


# Decimal digits of other scripts: the search key holds them as ASCII (search_terms.search_key), on the
# index side and the query side alike; what a hit shows stays as the author wrote it.
_ZEROS = {"ascii": 0x30, "persian": 0x6F0, "arabic-indic": 0x660, "devanagari": 0x966, "full-width": 0xFF10,
          "bengali": 0x9E6}


def _in(script: str, number: str) -> str:
    return "".join(chr(_ZEROS[script] + int(d)) for d in number)


_DIGIT_NOTES = [
    ("ports.md", "ports", f"- پورت پیش‌فرض سرور {_in('persian', '9090')} است"),
    ("release.md", "release", f"- الإصدار {_in('arabic-indic', '2026')} جاهز"),
    ("build.md", "build", f"- बिल्ड संख्या {_in('devanagari', '4417')} है"),
    ("cache.md", "cache", f"- Cache size is {_in('full-width', '512')} MB"),
    ("queue.md", "queue", "- Queue 7731 drains before deploys"),
]


def test_digits_of_any_script_match_ascii_digits_both_ways(onto):
    _ingest(onto, *((name, memory(key, f"{key} notes", body)) for name, key, body in _DIGIT_NOTES))
    written = {key: body.removeprefix("- ") for _, key, body in _DIGIT_NOTES}
    for number, key in (("9090", "ports"), ("2026", "release"), ("4417", "build"), ("512", "cache"),
                        ("7731", "queue")):
        for script in _ZEROS:
            hits = [h for h in _hits(onto, _in(script, number)) if h.kind is search.HitKind.ASSERTION]
            # found, and shown byte for byte as written (only the search key is folded)
            assert [h.text for h in hits] == [written[key]], (number, script)
    # a word beside the digits still has to be there: the digits are a term like any other
    assert _texts(_hits(onto, f"queue {_in('persian', '7731')}"))[0] == written["queue"]
    assert not _hits(onto, _in("devanagari", "9091"))


@settings(max_examples=60, deadline=None)
@given(number=st.integers(0, 10**9), stored=st.sampled_from(sorted(_ZEROS)), asked=st.sampled_from(sorted(_ZEROS)))
def test_a_number_written_in_one_script_is_found_by_the_same_number_in_another(tmp_path_factory, number, stored,
                                                                                 asked):
    onto = Ontology(tmp_path_factory.mktemp("Knowledge"), "shop", create=True)
    try:
        line = f"- Ticket {_in(stored, str(number))} is open"
        _ingest(onto, ("t.md", memory("t", "tickets", line)))
        assert [h.text for h in _hits(onto, _in(asked, str(number))) if h.kind is search.HitKind.ASSERTION] == [
            line.removeprefix("- ")]
    finally:
        onto.close()


def test_cli_search_matches_digits_of_any_script(onto, root):
    _ingest(onto, ("ports.md", memory("ports", "ports notes", _DIGIT_NOTES[0][2])))
    onto.close()
    out = subprocess.run([*KGBRIDGE, "search", "9090", "--root", str(root), "--ontology", "shop", "--json"],
                         capture_output=True, text=True, timeout=60, check=True)
    hits = [h for h in json.loads(out.stdout)["hits"] if h["kind"] == "assertion"]
    assert [h["text"] for h in hits] == [_DIGIT_NOTES[0][2].removeprefix("- ")]
