"""The projection through a real FUSE mount: shell tools see it, writes get EROFS, new ingests
show up with the right size, overlay keeps host files, unmount cleans up even after a crash."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from support.bridge_env import BridgeEnv, drops, wait_for
from conftest import FIXTURES, ledger, memory
from support.fuse_helpers import requires_fuse, unmount
from ontology.artifact import Channel
from ontology.ingest import Ontology

pytestmark = requires_fuse


def _mounted(base: Path):  # noqa: ANN202 - a generator for the fixtures below
    """A bridge with the fixture corpus ingested, a host note and index, and its projection mounted."""
    bridge = BridgeEnv(base).setup()
    assert bridge.cli("activate").returncode == 0
    onto = Ontology(bridge.root, "shop")
    for path in sorted((FIXTURES / "corpus").rglob("*.md")):
        if path.name != "MEMORY.md":
            onto.ingest_path(path)
    onto.close()
    (bridge.memory_dir / "host-note.md").write_text("---\nname: host-note\ndescription: kept by the host\n"
                                                   "type: user\n---\nThe user prefers tabs.\n")
    (bridge.memory_dir / "MEMORY.md").write_text("- [Host note](host-note.md) — tabs\n")
    before = {p.name: p.read_bytes() for p in bridge.memory_dir.iterdir()}
    result = bridge.cli("mount")
    assert result.returncode == 0, result.stderr
    try:
        yield bridge, before
    finally:
        bridge.cli("unmount")
        unmount(bridge.memory_dir)


@pytest.fixture
def env(tmp_path: Path):
    """A mount of the test's own, for a test that changes it: ingests, hooks, unmounts, signals."""
    yield from _mounted(tmp_path)


@pytest.fixture(scope="module")
def shared_env(tmp_path_factory: pytest.TempPathFactory):
    """One mount for the tests that only read it or are refused (EROFS): building it (activate, ingest,
    mount) is most of such a test's time. A test that changes anything takes `env`."""
    yield from _mounted(tmp_path_factory.mktemp("shared-mount"))


def sh(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, timeout=30, check=True).stdout


def test_shell_tools_see_the_projection(shared_env):
    bridge, _ = shared_env
    mem = bridge.memory_dir
    listing = sh("ls", str(mem)).split()
    assert "MEMORY.md" in listing and "testing-real-db.md" in listing and "host-note.md" in listing
    text = sh("cat", str(mem / "MEMORY.md"))
    assert text.startswith("> kgbridge (shop)") and "- [Host note](host-note.md) — tabs" in text
    assert "## Disputed" in text and "CONTESTED" in text
    assert "MEMORY.md" in sh("grep", "-rl", "CONTESTED", str(mem))
    size = int(sh("stat", "-c", "%s", str(mem / "MEMORY.md")))
    assert size == len(text.encode())
    assert "fuse.kgbridge" in Path("/proc/self/mounts").read_text()
    topic = sh("cat", str(mem / "testing-real-db.md"))
    assert topic.startswith((FIXTURES / "corpus" / "memory" / "testing-real-db.md").read_text())
    assert "## Evidence from other sources (kgbridge)" in topic


@pytest.mark.parametrize("operation", [
    lambda m: os.open(m / "new.md", os.O_WRONLY | os.O_CREAT, 0o644),
    lambda m: os.open(m / "MEMORY.md", os.O_WRONLY),
    lambda m: os.truncate(m / "MEMORY.md", 0),
    lambda m: os.unlink(m / "MEMORY.md"),
    lambda m: os.rename(m / "MEMORY.md", m / "x.md"),
    lambda m: os.mkdir(m / "sub"),
    lambda m: os.rmdir(m / "sub"),
    lambda m: os.chmod(m / "MEMORY.md", 0o777),
    lambda m: os.chown(m / "MEMORY.md", 0, 0),
    lambda m: os.utime(m / "MEMORY.md", (1, 1)),
    lambda m: os.symlink("/etc/passwd", m / "link.md"),
], ids=["create", "open-write", "truncate", "unlink", "rename", "mkdir", "rmdir", "chmod", "chown",
        "utimens", "symlink"])
def test_every_write_gets_erofs(shared_env, operation):
    bridge, _ = shared_env
    with pytest.raises(OSError) as caught:
        operation(bridge.memory_dir)
    assert caught.value.errno == errno.EROFS


def test_new_ingest_shows_up_with_the_right_size_without_remount(env):
    bridge, _ = env
    path = bridge.memory_dir / "MEMORY.md"
    before = path.read_bytes()
    onto = Ontology(bridge.root, "shop")
    onto.ingest("deploys.md", memory("deploys", "Deploys happen only from the main branch"), Channel.CLI)
    onto.close()
    after = path.read_bytes()
    assert after != before and b"deploys.md" in after
    assert os.stat(path).st_size == len(after)
    assert "deploys.md" in os.listdir(bridge.memory_dir)


def test_overlay_keeps_host_files_and_unmount_restores_them(env):
    bridge, before = env
    mem = bridge.memory_dir
    shown = (mem / "MEMORY.md").read_text()
    assert shown != before["MEMORY.md"].decode() and "- [Host note](host-note.md) — tabs" in shown
    assert b"tabs" in (mem / "host-note.md").read_bytes()  # host file was ingested: its topic shows it
    assert bridge.cli("unmount").returncode == 0
    assert {p.name: p.read_bytes() for p in mem.iterdir()} == before


def test_unmount_cleans_up_an_orphaned_mount(env):
    bridge, before = env
    pid = int((bridge.state / "shop" / "mount.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    # Its FUSE connection is gone once it has exited (not our child: it runs on as a zombie or not at all).
    assert wait_for(lambda: not _running(pid), timeout=60), "a SIGKILLed daemon still runs"
    with pytest.raises(OSError) as caught:
        os.listdir(bridge.memory_dir)
    # The kernel says the connection is gone either way: ENOTCONN for a request made after it aborted the
    # connection, ECONNABORTED for one it had already queued when the dead daemon's /dev/fuse was released
    # (seen in a clean CI run: the process had exited, its file descriptors not yet closed).
    assert caught.value.errno in (errno.ENOTCONN, errno.ECONNABORTED), caught.value
    assert bridge.cli("unmount").returncode == 0
    assert {p.name: p.read_bytes() for p in bridge.memory_dir.iterdir()} == before


def test_pre_tool_use_write_is_redirected_into_ingestion(env):
    bridge, _ = env
    target = bridge.memory_dir / "ci-notes.md"
    content = "---\nname: ci-notes\ndescription: CI caches pip wheels\ntype: project\n---\nCache the wheels.\n"
    payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse",
               "tool_name": "Write", "tool_input": {"file_path": str(target), "content": content}}
    result = bridge.hook(payload)
    assert result.returncode == 0
    decision = json.loads(result.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny" and "knowledge graph" in decision["permissionDecisionReason"]
    dropped = [p for p in drops(bridge.ingest) if p.name.endswith(".ci-notes.md")]
    assert [p.read_text() for p in dropped] == [content]


def test_pre_tool_use_edit_applies_to_the_current_file(env):
    bridge, _ = env
    target = bridge.memory_dir / "host-note.md"
    current = target.read_text()
    payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse",
               "tool_name": "Edit", "tool_input": {"file_path": str(target), "old_string": "tabs",
                                                   "new_string": "spaces"}}
    result = bridge.hook(payload)
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    # applied by the hook's worker: the hook itself never reads through the mount
    assert wait_for(lambda: [p for p in drops(bridge.ingest) if p.name.endswith(".host-note.md")])
    dropped = [p for p in drops(bridge.ingest) if p.name.endswith(".host-note.md")]
    assert "tabs" in current and len(dropped) == 1
    saved = dropped[0].read_text()
    assert "The user prefers spaces" in saved and "tabs" not in saved and "bel " not in saved


def test_an_edit_with_straight_quotes_of_a_curly_quoted_note_is_saved_as_claude_code_writes_it(env):
    """blind14: Claude Code's Edit matches `"v1.x"` against a file's `“v1.x”` and writes the file's quote
    style into the new text. Applied literally through the mount, the edit changed nothing: the agent was
    told it was saved and read the old text back."""
    bridge, _ = env
    onto = Ontology(bridge.root, "shop")
    original = ("---\nname: release-tags\ndescription: how releases are tagged\ntype: project\n---\n\n"
                "- Releases are tagged “v1.x”; the user said “never retag”.\n- Don’t tag on Fridays.\n")
    onto.ingest("release-tags.md", original.encode(), Channel.CLI)
    onto.close()
    target = bridge.memory_dir / "release-tags.md"
    assert target.read_text().startswith(original)
    payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse",
               "tool_name": "MultiEdit", "tool_input": {"file_path": str(target), "edits": [
                   {"old_string": 'Releases are tagged "v1.x"', "new_string": 'Releases are tagged "v2.x"'},
                   {"old_string": "- Don't tag on Fridays.", "new_string": ""}]}}
    result = bridge.hook(payload)
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert wait_for(lambda: [p for p in drops(bridge.ingest) if p.name.endswith(".release-tags.md")])
    saved = [p.read_text() for p in drops(bridge.ingest) if p.name.endswith(".release-tags.md")]
    assert saved == [original.replace("tagged “v1.x”", "tagged “v2.x”").replace("- Don’t tag on Fridays.\n", "")]


@pytest.mark.parametrize("name", ["archive/host-note.md", "archive/MEMORY.md"])
def test_a_write_into_a_subfolder_of_the_mount_is_refused_not_filed_as_a_top_level_note(env, name):
    """blind14: a Write to `archive/host-note.md` through the mount was saved as `host-note.md`, so the
    live note showed the archived text (and `archive/MEMORY.md` replaced the index). Subfolders are the
    host's, shown read-only: the write is refused with the reason, and nothing is delivered."""
    bridge, _ = env
    target = bridge.memory_dir / name
    payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse",
               "tool_name": "Write", "tool_input": {"file_path": str(target), "content": "- The user prefers spaces.\n"}}
    decision = json.loads(bridge.hook(payload).stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny" and "subfolder" in decision["permissionDecisionReason"]
    assert bridge.cli("flush").returncode == 0
    assert drops(bridge.ingest) == [] and "The user prefers tabs." in (bridge.memory_dir / "host-note.md").read_text()


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _pre_tool_use(bridge: BridgeEnv, tool: str, target: Path, **tool_input: object) -> str:
    payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse", "tool_name": tool,
               "tool_input": {"file_path": str(target), **tool_input}}
    decision = json.loads(bridge.hook(payload).stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    return decision["permissionDecisionReason"]


@pytest.mark.parametrize("old", ["The user prefers tabs and a 100-column limit.", "## Evidence from other sources (kgbridge)"])
def test_an_edit_that_does_not_apply_saves_nothing_and_the_agent_is_told(env, old):
    """write14: Claude Code refuses an Edit whose old_string is not in the file before any hook runs (seen with
    the pinned binary), so one reaches us only when the text changed after its check, or when it matched only
    our appendix or marks. Such an edit was delivered as a version equal to the old one, the agent having been
    told it was saved. Now nothing is delivered, the edit is kept, and the agent's next write there says so."""
    bridge, _ = env
    reason = _pre_tool_use(bridge, "Edit", bridge.memory_dir / "testing-real-db.md", old_string=old,
                           new_string="The words the agent meant to keep.")
    assert "Saved" not in reason and "nothing is saved" in reason
    assert bridge.cli("flush").returncode == 0
    assert drops(bridge.ingest) == []
    told = _pre_tool_use(bridge, "Write", bridge.memory_dir / "ci-notes.md", content="- CI caches pip wheels.\n")
    assert told.startswith("NOT APPLIED") and "testing-real-db.md" in told and "The words the agent meant to keep." in told
    assert "NOT APPLIED" not in _pre_tool_use(bridge, "Write", bridge.memory_dir / "ci-notes.md", content="- CI.\n")
    kept = list((bridge.state / "shop" / "unapplied").iterdir())
    assert len(kept) == 1 and "The words the agent meant to keep." in kept[0].read_text()



def test_an_edit_that_did_not_apply_is_told_at_the_next_session_start_if_not_before(env):
    """write14: an edit that does not apply is told at the next write in the mounted slot; a session that ends
    first never hears it, so the next session's start says it (once)."""
    bridge, _ = env
    _pre_tool_use(bridge, "Edit", bridge.memory_dir / "host-note.md", old_string="a line no longer there",
                  new_string="The words the agent meant to keep.")
    assert bridge.cli("flush").returncode == 0
    start = {"session_id": "s2", "cwd": str(bridge.project), "hook_event_name": "SessionStart", "source": "startup"}
    context = json.loads(bridge.hook(start).stdout)["hookSpecificOutput"]["additionalContext"]
    assert "NOT APPLIED" in context and "host-note.md" in context and "The words the agent meant to keep." in context
    assert bridge.hook(start).stdout.strip() == b"", "told once"


def test_two_edits_in_a_row_both_count_before_the_first_is_in(env):
    """write14: the worker applied each Edit to what the mount showed; a second Edit applied before the first
    was ingested was applied to the text before the first, so the first edit was lost."""
    bridge, _ = env
    target = bridge.memory_dir / "host-note.md"
    _pre_tool_use(bridge, "Edit", target, old_string="prefers tabs", new_string="prefers spaces")
    assert bridge.cli("flush").returncode == 0
    _pre_tool_use(bridge, "Edit", target, old_string="The user prefers", new_string="The whole team prefers")
    assert bridge.cli("flush").returncode == 0
    saved = [p.read_text() for p in drops(bridge.ingest) if p.name.endswith(".host-note.md")]
    assert saved[-1].endswith("The whole team prefers spaces.\n"), saved


def _hook_processes(state: Path) -> list[int]:
    """Pids of `python -m kgbridge.hook` processes (a hook, or a child forked from one; not a
    worker: those carry `--drain`/`--worker`) running for the bridge whose state dir is `state`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")[1:-1]
            if args != [b"-m", b"kgbridge.hook"]:
                continue
            if f"KG_STATE_DIR={state}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_an_edit_while_the_projection_daemon_is_stopped_leaves_nothing_waiting_on_the_mount(env):
    """An Edit needs the file's current text, which only the mount has. With the daemon stopped
    (SIGSTOP) a read through the mount blocks until it runs again: the hook used to fork a child for
    that read and wait for it, and the child stayed blocked after the hook gave up. Now the hook
    queues the edit without touching the mount, and the worker applies it once the daemon answers."""
    bridge, _ = env
    daemon = int((bridge.state / "shop" / "mount.pid").read_text().split()[0])
    target = bridge.memory_dir / "host-note.md"
    payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse",
               "tool_name": "Edit", "tool_input": {"file_path": str(target), "old_string": "tabs",
                                                   "new_string": "spaces"}}
    os.kill(daemon, signal.SIGSTOP)
    try:
        result = bridge.hook(payload)
        decision = json.loads(result.stdout)["hookSpecificOutput"]
        assert decision["permissionDecision"] == "deny" and "background" in decision["permissionDecisionReason"]
        assert len(list((bridge.state / "shop" / "edits").iterdir())) == 1, "the edit is queued"
        # A child blocked on the stopped mount would stay for good; one that is only exiting goes.
        assert wait_for(lambda: _hook_processes(bridge.state) == [], timeout=60), \
            f"left blocked on the stopped mount: {_hook_processes(bridge.state)}"
    finally:
        os.kill(daemon, signal.SIGCONT)
    assert wait_for(lambda: [p for p in drops(bridge.ingest) if p.name.endswith(".host-note.md")], timeout=30)
    saved = [p.read_text() for p in drops(bridge.ingest) if p.name.endswith(".host-note.md")]
    assert len(saved) == 1 and "The user prefers spaces" in saved[0]


def test_materialized_projection_matches_the_mount(shared_env, tmp_path):
    bridge, _ = shared_env
    out = tmp_path / "materialized"
    assert bridge.cli("project", "--to", str(out)).returncode == 0
    assert (out / "MEMORY.md").read_bytes() == (bridge.memory_dir / "MEMORY.md").read_bytes()


def test_editing_a_topic_file_saves_the_next_version_of_that_file_not_the_rendering(env):
    bridge, _ = env
    onto = Ontology(bridge.root, "shop")
    onto.ingest("2026-05-01T1000Z_e001.md", ledger("s9", "- [[testing-real-db]] suites run nightly on arm64"),
                Channel.CLI)
    onto.close()
    target = bridge.memory_dir / "testing-real-db.md"
    original = (FIXTURES / "corpus" / "memory" / "testing-real-db.md").read_text()
    visible = target.read_text()
    assert visible.startswith(original) and "nightly on arm64" in visible  # its own words, then the evidence
    payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse",
               "tool_name": "Edit", "tool_input": {"file_path": str(target),
                                                   "old_string": "Never mock the database in integration tests.",
                                                   "new_string": "Never mock the database in any test."}}
    result = bridge.hook(payload)
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert wait_for(lambda: [p for p in drops(bridge.ingest) if p.name.endswith(".testing-real-db.md")])
    saved = [p.read_text() for p in drops(bridge.ingest) if p.name.endswith(".testing-real-db.md")]
    assert saved == [original.replace("Never mock the database in integration tests.",
                                      "Never mock the database in any test.")], \
        "the file's own text with the edit: no evidence appendix, no other source's claim"
