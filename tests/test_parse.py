"""Parsing at the boundary: both memory shapes, ledger entries, defensive frontmatter, refusals."""

from __future__ import annotations

import pytest

from conftest import FIXTURES
from ontology.artifact import ArtifactRejected, Kind
from ontology.parse import MAX_ARTIFACT_BYTES, parse_artifact
from ontology.store import normalize_ts

CORPUS = FIXTURES / "corpus"


def parse(path, name=None):
    return parse_artifact("shop", name or path.name, path.read_bytes())


def test_flat_memory_shape():
    art = parse(CORPUS / "memory" / "testing-real-db.md")
    assert art.kind is Kind.MEMORY
    assert (art.name, art.memory_type) == ("testing-real-db", "feedback")
    assert art.description == "Integration tests must hit a real database, not mocks"
    assert art.source_identity == "memory:shop/testing-real-db.md"


def test_nested_metadata_memory_shape():
    art = parse(CORPUS / "memory" / "ci-setup.md")
    assert art.kind is Kind.MEMORY
    assert art.memory_type == "project"
    assert normalize_ts(art.timestamp, "") == "2026-07-30T07:40:18.191000Z"


def test_memory_index_and_ledger_and_document_are_classified():
    assert parse(CORPUS / "memory" / "MEMORY.md").kind is Kind.MEMORY_INDEX
    led = parse(CORPUS / "ledger" / "2026-04-05T1445Z_e001.md")
    assert led.kind is Kind.LEDGER
    assert led.source_identity == "ledger:abc123#1"
    assert parse(CORPUS / "docs" / "architecture.md").kind is Kind.DOCUMENT


@pytest.mark.parametrize("name", ["bom-crlf.md", "unquoted-colon.md", "tabs.md", "no-closing.md"])
def test_malformed_frontmatter_falls_back_instead_of_failing(name):
    art = parse(CORPUS / "malformed" / name)
    assert art.kind is Kind.MEMORY
    assert art.name == name.removesuffix(".md")
    assert art.description


def test_bom_and_crlf_are_normalized():
    art = parse(CORPUS / "malformed" / "bom-crlf.md")
    assert "\r" not in art.text and not art.text.startswith("\ufeff")
    assert art.memory_type == "reference"


def test_unquoted_colon_keeps_whole_value():
    assert parse(CORPUS / "malformed" / "unquoted-colon.md").description == "Deploys: run make release from main only"


REJECTIONS = [
    ("nul.md", "NUL"), ("cp1251.md", "UTF-8"), ("empty.md", "empty"),
    ("alias-bomb.md", "alias"), ("deep.md", "nests deeper"),
]


@pytest.mark.parametrize(("name", "reason"), REJECTIONS)
def test_bad_input_is_rejected_with_a_reason(name, reason):
    with pytest.raises(ArtifactRejected, match=reason):
        parse(FIXTURES / "bad" / name)


def test_oversized_and_binary_are_rejected():
    with pytest.raises(ArtifactRejected, match="over the"):
        parse_artifact("shop", "big.md", b"x" * (MAX_ARTIFACT_BYTES + 1))
    with pytest.raises(ArtifactRejected, match="binary"):
        parse_artifact("shop", "blob.bin", bytes(range(1, 32)) * 40)


def test_drop_name_recovers_original_name_and_hint():
    art = parse_artifact("shop", "memory.0123456789ab.notes.md", b"plain text without frontmatter\n")
    assert art.kind is Kind.MEMORY
    assert art.filename == "notes.md"
    assert art.source_identity == "memory:shop/notes.md"


def test_wrong_types_in_frontmatter_do_not_crash():
    art = parse_artifact("shop", "odd.md", b"---\nname: [a, b]\ndescription: 42\ntype: 7\n---\nbody\n")
    assert art.name is None and art.description == "42" and art.memory_type is None


@pytest.mark.parametrize("control", ["\x01", "\x0b", "\r", "\x1b", "\x1f"])
def test_control_share_counts_each_control_character_but_layout(control):
    """5 % control characters is text, one more is binary; newline, tab and form feed never count
    (a file of them is text), and a lone CR in a file with newlines is a control character."""
    body = "a\n\t\f" * 25  # 100 characters, none of them counted
    at_limit = body + control * 10 + "b" * 90  # 10 of 200
    assert parse_artifact("shop", "edge.md", at_limit.encode()).body
    with pytest.raises(ArtifactRejected, match="binary"):
        parse_artifact("shop", "edge.md", (at_limit + control).encode())
    assert parse_artifact("shop", "layout.md", ("x\n\t\f" * 500).encode()).body
