"""A mistake at the command line gets one plain line that says what to do, exit 2, no traceback,
and changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.bridge_env import BridgeEnv


@pytest.fixture
def bridge(tmp_path: Path) -> BridgeEnv:
    env = BridgeEnv(tmp_path).setup()
    env.root.mkdir()
    return env


def _one_line_refusal(done) -> str:  # type: ignore[no-untyped-def]
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_show_of_an_unknown_ontology_says_how_to_create_it(bridge):
    line = _one_line_refusal(bridge.cli("show", "--ontology", "nosuch"))
    assert "'nosuch' does not exist" in line and "kgbridge activate" in line


def test_unknown_transport_lists_the_valid_ones_and_activates_nothing(bridge):
    line = _one_line_refusal(bridge.cli("activate", "--transport", "htp"))
    assert "'htp'" in line and all(f"'{name}'" in line for name in ("auto", "dir", "http"))
    assert not (bridge.root / "ontology").exists() and not (bridge.project / ".claude" / "ways.json").exists()


def test_missing_knowledge_root_names_the_variable_to_set(bridge):
    missing = bridge.base / "nowhere"
    for args in (["show", "--ontology", "shop"], ["search", "x", "--ontology", "shop"], ["rebuild", "-o", "shop"]):
        line = _one_line_refusal(bridge.cli(*args, env=bridge.environ(KG_KNOWLEDGE_ROOT=str(missing))))
        assert f"knowledge root {missing} does not exist" in line and "KG_KNOWLEDGE_ROOT" in line
    assert not missing.exists()


def test_brackets_in_a_message_reach_the_user_intact(bridge):
    """Rich would read `[a-z0-9-]` as markup and print nothing of it."""
    line = _one_line_refusal(bridge.cli("ingest", "--ontology", "Bad Slug", str(bridge.base)))
    assert "[a-z0-9-]" in line


def test_unknown_label_lists_the_labels(bridge):
    bridge.cli("activate")
    for verb in ("show", "search x"):
        line = _one_line_refusal(bridge.cli(*verb.split(), "--status", "maybe", "--ontology", "shop"))
        assert all(label in line.upper() for label in ("AFFIRMATIVE", "CONTESTED", "CONTRADICTORY", "INSUFFICIENT_DATA"))
