"""The bridge: project resolution, activation verbs, and the capture hook as a real process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.bridge_env import HOOK, BridgeEnv, drops, run_bounded, wait_for
from conftest import FIXTURES, ledger
from kgbridge import project as project_mod
from support.server_proc import ServerProcess

MEMORY = FIXTURES / "corpus" / "memory" / "testing-real-db.md"


@pytest.fixture
def bridge(tmp_path: Path) -> BridgeEnv:
    return BridgeEnv(tmp_path).setup()


@pytest.fixture
def active(bridge: BridgeEnv) -> Iterator[BridgeEnv]:
    result = bridge.cli("activate")
    assert result.returncode == 0, result.stderr
    yield bridge
    # A drop-directory project needs no server, so what its hooks detached (a SessionStart rescan, a
    # Stop's delivery) finishes on its own: wait for it here rather than leave it to the leftovers sweep.
    bridge.wait_detached()


@pytest.mark.parametrize(("edit", "after"), [
    ({"old_string": 'tagged "v1.x"', "new_string": 'tagged "v2.x" (not "v1.y")'},
     "- Tags: tagged “v2.x” (not “v1.y”).\n- Don’t tag on Fridays.\n- Keep \u2014 always.\n"),
    ({"old_string": "Don't tag on Fridays.", "new_string": "Don't tag on 'quiet' Fridays."},
     "- Tags: tagged “v1.x”.\n- Don’t tag on ‘quiet’ Fridays.\n- Keep \u2014 always.\n"),
    ({"old_string": "- Don’t tag on Fridays.", "new_string": ""}, "- Tags: tagged “v1.x”.\n- Keep \u2014 always.\n"),
    ({"old_string": "Keep \\u2014 always", "new_string": "Keep it always"},
     "- Tags: tagged “v1.x”.\n- Don’t tag on Fridays.\n- Keep it always.\n"),
])
def test_an_edit_is_applied_to_the_mounted_text_as_claude_code_applies_it(edit, after):
    """blind14: Claude Code's Edit reads curly quotes as straight ones to find old_string (keeping the
    file's style in the new text), reads `\\uXXXX` escapes, and deletes a line with its line break. Taken
    literally, the first two edits changed nothing and the agent was told they were saved."""
    from kgbridge.capture import intended_content

    before = "- Tags: tagged “v1.x”.\n- Don’t tag on Fridays.\n- Keep \u2014 always.\n"
    assert intended_content("Edit", edit, before) == after


def test_an_edit_whose_old_string_is_nowhere_applies_none_of_itself():
    """write14: Claude Code applies none of an Edit (or MultiEdit) one of whose old_strings is not in the file,
    and says so. Applied here as `str.replace`, the found half of a MultiEdit was saved and the rest dropped."""
    from kgbridge.capture import EditNotApplied, intended_content

    before = "- Deploy on Tuesdays.\n- Tag releases v1.x.\n"
    with pytest.raises(EditNotApplied):
        intended_content("MultiEdit", {"edits": [{"old_string": "Tuesdays", "new_string": "Wednesdays"},
                                                 {"old_string": "Tag releases v2.x", "new_string": "Tag v3"}]}, before)
    with pytest.raises(EditNotApplied):
        intended_content("Edit", {"old_string": "Fridays", "new_string": "Mondays"}, before)


def test_slug_and_root_are_stable_through_symlinks(tmp_path, monkeypatch):
    repo = tmp_path / "My Repo_2"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    link = tmp_path / "alias"
    link.symlink_to(repo)
    a, b = project_mod.resolve(repo / "src" / "deep"), project_mod.resolve(link)
    assert a == b and a.slug == "my-repo-2" and a.root == repo.resolve()
    plain = tmp_path / "notgit"
    plain.mkdir()
    assert project_mod.resolve(plain).root == plain.resolve()


def test_memory_dir_follows_contract(tmp_path, monkeypatch):
    repo = tmp_path / "proj.x"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    proj = project_mod.resolve(repo)
    sanitized = "".join(c if c.isalnum() else "-" for c in str(repo.resolve()))
    assert proj.memory_dir == tmp_path / "cc" / "projects" / sanitized / "memory"
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryDirectory": str(tmp_path / "mem")}))
    assert proj.memory_dir == tmp_path / "mem"


def test_activate_status_deactivate_roundtrip_over_drop_directory(bridge):
    assert bridge.status()["state"] == "inactive"
    ways = bridge.project / ".claude" / "ways.json"
    ways.parent.mkdir()
    ways.write_text(json.dumps({"other": {"keep": 1}, "reflection": {"style": "x"}}))
    assert bridge.cli("activate").returncode == 0
    st = bridge.status()
    assert (st["state"], st["transport"], st["ingest_target"]) == ("active", "dir", str(bridge.ingest))
    (bridge.root / "ontology" / "shop" / "keep.txt").write_text("data")
    assert bridge.cli("deactivate").returncode == 0
    assert bridge.status()["state"] == "hard-off"
    saved = json.loads(ways.read_text())
    assert saved == {"other": {"keep": 1}, "reflection": {"style": "x", "kg": False}}
    assert (bridge.root / "ontology" / "shop" / "keep.txt").read_text() == "data"
    assert bridge.cli("activate").returncode == 0
    assert bridge.status()["state"] == "active"
    assert json.loads(ways.read_text()) == {"other": {"keep": 1}, "reflection": {"style": "x"}}


def test_user_level_veto_is_overridden_by_project_activation(bridge):
    (bridge.claude).mkdir(exist_ok=True)
    (bridge.claude / "ways.json").write_text(json.dumps({"reflection": {"kg": False}}))
    assert bridge.status()["state"] == "hard-off"
    assert bridge.cli("activate").returncode == 0
    assert bridge.status()["state"] == "active"


def test_activate_status_deactivate_roundtrip_over_http(bridge, tmp_path):
    server_root = tmp_path / "server-root"
    server_root.mkdir()
    with ServerProcess(server_root) as server:
        env = bridge.environ(KG_URL=server.url)
        assert bridge.status(env)["state"] == "inactive"
        result = bridge.cli("activate", "--json", env=env)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["transport"] == "http"
        st = bridge.status(env)
        assert (st["state"], st["transport"], st["ingest_target"]) == ("active", "http", f"{server.url}/ingest")
        assert bridge.hook(bridge.post_tool_use(_memory(bridge)), env=env).returncode == 0
        assert wait_for(lambda: _artifacts(server_root) == 1)
        assert bridge.cli("deactivate", env=env).returncode == 0
        assert bridge.status(env)["state"] == "hard-off"
        assert bridge.cli("activate", env=env).returncode == 0  # 409 from the backend is fine
        assert bridge.status(env)["state"] == "active"
        assert _artifacts(server_root) == 1


def _memory(bridge: BridgeEnv, name: str = "testing-real-db.md") -> Path:
    target = bridge.memory_dir / name
    target.write_bytes(MEMORY.read_bytes())
    return target


def _artifacts(root: Path, slug: str = "shop") -> int:
    import sqlite3
    db = root / "ontology" / slug / "graph.db"
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT count(*) FROM artifacts").fetchone()[0]
    except sqlite3.OperationalError:  # the server is still creating its schema
        return 0
    finally:
        conn.close()


def test_post_tool_use_delivers_memory_file_verbatim_once(active):
    path = _memory(active)
    for tool in ("Write", "Edit", "MultiEdit"):
        result = active.hook(active.post_tool_use(path, tool))
        assert (result.returncode, result.stdout) == (0, b"")
    files = drops(active.ingest)
    assert len(files) == 1
    assert files[0].name.startswith("memory.") and files[0].name.endswith(".testing-real-db.md")
    assert files[0].read_bytes() == MEMORY.read_bytes()


def test_a_memory_write_while_a_drain_runs_is_queued_and_arrives_once(active):
    """A drain (a Stop rescan, `flush`) holds the project's drain lock while it reads the registry
    and the folder and sends; a hook that dropped the same file meanwhile made two deliveries. The
    hook takes that lock for its own drop only if it is free at once, so here (the test holds it,
    as a running drain does) the write is queued, and arrives once after."""
    import fcntl

    path = _memory(active)
    active.state.joinpath("shop").mkdir(parents=True, exist_ok=True)
    fd = os.open(active.state / "shop" / "deliver.lock", os.O_RDONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        result = active.hook(active.post_tool_use(path))
        assert (result.returncode, result.stdout) == (0, b"")
        assert drops(active.ingest) == [], "no drop while a drain holds the lock"
        assert len(drops(active.outbox)) == 1, "queued instead"
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert wait_for(lambda: not drops(active.outbox)), "the hook's worker drains it once the lock is free"
    assert active.cli("flush").returncode == 0
    assert [p.read_bytes() for p in drops(active.ingest)] == [MEMORY.read_bytes()]


def test_a_rescan_never_delivers_a_file_while_it_is_being_written(active):
    """An agent's Write truncates the file, then writes it: a rescan reading in between delivered an
    empty version nobody wrote (16 drops for 15 writes in bench/hook.py). Here the file stays empty
    and keeps changing for the whole `flush` (a write in progress); the rescan leaves it, and the
    write's own PostToolUse delivers the finished file, once."""
    import threading

    path = active.memory_dir / "in-progress.md"
    path.write_bytes(b"")
    writing = threading.Event()
    writing.set()

    def still_writing() -> None:
        while writing.is_set():
            os.utime(path)
            time.sleep(0.05)

    toucher = threading.Thread(target=still_writing, daemon=True)
    toucher.start()
    try:
        assert active.cli("flush").returncode == 0
        assert drops(active.ingest) == [], "nothing delivered while the file is being written"
    finally:
        writing.clear()
        toucher.join()
    path.write_bytes(MEMORY.read_bytes())
    assert active.hook(active.post_tool_use(path)).returncode == 0
    assert active.cli("flush").returncode == 0
    assert [p.read_bytes() for p in drops(active.ingest)] == [MEMORY.read_bytes()]


def test_post_tool_use_outside_memory_dir_is_ignored(active):
    other = active.project / "notes.md"
    other.write_text("not a memory file")
    assert active.hook(active.post_tool_use(other)).returncode == 0
    assert drops(active.ingest) == []


def test_a_note_written_into_a_subfolder_of_the_memory_dir_is_not_a_memory_file(active):
    """blind14: only the top-level notes are memory files (the mount's ingest, the rescan, `rm`). A
    PostToolUse of `archive/deploy.md` was delivered as `deploy.md`: the next version of the live note,
    holding the archived text; `archive/MEMORY.md` as the index."""
    for name in ("archive/testing-real-db.md", "old/MEMORY.md"):
        path = active.memory_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"- an archived note the agent keeps out of the way\n")
        assert active.hook(active.post_tool_use(path)).returncode == 0
    assert active.cli("flush").returncode == 0
    assert drops(active.ingest) == []


def test_codex_apply_patch_headers_find_memory_files(active):
    path = _memory(active)
    patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-old\n+new\n*** Add File: src/app.py\n+x\n*** End Patch\n"
    payload = {"session_id": "c1", "cwd": str(active.project), "hook_event_name": "PostToolUse",
               "tool_name": "apply_patch", "tool_input": {"command": patch}}
    result = active.hook(payload, "--harness", "codex")
    assert (result.returncode, result.stdout) == (0, b"")
    assert [p.name.split(".", 2)[2] for p in drops(active.ingest)] == ["testing-real-db.md"]


@pytest.mark.parametrize("event", ["Stop", "SubagentStop", "PreCompact", "SessionEnd", "SessionStart"])
def test_rescan_events_deliver_ledger_and_memory_once(active, event):
    _memory(active)
    for i, name in enumerate(["2026-04-05T1445Z_e001.md", "2026-04-06T1000Z_e001.md"]):
        (active.ledger_dir / name).write_bytes(ledger(f"s{i}", "- Ship on Tuesdays"))
    for _ in range(2):
        result = active.hook(active.event(event))
        assert (result.returncode, result.stdout) == (0, b"")
    assert wait_for(lambda: len(drops(active.ingest)) == 3)
    time.sleep(0.5)  # a second worker must not add copies
    names = sorted(p.name.split(".", 1)[0] for p in drops(active.ingest))
    assert names == ["ledger", "ledger", "memory"]


def test_session_end_worker_survives_harness_teardown(active):
    (active.ledger_dir / "2026-04-05T1445Z_e001.md").write_bytes(ledger("s1", "- Ship on Tuesdays"))
    proc = subprocess.Popen([*HOOK], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=active.environ(), cwd=active.project, start_new_session=True)
    proc.communicate(json.dumps(active.event("SessionEnd")).encode(), timeout=30)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the harness tears down the hook's process group
    except ProcessLookupError:
        pass
    assert wait_for(lambda: len(drops(active.ingest)) == 1)


def test_vetoed_project_never_flows(active):
    assert active.cli("deactivate").returncode == 0
    path = _memory(active)
    active.hook(active.post_tool_use(path))
    active.hook(active.event("Stop"))
    time.sleep(1.0)
    assert drops(active.ingest) == [] and drops(active.outbox) == []


def test_never_activated_project_is_a_silent_noop(bridge):
    path = _memory(bridge)
    result = bridge.hook(bridge.post_tool_use(path))
    assert (result.returncode, result.stdout) == (0, b"")
    assert not bridge.root.exists() and drops(bridge.outbox) == []


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b'{"hook_event_name": 7}',
                                   b'{"hook_event_name": "PostToolUse", "tool_input": "x"}',
                                   b'{"hook_event_name": "PostToolUse", "cwd": "/nonexistent/dir",'
                                   b' "tool_name": "Write", "tool_input": {"file_path": "/etc/passwd"}}',
                                   b"\xff\xfe garbage"])
def test_hook_exits_zero_and_silent_on_bad_payloads(active, stdin):
    result = active.hook(stdin)
    assert (result.returncode, result.stdout) == (0, b"")


def test_hook_exits_zero_when_state_dir_is_unusable(active, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be")
    env = active.environ(KG_STATE_DIR=str(blocker / "state"))
    path = _memory(active)
    result = active.hook(active.post_tool_use(path), env=env)
    assert (result.returncode, result.stdout) == (0, b"")


def test_outbox_waits_then_drains_exactly_once(active):
    shutil_root = active.root.rename(active.base / "Knowledge-away")  # backend gone
    path = _memory(active)
    assert active.hook(active.post_tool_use(path)).returncode == 0
    assert len(drops(active.outbox)) == 1
    assert active.status()["outbox_depth"] == 1
    shutil_root.rename(active.root)  # backend back
    result = active.cli("flush")
    assert result.returncode == 0, result.stderr
    assert len(drops(active.ingest)) == 1 and drops(active.outbox) == []
    assert active.cli("flush").returncode == 0
    active.hook(active.event("SessionStart"))
    time.sleep(1.0)
    assert len(drops(active.ingest)) == 1


def _settings(path: Path) -> dict:
    return json.loads(path.read_text())


_COUNT_WORKERS = """
import ctypes, json, os, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come to us
hook, payloads, env, cwd = json.loads(sys.stdin.read())
for payload in payloads:
    subprocess.run(hook, input=payload.encode(), env=env, cwd=cwd, capture_output=True, check=True, timeout=60)
started = 0
while True:  # every process a hook left behind (a worker) is ours to reap once the hook has exited
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
    started += 1
print(started)
"""


def test_no_worker_is_started_while_one_runs(active):
    """While a worker holds the project's slot (backing off from a dead backend, say), a memory
    write leaves its item to it: it starts no process that would find the slot taken and exit. The
    hooks run under a subreaper, so every process they leave behind is counted."""
    import fcntl

    away = active.root.rename(active.base / "Knowledge-away")  # backend gone: items go to the outbox
    path = _memory(active)
    payloads = []
    for i in range(5):
        path.write_text(f"---\nname: note\ndescription: version {i}\ntype: project\n---\nVersion {i}.\n")
        payloads.append(json.dumps(active.post_tool_use(path)))
    active.state.joinpath("shop").mkdir(parents=True, exist_ok=True)
    fd = os.open(active.state / "shop" / "worker.lock", os.O_RDONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a running worker
        counted = subprocess.run([sys.executable, "-c", _COUNT_WORKERS], capture_output=True, text=True, timeout=120,
                                 input=json.dumps([HOOK, payloads, active.environ(), str(active.project)]))
        assert counted.returncode == 0, counted.stderr
        assert int(counted.stdout) == 0, "no worker started while one runs"
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert drops(active.outbox), "the items wait for the running worker"
    away.rename(active.root)
    assert active.cli("flush").returncode == 0 and drops(active.outbox) == []
    assert [p.read_bytes() for p in drops(active.ingest)] == [path.read_bytes()], "delivered once"


def test_install_hooks_round_trips_for_claude(bridge):
    settings = bridge.project / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = {"model": "opus", "autoDreamEnabled": True,
                "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}]}}
    settings.write_text(json.dumps(original))
    assert bridge.cli("install-hooks", "--dry-run").returncode == 0
    assert _settings(settings) == original
    assert bridge.cli("install-hooks").returncode == 0
    once = _settings(settings)
    assert bridge.cli("install-hooks").returncode == 0
    assert _settings(settings) == once
    assert once["autoDreamEnabled"] is False and once["model"] == "opus"
    commands = [h["command"] for groups in once["hooks"].values() for g in groups for h in g["hooks"]]
    assert "lint.sh" in commands and sum("kgbridge-hook" in c for c in commands) == 12  # file tools: one group each; Bash PreToolUse
    assert {"SessionStart", "PostToolUse", "Stop", "SubagentStop", "PreCompact", "SessionEnd"} <= set(once["hooks"])
    assert bridge.cli("install-hooks", "--uninstall").returncode == 0
    assert _settings(settings) == original


def test_install_hooks_round_trips_for_codex(bridge):
    assert bridge.cli("install-hooks", "--codex").returncode == 0
    hooks = bridge.project / ".codex" / "hooks.json"
    data = _settings(hooks)
    post = data["hooks"]["PostToolUse"][0]
    assert "apply_patch" in post["matcher"] and "kgbridge-hook --harness codex" in post["hooks"][0]["command"]
    assert bridge.cli("install-hooks", "--codex").returncode == 0
    assert _settings(hooks) == data
    assert bridge.cli("install-hooks", "--codex", "--uninstall").returncode == 0
    assert not hooks.exists()


def test_session_start_prints_the_projection_as_context_when_not_mounted(active):
    from ontology.artifact import Channel
    from ontology.ingest import Ontology

    onto = Ontology(active.root, "shop")
    for path in sorted((FIXTURES / "corpus").rglob("*.md")):
        onto.ingest_path(path, Channel.CLI)
    onto.close()
    # about what the context says, not when: a loaded machine misses the 0.5 s default on a first start
    result = active.hook(active.event("SessionStart"), env=active.environ(KG_SESSION_START_S="10"))
    assert result.returncode == 0
    context = json.loads(result.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "SessionStart"
    text = context["additionalContext"]
    assert text.startswith("# Memory: shop") and "CONTESTED" in text and len(text) <= 10_000
    assert "](ci-setup.md)" not in text, "the host's own index (loaded by the harness) is not repeated"


def test_session_start_without_a_graph_prints_nothing(active):
    result = active.hook(active.event("SessionStart"))
    assert (result.returncode, result.stdout) == (0, b"")


def _disagree(bridge: BridgeEnv, env: dict[str, str]) -> None:
    """Two memory files that disagree, each handed over by a PostToolUse hook and delivered over HTTP."""
    for name, body in (("project_test_db.md", "- The integration tests use Postgres\n- database: postgres"),
                       ("project_fast_tests.md", "- The integration tests do not use Postgres\n- database: sqlite")):
        target = bridge.memory_dir / name
        target.write_text(f"---\nname: {name[:-3]}\ndescription: test database\ntype: project\n---\n{body}\n")
        assert bridge.hook(bridge.post_tool_use(target), env=env).returncode == 0


def test_a_session_start_the_graph_cannot_answer_in_time_gets_the_last_good_context(bridge, tmp_path):
    """ADR 0006, session 12: on a loaded machine the SessionStart read missed its 0.5 s budget and the
    session started without context. A start keeps what it read, and the worker keeps it again once
    it is older than a delivery; a start whose read times out (here: the server stopped, so it never
    answers) gives that one, said as such — and none once a memory file changed after it was kept
    (it could show a fact since corrected)."""
    server_root = tmp_path / "server-root"
    server_root.mkdir()
    with ServerProcess(server_root) as server:
        env = bridge.environ(KG_URL=server.url)
        assert bridge.cli("activate", env=env).returncode == 0
        first = bridge.hook(bridge.event("SessionStart"), env=bridge.environ(KG_URL=server.url, KG_SESSION_START_S="10"))
        assert first.returncode == 0 and b"CONTESTED" not in first.stdout  # the first session: nothing yet
        _disagree(bridge, env)
        assert wait_for(lambda: _artifacts(server_root) == 2 and bridge.worker_idle(), 60)
        server.proc.send_signal(signal.SIGSTOP)
        try:
            started = bridge.hook(bridge.event("SessionStart"), env=env)
            assert started.returncode == 0
            text = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
            assert text.startswith("# Memory: shop") and "CONTESTED" in text
            assert "did not answer in time at this session's start: this is its last answer" in text
            assert len(text.encode()) <= 10_000
            time.sleep(0.05)  # the next write's mtime is after the kept context's
            _disagree(bridge, env)  # a memory file written again: the kept context may no longer be right
            later = bridge.hook(bridge.event("SessionStart"), env=env)
            assert (later.returncode, later.stdout) == (0, b"")
        finally:
            server.proc.send_signal(signal.SIGCONT)


def test_memory_delivery_path_imports_nothing_heavy():
    """The hook loads `kgbridge.capture` on every memory-file edit; `dataclasses` (which pulls in
    `inspect`), `typing` and the ontology's parser would add tens of ms to each run (bench/hook.py)."""
    probe = ("import sys; before = set(sys.modules); import kgbridge.capture; "
             "print(' '.join(sorted(set(sys.modules) - before)))")
    loaded = set(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                                cwd="/").stdout.split())
    assert "kgbridge.capture" in loaded
    assert not loaded & {"dataclasses", "inspect", "typing", "ontology.artifact", "ontology.archive",
                         "ontology.parse", "sqlite3", "urllib.request"}, sorted(loaded)


def _consume_drops(root: Path) -> None:
    """What the backend's watcher does with the drop directory: ingest in arrival order, then remove."""
    from ontology.ingest import Ontology

    ontology = Ontology(root, "shop")
    for path in sorted(drops(root / "ontology" / "shop" / "ingest"), key=lambda p: p.stat().st_mtime_ns):
        ontology.ingest_path(path)
        path.unlink()


def _graph_text(root: Path, filename: str) -> str | None:
    import sqlite3
    conn = sqlite3.connect(f"file:{root / 'ontology' / 'shop' / 'graph.db'}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT text FROM memory_files WHERE filename=?", (filename,)).fetchone()
    finally:
        conn.close()
    return row[0] if row else None


@pytest.mark.parametrize("backend_away", [False, True], ids=["dropped", "outbox"])
def test_an_edit_reverted_is_delivered_again(active, backend_away):
    """A -> B -> A: the graph must end at A, as the file does (never worse than the memory folder)."""
    path = active.memory_dir / "deploy-target.md"
    first = "---\nname: deploy-target\ndescription: where we deploy\ntype: project\n---\nWe deploy to staging.\n"
    second = first.replace("staging", "production")
    away = active.base / "Knowledge-away"
    for text in (first, second, first):
        if backend_away:
            active.root.rename(away)
        path.write_text(text)
        result = active.hook(active.post_tool_use(path))
        assert (result.returncode, result.stdout) == (0, b"")
        if backend_away:
            away.rename(active.root)
            assert active.cli("flush").returncode == 0
        _consume_drops(active.root)
        assert _graph_text(active.root, path.name) == text
    assert _artifacts(active.root) == 3


def test_a_detached_stop_rescans_in_its_own_process_and_leaves_the_agents_group(active):
    """The sh gate starts Stop in the background with --detached (ADR 0010): that process is the
    worker, so the memory file is delivered by the time it exits, from a session of its own."""
    path = _memory(active)
    probe = active.base / "probe.py"  # the hook in-process, reporting its session id after the run
    probe.write_text("import os, sys\nfrom kgbridge import hook\nsid = os.getsid(0)\n"
                     "try:\n    hook.run(sys.argv[1:], 1e18)\nfinally:\n"
                     "    print(os.getsid(0) != sid and os.getsid(0) == os.getpid())\n")
    done = run_bounded([sys.executable, str(probe), "--detached"], json.dumps(active.event("Stop")).encode(),
                       active.environ(), active.project, 60)
    assert done.stdout.strip() == b"True", done.stderr
    assert [p.name.split(".", 2)[-1] for p in drops(active.ingest)] == [path.name]


def test_the_plugin_and_install_hooks_together_are_reported_and_warned_about(bridge):
    assert bridge.status()["claude_hooks"].startswith("not installed")
    bridge.claude.mkdir(exist_ok=True)
    (bridge.claude / "settings.json").write_text(json.dumps({"enabledPlugins": {"kgbridge@kgbridge": True}}))
    assert bridge.status()["claude_hooks"] == "plugin kgbridge@kgbridge"
    dry = bridge.cli("install-hooks", "--dry-run")
    assert dry.returncode == 0 and "plugin already installs these hooks" in dry.stderr
    done = bridge.cli("install-hooks")
    settings = bridge.project / ".claude" / "settings.json"
    assert done.returncode == 0 and "every hook runs 2 times" in done.stderr and str(settings) in done.stderr
    assert bridge.status()["claude_hooks"].startswith("installed 2 times, every hook runs 2 times: plugin kgbridge@kgbridge")
    local = bridge.project / ".claude" / "settings.local.json"  # a project may switch the plugin off
    local.write_text(json.dumps({"enabledPlugins": {"kgbridge@kgbridge": False}}))
    assert bridge.status()["claude_hooks"] == str(settings)
    local.unlink()
    assert bridge.cli("install-hooks", "--uninstall").returncode == 0
    assert bridge.status()["claude_hooks"] == "plugin kgbridge@kgbridge"


def _note(bridge: BridgeEnv, name: str) -> Path:
    path = bridge.memory_dir / name
    path.write_text(f"---\nname: {name}\ndescription: a note\ntype: project\n---\n- {name} is a note of its own\n")
    return path


def _known(bridge: BridgeEnv) -> set[str]:
    from kgbridge import forgetting
    from kgbridge.state import ProjectState

    with forgetting.held(ProjectState("shop", bridge.state), forgetting.Folder.CLAUDE, wait=30) as known:
        assert known is not None
        return set(known.files)


def test_a_hook_never_waits_on_the_memory_folders_state_and_its_change_is_kept(active):
    """memory-files.json is read, changed and written by hooks and by the rescan. While a rescan holds
    it (the test takes it as the worker's rescan does), a hook remembering the file it handed over
    neither waits nor writes under it: its change waits beside the file, and the rescan's save,
    made from what it read before, does not erase it."""
    from kgbridge import forgetting
    from kgbridge.state import ProjectState

    first = _note(active, "project_first.md")
    assert active.hook(active.post_tool_use(first)).returncode == 0
    assert _known(active) == {"project_first.md"}
    second = _note(active, "project_second.md")
    with forgetting.held(ProjectState("shop", active.state), forgetting.Folder.CLAUDE, wait=30) as rescan:
        assert rescan is not None and set(rescan.files) == {"project_first.md"}
        result = active.hook(active.post_tool_use(second))  # exits while the lock is held: it never waits
        assert (result.returncode, result.stdout) == (0, b"")
        rescan.save()
    assert _known(active) == {"project_first.md", "project_second.md"}, "the hook's change survived the save"
    assert wait_for(lambda: not drops(active.outbox))


def test_concurrent_hooks_lose_no_entry_of_the_memory_folders_state(active):
    """Hook processes handing over different files at the same moment each read, change and write
    memory-files.json; unlocked, a write made from a stale read dropped another hook's entry (the
    rescan would then not know to send a tombstone when that file is deleted)."""
    paths = [_note(active, f"project_note_{i:02d}.md") for i in range(12)]
    procs = [subprocess.Popen(HOOK, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=active.environ(), cwd=active.project) for _ in paths]
    for proc, path in zip(procs, paths):  # every process is up and reading stdin: release them together
        proc.stdin.write(json.dumps(active.post_tool_use(path)).encode())
    for proc in procs:
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    assert _known(active) == {p.name for p in paths}
    assert wait_for(lambda: not drops(active.outbox), timeout=60)


def test_a_note_codex_writes_in_a_subfolder_makes_the_kept_context_stale(tmp_path, monkeypatch):
    """Codex keeps its notes folders deep (memories_v2/extensions/ad_hoc/notes/); a note written there
    after the context was kept means that context may be out of date, so it is not given (ADR 0006)."""
    from kgbridge import capture
    from kgbridge.project import Project, codex_memories

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("KG_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    project = Project(tmp_path / "work" / "shop", "shop")
    notes = codex_memories() / "extensions" / "ad_hoc" / "notes"
    notes.mkdir(parents=True)
    before = time.time() - 100
    for folder in (notes, *notes.parents):
        if folder == tmp_path:
            break
        os.utime(folder, (before, before))
    capture.keep_context(project, "codex", "# Memory: shop\n- CI runs on arm64\n", time.time() - 1)
    assert not capture.context_stale(project, "codex")
    (notes / "ci.md").write_text("- CI runs on x86 now\n")
    assert capture.context_stale(project, "codex")
    assert capture.last_good_context(project, "codex", 9_000) is None
