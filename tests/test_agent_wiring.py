"""What hooks/ ships matches what install-hooks writes, and the Codex-only paths of the hook:
its memory agent is not a project, its own notes are memory, its context is sized for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgbridge.capture import CODEX_CONTEXT_BYTES, _whole_lines
from kgbridge.install import CODEX_EVENTS, wiring
from kgbridge.project import Harness
from support.bridge_env import BridgeEnv, drops

REPO = Path(__file__).resolve().parents[1]


def _events(path: Path) -> dict[str, list[dict]]:
    return json.loads(path.read_text())["hooks"]


def test_plugin_hooks_are_the_wiring_install_hooks_writes():
    shipped = _events(REPO / "hooks" / "hooks" / "hooks.json")
    assert shipped == wiring(Harness.CLAUDE, "kgbridge-hook")
    codex = _events(REPO / "hooks" / "codex" / "hooks.json")
    assert codex == wiring(Harness.CODEX, "kgbridge-hook --harness codex")


def test_marketplace_offers_the_plugin_under_hooks():
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    (entry,) = market["plugins"]
    assert (entry["name"], entry["source"]) == ("kgbridge", "./hooks")
    assert json.loads((REPO / "hooks" / ".claude-plugin" / "plugin.json").read_text())["name"] == "kgbridge"
    assert "kgbridge" in json.loads((REPO / "hooks" / ".mcp.json").read_text())["mcpServers"]


def test_codex_session_start_may_carry_the_whole_context():
    ((handler,),) = (g["hooks"] for g in wiring(Harness.CODEX, "kgbridge-hook")["SessionStart"])  # type: ignore[misc]
    assert handler["additionalContextLimit"] >= CODEX_CONTEXT_BYTES  # tokens never outnumber bytes
    assert set(CODEX_EVENTS) >= {"SessionStart", "PostToolUse", "Stop", "SubagentStop", "PreCompact", "SessionEnd"}


def test_a_cut_context_keeps_whole_lines_and_says_so():
    text = "".join(f"- line {i} — ünïcödé\n" for i in range(2000))
    cut = _whole_lines(text, 1000)
    assert len(cut.encode()) <= 1000 and cut.endswith("kg_search)._\n")
    assert all(line.startswith("- line ") for line in cut.splitlines()[:-1])


@pytest.fixture
def codex_bridge(tmp_path: Path) -> BridgeEnv:
    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    return bridge


def _codex_env(bridge: BridgeEnv) -> dict[str, str]:
    return bridge.environ(CODEX_HOME=str(bridge.base / "codex"))


def test_codex_notes_written_in_a_session_are_captured_as_memory(codex_bridge):
    env = _codex_env(codex_bridge)
    notes = codex_bridge.base / "codex" / "memories_v2" / "extensions" / "ad_hoc" / "notes"
    notes.mkdir(parents=True)
    note = notes / "2026-11-30T02-15-00-test-db.md"
    note.write_text("- The integration tests use Postgres\n")
    patch = f"*** Begin Patch\n*** Add File: {note}\n+- The integration tests use Postgres\n*** End Patch\n"
    payload = {**codex_bridge.event("PostToolUse"), "tool_name": "apply_patch", "tool_input": {"command": patch}}
    assert codex_bridge.hook(payload, "--harness", "codex", env=env).returncode == 0
    assert [p.name.split(".", 2)[-1] for p in drops(codex_bridge.ingest)] == [note.name]


def test_codex_memory_agent_sessions_are_not_a_project(codex_bridge):
    env = _codex_env(codex_bridge)
    store = codex_bridge.base / "codex" / "memories_v2"
    (store / ".git").mkdir(parents=True)  # the agent's store is a git repository of its own
    (store / "memory_summary.md").write_text("v1\n## User preferences\n- Short answers\n")
    for event in ("SessionStart", "PostToolUse", "Stop"):
        payload = {**codex_bridge.event(event), "cwd": str(store), "tool_name": "apply_patch",
                   "tool_input": {"command": f"*** Begin Patch\n*** Add File: {store}/memory_summary.md\n"}}
        done = codex_bridge.hook(payload, "--harness", "codex", env=env)
        assert done.returncode == 0 and done.stdout == b""
    assert not (codex_bridge.state / "memories-v2").exists()  # never resolved as a project of its own
