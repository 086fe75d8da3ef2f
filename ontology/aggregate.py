"""What one source adds to the stored evidence aggregates, as a set of terms, so that any change of
its stances is applied as the difference of two term sets (new terms added, lost terms removed).

Invariant: summing every source's terms (each worth the source's weight and a count of one) gives,
per assertion, the weights `queries._evidence` recounts from the sources: its direct stances, and an
implied denial from each source that claims another value of the assertion's slot and has no direct
stance on it. Per slot S that implied part is CLAIM(S) - ONLY(S, v) - CROSS(a) (docs/adr/0002).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, Mapping

from ontology.evidence import SourceKind, Verdict, verdict


class Term(enum.Enum):
    FOR = "for"  # a direct +1 on the proposition of an assertion
    AGAINST = "against"  # a direct -1 on it
    CROSS = "cross"  # a direct stance on an assertion whose slot the source also fills with another value
    CLAIM = "claim"  # the source positively claims at least one value of a slot
    ONLY = "only"  # ... and exactly one value, this one


@dataclass(frozen=True)
class Held:
    """One current stance of a source: the assertion, +1/-1 on its proposition, its slot and value."""

    assertion: int
    stance: int
    slot: str | None
    value: str | None


Key = tuple[Term, object]  # (FOR/AGAINST/CROSS, assertion id) | (CLAIM, slot) | (ONLY, (slot, value))


GENERIC_SLOT = "~"  # ontology.scope: a slot of a subject that names no specific thing


def is_memory_kind(kind: str) -> bool:
    """A source kind (`sources.kind`) of a memory file, any type: not a ledger, not a document."""
    return kind not in (SourceKind.LEDGER.value, SourceKind.DOCUMENT.value)


def implies(slot: str | None, memory: bool) -> bool:
    """Does a source's value in this slot deny the slot's other values? Not a memory file's value of a
    generic slot ("Owner: dana" describes that file's subject): ADR 0009, "Which slot … fills"."""
    return slot is not None and not (memory and slot.startswith(GENERIC_SLOT))


def terms(held: Iterable[Held], memory: bool = False) -> set[Key]:
    """The terms one source contributes through its current stances (`memory`: it is a memory file)."""
    stances = list(held)
    claimed: dict[str, set[str | None]] = {}
    for h in stances:
        if implies(h.slot, memory) and h.stance > 0:
            claimed.setdefault(h.slot, set()).add(h.value)
    out: set[Key] = set()
    for h in stances:
        out.add((Term.FOR if h.stance > 0 else Term.AGAINST, h.assertion))
        if h.slot is not None and claimed.get(h.slot, set()) - {h.value}:
            out.add((Term.CROSS, h.assertion))
    for slot, values in claimed.items():
        out.add((Term.CLAIM, slot))
        if len(values) == 1:
            out.add((Term.ONLY, (slot, next(iter(values)))))
    return out


def delta(before: Mapping[int, Held], after: Mapping[int, Held], memory: bool = False) -> dict[Key, int]:
    """+1 for each term the source gains, -1 for each it loses, moving from `before` to `after`.

    Only the slots whose stances differ are looked at, so the work is bounded by the source's own
    stances in those slots, never by how many other sources share them.
    """
    changed = {a for a in before.keys() | after.keys() if before.get(a) != after.get(a)}
    slots = {h.slot for h in (*before.values(), *after.values()) if h.assertion in changed and h.slot}
    def relevant(side: Mapping[int, Held]) -> list[Held]:
        return [h for h in side.values() if h.assertion in changed or (h.slot is not None and h.slot in slots)]
    old, new = terms(relevant(before), memory), terms(relevant(after), memory)
    return {**{key: -1 for key in old - new}, **{key: 1 for key in new - old}}


def sides(polarity: int, w_pos: int, n_pos: int, w_neg: int, n_neg: int, w_cross: int, n_cross: int,
          w_claim: int, n_claim: int, w_only: int, n_only: int) -> tuple[int, int, int, int]:
    """(weight for, sources for, weight against, sources against) of an assertion as worded, from its
    stored aggregates and its slot's (weights in integer units); a negatively worded assertion swaps the
    proposition's two sides."""
    pos = (w_pos, n_pos)
    neg = (w_neg + w_claim - w_only - w_cross, n_neg + n_claim - n_only - n_cross)
    (w_for, n_for), (w_against, n_against) = (pos, neg) if polarity > 0 else (neg, pos)
    return w_for, n_for, w_against, n_against


def weigh_stored(polarity: int, *stored: int) -> Verdict:
    """The verdict of an assertion from its stored aggregates (see `sides`)."""
    w_for, n_for, w_against, n_against = sides(polarity, *stored)
    return verdict(w_for, w_against, n_for, n_against)
