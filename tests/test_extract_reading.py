"""The per-unit reading is shared between artifacts (ADR 0007, "Session 12: the request side"): the same
line read in a memory file, in another memory file, in a ledger entry or in a document gives exactly what
the rules give it there, whatever was read before. The oracle is the rules applied unit by unit, as
`_statements` applied them before the reading was cached."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ontology import extract as ex
from ontology.artifact import Kind
from ontology.parse import parse_artifact
from ontology.timeline import in_file


def _oracle(units: list[ex._Unit], fixed_concept: str | None, default: str) -> tuple[list[ex.Statement], bool]:
    out: list[ex.Statement] = []
    for unit in units:
        parsed = ex._statement_from_line.__wrapped__(unit.text)
        if parsed is None:
            continue
        if len(out) >= ex.MAX_STATEMENTS:
            return ex._paired(out), True
        text, prop = parsed
        prop = ex.scoped_slot(prop, text, unit.section, fixed_concept is not None)
        identifiers = ex.identifier_stances(text, prop.polarity)
        revised = ex.revisions(text, identifiers)
        found = (unit.row,) if unit.row is not None else ex.timed_facts(text, unit.date)
        found = in_file(found, fixed_concept) if fixed_concept is not None else found
        found += ex.identifier_facts(identifiers, text, unit.heading_date)
        links = ex._current_links(unit.text, prop.polarity) if "[" in unit.text else ()
        when = ex.statement_date(text) or unit.date
        if fixed_concept is not None:
            out.append(ex.Statement(text, prop, fixed_concept, identifiers=identifiers, revisions=revised,
                                    facts=found, links=links, date=when))
        else:
            concept = ex.concept_key(unit.section) if unit.section else default
            mentions = ex._mentions(unit.text)
            if unit.section and unit.section != unit.section.lower():  # "## Deploy" names `Deploy.md` (case14)
                mentions += (ex.file_key(unit.section),)
            out.append(ex.Statement(text, prop, concept, mentions, identifiers, revised, found, links, when))
    return ex._paired(ex._undone_upgrades(ex._undone_removals(out))), False


# Lines whose reading depends on where they stand: a numbered item's status is its memory file's own
# (`in_file`), a heading that names a scope scopes a memory file's slots only, a document's statement
# belongs to its section's concept and carries mentions, a removal and its restoration undo each other.
LINES = [
    "- 1.2 pending: wire the retry queue",
    "- Milestone 1.2 done on 2026-03-04",
    "- Database: Postgres",
    "- The cache is Redis",
    "- Auto-deploy is not enabled",
    "- removed `legacy_sync` from the worker",
    "- 2026-05-04: restored `legacy_sync`",
    "- See [[deploy-notes]] for the runbook",
    "- Upgraded to Kumo CLI 2.4",
    "- Reverted the Kumo CLI upgrade",
    "- Original plan: ship the importer first",
    "- Current direction: ship the exporter first",
    "The worker drains queue 7 before deploys. Never push on Fridays.",
]
HEADINGS = ["", "## Staging", "## Production", "## Why", "## Estado al 2026-04-04"]


def _body(picks: list[tuple[int, int]]) -> str:
    out = []
    for heading, line in picks:
        if HEADINGS[heading]:
            out.append(HEADINGS[heading])
        out.append(LINES[line])
    return "\n".join(out) + "\n"


def _artifacts(body: str) -> list[bytes | tuple[str, bytes]]:
    return [
        ("plan_alpha.md", f"---\nname: alpha\ndescription: the alpha plan\ntype: project\n---\n{body}".encode()),
        ("plan_beta.md", f"---\nname: beta\ndescription: the beta plan\ntype: project\n---\n{body}".encode()),
        ("2026-04-05T1445Z_e000001.md", f"---\nsession: s1\nepoch: 1\n---\n{body}".encode()),
        ("design-notes.md", body.encode()),
    ]


@given(st.lists(st.tuples(st.integers(0, len(HEADINGS) - 1), st.integers(0, len(LINES) - 1)), min_size=1,
                max_size=12))
@settings(max_examples=150, deadline=None)
def test_a_unit_read_anywhere_gives_what_the_rules_give_there(picks):
    """The same body as two memory files, a ledger entry and a document, one after the other (so every
    unit after the first file is a cache hit): each gives the statements the rules give it in its place."""
    kinds = set()
    for name, data in _artifacts(_body(picks)):
        artifact = parse_artifact("s", name, data)
        kinds.add(artifact.kind)
        fixed = ex.memory_file_key(artifact.filename) if artifact.kind is Kind.MEMORY else None
        default = fixed or ("session-notes" if artifact.kind is Kind.LEDGER
                            else ex.concept_key(artifact.filename.removesuffix(".md")))
        units = ex._body_units(artifact.body)
        assert ex._statements(units, fixed, default) == _oracle(units, fixed, default)
    assert kinds == {Kind.MEMORY, Kind.LEDGER, Kind.DOCUMENT}


def test_a_numbered_item_is_each_memory_files_own_after_a_shared_reading():
    """"1.2 pending" in two plans is two items (`in_file`), although both read the line once."""
    facts = []
    for name, data in _artifacts("- 1.2 pending: wire the retry queue\n")[:2]:
        statements = ex.extract(parse_artifact("s", name, data)).statements
        facts.append({f.subject for s in statements for f in s.facts})
    assert facts == [{"plan-alpha:1.2"}, {"plan-beta:1.2"}]


def test_a_scope_heading_scopes_a_memory_file_only_after_a_shared_reading():
    """The same heading and line in a memory file and in a document: the memory file's proposition is the
    scope's, the document's is not (`scoped_slot` reads the place, and the place is part of the key)."""
    body = "## Staging\n- Auto-deploy is enabled\n"
    memory, _, _, document = (ex.extract(parse_artifact("s", n, d)) for n, d in _artifacts(body))
    assert memory.statements[0].proposition.key.startswith("stage / ")
    assert not document.statements[0].proposition.key.startswith("stage / ")
    assert document.statements[0].concept == "staging" and document.statements[0].mentions


@given(st.lists(st.sampled_from(["-", "*", "+", "\u2022", "1", "12", ".", ")", " ", "  ", "\t", "\n", "[", "]", "x", "X",
                                 "[ ]", "[x]", "(", "http", "https", "://", "<", ">", "!", "a.md", "word"]), max_size=20))
@settings(max_examples=600, deadline=None)
def test_the_list_marker_and_the_links_are_read_as_the_patterns_read_them(parts):
    """`strip_bullet` (one `match`) removes what `BULLET_RE.sub(..., count=1)` removes, and `links_in` (no scan
    of text without "[" or "http") finds what `_LINK_RE.findall` finds."""
    from ontology import claims

    text = "".join(parts)
    assert claims.strip_bullet(text) == claims.BULLET_RE.sub("", text, count=1)
    assert claims.links_in(text) == claims._LINK_RE.findall(text)


def _row(status: str) -> ex.Fact:
    fact = ex.row_fact(["1.6", status], "2026-03-01")
    assert fact is not None
    return fact


# For every field of a unit, two units that differ in that field only and are read differently.
_SIBLINGS = {
    "text": (ex._Unit("Staging", "- The cache is Redis", "2026-03-01"),
             ex._Unit("Staging", "- The cache is Valkey", "2026-03-01")),
    "section": (ex._Unit("Staging", "- Auto-deploy is enabled", "2026-03-01"),
                ex._Unit("Production", "- Auto-deploy is enabled", "2026-03-01")),
    "date": (ex._Unit("Staging", "- Upgraded to Kumo CLI 2.4", "2026-03-01"),
             ex._Unit("Staging", "- Upgraded to Kumo CLI 2.4", "2026-03-02")),
    "row": (ex._Unit("Plan", "1.6 | ✅ Done", "2026-03-01", _row("✅ Done")),
            ex._Unit("Plan", "1.6 | ✅ Done", "2026-03-01", _row("⏳ Pending"))),
    "heading_date": (ex._Unit("Changes", "- `legacy_sync` was removed", "2026-03-01", None, "2026-03-01"),
                     ex._Unit("Changes", "- `legacy_sync` was removed", "2026-03-01")),
}


def test_the_reading_cache_keys_on_every_field_of_the_unit():
    """Two units that differ in one field only, read one after the other (the second would be a hit on
    a key that left that field out): each gets its own reading, in a memory file and in a document. The
    siblings cover every field `_Unit` has, so a field added to it must be added here too."""
    assert set(_SIBLINGS) == set(ex._Unit._fields)
    for field, (first, second) in _SIBLINGS.items():
        for memory in (True, False):
            ex._reading.cache_clear()
            own = ex._reading.__wrapped__(first, memory), ex._reading.__wrapped__(second, memory)
            assert own[0] != own[1], (field, memory)
            assert (ex._reading(first, memory), ex._reading(second, memory)) == own, (field, memory)
    ex._reading.cache_clear()
    # the kind of file is part of the key too: a memory file's statement has no mentions, a document's has
    line = ex._Unit("Staging", "- Auto-deploy is enabled", "2026-03-01")
    assert ex._reading(line, True) == ex._reading.__wrapped__(line, True)
    assert ex._reading(line, False) == ex._reading.__wrapped__(line, False) != ex._reading(line, True)
