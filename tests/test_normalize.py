"""Propositions: surface variation merges, negation flips polarity, facts get a slot."""

from __future__ import annotations

import pytest

from ontology.normalize import fact_proposition, proposition

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
