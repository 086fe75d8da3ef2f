"""The real Claude Code binary, driven by a scripted fake Anthropic API: hooks installed by
install-hooks or by the plugin run, memory writes reach the ontology, the projection comes back."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from support.agents import REPO, AgentSandbox, conversation, memory_file, wait_until
from support.fuse_helpers import requires_fuse

DB_FACT = "The integration tests use Postgres"
SESSION_ONE = memory_file("test-db", "which database the integration tests use",
                          f"- {DB_FACT}\n- database: postgres")
SESSION_TWO = memory_file("fast-tests", "test database choice for speed",
                          "- The integration tests do not use Postgres\n- database: sqlite")


def hook_runs(debug_log: str) -> list[tuple[str, str]]:
    """(event, outcome) of each kgbridge hook run in a Claude Code --debug-file log."""
    return re.findall(r"Hooks: (\S+) \[.*kgbridge-hook.*?\] (\(plugin \S+\) (?:finished with status \d+|moved to the "
                      r"background))", debug_log)


def write(path: Path, content: str) -> list[dict]:
    """A session whose model writes one file with the Write tool, then says it is done."""
    return [{"write": {"path": str(path), "content": content}}, {"text": "Saved."}]


def activate(box: AgentSandbox, *, install: bool = True) -> None:
    assert box.kg("activate").returncode == 0
    if install:
        done = box.kg("install-hooks")
        assert done.returncode == 0, done.stderr


def contradict(box: AgentSandbox) -> None:
    """Two sessions write memory files that disagree; the graph keeps both as a disputed claim."""
    box.claude_session("kg-e2e-one", write(box.memory_dir / "project_test_db.md", SESSION_ONE))
    box.claude_session("kg-e2e-two", write(box.memory_dir / "project_fast_tests.md", SESSION_TWO))
    both = {"memory:shop/project_test_db.md", "memory:shop/project_fast_tests.md"}
    assert wait_until(lambda: box.sources_of(DB_FACT) == ("CONTESTED", both), 30), box.sources_of(DB_FACT)


def test_claude_sessions_that_disagree_give_a_disputed_claim_the_next_session_starts_with(claude_box, serve):
    serve(claude_box)
    activate(claude_box)
    contradict(claude_box)
    # Not a race against the hook's 0.5 s: once `flush` has brought the kept context up to date, the
    # next start reads the dispute live or, when the graph cannot answer in time (a loaded machine),
    # from that context (ADR 0006, session 12). Either way the agent reads it.
    assert claude_box.kg("flush").returncode == 0
    claude_box.claude_session("kg-e2e-three", [{"text": "Hello."}])
    first = conversation(claude_box.fake.requests("kg-e2e-three")[0])
    assert "SessionStart hook additional context: # Memory: shop (kgbridge)" in first
    assert "CONTESTED" in first and DB_FACT in first


@requires_fuse
def test_claude_writes_memory_into_the_mounted_projection_and_it_is_captured(claude_box, serve):
    serve(claude_box)
    activate(claude_box)
    contradict(claude_box)
    mounted = claude_box.kg("mount")
    assert mounted.returncode == 0, mounted.stderr
    try:
        result = claude_box.claude_session("kg-e2e-four", write(claude_box.memory_dir / "project_ci.md", memory_file(
            "ci", "where CI runs", "- CI runs the e2e job on arm64 runners")))
        requests = claude_box.fake.requests("kg-e2e-four")
        first = conversation(requests[0])
        assert f"{claude_box.memory_dir}/MEMORY.md" in first and "CONTESTED" in first  # the mounted projection
        assert result["subtype"] == "success" and not result["is_error"]
        assert "Saved to the knowledge graph" in json.dumps(requests[-1]["messages"][-1])
        assert wait_until(lambda: claude_box.sources_of("CI runs the e2e job on arm64 runners")[1]
                          == {"memory:shop/project_ci.md"}, 30)
    finally:
        claude_box.kg("unmount")


def test_claude_starts_python_for_no_pre_tool_use_when_nothing_is_mounted_and_still_captures(claude_box, serve):
    """The gate in front of kgbridge-hook (ADR 0010): with nothing mounted, no PreToolUse starts Python
    (the redirect is only for the projection); the memory write is still captured."""
    serve(claude_box)
    claude_box.trace_hook_starts()
    activate(claude_box)
    claude_box.claude_session("kg-e2e-gated", write(claude_box.memory_dir / "project_test_db.md", SESSION_ONE))
    assert wait_until(lambda: claude_box.sources_of(DB_FACT)[1] == {"memory:shop/project_test_db.md"}, 30)
    claude_box.settled()  # Stop runs in the background: it may start after the write is in (and claude is gone)
    events = [s["hook_event_name"] for s in claude_box.hook_starts()]
    # PostToolUse is async and `claude -p` may end it at exit; then the detached Stop rescan captures
    assert "PreToolUse" not in events and {"SessionStart", "Stop"} <= set(events), events


def test_after_deactivate_nothing_flows_and_claude_sessions_still_run(claude_box, serve):
    serve(claude_box)
    activate(claude_box)
    assert claude_box.kg("deactivate").returncode == 0
    result = claude_box.claude_session("kg-e2e-off", write(claude_box.memory_dir / "project_test_db.md", SESSION_ONE))
    assert result["subtype"] == "success" and not result["is_error"]
    assert DB_FACT in (claude_box.memory_dir / "project_test_db.md").read_text()
    assert not wait_until(lambda: bool(claude_box.assertions()) or any(claude_box.ingest.iterdir()), 3)
    assert "kgbridge" not in conversation(claude_box.fake.requests("kg-e2e-off")[0])


def test_plugin_validates_installs_from_a_local_marketplace_and_its_hooks_capture(claude_box, serve, tmp_path):
    claude = str(claude_box.bin / "claude")
    for target in (REPO, REPO / "hooks"):
        done = claude_box.run(claude, "plugin", "validate", str(target))
        assert done.returncode == 0 and "Validation passed" in done.stdout, done.stdout + done.stderr
    assert claude_box.run(claude, "plugin", "marketplace", "add", str(REPO)).returncode == 0
    installed = claude_box.run(claude, "plugin", "install", "kgbridge@kgbridge")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert json.loads(claude_box.kg("status", "--json").stdout)["claude_hooks"] == "plugin kgbridge@kgbridge"
    twice = claude_box.kg("install-hooks", "--dry-run")  # install-hooks on top would run every hook twice
    assert twice.returncode == 0 and "plugin already installs these hooks" in twice.stderr
    serve(claude_box)
    activate(claude_box, install=False)
    debug = tmp_path / "claude-debug.log"
    claude_box.claude_session("kg-e2e-plugin", write(claude_box.memory_dir / "project_test_db.md", SESSION_ONE), debug)
    runs = hook_runs(debug.read_text())
    for event in ("SessionStart:startup", "PreToolUse:Write", "Stop"):
        assert (event, "(plugin kgbridge@kgbridge) finished with status 0") in runs, event
    assert ("PostToolUse:Write", "(plugin kgbridge@kgbridge) moved to the background") in runs  # async
    assert wait_until(lambda: claude_box.sources_of(DB_FACT)[1] == {"memory:shop/project_test_db.md"}, 30)


@requires_fuse
def test_claude_deleting_and_renaming_in_the_mounted_projection_is_recorded_and_told(claude_box, serve):
    """`rm` and `mv` by Claude Code's Bash tool in the mounted slot (ADR 0012): one compound command is
    recorded as a tombstone and a move and the model reads what happened; a glob is refused with why."""
    serve(claude_box)
    claude_box.trace_hook_starts()
    activate(claude_box)
    contradict(claude_box)
    mounted = claude_box.kg("mount")
    assert mounted.returncode == 0, mounted.stderr
    mem = claude_box.memory_dir
    try:
        steps = [{"tool": "Bash", "input": {"command": f"rm {mem}/project_fast_tests.md && "
                                                      f"mv {mem}/project_test_db.md {mem}/project_db.md",
                                            "description": "Prune memory"}},
                 {"tool": "Bash", "input": {"command": f"rm {mem}/*.md", "description": "Clear memory"}},
                 {"text": "Pruned."}]
        result = claude_box.claude_session("kg-e2e-prune", steps)
        assert result["subtype"] == "success"
        starts = [(h["hook_event_name"], h.get("tool_name")) for h in claude_box.hook_starts()]
        assert starts.count(("PreToolUse", "Bash")) == 2, starts  # install-hooks wires Bash's PreToolUse
        requests = claude_box.fake.requests("kg-e2e-prune")
        told = [json.dumps(r["messages"][-1]) for r in requests[1:3]]
        assert "Recorded as deleted in kgbridge: project_fast_tests.md" in told[0]
        assert "project_test_db.md is now project_db.md" in told[0]
        assert "Not run, nothing recorded" in told[1] and "read-only" in told[1]
        assert "Read-only file system" not in "".join(told), "never a bare EROFS"
        assert wait_until(lambda: claude_box.sources_of(DB_FACT)[1] == {"memory:shop/project_db.md"}, 30), \
            claude_box.sources_of(DB_FACT)
    finally:
        claude_box.kg("unmount")


def test_the_mcp_line_install_hooks_prints_registers_a_server_claude_reaches(claude_box, serve):
    server = serve(claude_box)
    claude_box.extra_env["KG_URL"] = server.url
    assert claude_box.kg("activate").returncode == 0
    printed = claude_box.kg("install-hooks").stdout
    line = next(x for x in printed.splitlines() if "claude mcp add" in x)
    command = shlex.split(line[line.index("claude mcp add"):])
    added = claude_box.run(str(claude_box.bin / "claude"), *command[1:])
    assert added.returncode == 0, added.stdout + added.stderr
    listed = claude_box.run(str(claude_box.bin / "claude"), "mcp", "list")
    assert re.search(rf"kgbridge: {re.escape(server.url)}/mcp \(HTTP\) - . Connected", listed.stdout), listed.stdout
