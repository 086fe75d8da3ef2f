"""Propositions: surface variation merges, negation flips polarity, facts get a slot."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ontology.language import Lang
from ontology.normalize import fact_proposition, proposition
from ontology.tokens import tokens

SAME = [
    ("Use a real database in tests", "use the REAL database in tests."),
    ("Use a real database in tests", "**Use** a `real` database in *tests*"),
    ("Use a real database in tests", "  - using   real databases in tests!"),
    ("We should always run the linter", "run the linter"),
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_surface_variation_gives_the_same_key(a, b):
    pa, pb = proposition(a), proposition(b)
    assert pa.key == pb.key and pa.polarity == pb.polarity == 1


@pytest.mark.parametrize("negated", [
    "Never use a real database in tests",
    "Don't use a real database in tests",
    "We no longer use a real database in tests",
    "Avoid using a real database in tests",
    "Do not use the real database in tests",
])
def test_negation_is_evidence_against_the_same_proposition(negated):
    plain, neg = proposition("Use a real database in tests"), proposition(negated)
    assert neg.key == plain.key
    assert neg.polarity == -plain.polarity


def test_contrast_and_purpose_clauses_do_not_change_the_claim():
    base = proposition("Mock the database in integration tests")
    assert proposition("Mock the database in integration tests to speed up CI").key == base.key
    assert proposition("Mock the database in integration tests, not the queue").key == base.key


def test_key_value_fact_meets_prose_form():
    fact, prose = fact_proposition("database", "postgres"), proposition("The database is Postgres")
    assert fact.key == prose.key and fact.slot == prose.slot == "databas|is|name"
    assert proposition("The database is MySQL").value != fact.value


def test_markup_only_statement_has_no_proposition():
    assert proposition("**the** a an") is None


@pytest.mark.parametrize(("text", "polarity"), [
    ("Never mock the database", -1),
    ("No mocks in the integration tests", -1),  # English "no", language known
    ("No usar Docker en el servidor para producción", -1),  # Spanish "no" is a negator
    ("O deploy roda no servidor de staging", 1),  # Portuguese "no" = "in the"
    ("Wir nutzen kein Docker für die Tests und das ist gut", -1),
    ("On n'utilise pas Docker pour les tests dans le projet", -1),
    ("不要把命令贴给用户", -1),
    ("两个方案的结果不同", 1),  # 不同 "different" holds 不 but negates nothing
    ("本番ではモックはしない", -1),
    ("배포 전에 모킹하지 않는다", -1),
])
def test_negation_flips_only_where_the_language_makes_it_unambiguous(text, polarity):
    assert proposition(text).polarity == polarity


def test_every_script_has_matching_tokens():
    from ontology.tokens import tokens
    assert tokens("ＡＢＣ１２３ 全角テスト") == ["abc123", "全角", "角テ", "テス", "スト"]  # NFKC, kana bigrams
    assert tokens("see `~/.claude/hooks/lint-gate.sh` now") == ["see", "~/.claude/hooks/lint-gate.sh", "now"]
    assert "calculate_sum_pi_squared" in tokens("actor.calculate_sum_pi_squared=True")
    mixed = proposition("NLP 模型每周重新训练").tokens
    assert {"nlp", "模型", "训练"} <= mixed  # compared on all of its text, not its ASCII part alone


def test_display_text_is_the_authors_wording():
    from ontology.normalize import clean_markup
    assert clean_markup("- **Set** `actor.calculate_sum_pi_squared=True` in ~/cool/x for 2~3-part runs") == \
        "Set `actor.calculate_sum_pi_squared=True` in ~/cool/x for 2~3-part runs"
    assert clean_markup("use \\_vlo and [the guide](guide.md) and [[other-note]]") == "use _vlo and the guide and other-note"



def test_a_restated_statement_is_normalized_once():
    """Memory restates its facts across files: the same text's proposition is computed once and
    shared (it is immutable), not normalized again for every file that says it."""
    text = "The ingest queue is drained by the worker before every deploy"
    first = proposition(text)
    assert first is not None and proposition(text) is first
    assert proposition(text + " again") is not first


def test_a_restated_line_is_read_once():
    """A memory file's description is read as its first claim and as its summary, and memory restates its
    lines file after file: a line's (display text, proposition) is read once and shared (both immutable)."""
    from ontology.extract import _statement_from_line

    line = "- **Deploys** run from the release branch: after the nightly checks"
    first = _statement_from_line(line)
    assert first is not None and _statement_from_line(line) is first
    assert first[0] == "Deploys run from the release branch: after the nightly checks"
    assert _statement_from_line(line + " pass") is not first


@given(st.lists(st.sampled_from(["deploy", " ", "never", "don't", "東京", "กา", "不要", "kein", "ไม่", "❌",
                                 "~~x~~", "é", "'", "no", "longer", "-", "."]), max_size=30))
@settings(max_examples=300, deadline=None)
def test_the_words_of_a_segment_are_its_spaced_tokens(parts):
    """`_segment`'s words are its tokens that are no bigram of a script written without spaces; ASCII text
    has none, and is not scanned for them."""
    from ontology.normalize import _segment
    from ontology.tokens import has_unspaced

    tokens_, words, _, _ = _segment("".join(parts))
    assert words == [t for t in tokens_ if not has_unspaced(t)]


@given(st.sampled_from(list(Lang)), st.lists(st.sampled_from(
    ["no", "longer", "not", "never", "don't", "won't", "isn't", "it's", "'", "nicht", "pas", "ne", "n'", "ya", "nunca",
     "deploy", "cache", "x_y", "v1.2", "nor", "avoid", "non", "longer's", "no's", "an't"]), max_size=12))
@settings(max_examples=500, deadline=None)
def test_negation_is_stripped_as_word_by_word(lang, words):
    """`strip_negation`'s shortcut for statements that negate nothing gives what the word-by-word reading
    gives, in every language."""
    from ontology import language

    negators = language._NEGATORS.get(lang, language._EN_ONLY if lang is Lang.UNKNOWN else frozenset())
    if lang not in (Lang.ZH, Lang.JA, Lang.KO):
        assert language.strip_negation(lang, words) == language._stripped(lang, words, negators)


@given(st.lists(st.sampled_from(["a", "bc", "12", "-", ".", "/", "\\", "~", "_", " ", ":", "'", "=", "md", ".py",
                                 "..", "~/", "v1.2.3", "x_y", "(", "é", "東京"]), max_size=60))
@settings(max_examples=400, deadline=None)
def test_the_words_of_ascii_text_are_the_pattern_pieces(parts):
    """`words`' shortcut for ASCII text (one `findall`) gives the pieces `finditer` gives."""
    from ontology import tokens as tok

    text = "".join(parts)
    pieces = tok._PIECE_RE if not tok._PATH_CHARS.isdisjoint(text) else tok._PIECE_NO_PATH_RE
    expected = []
    for m in pieces.finditer(text):
        expected += [(g, False) for g in tok.bigrams(m.group())] if m.lastgroup == "run" else [(m.group(), True)]
    assert tok.words(text) == expected


# A differential oracle for the linear piece scanner: the pattern's own `finditer`, fine on short text.
_PIECE_ALPHABET = ["a", "bc", "12", "-", ".", "/", "\\", "~", "_", " ", ":", "'", "=", "é", "東京", "กา", "ि",
                   "md", ".py", "..", "~/", "v1.2.3", "x_y", "(", "\u0301"]


@given(st.lists(st.sampled_from(_PIECE_ALPHABET), max_size=120))
@settings(max_examples=400, deadline=None)
def test_the_linear_piece_scan_finds_what_the_pattern_finds(parts):
    from ontology import tokens as tok

    text = "".join(parts)
    assert tok._pieces(text) == [(m.lastgroup, *m.span()) for m in tok._PIECE_RE.finditer(text)]


@pytest.mark.timeout(20)
def test_a_long_run_without_a_path_is_tokenized_in_linear_time():
    """"a-a-a-…b." made the path branch rescan the rest of the run from every word in it: 8 KB took 3.4 s,
    a 64 KB line would take minutes (no timing is asserted: the bound only stops a quadratic scan)."""
    text = "a-" * 32_000 + "b. see ~/notes/a-b.md and x.y.md"
    words = tokens(text)
    assert words.count("a") == 32_000 and words[-4:] == ["see", "~/notes/a-b.md", "and", "x.y.md"]


# The same number written in another script's digits (Devanagari, Persian, Arabic-Indic, Thai, Bengali;
# NFKC folds only full-width ones) is the same number: one key, one value (ontology.tokens.fold).
_DIGIT_ZEROS = (0x966, 0x6F0, 0x660, 0xE50, 0x9E6, 0xFF10)


def _digits(zero: int, number: str) -> str:
    return "".join(chr(zero + int(d)) for d in number)


@pytest.mark.parametrize("zero", _DIGIT_ZEROS)
def test_a_number_in_another_scripts_digits_is_the_same_number(zero):
    assert proposition(f"The API listens on port {_digits(zero, '8000')} in staging").key == \
        proposition("The API listens on port 8000 in staging").key
    assert fact_proposition("Node version", _digits(zero, "20")) == fact_proposition("Node version", "20")
    assert proposition(f"पोर्ट {_digits(zero, '8000')} पर सुनता है").key == proposition("पोर्ट 8000 पर सुनता है").key
    # another number stays another number
    assert proposition(f"The API listens on port {_digits(zero, '8001')} in staging").key != \
        proposition("The API listens on port 8000 in staging").key


def test_two_files_writing_one_number_in_two_scripts_agree_and_keep_their_digits(onto):
    from conftest import memory
    from ontology.artifact import Channel

    onto.ingest("a.md", memory("a", "service a", "- The API listens on port ८००० in staging\n- Port: ۸۰۸۰"),
                Channel.CLI)
    onto.ingest("b.md", memory("b", "service b", "- The API listens on port 8000 in staging\n- Port: 9090"),
                Channel.CLI)
    with onto.reader() as conn:
        rows = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT text, n_for, status FROM assertions")}
        said = {r[0] for r in conn.execute("SELECT text FROM stances")}
    assert rows["The API listens on port ८००० in staging"][0] == 2  # one claim, both files for it
    assert "The API listens on port 8000 in staging" in said  # each file's own words are kept
    assert rows["Port: ۸۰۸۰"][0] == 1 and rows["Port: 9090"][0] == 1  # 8080 and 9090 stay two values
