"""The evidence model: canonical label cases for any mix of source kinds, DS laws, and an oracle."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pybelief import MassFunction

from ontology.evidence import RELIABILITY, Label, Mass, combine_all, conjunctive, dempster, weigh

KINDS = sorted(set(RELIABILITY.values()))
CANONICAL = [
    ((1, 0), Label.INSUFFICIENT_DATA),
    ((2, 0), Label.AFFIRMATIVE), ((3, 0), Label.AFFIRMATIVE), ((5, 0), Label.AFFIRMATIVE),
    ((1, 1), Label.CONTESTED), ((2, 2), Label.CONTESTED), ((2, 3), Label.CONTESTED),
    ((0, 2), Label.CONTRADICTORY), ((0, 3), Label.CONTRADICTORY),
    ((1, 3), Label.CONTRADICTORY), ((1, 4), Label.CONTRADICTORY),
]


@pytest.mark.parametrize(("counts", "expected"), CANONICAL, ids=lambda v: str(v))
def test_canonical_label_cases_hold_for_every_mix_of_source_kinds(counts, expected):
    n_for, n_against = counts
    for pros in itertools.combinations_with_replacement(KINDS, n_for):
        for cons in itertools.combinations_with_replacement(KINDS, n_against):
            verdict = weigh([(1, r) for r in pros] + [(-1, r) for r in cons])
            assert verdict.label is expected, (pros, cons, verdict)


def test_verdict_exposes_belief_plausibility_and_conflict():
    verdict = weigh([(1, 0.7), (-1, 0.65)])
    assert verdict.conflict == pytest.approx(0.7 * 0.65)
    assert verdict.belief == pytest.approx(0.7 * 0.35 / (1 - 0.7 * 0.65))
    assert verdict.plausibility == pytest.approx(1 - 0.65 * 0.3 / (1 - 0.7 * 0.65))
    assert 0 <= verdict.belief <= verdict.plausibility <= 1


def test_no_evidence_is_insufficient_and_vacuous():
    verdict = weigh([])
    assert verdict.label is Label.INSUFFICIENT_DATA
    assert (verdict.belief, verdict.plausibility, verdict.conflict) == (0.0, 1.0, 0.0)


reliability = st.floats(min_value=0.0, max_value=0.95)
masses = st.builds(lambda t, f: Mass(t, f, 1 - t - f),
                   st.floats(0, 0.5), st.floats(0, 0.45))
evidence = st.lists(st.tuples(st.sampled_from([1, -1]), reliability), max_size=8)


def _close(a: Mass, b: Mass) -> bool:
    return all(math.isclose(x, y, abs_tol=1e-9) for x, y in ((a.true, b.true), (a.false, b.false), (a.theta, b.theta)))


@given(masses, masses)
def test_dempster_is_commutative(a, b):
    assert _close(dempster(a, b), dempster(b, a))


@given(masses, masses, masses)
def test_dempster_is_associative(a, b, c):
    assert _close(dempster(dempster(a, b), c), dempster(a, dempster(b, c)))


@given(evidence)
def test_masses_stay_in_unit_interval_and_sum_to_one(items):
    combined, conflict = combine_all(Mass.support(s, r) for s, r in items)
    for value in (combined.true, combined.false, combined.theta, conflict):
        assert -1e-12 <= value <= 1 + 1e-12
    assert math.isclose(combined.true + combined.false + combined.theta, 1.0, abs_tol=1e-9)


@given(evidence, reliability)
def test_adding_a_supporting_source_never_lowers_belief(items, extra):
    before = weigh(items).belief
    after = weigh(items + [(1, extra)]).belief
    assert after >= before - 1e-12


@settings(max_examples=300)
@given(evidence)
def test_matches_pybelief_oracle(items):
    """An independent DS implementation agrees on belief, plausibility and conflict."""
    frame = ("T", "F")
    joint = MassFunction.vacuous(frame)
    conflict_free = 1.0
    for stance, r in items:
        focal = {1: r, 3: 1 - r} if stance > 0 else {2: r, 3: 1 - r}
        source = MassFunction(frame, {k: v for k, v in focal.items() if v > 0} or {3: 1.0})
        conflict_free *= 1 - joint.conflict(source)
        joint = joint.combine_dempster(source)
    verdict = weigh(items)
    assert verdict.belief == pytest.approx(joint.belief({"T"}), abs=1e-9)
    assert verdict.plausibility == pytest.approx(joint.plausibility({"T"}), abs=1e-9)
    assert verdict.conflict == pytest.approx(1 - conflict_free, abs=1e-9)


def test_conjunctive_accumulates_conflict_on_the_empty_set():
    joint = conjunctive(Mass.support(1, 0.6), Mass.support(-1, 0.5))
    assert joint.empty == pytest.approx(0.3)
    assert joint.true + joint.false + joint.theta + joint.empty == pytest.approx(1.0)


def test_many_sources_on_both_sides_stay_finite_and_contested():
    verdict = weigh([(1, 0.7)] * 200 + [(-1, 0.7)] * 200)
    assert verdict.label is Label.CONTESTED
    assert verdict.belief == pytest.approx(0.5) and verdict.plausibility == pytest.approx(0.5)
    assert weigh([(1, 0.65)] * 100 + [(-1, 0.65)] * 400).label is Label.CONTRADICTORY


def test_both_sides_saturated_still_weigh_by_their_difference():
    """Past ~745 of weight on each side e^-W is 0: the closed form must not become 0/0."""
    w = -math.log1p(-0.7)
    verdict = weigh([(1, 0.7)] * 701 + [(-1, 0.7)] * 700)
    assert verdict.belief == pytest.approx(1 / (1 + math.exp(-w)), rel=1e-9)
    assert verdict.plausibility == pytest.approx(verdict.belief, rel=1e-9)
    assert verdict.label is Label.CONTESTED and verdict.conflict == 1.0


def test_a_certain_source_is_refused():
    with pytest.raises(ValueError, match="reliability"):
        weigh([(1, 1.0)])
