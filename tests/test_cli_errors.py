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


def test_show_prints_the_authors_brackets_verbatim(bridge):
    """`show` lists claims as written: rich must not read `[a-z0-9-]` or `[x]` as markup."""
    bridge.cli("activate")
    note = bridge.base / "project_slugs.md"
    note.write_text("---\nname: slug rules\ndescription: slugs match [a-z0-9-] only\n---\n"
                    "- Ontology slugs match `[a-z0-9-]+` and [bold]nothing else[/bold].\n", encoding="utf-8")
    assert bridge.cli("ingest", "--ontology", "shop", str(note)).returncode == 0
    wide = bridge.environ(COLUMNS="400")  # one row per claim, no folding inside the words
    listed = bridge.cli("show", "--ontology", "shop", env=wide)
    assert listed.returncode == 0, listed.stderr
    flat = " ".join(listed.stdout.split())
    assert "[a-z0-9-]+" in flat and "[bold]nothing else[/bold]" in flat, listed.stdout
    key = next(c for c in __import__("json").loads(bridge.cli("show", "--ontology", "shop", "--json").stdout)[
        "assertions"] if "[a-z0-9-]+" in c["text"])["concept"]
    one = bridge.cli("show", key, "--ontology", "shop", env=wide)
    assert one.returncode == 0, one.stderr
    assert "[a-z0-9-]+" in " ".join(one.stdout.split()), one.stdout


def test_the_verbs_run_most_often_start_without_loading_the_graph_nor_the_server_mcp():
    """activate / status / flush / install-hooks / deactivate (hooks, scripts, the tests) never touch the
    graph; `import kgbridge.cli` leaves it to the verbs that do (show, search, ingest, rebuild, project),
    which halves those verbs' start-up. The MCP SDK is two thirds of a server's start-up."""
    import subprocess
    import sys

    code = "import sys, kgbridge.cli; print(' '.join(sorted(sys.modules))); import kgbridge.serve; print(*sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    cli, serve = (set(line.split()) for line in done.stdout.splitlines())
    heavy = {"ontology.ingest", "ontology.store", "ontology.search", "ontology.queries", "ontology.extract",
             "projection.topic"}
    assert not heavy & cli, heavy & cli
    # nor does the server load the MCP SDK before the first /mcp request (ontology.server.LazyMCP)
    assert "ontology.ingest" in serve and not {m for m in serve if m == "mcp" or m.startswith("mcp.")}


def test_project_never_writes_over_a_memory_folder(bridge):
    """blind14: `kgbridge project --to` the agent's memory folder replaced its MEMORY.md and notes with our
    rendering, and the hooks captured that back as the author's words (one more header, footer and
    appendix per round). The capture slot, and any folder holding markdown of its own, are refused as
    they are; a folder `project` wrote before is refreshed."""
    assert bridge.cli("activate").returncode == 0
    slot = bridge.memory_dir
    slot.mkdir(parents=True, exist_ok=True)
    files = {"MEMORY.md": "# Memory\n\n- [Deploy](deploy.md) — Tuesdays\n",
             "deploy.md": "---\nname: deploy\ndescription: when\ntype: project\n---\nWe ship on Tuesdays.\n"}
    other = bridge.base / "notes"
    for folder in (slot, other):
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
    before = {p: p.read_bytes() for folder in (slot, other) for p in folder.iterdir()}
    line = _one_line_refusal(bridge.cli("project", "--to", str(slot)))
    assert "memory folder the hooks capture from" in line
    line = _one_line_refusal(bridge.cli("project", "--to", str(other)))
    assert "MEMORY.md" in line and "kgbridge mount" in line
    assert {p: p.read_bytes() for folder in (slot, other) for p in folder.iterdir()} == before
    fresh = bridge.base / "projection"
    for _ in range(2):  # a folder it wrote itself: written again
        done = bridge.cli("project", "--to", str(fresh))
        assert done.returncode == 0, done.stderr
    assert (fresh / "MEMORY.md").read_text().count("kgbridge") >= 1
