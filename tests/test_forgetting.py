"""Deleted and renamed memory files are evidence too: the end-of-session rescan (real Stop hook
processes, `kgbridge flush`) sends a tombstone for a file that is gone and a move for a renamed one,
through the drop directory (the real watcher) and HTTP (a real server socket); the graph withdraws,
re-keys or restores, the projection follows, and a rebuild from the archive gives the same graph."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from conftest import graph_snapshot, ledger, memory as memory_bytes
from support.bridge_env import BridgeEnv, drops, wait_for
from support.fuse_helpers import requires_fuse, unmount
from support.server_proc import KGBRIDGE, ServerProcess
from ontology import queries
from ontology.artifact import Channel
from kgbridge import forgetting
from ontology.ingest import Ontology
from ontology.layout import drop_name
from projection.snapshot import memory_topics
from projection.topic import render_memory_topic
from projection.view import ProjectionView

DEPLOY = "---\nname: deploy-day\ndescription: when deploys happen\ntype: project\n---\n- Deploys happen on Tuesdays\n"
QUEUE = ("---\nname: job-queue\ndescription: how background jobs run\ntype: project\n---\n"
         "- The job queue uses Celery\n- Workers restart every night\n- Retries back off exponentially\n")


class Stack:
    """A bridge whose backend is a real `kgbridge serve`: over its drop directory or its HTTP socket."""

    def __init__(self, tmp_path: Path, transport: str) -> None:
        self.bridge = BridgeEnv(tmp_path).setup()
        self.transport = transport
        # Over HTTP the backend keeps its graph elsewhere: the bridge reaches it by socket only.
        self.graph_root = self.bridge.root if transport == "dir" else tmp_path / "server-root"
        self.graph_root.mkdir(exist_ok=True)
        self.server: ServerProcess | None = None
        self.extra_env: dict[str, str] = {}
        self.env = self.bridge.environ()

    @contextmanager
    def running(self) -> Iterator["Stack"]:
        with ServerProcess(self.graph_root) as server:
            self.server = server
            self.env = self.bridge.environ(**self.extra_env, **({"KG_URL": server.url} if self.transport == "http" else {}))
            result = self.bridge.cli("activate", "--transport", self.transport, env=self.env)
            assert result.returncode == 0, result.stderr
            yield self

    @property
    def db(self) -> Path:
        return self.graph_root / "ontology" / "shop" / "graph.db"

    def rows(self, sql: str, *params: object) -> list[tuple]:
        if not self.db.exists():
            return []
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError:
            return []  # the schema is not there yet
        finally:
            conn.close()

    def artifacts(self) -> int:
        return len(self.rows("SELECT 1 FROM artifacts"))

    def stop_hook(self, *, settle_on: int, payload: dict[str, object] | None = None, args: tuple[str, ...] = ()) -> None:
        """A real Stop hook (its detached worker does the rescan); wait until the graph holds `settle_on`
        artifacts. On a loaded machine detection may miss its 300 ms budget and keep the artifacts in the
        outbox: the next Stop delivers them, as in a real session."""
        for _ in range(3):
            assert self.bridge.hook(payload or self.bridge.event("Stop"), *args, env=self.env).returncode == 0
            if wait_for(lambda: self.artifacts() >= settle_on, timeout=10):
                return
            (self.bridge.state / "shop" / "detect.json").unlink(missing_ok=True)
        raise AssertionError(self.rows("SELECT filename, kind FROM artifacts"))

    def flush(self, *, settle_on: int) -> None:
        result = self.bridge.cli("flush", env=self.env)
        assert result.returncode == 0, result.stderr
        assert wait_for(lambda: self.artifacts() >= settle_on, timeout=30), self.rows("SELECT filename, kind FROM artifacts")

    def memory_md(self) -> str:
        assert self.server is not None
        response = httpx.get(f"{self.server.url}/ontologies/shop/memory", timeout=10)
        assert response.status_code == 200
        return response.text

    def claim(self, text: str) -> tuple[str, int, int]:
        rows = self.rows("SELECT status, n_for, n_against FROM assertions WHERE text=?", text)
        assert len(rows) == 1, rows
        return rows[0]

    def sources(self) -> list[tuple[str, str | None]]:
        return self.rows("SELECT identity, deleted_at FROM sources ORDER BY identity")


def header_counts(memory: str) -> tuple[int, int]:
    """(concepts, claims) as MEMORY.md's header states them."""
    found = re.search(r"^(\d+) concepts · (\d+) claims · ", memory, re.MULTILINE)
    assert found, memory[:300]
    return int(found.group(1)), int(found.group(2))


def rebuild_gives_the_same_graph(root: Path) -> list[str]:
    """After the server stopped: rebuild from the archive, compare, and return the projected names."""
    onto = Ontology(root, "shop")
    try:
        with onto.reader():
            pass
        before = graph_snapshot(onto.paths.database)
        onto.rebuild()
        assert graph_snapshot(onto.paths.database) == before
        return ProjectionView(onto).names()
    finally:
        onto.close()


def history_of(root: Path, concept: str) -> list[dict[str, object]]:
    onto = Ontology(root, "shop")
    try:
        with onto.reader() as conn:
            found = queries.concept(conn, concept)
            assert found is not None
            return [h for a in found["assertions"] for h in a["history"]]  # type: ignore[union-attr,index]
    finally:
        onto.close()


@pytest.fixture(params=["dir", "http"])
def stack(request: pytest.FixtureRequest, tmp_path: Path) -> Stack:
    return Stack(tmp_path, request.param)


def test_a_deleted_memory_file_stops_counting_and_leaves_the_projection(stack: Stack):
    mem = stack.bridge.memory_dir
    (mem / "project_deploy.md").write_text(DEPLOY)
    (mem / "project_queue.md").write_text(QUEUE)
    with stack.running():
        stack.stop_hook(settle_on=2)
        assert stack.claim("Deploys happen on Tuesdays")[1] == 1
        memory = stack.memory_md()
        assert "project_deploy.md" in memory
        concepts, claims = header_counts(memory)
        (mem / "project_deploy.md").unlink()
        stack.stop_hook(settle_on=3)
        assert wait_for(lambda: stack.claim("Deploys happen on Tuesdays")[1] == 0)
        assert stack.claim("The job queue uses Celery")[1] == 1, "the other file still counts"
        memory = stack.memory_md()
        assert "project_deploy.md" not in memory and "Deploys" not in memory
        assert "project_queue.md" in memory
        standing = stack.rows("SELECT count(*) FROM assertions WHERE n_for + n_against > 0")[0][0]
        assert standing < claims, "the deleted file's claims were withdrawn"
        assert header_counts(memory) == (concepts - 1, standing), "the header counts what stands"
        # The status the agent asks for (HTTP, MCP kg_status, `kgbridge show`) counts what MEMORY.md shows.
        counted = httpx.get(f"{stack.server.url}/ontologies/shop", timeout=10).json()["counts"]
        assert (counted["concepts"], counted["assertions"]) == (concepts - 1, standing), counted
        assert counted["withdrawn"] == claims - standing and counted["sources"] == 1, counted
        shown = stack.bridge.cli("show", "--json", "--root", str(stack.graph_root), "--ontology", "shop", env=stack.env)
        assert json.loads(shown.stdout)["counts"] == counted, shown.stderr
        deleted_at = dict(stack.sources())["memory:shop/project_deploy.md"]
        assert deleted_at is not None
    names = rebuild_gives_the_same_graph(stack.graph_root)
    assert "project_deploy.md" not in names and "project-deploy.md" not in names and "project_queue.md" in names
    history = history_of(stack.graph_root, "project-deploy")
    said = [h for h in history if h["text"] == "Deploys happen on Tuesdays"]
    gone = [h for h in history if h["stance"] == "deleted"]
    assert said and all(h["stance"] == "for" for h in said), "every earlier version stays in history"
    assert gone and {h["timestamp"] for h in gone} == {deleted_at}, "history says when it was deleted"


def test_a_renamed_memory_file_is_one_source_under_its_new_name(stack: Stack):
    mem = stack.bridge.memory_dir
    (mem / "project_queue.md").write_text(QUEUE)
    with stack.running():
        stack.flush(settle_on=1)
        label = stack.claim("The job queue uses Celery")
        (mem / "project_queue.md").rename(mem / "project_jobs.md")
        stack.stop_hook(settle_on=2)
        assert wait_for(lambda: [s for s, _ in stack.sources()] == ["memory:shop/project_jobs.md"]), stack.sources()
        assert stack.claim("The job queue uses Celery") == label, "one source: the label is what it was"
        assert "project_jobs.md" in stack.memory_md()
        # Renamed again with a line added: the same `name:` and most of the body is still a move.
        (mem / "project_jobs.md").rename(mem / "project_workers.md")
        (mem / "project_workers.md").write_text(QUEUE + "- Jobs time out after an hour\n")
        stack.flush(settle_on=3)
        assert [s for s, _ in stack.sources()] == ["memory:shop/project_workers.md"]
        assert stack.claim("The job queue uses Celery") == label
    names = rebuild_gives_the_same_graph(stack.graph_root)
    assert "project_workers.md" in names
    assert not {"project_queue.md", "project_jobs.md", "project-queue.md", "project-jobs.md"} & set(names)
    history = history_of(stack.graph_root, "project-workers")
    assert {h["source"] for h in history} == {"memory:shop/project_workers.md"}, "history kept under the new name"
    assert {h["filename"] for h in history} >= {"project_queue.md", "project_workers.md"}


def test_a_memory_file_restored_after_deletion_is_its_next_version(stack: Stack):
    mem = stack.bridge.memory_dir
    (mem / "project_deploy.md").write_text(DEPLOY)
    with stack.running():
        stack.flush(settle_on=1)
        (mem / "project_deploy.md").unlink()
        stack.flush(settle_on=2)
        assert stack.claim("Deploys happen on Tuesdays")[1] == 0
        (mem / "project_deploy.md").write_text(DEPLOY)  # the very same bytes, back
        stack.stop_hook(settle_on=3)
        assert stack.claim("Deploys happen on Tuesdays")[1] == 1
        assert stack.sources() == [("memory:shop/project_deploy.md", None)]
        assert stack.rows("SELECT version, kind FROM artifacts ORDER BY version") == [
            (1, "memory"), (2, "tombstone"), (3, "memory")]
        assert "project_deploy.md" in stack.memory_md()
    names = rebuild_gives_the_same_graph(stack.graph_root)
    assert "project_deploy.md" in names


def test_an_unreadable_memory_folder_is_not_taken_for_an_empty_one(tmp_path: Path):
    stack = Stack(tmp_path, "dir")
    mem = stack.bridge.memory_dir
    (mem / "project_deploy.md").write_text(DEPLOY)
    with stack.running():
        stack.flush(settle_on=1)
        mem.rename(mem.with_name("memory.away"))
        assert stack.bridge.cli("flush", env=stack.env).returncode == 0
        mem.with_name("memory.away").rename(mem)
        stack.flush(settle_on=1)
        assert stack.sources() == [("memory:shop/project_deploy.md", None)]
        assert stack.artifacts() == 1


@requires_fuse
def test_the_mount_no_longer_shows_a_deleted_file(tmp_path: Path):
    stack = Stack(tmp_path, "dir")
    mem = stack.bridge.memory_dir
    (mem / "project_deploy.md").write_text(DEPLOY)
    (mem / "project_queue.md").write_text(QUEUE)
    with stack.running():
        stack.flush(settle_on=2)
        (mem / "project_deploy.md").unlink()
        stack.stop_hook(settle_on=3)
    at = tmp_path / "view"
    at.mkdir()
    result = stack.bridge.cli("mount", "--at", str(at))
    assert result.returncode == 0, result.stderr
    try:
        listed = subprocess.run(["ls", str(at)], capture_output=True, text=True, timeout=30, check=True).stdout.split()
        memory = subprocess.run(["cat", str(at / "MEMORY.md")], capture_output=True, text=True, timeout=30,
                                check=True).stdout
    finally:
        stack.bridge.cli("unmount", "--at", str(at))
        unmount(at)
    assert "project_queue.md" in listed and "project_deploy.md" not in listed and "project-deploy.md" not in listed
    assert "Deploys" not in memory and "project_queue.md" in memory
    assert "project_deploy.md" not in rebuild_gives_the_same_graph(stack.graph_root)


@pytest.mark.parametrize("name, data, reason", [
    ("tombstone.0123456789ab.a.md", b"not json", "JSON object"),
    ("tombstone.0123456789ab.a.md", b'{"kgbridge": "tombstone", "file": "b.md", "at": "2026-11-30T04:00:00Z"}',
     "names 'b.md'"),
    ("tombstone.0123456789ab.a.md", b'{"kgbridge": "tombstone", "file": "a.md"}', '"at"'),
    ("move.0123456789ab.b.md", b'{"kgbridge": "move", "from": "../x.md", "to": "b.md", "at": "t", "content": "- x"}',
     "invalid filename"),
    ("move.0123456789ab.b.md", b'{"kgbridge": "tombstone", "file": "b.md", "at": "t"}', '"kgbridge": "move"'),
])
def test_a_malformed_tombstone_or_move_is_refused_with_its_reason(tmp_path: Path, name: str, data: bytes, reason: str):
    onto = Ontology(tmp_path, "shop", create=True)
    try:
        result = onto.ingest(name, data, Channel.CLI)
        assert result.status.value == "rejected" and reason in (result.reason or ""), result
    finally:
        onto.close()


def _bash(bridge: BridgeEnv, command: str, env: dict[str, str] | None = None) -> dict[str, object]:
    """A real PreToolUse hook on a Bash call, as Claude Code sends it; its decision."""
    return _pre_tool_use(bridge, "Bash", {"command": command, "description": "memory housekeeping"}, env)


def _pre_tool_use(bridge: BridgeEnv, tool: str, tool_input: dict[str, object],
                  env: dict[str, str] | None = None) -> dict[str, object]:
    payload = {"session_id": "s1", "transcript_path": str(bridge.base / "t.jsonl"), "cwd": str(bridge.project),
               "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
               "tool_input": tool_input}
    result = bridge.hook(payload, env=env)
    assert result.returncode == 0 and result.stdout.strip(), result.stderr
    return json.loads(result.stdout)["hookSpecificOutput"]


def _ingest_drops(bridge: BridgeEnv) -> None:
    """What the watcher does with the drops (as in test_projection_identity)."""
    onto = Ontology(bridge.root, "shop")
    try:
        for drop in sorted(bridge.ingest.iterdir()):
            if not drop.name.startswith("."):
                assert onto.ingest(drop.name, drop.read_bytes(), Channel.DROP).status.value != "rejected"
                drop.unlink()
    finally:
        onto.close()


@requires_fuse
def test_rm_and_mv_through_the_mount_become_a_tombstone_and_a_move(tmp_path: Path):
    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    (bridge.memory_dir / "project_deploy.md").write_text(DEPLOY)
    (bridge.memory_dir / "project_queue.md").write_text(QUEUE)
    result = bridge.cli("mount")
    assert result.returncode == 0, result.stderr
    try:
        mem = bridge.memory_dir
        assert {"project_deploy.md", "project_queue.md"} <= set(subprocess.run(
            ["ls", str(mem)], capture_output=True, text=True, timeout=30, check=True).stdout.split())
        decision = _bash(bridge, f"rm {mem / 'project_deploy.md'}")
        assert decision["permissionDecision"] == "deny" and "deleted" in decision["permissionDecisionReason"]
        decision = _bash(bridge, f"mv -f {mem / 'project_queue.md'} {mem / 'project_jobs.md'}")
        assert "project_jobs.md" in decision["permissionDecisionReason"]
        assert wait_for(lambda: not list((bridge.state / "shop" / "edits").iterdir()), timeout=30), "the worker moved it"
        assert wait_for(lambda: len([p for p in bridge.ingest.iterdir() if not p.name.startswith(".")]) == 2,
                        timeout=30)
        _ingest_drops(bridge)
        listed = subprocess.run(["ls", str(mem)], capture_output=True, text=True, timeout=30, check=True).stdout.split()
        assert "project_deploy.md" not in listed and "project_queue.md" not in listed and "project_jobs.md" in listed
        topic = subprocess.run(["cat", str(mem / "project_jobs.md")], capture_output=True, text=True, timeout=30,
                               check=True).stdout
        assert topic.startswith(QUEUE), "the renamed file's own text, not the appendix twice"
    finally:
        bridge.cli("unmount")
        unmount(bridge.memory_dir)
    onto = Ontology(bridge.root, "shop")
    try:
        with onto.reader() as conn:
            sources = dict(conn.execute("SELECT identity, deleted_at FROM sources").fetchall())
            counts = dict(conn.execute("SELECT text, n_for FROM assertions").fetchall())
    finally:
        onto.close()
    assert sources["memory:shop/project_deploy.md"] is not None
    assert "memory:shop/project_queue.md" not in sources and sources["memory:shop/project_jobs.md"] is None
    assert counts["Deploys happen on Tuesdays"] == 0 and counts["The job queue uses Celery"] == 1
    rebuild_gives_the_same_graph(bridge.root)


@contextmanager
def mounted(stack: Stack) -> Iterator[Path]:
    """The projection mounted on the memory slot (a real FUSE mount), with the server running."""
    result = stack.bridge.cli("mount", env=stack.env)
    assert result.returncode == 0, result.stderr
    try:
        yield stack.bridge.memory_dir
    finally:
        stack.bridge.cli("unmount", env=stack.env)
        unmount(stack.bridge.memory_dir)


def listed(directory: Path) -> list[str]:
    return subprocess.run(["ls", str(directory)], capture_output=True, text=True, timeout=30, check=True).stdout.split()


@requires_fuse
def test_a_file_deleted_through_the_mount_and_written_again_is_its_next_version(tmp_path: Path):
    stack = Stack(tmp_path, "dir")
    (stack.bridge.memory_dir / "project_deploy.md").write_text(DEPLOY)
    (stack.bridge.memory_dir / "project_queue.md").write_text(QUEUE)
    with stack.running():
        stack.flush(settle_on=2)
        with mounted(stack) as mem:
            assert "project_deploy.md" in listed(mem)
            decision = _bash(stack.bridge, f"rm {mem / 'project_deploy.md'}", stack.env)
            assert decision["permissionDecision"] == "deny" and "deleted" in decision["permissionDecisionReason"]
            assert wait_for(lambda: stack.artifacts() == 3, timeout=30)
            assert wait_for(lambda: stack.claim("Deploys happen on Tuesdays")[1] == 0)
            assert wait_for(lambda: "project_deploy.md" not in listed(mem))
            # the agent writes the file again, through the mounted slot (the Write redirect)
            decision = _pre_tool_use(stack.bridge, "Write", {"file_path": str(mem / "project_deploy.md"),
                                                             "content": DEPLOY}, stack.env)
            assert decision["permissionDecision"] == "deny" and "Saved to" in decision["permissionDecisionReason"]
            assert wait_for(lambda: stack.artifacts() == 4, timeout=30), stack.rows("SELECT filename, kind FROM artifacts")
            assert wait_for(lambda: stack.claim("Deploys happen on Tuesdays")[1] == 1)
            assert wait_for(lambda: "project_deploy.md" in listed(mem))
            shown = subprocess.run(["cat", str(mem / "project_deploy.md")], capture_output=True, text=True,
                                   timeout=30, check=True).stdout
            assert shown.startswith(DEPLOY), "back with its own text"
        assert stack.rows("SELECT a.version, a.kind FROM artifacts a JOIN sources s ON s.id = a.source_id "
                          "WHERE s.identity = 'memory:shop/project_deploy.md' ORDER BY a.version") == [
            (1, "memory"), (2, "tombstone"), (3, "memory")]
        assert dict(stack.sources())["memory:shop/project_deploy.md"] is None
    assert "project_deploy.md" in rebuild_gives_the_same_graph(stack.graph_root)


@requires_fuse
def test_a_file_written_through_the_mount_stays_its_newest_version_after_an_unmount(tmp_path: Path):
    """The mount is read-only: the agent's rewrite went to the graph, and the host's copy underneath is
    still the text it replaced. Unmounted, a rescan must not send that stale copy back as the newest
    version; a later change to the host file is news again."""
    thursday = DEPLOY.replace("Tuesdays", "Thursdays")
    friday = DEPLOY.replace("Tuesdays", "Fridays")
    stack = Stack(tmp_path, "dir")
    (stack.bridge.memory_dir / "project_deploy.md").write_text(DEPLOY)
    with stack.running():
        stack.flush(settle_on=1)
        with mounted(stack) as mem:
            decision = _pre_tool_use(stack.bridge, "Write", {"file_path": str(mem / "project_deploy.md"),
                                                             "content": thursday}, stack.env)
            assert decision["permissionDecision"] == "deny" and "Saved to" in decision["permissionDecisionReason"]
            assert wait_for(lambda: stack.artifacts() == 2, timeout=30), stack.rows("SELECT filename, kind FROM artifacts")
        assert (stack.bridge.memory_dir / "project_deploy.md").read_text() == DEPLOY, "the host copy is untouched"
        result = stack.bridge.cli("flush", env=stack.env)
        assert result.returncode == 0, result.stderr
        assert wait_for(lambda: not drops(stack.bridge.ingest), timeout=30)
        time.sleep(1)  # a stale copy sent back would have arrived by now
        assert stack.artifacts() == 2, stack.rows("SELECT filename, kind, version FROM artifacts")
        assert stack.claim("Deploys happen on Thursdays")[1] == 1 and stack.claim("Deploys happen on Tuesdays")[1] == 0
        # the user edits the host file afterwards: that is a new version
        (stack.bridge.memory_dir / "project_deploy.md").write_text(friday)
        stack.flush(settle_on=3)
        assert stack.claim("Deploys happen on Fridays")[1] == 1
    rebuild_gives_the_same_graph(stack.graph_root)


@requires_fuse
def test_compound_rm_and_mv_through_the_mount_are_recorded_and_the_rest_is_explained(tmp_path: Path):
    stack = Stack(tmp_path, "dir")
    notes = {"project_deploy.md": DEPLOY, "project_queue.md": QUEUE,
             "project_cache.md": "---\nname: cache\ndescription: caching\ntype: project\n---\n- The cache is Redis\n",
             "project_ci.md": "---\nname: ci\ndescription: ci\ntype: project\n---\n- CI runs on every push\n"}
    for name, text in notes.items():
        (stack.bridge.memory_dir / name).write_text(text)
    with stack.running():
        stack.flush(settle_on=4)
        with mounted(stack) as mem:
            # what the agent would meet without the hook: the kernel refuses, bare
            bare = subprocess.run(["bash", "-c", f"rm {mem / 'project_ci.md'} && echo done"], capture_output=True,
                                  text=True, timeout=30)
            assert bare.returncode != 0 and "Read-only file system" in bare.stderr
            # pieces kgbridge cannot record: the command is refused with why, and nothing is recorded
            for command in (f"rm {mem / 'project_ci.md'} && echo done", f"rm {mem}/*.md",
                            f"find {mem} -name project_ci.md -delete", f"echo x >> {mem / 'project_ci.md'}",
                            f"git rm --cached {mem / 'project_ci.md'}", f"mv {mem / 'project_ci.md'} /tmp/ci.md"):
                reason = str(_bash(stack.bridge, command, stack.env)["permissionDecisionReason"])
                assert reason.startswith("Not run, nothing recorded") and "read-only" in reason, (command, reason)
                assert "`rm <file>.md`" in reason, "the agent is told what kgbridge can record"
            # a compound of plain ones is recorded whole: two deletions (one by `git rm`) and a rename
            decision = _bash(stack.bridge, f"rm -f {mem / 'project_deploy.md'} 2>/dev/null && cd {mem} && "
                                           f"git rm -q project_cache.md; mv project_queue.md project_jobs.md",
                             stack.env)
            reason = str(decision["permissionDecisionReason"])
            assert "project_deploy.md, project_cache.md" in reason and "project_queue.md is now project_jobs.md" in reason
            assert wait_for(lambda: stack.artifacts() == 7, timeout=60), stack.rows("SELECT filename, kind FROM artifacts")
            assert wait_for(lambda: set(listed(mem)) >= {"project_jobs.md", "project_ci.md"} and
                            not {"project_deploy.md", "project_cache.md", "project_queue.md"} & set(listed(mem)))
        # Unmounted, the host's own copies are still there underneath: a rescan does not send them again.
        assert (stack.bridge.memory_dir / "project_deploy.md").read_text() == DEPLOY
        stack.flush(settle_on=7)
        assert wait_for(lambda: not drops(stack.bridge.ingest), timeout=30)
        assert stack.artifacts() == 7, stack.rows("SELECT filename, kind FROM artifacts")
        sources = dict(stack.sources())
        assert sources["memory:shop/project_deploy.md"] and sources["memory:shop/project_cache.md"]
        assert sources["memory:shop/project_ci.md"] is None, "the refused commands recorded nothing"
        assert "memory:shop/project_queue.md" not in sources and sources["memory:shop/project_jobs.md"] is None
        assert stack.claim("The job queue uses Celery")[1] == 1 and stack.claim("CI runs on every push")[1] == 1
        assert stack.claim("The cache is Redis")[1] == 0
    rebuild_gives_the_same_graph(stack.graph_root)


# Codex's own memory store follows the same rules. The payloads below have the shape Codex 0.169 sends
# its hooks (recorded from the real binary): apply_patch is the only tool it reports in PostToolUse
# (a shell `rm` or `mv` reaches kgbridge through the Stop rescan only).
NOTE_DB = "- The staging database is Postgres 16\n"
NOTE_FREEZE = "- Deploys are frozen on Fridays\n- The deploy bot posts in the ops channel\n"


class CodexSession:
    """Real hook processes (`kgbridge-hook --harness codex`) fed what Codex sends, on a Stack."""

    def __init__(self, stack: Stack, tmp_path: Path) -> None:
        self.stack = stack
        self.home = tmp_path / "codex-home"
        self.notes = self.home / "memories_v2" / "extensions" / "ad_hoc" / "notes"
        self.notes.mkdir(parents=True)
        stack.extra_env["CODEX_HOME"] = str(self.home)

    def _payload(self, event: str, **fields: object) -> dict[str, object]:
        return {"session_id": "01a22ad8-87d9-7350-b0ec-e9338d30cf3d", "turn_id": "01a22ad8-87f7-7c00-9c97-8b147e625d9c",
                "transcript_path": str(self.home / "sessions" / "rollout.jsonl"), "cwd": str(self.stack.bridge.project),
                "hook_event_name": event, "model": "gpt-5.5", "permission_mode": "bypassPermissions", **fields}

    def apply_patch(self, patch: str, summary: str) -> None:
        """What Codex's apply_patch did on disk has already happened; this is its PostToolUse."""
        payload = self._payload("PostToolUse", tool_name="apply_patch", tool_input={"command": patch},
                                tool_response=f"Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the "
                                              f"following files:\n{summary}", tool_use_id="call_0000")
        assert self.stack.bridge.hook(payload, "--harness", "codex", env=self.stack.env).returncode == 0

    def add(self, name: str, text: str) -> Path:
        path = self.notes / name
        path.write_text(text)
        body = "".join(f"+{line}\n" for line in text.splitlines())
        self.apply_patch(f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n", f"A {path}\n")
        return path

    def stop(self, *, settle_on: int) -> None:
        self.stack.stop_hook(settle_on=settle_on, args=("--harness", "codex"), payload=self._payload(
            "Stop", stop_hook_active=False, last_assistant_message="Noted."))

    def source(self, name: str) -> str:
        return f"memory:shop/{name}"


def test_codex_notes_deleted_renamed_and_restored_follow_the_same_rules(stack: Stack, tmp_path: Path):
    codex = CodexSession(stack, tmp_path)
    db, freeze = "2026-11-30T02-15-00-staging-db.md", "2026-11-30T02-16-00-deploy-freeze.md"
    with stack.running():
        first = codex.add(db, NOTE_DB)
        second = codex.add(freeze, NOTE_FREEZE)
        codex.stop(settle_on=2)
        assert stack.claim("The staging database is Postgres 16")[1] == 1
        label = stack.claim("Deploys are frozen on Fridays")
        # One apply_patch deletes the first note and renames the second (its text unchanged), as Codex
        # applies it: the PostToolUse hook has the rescan send a tombstone and a move.
        renamed = codex.notes / "2026-11-30T02-17-00-release-freeze.md"
        first.unlink()
        second.rename(renamed)
        codex.apply_patch(f"*** Begin Patch\n*** Delete File: {first}\n*** Update File: {second}\n"
                          f"*** Move to: {renamed}\n@@\n {NOTE_FREEZE.splitlines()[0]}\n*** End Patch\n",
                          f"M {renamed}\nD {first}\n")
        assert wait_for(lambda: stack.artifacts() >= 4, timeout=30), stack.rows("SELECT filename, kind FROM artifacts")
        assert wait_for(lambda: stack.claim("The staging database is Postgres 16")[1] == 0)
        assert stack.claim("Deploys are frozen on Fridays") == label, "one source: the label is what it was"
        sources = dict(stack.sources())
        assert sources[codex.source(db)] is not None, "the deleted note is marked deleted"
        assert codex.source(freeze) not in sources and sources[codex.source(renamed.name)] is None
        assert "Postgres" not in stack.memory_md()
        # A shell `rm` (no PostToolUse from Codex), then the note back: the Stop rescan and `kgbridge
        # flush` compare Codex's store too.
        renamed.unlink()
        codex.stop(settle_on=5)
        assert wait_for(lambda: stack.claim("Deploys are frozen on Fridays")[1] == 0)
        renamed.write_text(NOTE_FREEZE)
        stack.flush(settle_on=6)
        assert stack.claim("Deploys are frozen on Fridays") == label, "restored: its next version"
        # the move is the renamed source's next version (a memory artifact under its new name)
        assert stack.rows("SELECT filename, kind, version FROM artifacts ORDER BY id") == [
            (db, "memory", 1), (freeze, "memory", 1), (db, "tombstone", 2), (renamed.name, "memory", 2),
            (renamed.name, "tombstone", 3), (renamed.name, "memory", 4)]
        assert dict(stack.sources())[codex.source(renamed.name)] is None
    rebuild_gives_the_same_graph(stack.graph_root)


def test_a_codex_note_asking_to_forget_a_memory_does_not_confirm_it_in_the_next_session(tmp_path: Path):
    """Blind round 9 (ADR 0010, "Session 14 (codex14)"): Codex writes "forget X" as an ad-hoc note (its memory
    tool's own instruction), and the summary it injects still says X until its consolidation runs. Through
    the real hook processes the next Codex session was told X was confirmed (the forget request counted as a
    second source, its line the summary's headline): worse than Codex's own memory, which says to drop it."""
    stack = Stack(tmp_path, "dir")
    codex = CodexSession(stack, tmp_path)
    tabs = "Prefers tabs over spaces in Makefiles"
    (codex.home / "memories_v2" / "memory_summary.md").write_text(
        f"v1\n## User preferences\n- {tabs}\n- Wants commit messages in the imperative mood\n")
    with stack.running():
        codex.add("2026-11-30T08-01-10-forget-tabs.md", f"Forget: the user prefers tabs over spaces in Makefiles. "
                                                        f"They use spaces everywhere now.\n")
        codex.add("2026-11-30T08-02-00-drop-mood.md", "Delete:\n- Wants commit messages in the imperative mood\n")
        codex.stop(settle_on=3)
        started = stack.bridge.hook(codex._payload("SessionStart", source="startup"), "--harness", "codex",
                                    env={**stack.env, "KG_SESSION_START_S": "10"})
        context = json.loads(started.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "They use spaces everywhere now" in context, context
        assert not re.search(r"confirmed|agrees", context), context
        held = stack.rows("SELECT text, n_for, n_against FROM assertions WHERE text LIKE '%tabs over spaces%'")
        assert held == [(tabs, 1, 0)], "the summary's line, held by the summary alone"
        held = stack.rows("SELECT n_for, n_against FROM assertions WHERE text LIKE '%imperative mood%'")
        assert held == [(1, 0)], "a line listed under 'Delete:' is no second source of it"


SLOT = Path("/home/u/.claude/projects/-w-shop/memory")


@pytest.mark.parametrize("command, recorded, unrecorded", [
    ("rm {s}/a.md", [("rm", "a.md")], None),
    ("rm -f {s}/a.md {s}/b.md 2>/dev/null", [("rm", "a.md", "b.md")], None),
    ("mv -f {s}/a.md {s}/b.md", [("mv", "a.md", "b.md")], None),
    ("rm {s}/a.md && mv {s}/b.md {s}/c.md", [("rm", "a.md"), ("mv", "b.md", "c.md")], None),
    ("cd {s} && git rm -q a.md; git mv b.md c.md\nrm d.md", [("rm", "a.md"), ("mv", "b.md", "c.md"), ("rm", "d.md")],
     None),
    ("rm '{s}/a b.md' >/dev/null 2>&1", [("rm", "a b.md")], None),
    ("rm {s}/a.md && echo done", [("rm", "a.md")], "`echo done` in the same command"),
    ("rm {s}/*.md", [], "`rm {s}/*.md`"),
    ("find {s} -name a.md -delete", [], "`find {s} -name a.md -delete`"),
    ("echo x > {s}/a.md", [], "a redirect into it"),
    ("sed -i s/a/b/ {s}/a.md", [], "`sed -i s/a/b/ {s}/a.md`"),
    ("git rm --cached {s}/a.md", [], "`git rm --cached {s}/a.md`"),
    ("rm -rf {s}", [], "`rm -rf {s}`"),
    ("mv {s}/a.md /tmp/a.md", [], "`mv {s}/a.md /tmp/a.md`"),
    ("mv {s}/a.md {s}/b.md && rm {s}/b.md", [("mv", "a.md", "b.md"), ("rm", "b.md")], "several operations on one file"),
    ("rm '{s}/a.md", [], "unbalanced quotes"),
    ("cat {s}/a.md | grep x", None, None),
    ("cp {s}/a.md /tmp/ && ls {s}", None, None),
    ("rm /tmp/a.md && echo done", None, None),
])
def test_what_a_shell_command_does_to_the_mounted_slot(command: str, recorded: list[tuple[str, ...]] | None,
                                                      unrecorded: str | None):
    """The PreToolUse reading of Bash commands: what it records, and what it names instead (None: the
    command writes nothing into the slot and runs)."""
    from kgbridge import shellplan

    planned = shellplan.plan(command.format(s=SLOT), Path("/w/shop"), SLOT)
    if recorded is None:
        assert planned is None
        return
    assert planned is not None
    assert [(op.verb.value, *(p.name for p in op.paths)) for op in planned.operations] == recorded
    assert all(p.parent == SLOT for op in planned.operations for p in op.paths)
    if unrecorded is None:
        assert planned.unrecorded is None
    else:
        assert unrecorded.format(s=SLOT) in (planned.unrecorded or "")


def test_what_earlier_versions_no_longer_say_is_read_by_the_withdrawals_index(tmp_path: Path):
    """A topic file lists the claims its file's earlier versions made and the newest withdrew; that query
    (memory_topics, per batch of files) filters stance_history by source and read all of it without
    an index on the withdrawals (ADR 0012). The real query, traced, is planned on the index."""
    onto = Ontology(tmp_path, "shop", create=True)
    assert onto.ingest("project_queue.md", QUEUE.encode(), Channel.CLI).status.value == "new"
    shorter = QUEUE.replace("- Workers restart every night\n", "")
    assert onto.ingest("project_queue.md", shorter.encode(), Channel.CLI).status.value == "new"
    traced: list[str] = []
    with onto.reader() as conn:
        conn.set_trace_callback(traced.append)
        topic = memory_topics(conn, ["project_queue.md"])["project_queue.md"]
        conn.set_trace_callback(None)
        history = [sql for sql in traced if "FROM stance_history" in sql]
        assert len(history) == 1, traced
        plan = " ".join(str(r[-1]) for r in conn.execute("EXPLAIN QUERY PLAN " + history[0]))
    onto.close()
    assert "no longer says (since v2): “Workers restart every night”" in render_memory_topic(topic)
    assert "history_withdrawn" in plan and "SCAN h" not in plan, plan


def test_a_line_the_next_version_extends_is_not_listed_as_no_longer_said(tmp_path: Path):
    """Blind round 6: an agent maintaining its memory extends a line ("Workers restart every night" ->
    "… every night and after each deploy"). The shorter claim is withdrawn in the graph, but the file
    still says it word for word: "no longer says" would tell the agent the opposite of what the file
    says. A line really changed or removed is still listed."""
    onto = Ontology(tmp_path, "shop", create=True)
    assert onto.ingest("project_queue.md", QUEUE.encode(), Channel.CLI).status.value == "new"
    later = (QUEUE.replace("- Workers restart every night\n", "- Workers restart every night and after each deploy\n")
             .replace("- Retries back off exponentially\n", "- Retries back off linearly\n"))
    assert onto.ingest("project_queue.md", later.encode(), Channel.CLI).status.value == "new"
    with onto.reader() as conn:
        topic = memory_topics(conn, ["project_queue.md"])["project_queue.md"]
    onto.close()
    assert "Workers restart every night" in dict((text, n) for n, text in topic.dropped), "withdrawn in the graph"
    shown = render_memory_topic(topic)
    assert shown.startswith(later) and "no longer says (since v2): “Retries back off exponentially”" in shown
    assert "no longer says (since v2): “Workers restart every night”" not in shown


def test_kgbridge_show_lists_only_claims_some_source_still_holds(tmp_path: Path):
    """A claim every source withdrew (here: the file's next version no longer states it) is history: the
    table leaves it out and says how many it left out, instead of a row "0 for / 0 against"."""
    def note(body: str, day: str) -> bytes:
        return f"---\nname: cache\ndescription: the cache\ntype: project\nmodified: {day}\n---\n{body}\n".encode()

    onto = Ontology(tmp_path / "K", "shop", create=True)
    onto.ingest("project_cache.md", note("- Redis holds sessions\n- Memcached holds fragments", "2026-04-01"),
                Channel.CLI)
    onto.ingest("project_cache.md", note("- Redis holds sessions", "2026-04-02"), Channel.CLI)
    onto.close()
    for args in (["show"], ["show", "project-cache"]):
        out = subprocess.run([*KGBRIDGE, *args, "--root", str(tmp_path / "K"), "--ontology", "shop"],
                             capture_output=True, text=True, timeout=60, check=True, env={**os.environ, "COLUMNS": "200"})
        assert "Redis holds sessions" in out.stdout, out.stdout
        assert "Memcached" not in out.stdout and "1 withdrawn claim not listed" in out.stdout, out.stdout


def test_a_file_written_between_the_listing_and_the_lock_is_not_taken_for_vanished(tmp_path: Path):
    """The rescan lists the folder, then takes the folder's lock; a hook that writes a new memory file in
    between records it under the lock. The listing does not have it: it must not become a tombstone."""
    from kgbridge import capture, forgetting
    from kgbridge.state import ProjectState

    state = ProjectState("shop", base=tmp_path / "state")
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "a.md").write_bytes(b"---\nname: a\ndescription: a\ntype: project\n---\n- A holds\n")
    listed = forgetting.listing(folder)
    late = b"---\nname: b\ndescription: b\ntype: project\n---\n- B holds\n"
    (folder / "b.md").write_bytes(late)
    capture.remember(state, {"b.md": late}, forgetting.Folder.CLAUDE)  # what the hook does
    capture.forget_vanished(state, listed, state.delivered(), set(), there=lambda name: (folder / name).is_file())
    assert not [i for i in state.outbox_items() if i.drop_name.startswith("tombstone.")], state.outbox_items()
    (folder / "b.md").unlink()  # gone for real: the next rescan sends its tombstone
    capture.forget_vanished(state, forgetting.listing(folder), state.delivered(), set(),
                            there=lambda name: (folder / name).is_file())
    assert [i.drop_name for i in state.outbox_items() if i.drop_name.startswith("tombstone.")], state.outbox_items()


def memory_text(name: str, description: str, body: str, type_: str = "project") -> str:
    return memory_bytes(name, description, body.rstrip("\n"), type_).decode()


BILLING = memory_text("billing", "how customers pay", "- Stripe handles card payments.\n"
                      "- Refunds go through the support queue.\n")
INVOICES = memory_text("invoices", "monthly invoices", "- Invoices are generated on the first day of each month.\n"
                       "- Invoice PDFs are kept in the `shop-invoices` bucket.\n")
REVIEWS = memory_text("reviews", "code review habits", "- Keep pull requests under 400 changed lines.\n"
                      "- Ask the owning team for the review.\n", "feedback")
PAYMENTS = memory_text("payments", "billing and invoices", "## Billing\n- Stripe handles card payments.\n"
                       "- Refunds go through the support queue.\n\n## Invoices\n"
                       "- Invoices are generated on the first day of each month.\n"
                       "- Invoice PDFs are kept in the `shop-invoices` bucket.\n")


@requires_fuse
def test_files_merged_or_renamed_away_do_not_come_back_as_generated_pages(tmp_path: Path):
    """harm13: the agent merges two topic files into a new one and renames a third the way Claude Code does
    (Write the new name, then `rm` the old ones), all on disk through real hooks. Each old file's concept still
    holds claims, now stated by the new files, and was shown through the mount as a generated page under a
    hyphenated name the author never wrote (`project-billing.md`) and listed "not in the index": to the agent,
    the files it deleted came back, with their old text. A concept only the ledger knows keeps its page.
    Fails with `snapshot.PAGED_CONCEPTS` back to "every concept with a standing claim"."""
    stack = Stack(tmp_path, "dir")
    mem = stack.bridge.memory_dir
    (mem / "MEMORY.md").write_text("# Memory\n\n- [Billing](project_billing.md) - Stripe, refunds\n"
                                   "- [Invoices](project_invoices.md) - monthly PDFs\n"
                                   "- [Reviews](feedback_reviews.md) - small pull requests\n")
    (mem / "project_billing.md").write_text(BILLING)
    (mem / "project_invoices.md").write_text(INVOICES)
    (mem / "feedback_reviews.md").write_text(REVIEWS)
    (stack.bridge.ledger_dir / "2026-04-05T1445Z_e001.md").write_bytes(
        ledger("s1", "## Search index\n- The search index is rebuilt every night at 02:00."))
    with stack.running():
        stack.stop_hook(settle_on=5)
        # The next session: the new files are written (each reaches its PostToolUse hook), then the old ones go.
        for name, text in [("project_payments.md", PAYMENTS), ("feedback_code_review.md", REVIEWS),
                           ("MEMORY.md", "# Memory\n\n- [Payments](project_payments.md) - Stripe, refunds, PDFs\n"
                                         "- [Code review](feedback_code_review.md) - small pull requests\n")]:
            (mem / name).write_text(text)
            assert stack.bridge.hook(stack.bridge.post_tool_use(mem / name), env=stack.env).returncode == 0
        assert wait_for(lambda: stack.artifacts() >= 8, timeout=30), stack.rows("SELECT filename, kind FROM artifacts")
        for name in ("project_billing.md", "project_invoices.md", "feedback_reviews.md"):
            (mem / name).unlink()
        stack.stop_hook(settle_on=11)
        assert wait_for(lambda: {s for s, deleted in stack.sources() if deleted is None and s.startswith("memory:")} == {
            "memory:shop/MEMORY.md", "memory:shop/project_payments.md", "memory:shop/feedback_code_review.md"}), \
            stack.sources()
        assert stack.claim("Stripe handles card payments")[1] == 1, "the merged file states it"
    at = tmp_path / "view"
    at.mkdir()
    result = stack.bridge.cli("mount", "--at", str(at))
    assert result.returncode == 0, result.stderr
    try:
        shown = set(listed(at))
        memory = subprocess.run(["cat", str(at / "MEMORY.md")], capture_output=True, text=True, timeout=30,
                                check=True).stdout
        page = subprocess.run(["cat", str(at / "search-index.md")], capture_output=True, text=True, timeout=30,
                              check=True).stdout
    finally:
        stack.bridge.cli("unmount", "--at", str(at))
        unmount(at)
    assert shown == {"MEMORY.md", "project_payments.md", "feedback_code_review.md", "search-index.md"}, shown
    for gone in ("billing", "invoices", "reviews"):
        assert f"-{gone}.md" not in memory and f"[{gone}]" not in memory, memory
    assert "[search-index](search-index.md)" in memory, "what only the ledger knows is still listed"
    assert "rebuilt every night at 02:00" in page
    assert "search-index.md" in rebuild_gives_the_same_graph(stack.graph_root)


def test_a_dispute_on_a_renamed_away_files_concept_names_a_file_that_is_there(onto: Ontology):
    """harm13: a file renamed the Write-then-`rm` way leaves its claims on its old concept, which gets no page
    any more (the test above); a dispute on one of those claims named that page as its topic, a file the
    agent cannot open. It names the file that states the claim. Fails with `snapshot._topic_of` returning the
    concept's page name whatever."""
    rules = memory_bytes("deploys", "deploy rules", "- The Celery broker is RabbitMQ.")
    onto.ingest_many([(drop_name("memory", rules, "project_deploys.md"), rules, Channel.CLI),
                      (drop_name("memory", NOTES, "project_notes.md"), NOTES, Channel.CLI)],
                     received_at="2026-05-01T09:00:00Z")
    onto.ingest("project_release.md", rules, Channel.CLI)  # the new name first (its PostToolUse) …
    record = forgetting.move("project_deploys.md", "project_release.md", rules, "2026-05-02T10:00:00Z")
    onto.ingest(drop_name("move", record, "project_release.md"), record, Channel.CLI)  # … then the rescan
    view = ProjectionView(onto)
    assert "project-deploys.md" not in view.names()
    disputed = [line for line in view.read("MEMORY.md").decode().splitlines() if "**CONTESTED**" in line]
    assert len(disputed) == 1 and disputed[0].endswith("(topic: project_release.md)"), disputed


def test_a_file_the_agent_deleted_does_not_come_back_as_a_page_for_what_a_ledger_says_of_it(onto: Ontology):
    """harm14: a session's ledger entry speaks of what a memory file is about (its claim lands on the file's
    concept); the agent then deletes the file. The concept still held the ledger's claim, so it got a page,
    under the deleted file's own name (`search.md`), listed "not in the index" and holding the file's old
    lines as withdrawn claims: to the agent, the file it deleted came back. No page for a deleted or
    renamed-away file's concept; a concept only the ledger knows keeps its page; what the ledger said is
    still found by search. Fails with the view's and MEMORY.md's page lists back to PAGED_CONCEPTS alone."""
    search = memory_bytes("search", "the search index", "- The search index is rebuilt every night at 02:00.\n"
                          "- Search ranks results with BM25.")
    onto.ingest("MEMORY.md", b"# Memory\n\n- [Search](search.md) - the search index\n", Channel.CLI)
    onto.ingest("search.md", search, Channel.CLI)
    onto.ingest("2026-04-05T1445Z_e001.md", ledger("s1", "- The search index now rebuilds every hour.\n\n"
                                                         "## Mail relay\n- The mail relay retries three times."),
                Channel.CLI)
    view = ProjectionView(onto)
    assert set(view.names()) == {"MEMORY.md", "search.md", "mail-relay.md"}, view.names()
    tombstone = json.dumps({"kgbridge": "tombstone", "file": "search.md", "at": "2026-11-30T04:00:00Z"}).encode()
    onto.ingest(drop_name("tombstone", tombstone, "search.md"), tombstone, Channel.CLI)
    onto.ingest("MEMORY.md", b"# Memory\n\n", Channel.CLI)
    assert set(view.names()) == {"MEMORY.md", "mail-relay.md"}, view.names()
    memory = view.read("MEMORY.md").decode()
    assert "search.md" not in memory and "[mail-relay](mail-relay.md)" in memory, memory
    from ontology.search import search as search_claims
    with onto.reader() as conn:
        assert any("rebuilds every hour" in hit.text for hit in search_claims(conn, "rebuilds every hour"))


NOTES = memory_bytes("notes", "team notes", "- The Celery broker is SQS.")
