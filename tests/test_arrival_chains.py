"""The same files give the same grouping of wordings whatever order they arrive in (ADR 0004, "Session
14 (recall14)"): a wording that bridges two others joins them when one member of the group is a
near-duplicate of every other (its center), and a chain without a center is never one group."""

from __future__ import annotations

import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import memory
from ontology.artifact import Channel
from ontology.ingest import Ontology
from test_evidence_aggregates import _dump, assert_stored_equals_recount

# Each wording a near-duplicate (J >= 0.7) of the next and not of the one after: A-B 0.88, B-C 0.78,
# C-D 0.78; A-C 0.67, B-D 0.6, A-D 0.67. No word is swapped in place (that keeps two wordings apart).
CHAIN = [
    "The nightly build uploads signed artifacts to the shared bucket",
    "The nightly build uploads signed compressed artifacts to the shared bucket",
    "Weekly, the nightly build uploads compressed artifacts to the shared bucket",
    "Weekly, the nightly build uploads artifacts to the shared bucket in Frankfurt",
]
OTHER = ["- Deploys go out on Tuesdays", "- The cache is Redis", "- Reviews need two approvals"]


def _files(n: int) -> list[tuple[str, bytes]]:
    """One memory file per wording of the chain's first `n`, each with a line of its own besides."""
    return [(f"note_{i}.md", memory(f"note-{i}", f"note {i}", f"- {CHAIN[i]}\n{OTHER[i % len(OTHER)]}"))
            for i in range(n)]


def _groups(root: Path, files: list[tuple[str, bytes]], *, rebuild: bool = False) -> frozenset[frozenset[str]]:
    """Ingest `files` one by one in this order; each assertion's wordings as its sources state them. The
    stored evidence aggregates must equal a recount from the stances after every file (a merge moves
    them); with `rebuild`, the graph rebuilt from the archive must be the same, row for row."""
    onto = Ontology(root, "shop", create=True)
    try:
        for name, data in files:
            onto.ingest(name, data, Channel.CLI)
            assert_stored_equals_recount(onto.paths.database)
        with onto.reader() as conn:
            rows = conn.execute("SELECT assertion_id, text FROM stances").fetchall()
        if rebuild:
            before = _dump(onto.paths.database)
            onto.rebuild()
            assert _dump(onto.paths.database) == before
    finally:
        onto.close()
    by: dict[int, set[str]] = {}
    for assertion_id, text in rows:
        by.setdefault(assertion_id, set()).add(text)
    return frozenset(frozenset(texts) for texts in by.values())


def test_a_chain_of_three_is_one_group_in_every_order(tmp_path: Path):
    files = _files(3)
    seen = {_groups(tmp_path / "-".join(n for n, _ in order), list(order)) for order in itertools.permutations(files)}
    assert len(seen) == 1, seen
    groups = seen.pop()
    assert frozenset(CHAIN[:3]) in groups  # B is within the threshold of A and of C: one claim, three sources


def test_a_chain_of_four_is_never_one_group(tmp_path: Path):
    """A-B-C-D has no wording near all the others: single-link would make it one claim; never."""
    for k, order in enumerate(itertools.permutations(_files(4))):
        groups = _groups(tmp_path / str(k), list(order))
        assert not any(set(CHAIN) <= g for g in groups), order


@settings(max_examples=25, deadline=None)
@given(st.permutations(range(3)), st.permutations(range(3)))
def test_two_chains_and_other_lines_group_the_same_in_any_order(tmp_path_factory, first, second):
    """Two orders of the same files (a chain of three, each file with a line of its own, and a second
    folder's copy of the chain under other names) give the same groups."""
    files = _files(3) + [(f"copy_{name}", data) for name, data in _files(3)]
    orders = [[files[i] for i in first] + [files[3 + i] for i in second],
              [files[3 + i] for i in reversed(second)] + [files[i] for i in reversed(first)]]
    a, b = (_groups(tmp_path_factory.mktemp("Knowledge"), order) for order in orders)
    assert a == b


def test_one_file_stating_both_ends_and_a_bridge_from_another_merge_into_one_claim(tmp_path: Path):
    """A file holding both ends of the chain (two claims of one source), then a file with the bridge: the
    two claims merge, the first file keeps one stance on it (a source has one word per claim), and the
    aggregates follow (recounted); the other order gives the same claim and counts."""
    both = ("ends.md", memory("ends", "both ends", f"- {CHAIN[0]}\n- {CHAIN[2]}"))
    bridge = ("bridge.md", memory("bridge", "the bridge", f"- {CHAIN[1]}"))
    for k, order in enumerate(([both, bridge], [bridge, both])):
        groups = _groups(tmp_path / str(k), order, rebuild=True)
        chain = [g for g in groups if any("nightly" in t for t in g)]
        assert len(chain) == 1 and CHAIN[1] in chain[0] and len(chain[0]) == 2, groups


def test_a_merged_claim_is_found_by_each_wording_and_counts_every_source(tmp_path: Path):
    onto = Ontology(tmp_path, "shop", create=True)
    try:
        for name, data in (_files(3)[0], _files(3)[2], _files(3)[1]):  # both ends first, then the bridge
            onto.ingest(name, data, Channel.CLI)
        with onto.reader() as conn:
            rows = conn.execute("SELECT id, n_for, status FROM assertions WHERE text LIKE '%nightly%'").fetchall()
            assert len(rows) == 1 and rows[0][1] == 3 and rows[0][2] == "AFFIRMATIVE", rows
            from ontology import search
            for words in ("signed compressed", "weekly compressed"):
                hits = [h for h in search.search(conn, words) if h.kind is search.HitKind.ASSERTION]
                assert [h.id for h in hits][:1] == [rows[0][0]], words
    finally:
        onto.close()
