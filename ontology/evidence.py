"""Dempster–Shafer evidence over the frame {true, false}, and the label it implies (docs/reference.md §5).

Each independent source is a simple support function: mass r (its reliability) on {true} when it
affirms the assertion, on {false} when it denies it, the rest on the whole frame. Sources combine by
Dempster's rule. Invariant: masses stay in [0, 1] and sum to 1; the label is a function of the
combined evidence only (see docs/adr/0002-evidence-model.md for why the thresholds hold every
canonical case whatever mix of source kinds).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Iterable


class Label(enum.Enum):
    AFFIRMATIVE = "AFFIRMATIVE"
    CONTESTED = "CONTESTED"
    CONTRADICTORY = "CONTRADICTORY"
    INSUFFICIENT_DATA = "INSUFFICIENT_DATA"


class SourceKind(enum.Enum):
    USER_MEMORY = "user"
    FEEDBACK_MEMORY = "feedback"
    PROJECT_MEMORY = "project"
    REFERENCE_MEMORY = "reference"
    MEMORY = "memory"  # a memory file without a recognised type
    LEDGER = "ledger"
    DOCUMENT = "document"


# Reliability by source kind: what a person told the agent outranks what the agent wrote down about
# the project, which outranks a session log, which outranks an arbitrary document. The band is kept
# narrow (0.63-0.70) on purpose: with weights w = -ln(1 - r) its max/min ratio is 1.21 (< sqrt 1.5),
# small enough that the count-based canonical cases of docs/reference.md §5, and 2:1 / 1:2 being CONTESTED,
# hold for ANY mix of kinds (ADR 0002).
RELIABILITY: dict[SourceKind, float] = {
    SourceKind.USER_MEMORY: 0.70,
    SourceKind.FEEDBACK_MEMORY: 0.70,
    SourceKind.PROJECT_MEMORY: 0.68,
    SourceKind.REFERENCE_MEMORY: 0.68,
    SourceKind.MEMORY: 0.67,
    SourceKind.LEDGER: 0.65,
    SourceKind.DOCUMENT: 0.63,
}
# One source tops out at 0.70; two of the weakest reach 1 - 0.37^2 = 0.86. 0.80 sits between, so one
# source is never enough and two always are.
AFFIRM_THRESHOLD = 0.80
# "Clear majority": one side's weight of evidence at least 2.45x the other's, i.e. three sources to
# one. With the band above 3:1 is at least 2.48x and 2:1 at most 2.42x (2:3 at most 1.82x), so 1:3 is
# always a majority and 2:1, 1:2, 2:2, 2:3 never are, whatever the kinds.
MAJORITY_RATIO = 2.45


@dataclass(frozen=True)
class Mass:
    """A mass function on {true, false}: m({T}), m({F}), m(Θ); `empty` is unnormalized conflict."""

    true: float
    false: float
    theta: float
    empty: float = 0.0

    @staticmethod
    def vacuous() -> "Mass":
        return Mass(0.0, 0.0, 1.0)

    @staticmethod
    def support(stance: int, reliability: float) -> "Mass":
        if not 0.0 <= reliability < 1.0:
            raise ValueError(f"reliability must be in [0, 1), got {reliability}")
        if stance > 0:
            return Mass(reliability, 0.0, 1.0 - reliability)
        if stance < 0:
            return Mass(0.0, reliability, 1.0 - reliability)
        raise ValueError("stance must be +1 or -1")


def conjunctive(a: Mass, b: Mass) -> Mass:
    """Unnormalized (TBM) conjunctive combination; conflict accumulates in `empty`."""
    true = a.true * b.true + a.true * b.theta + a.theta * b.true
    false = a.false * b.false + a.false * b.theta + a.theta * b.false
    theta = a.theta * b.theta
    empty = a.empty + b.empty - a.empty * b.empty + a.true * b.false + a.false * b.true
    return Mass(true, false, theta, empty)


def dempster(a: Mass, b: Mass) -> Mass:
    """Dempster's rule: conjunctive combination renormalized away from the empty set."""
    joint = conjunctive(Mass(a.true, a.false, a.theta), Mass(b.true, b.false, b.theta))
    scale = 1.0 - joint.empty
    if scale <= 0.0:
        raise ValueError("total conflict (K = 1): Dempster's rule is undefined")
    return Mass(joint.true / scale, joint.false / scale, joint.theta / scale)


@dataclass(frozen=True)
class Verdict:
    label: Label
    belief: float  # Bel(true)
    plausibility: float  # Pl(true) = 1 - Bel(false)
    conflict: float  # K: mass the sources put on contradictory conclusions before normalizing
    support_for: float  # combined mass of the affirming sources alone
    support_against: float  # combined mass of the denying sources alone
    n_for: int
    n_against: int


# Weights of evidence are summed as integers in units of 2^-40 (one source's weight rounded to the
# nearest unit, an error below 5e-13): sums then stay exact under any order of additions and removals,
# so an aggregate kept by delta equals a recount from the sources bit for bit, and zero is exactly
# zero. 40 bits leave 2^23 units of head-room in SQLite's 64-bit integers for the largest single
# weight (r = 1 - 2^-53 gives w = 36.7 < 2^6), i.e. over 100,000 sources of any reliability.
WEIGHT_UNITS_PER_1 = 1 << 40


def weight_units(reliability: float) -> int:
    """One simple support's weight of evidence, -ln(1 - r), in integer units (r in [0, 1))."""
    if not 0.0 <= reliability < 1.0:
        raise ValueError(f"reliability must be in [0, 1), got {reliability}")
    return round(-math.log1p(-reliability) * WEIGHT_UNITS_PER_1)


def label_for(weight_for: float, weight_against: float) -> Label:
    """The label from the two sides' weights of evidence (support s = 1 - exp(-w))."""
    affirm_weight = -math.log1p(-AFFIRM_THRESHOLD)
    if weight_against == 0.0:
        return Label.AFFIRMATIVE if weight_for >= affirm_weight else Label.INSUFFICIENT_DATA
    if weight_for == 0.0:
        return Label.CONTRADICTORY if weight_against >= affirm_weight else Label.INSUFFICIENT_DATA
    if weight_against >= MAJORITY_RATIO * weight_for:  # multiplied, not divided: no underflow
        return Label.CONTRADICTORY
    if weight_for >= MAJORITY_RATIO * weight_against:
        return Label.AFFIRMATIVE
    return Label.CONTESTED


def verdict(units_for: int, units_against: int, n_for: int, n_against: int) -> Verdict:
    """The verdict from the combined weights of each side (integer units) and the source counts.

    Closed form of Dempster's rule for simple supports on {T, F}: with p and q the combined support
    for and against, K = pq, Bel(T) = p(1-q)/(1-K), Pl(T) = 1 - q(1-p)/(1-K). Written with e = 1 - p
    = exp(-w) and scaled by exp(min(w_for, w_against)), so that when both sides are saturated (p and q
    round to 1, w beyond ~37) belief and plausibility stay the exact logistic of the weight difference
    instead of 0/0.
    """
    w_for, w_against = units_for / WEIGHT_UNITS_PER_1, units_against / WEIGHT_UNITS_PER_1
    p, q = -math.expm1(-w_for), -math.expm1(-w_against)
    shift = min(w_for, w_against)
    s_for, s_against = math.exp(shift - w_for), math.exp(shift - w_against)  # one of them is 1.0
    norm = s_for + s_against - s_for * s_against * math.exp(-shift)  # (1 - K) * exp(shift) >= 1
    return Verdict(
        label=label_for(w_for, w_against),
        belief=p * s_against / norm,
        plausibility=1.0 - q * s_for / norm,
        conflict=p * q,
        support_for=p,
        support_against=q,
        n_for=n_for,
        n_against=n_against,
    )


def weigh(evidence: Iterable[tuple[int, float]]) -> Verdict:
    """Combine (stance, reliability) pairs, one per independent source, into a verdict by recounting
    them: the reference that the stored, delta-kept aggregates must equal."""
    units = {1: 0, -1: 0}
    counts = {1: 0, -1: 0}
    for stance, r in evidence:
        if stance:
            side = 1 if stance > 0 else -1
            units[side] += weight_units(r)
            counts[side] += 1
    return verdict(units[1], units[-1], counts[1], counts[-1])


def combine_all(masses: Iterable[Mass]) -> tuple[Mass, float]:
    """Dempster-combine any number of masses; returns (combined, total conflict K)."""
    joint = Mass.vacuous()
    for mass in masses:
        joint = conjunctive(joint, mass)
    scale = 1.0 - joint.empty
    if scale <= 0.0:
        raise ValueError("total conflict (K = 1)")
    return Mass(joint.true / scale, joint.false / scale, joint.theta / scale), joint.empty
