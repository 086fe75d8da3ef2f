"""The near-duplicate index against brute force: exact for short statements (every stored statement
of at most EXACT_MAX_TOKENS tokens, probes up to the longest that can still match one), and merging
real rewordings through ingest."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ontology.neardup import EXACT_MAX_TOKENS, MIN_NEAR_DUPLICATE_TOKENS, NEAR_DUPLICATE_JACCARD, NearDuplicateIndex
from ontology.normalize import Proposition
from ontology.schema import connect

_vocab = [f"w{i}" for i in range(12)]
_short = st.frozensets(st.sampled_from(_vocab), min_size=MIN_NEAR_DUPLICATE_TOKENS, max_size=EXACT_MAX_TOKENS)
_probe = st.frozensets(st.sampled_from(_vocab), min_size=MIN_NEAR_DUPLICATE_TOKENS, max_size=8)
_ids = itertools.count(1)


def _prop(tokens: frozenset[str]) -> Proposition:
    return Proposition(" ".join(sorted(tokens)) + f"#{next(_ids)}", tokens, 1, None, None)


def _brute_force(stored: list[tuple[int, frozenset[str]]], probe: frozenset[str]) -> int | None:
    best = None
    for aid, tokens in stored:
        score = len(probe & tokens) / len(probe | tokens)
        if score >= NEAR_DUPLICATE_JACCARD and (best is None or score > best[0]):
            best = (score, aid)
    return best[1] if best else None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_short, max_size=19), st.lists(_probe, min_size=1, max_size=10))
def test_short_statements_are_found_exactly_as_brute_force_finds_them(tmp_path, stored_sets, probes):
    conn = connect(tmp_path / f"g{next(_ids)}.db")
    try:
        index = NearDuplicateIndex(conn)
        stored: list[tuple[int, frozenset[str]]] = []
        conn.execute("INSERT OR IGNORE INTO concepts(id, key, name, type, created_at, updated_at) "
                     "VALUES(1, 'c', 'c', 'memory', '', '')")
        for tokens in stored_sets:
            prop = _prop(tokens)
            _, keys = index.find(prop)
            aid = conn.execute("INSERT INTO assertions(concept_id, key, text, polarity, tokens, n_tokens, created_at,"
                               " updated_at) VALUES(1,?,?,1,?,?,'','')",
                               (prop.key, prop.key, " ".join(sorted(tokens)), len(tokens))).lastrowid
            index.add(aid, keys)
            stored.append((aid, tokens))
        for probe in probes:
            assert index.find(_prop(probe))[0] == _brute_force(stored, probe), probe
    finally:
        conn.close()
