"""What hooks/ ships matches what install-hooks writes, and the Codex-only paths of the hook:
its memory agent is not a project, its own notes are memory, its context is sized for it."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from kgbridge.capture import CODEX_CONTEXT_BYTES, _whole_lines
from kgbridge.install import CODEX_EVENTS, Gate, gated, wiring
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


def _sh(command: str, payload: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", command], input=payload, capture_output=True, text=True, timeout=30)


def test_the_gate_starts_the_hook_only_for_a_payload_that_needs_it_and_hands_it_on_whole(tmp_path):
    started = tmp_path / "started"
    hook = f"cat > '{started}'"  # stands for kgbridge-hook: records the payload it was given
    source = json.dumps({"hook_event_name": "PostToolUse", "tool_input": {"command": "*** Add File: a.py\n+A = 1"}})
    done = _sh(gated(hook, frozenset({Gate.MARKDOWN})), source)
    assert done.returncode == 0 and done.stdout == "" and not started.exists()
    memory = json.dumps({"hook_event_name": "PostToolUse", "tool_input": {"file_path": "/m/memory/b.md",
                                                                          "content": "it's \\ \"quoted\"\n"}})
    assert _sh(gated(hook, frozenset({Gate.MARKDOWN})), memory).returncode == 0
    assert json.loads(started.read_text()) == json.loads(memory)
    started.unlink()
    assert _sh(gated(hook, frozenset({Gate.MARKDOWN, Gate.MOUNTED})), memory).returncode == 0
    assert not started.exists()  # /m/memory is no FUSE mount point


def test_a_background_gate_returns_before_the_hook_is_done_and_tells_it_so(tmp_path):
    started = tmp_path / "started"
    # stands for kgbridge-hook: after a second, records its arguments and the payload
    hook = f"sh -c 'sleep 1; {{ echo \"$*\"; cat; }} > \"$0.tmp\"; mv \"$0.tmp\" \"$0\"' '{started}'"
    done = _sh(gated(hook, frozenset({Gate.BACKGROUND})), '{"hook_event_name": "Stop"}')
    assert done.returncode == 0 and not started.exists()  # the agent goes on; the hook still runs
    deadline = time.monotonic() + 20
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    args, payload = started.read_text().split("\n", 1)
    assert args == "--detached" and json.loads(payload) == {"hook_event_name": "Stop"}


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
def codex_bridge(tmp_path: Path):  # noqa: ANN201 - a fixture
    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    yield bridge
    bridge.wait_detached()  # the hooks' detached workers end before the test does


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
    codex_bridge.wait_detached()  # what the hooks started in the background has done its part too
    assert not (codex_bridge.state / "memories-v2").exists()  # never resolved as a project of its own
