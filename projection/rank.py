"""Rank concepts by grounding x connectivity x recency (docs/adr/0005-projection.md). Pure.

Invariant: deterministic (ties broken by key) and scale-free: every factor is 1 + something >= 0,
so a column where most values are equal (no relations yet) multiplies every score alike and leaves
the order to the other columns instead of scattering it. "Now" is the graph's newest timestamp, not
the wall clock, so the same graph always ranks the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

# A concept last touched this many days before the newest one weighs half as much on recency.
RECENCY_HALF_LIFE_DAYS = 14.0


@dataclass(frozen=True)
class ConceptStats:
    key: str
    grounding: float  # sum of Bel(true) over the concept's assertions: evidence actually held
    degree: int  # distinct concepts it links to or is linked from
    updated_at: str  # ISO timestamp


def _days(earlier: str, later: str) -> float:
    try:
        a = datetime.fromisoformat(earlier.replace("Z", "+00:00"))
        b = datetime.fromisoformat(later.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (b - a).total_seconds() / 86400)


def score(stats: ConceptStats, now: str) -> float:
    grounding = 1.0 + stats.grounding
    connectivity = 1.0 + math.log1p(stats.degree)
    # New concepts are not buried: recency adds up to a full extra share while fresh.
    recency = 1.0 + 0.5 ** (_days(stats.updated_at, now) / RECENCY_HALF_LIFE_DAYS)
    return grounding * connectivity * recency


def rank(concepts: list[ConceptStats]) -> list[ConceptStats]:
    if not concepts:
        return []
    now = max(c.updated_at for c in concepts)
    return sorted(concepts, key=lambda c: (-round(score(c, now), 9), c.key))
