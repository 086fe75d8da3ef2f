"""A memory folder seen through the projection keeps its files, its index and its words: each memory
file is one concept named by its own file (not by `name:`), the host's index is shown verbatim with
marks, topic files are the newest version plus an evidence appendix, and edits become new versions."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support.bridge_env import BridgeEnv, drops, wait_for
from conftest import ledger
from support.fuse_helpers import requires_fuse, unmount
from ontology.artifact import Channel
from ontology.ingest import Ontology
from projection.mount import ingest_host_files
from projection.view import ProjectionView

# The shape real Claude Code writes: `project_x.md` holding `name: x`, a nested `metadata:` block with
# node_type / originSessionId / modified, a human title in the index, and sections per memory type.
FOLDER = {
    "MEMORY.md": "# Memory index\n\n## User\n- [ユーザー像](user_role.md) — backend engineer, reads diffs before prose\n\n"
                 "## Feedback\n- [Review rule](feedback_review.md) — never merge without a second reviewer\n\n"
                 "## Project\n- [Checkout flow](project_checkout.md) — ships from the release branch\n",
    "user_role.md": "---\nname: role\ndescription: who the user is\nmetadata:\n  node_type: memory\n  type: user\n"
                    "  originSessionId: 0b6c1f0e-1111-4a2b-9c3d-222233334444\n---\nThe user is a backend engineer.\n",
    "feedback_review.md": "---\nname: review-rule\ndescription: merging needs two people\ntype: feedback\n---\n"
                          "Never merge without a second reviewer.\n\n**Why:** a solo merge broke billing once.\n",
    "project_checkout.md": "---\nname: checkout\ndescription: how checkout ships\nmetadata:\n  node_type: memory\n"
                           "  type: project\n  originSessionId: 0b6c1f0e-1111-4a2b-9c3d-555566667777\n"
                           "  modified: 2026-04-01T10:00:00Z\n---\n\nThe checkout service ships from the release branch.\n\n"
                           "- Payment database: postgres\n- Before merging read [the review rule](feedback_review.md) "
                           "and [[user_role]].\n",
}
HOOKS = [line for line in FOLDER["MEMORY.md"].splitlines() if line.startswith("- [")]


def write_folder(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in FOLDER.items():
        (directory / name).write_text(text, encoding="utf-8")


def test_memory_files_keep_their_own_names_and_the_index_its_lines(tmp_path):
    write_folder(tmp_path / "memory")
    onto = Ontology(tmp_path / "K", "shop", create=True)
    ingest_host_files(onto, tmp_path / "memory")
    view = ProjectionView(onto)
    assert set(view.names()) == set(FOLDER), "each file under its own name, and no twin from its `name:` or index line"
    memory = view.read("MEMORY.md").decode()
    lines = memory.splitlines()
    for hook in HOOKS:
        assert sum(ln.startswith(hook) for ln in lines) == 1, hook
    assert all(heading in lines for heading in ("# Memory index", "## User", "## Feedback", "## Project"))
    assert "INSUFFICIENT_DATA" not in memory and "no claims" not in memory
    for name in ("user_role.md", "feedback_review.md", "project_checkout.md"):
        assert view.read(name).decode().startswith(FOLDER[name]), f"{name} shows its newest version verbatim"
    onto.close()


def test_without_an_index_rules_come_first_under_the_files_own_names(tmp_path):
    write_folder(tmp_path / "memory")
    (tmp_path / "memory" / "MEMORY.md").unlink()
    onto = Ontology(tmp_path / "K", "shop", create=True)
    ingest_host_files(onto, tmp_path / "memory")
    lines = ProjectionView(onto).read("MEMORY.md").decode().splitlines()
    entries = [ln for ln in lines if ln.startswith("- [")]
    assert [e.split("](")[1].split(")")[0] for e in entries][2:] == ["project_checkout.md"]
    assert {e.split("](")[1].split(")")[0] for e in entries[:2]} == {"user_role.md", "feedback_review.md"}
    assert "- [checkout](project_checkout.md) — how checkout ships" in lines, "`name:` is the title"
    onto.close()


@pytest.fixture
def mounted(tmp_path: Path):
    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    write_folder(bridge.memory_dir)
    onto = Ontology(bridge.root, "shop")
    onto.ingest("2026-04-03T0900Z_e001.md", ledger("s7", "- Payment database: mysql", timestamp="2026-04-03T09:00:00Z"),
                Channel.CLI)
    onto.close()
    result = bridge.cli("mount")
    assert result.returncode == 0, result.stderr
    yield bridge
    bridge.cli("unmount")
    unmount(bridge.memory_dir)


def cat(path: Path) -> str:
    return subprocess.run(["cat", str(path)], capture_output=True, text=True, timeout=30, check=True).stdout


@requires_fuse
def test_through_the_mount_the_index_topic_files_and_links_are_the_authors(mounted):
    mem = mounted.memory_dir
    memory = cat(mem / "MEMORY.md").splitlines()
    assert HOOKS[2] + " ⟨kg: 1 disputed⟩" in memory, "the host's line, verbatim, with a mark"
    assert HOOKS[0] in memory and HOOKS[1] in memory, "nothing to say about these: no mark"
    disputed = next(ln for ln in memory if ln.startswith("- **CONTESTED**"))
    assert "project_checkout.md 2026-04-01" in disputed and "ledger s7 2026-04-03" in disputed, "both sides named"
    assert memory.index(disputed) < memory.index("# Memory index"), "the disputed section sits above the index"
    topic = cat(mem / "project_checkout.md")
    assert topic.startswith(FOLDER["project_checkout.md"])
    assert "- ledger s7 (2026-04-03) supersedes: “Payment database: mysql” on “Payment database: postgres”" in topic
    assert cat(mem / "feedback_review.md").startswith(FOLDER["feedback_review.md"]), "a link by the original name resolves"
    assert cat(mem / "user_role.md").startswith(FOLDER["user_role.md"]), "so does a wikilink's"


@requires_fuse
def test_an_edit_through_the_mount_is_the_next_version_of_that_same_file(mounted):
    target = mounted.memory_dir / "project_checkout.md"
    payload = {"session_id": "s1", "cwd": str(mounted.project), "hook_event_name": "PreToolUse", "tool_name": "Edit",
               "tool_input": {"file_path": str(target), "old_string": "from the release branch.",
                              "new_string": "from the main branch."}}
    result = mounted.hook(payload)
    assert json.loads(result.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    # applied by the hook's worker: the hook itself never reads through the mount
    assert wait_for(lambda: [p for p in drops(mounted.ingest) if p.name.endswith(".project_checkout.md")])
    dropped = [p for p in drops(mounted.ingest) if p.name.endswith(".project_checkout.md")]
    edited = FOLDER["project_checkout.md"].replace("from the release branch.", "from the main branch.")
    assert [p.read_text() for p in dropped] == [edited]
    onto = Ontology(mounted.root, "shop")
    onto.ingest(dropped[0].name, dropped[0].read_bytes(), Channel.DROP)  # what the watcher does with a drop
    onto.close()
    topic = cat(target)
    assert topic.startswith(edited), "the projection shows the new version on the next read"
    assert "## Earlier versions" in topic and "v2 2026-04-01 (shown above) · v1 2026-04-01" in topic
    assert "no longer says (since v2): “The checkout service ships from the release branch”" in topic
    names = sorted(p.name for p in mounted.memory_dir.iterdir())
    assert names == sorted([*FOLDER, "session-notes.md"]), "still one file, same name (plus the ledger's topic)"


def test_a_rival_from_the_same_day_disputes_and_only_a_later_day_supersedes(tmp_path):
    """Files ingested together differ by moments of arrival; "supersedes" must mean a later day."""
    def memory_file(value: str, modified: str) -> str:
        return (f"---\nname: db-{value}\ndescription: the payment database\ntype: project\n"
                f"modified: {modified}\n---\n\n- Payment SQL database: {value}\n")  # a key naming its subject (ADR 0009)

    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "project_db_a.md").write_text(memory_file("postgres", "2026-04-01T09:00:00Z"), encoding="utf-8")
    (folder / "project_db_b.md").write_text(memory_file("mysql", "2026-04-01T17:00:00Z"), encoding="utf-8")
    (folder / "project_db_c.md").write_text(memory_file("sqlite", "2026-04-05T09:00:00Z"), encoding="utf-8")
    onto = Ontology(tmp_path / "K", "shop", create=True)
    ingest_host_files(onto, folder)
    topic = ProjectionView(onto).read("project_db_a.md").decode()
    onto.close()
    assert "project_db_b.md (2026-04-01) disputes:" in topic, topic
    assert "project_db_c.md (2026-04-05) supersedes:" in topic, topic


@requires_fuse
@pytest.mark.parametrize("tool", ["Edit", "Write"])
def test_an_index_edit_through_the_mount_saves_the_authors_index_without_the_projections_lines(mounted, tool):
    """Claude Code adds a line to MEMORY.md after each memory it saves: what it saw there was our header,
    disputed section, marks and footer around the author's index; only the author's lines are saved."""
    target = mounted.memory_dir / "MEMORY.md"
    shown = cat(target)
    assert "⟨kg: 1 disputed⟩" in shown and "## Disputed" in shown and "kg_contested._" in shown
    new_line = "- [Deploy days](project_deploy.md) — deploys only on Fridays"
    if tool == "Edit":
        tool_input = {"file_path": str(target), "old_string": "## Project\n", "new_string": f"## Project\n{new_line}\n"}
    else:  # a rewrite of what it read, with one more line
        tool_input = {"file_path": str(target), "content": shown.rstrip("\n") + f"\n{new_line}\n"}
    payload = {"session_id": "s1", "cwd": str(mounted.project), "hook_event_name": "PreToolUse", "tool_name": tool,
               "tool_input": tool_input}
    assert json.loads(mounted.hook(payload).stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert wait_for(lambda: [p for p in drops(mounted.ingest) if p.name.endswith(".MEMORY.md")])
    saved = [p.read_text() for p in drops(mounted.ingest) if p.name.endswith(".MEMORY.md")]
    expected = (FOLDER["MEMORY.md"].replace("## Project\n", f"## Project\n{new_line}\n") if tool == "Edit"
                else FOLDER["MEMORY.md"] + f"{new_line}\n")
    assert saved == [expected]
