"""What the agent reads through the projection is its memory folder, byte for byte where it is the
author's: shapes real folders have (a literal CR in a code span, index lines that link several files,
topic files other sources say nothing about, an index or a table too long for the budget, subfolders)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest

from ontology import queries
from ontology.artifact import Channel
from ontology.ingest import Ontology
from ontology.search import Filters, search
from projection.mount import ingest_host_files, mount, unmount
from support.fuse_helpers import unmount as force_unmount
from projection.render import ConceptLine, DisputedLine, MemorySnapshot, render_memory
from projection.topic import APPENDIX_MARKER
from projection.view import ProjectionView
from support.bridge_env import BridgeEnv, drops, wait_for
from support.fuse_helpers import requires_fuse
from support.leftovers import processes_under


def project(tmp_path: Path, files: dict[str, bytes | str]) -> ProjectionView:
    folder = tmp_path / "memory"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    onto = Ontology(tmp_path / "K", "notes", create=True)
    ingest_host_files(onto, folder)
    return ProjectionView(onto)


def note(name: str, body: str, kind: str = "project") -> str:
    return f"---\nname: {name}\ndescription: {name} in short\ntype: {kind}\n---\n{body}"


def test_a_lone_carriage_return_in_the_authors_text_is_kept(tmp_path):
    """A CR inside an LF file is the author's character (a shell quote of it), not a line break."""
    body = "Count stray returns with `grep -c $'\r'` before blaming the editor.\n\nA second paragraph.\n"
    data = note("stray-returns", body).encode()
    view = project(tmp_path, {"stray_returns.md": data})
    assert view.read("stray_returns.md").startswith(data)


@pytest.mark.parametrize("top", [
    "---\ntitle: Memory index\nupdated: 2026-11-30\n---\n\n",  # an Obsidian-style header
    "---\nname: Memory\ndescription: the index\ntype: reference\n---\n",  # typed like a memory file
    "---\nupdated: 2026-11-30\n",  # opened and never closed
])
def test_an_index_that_opens_with_frontmatter_is_still_the_index_verbatim(tmp_path, top):
    """blind14: Claude Code loads MEMORY.md whole, whatever its top holds. One that opened with frontmatter
    was read as a document: the agent got a generated index and none of the author's lines."""
    index = top + "# Memory\n\n- [Deploy](project_deploy.md) — how we ship, Tuesdays only\n"
    files = {"MEMORY.md": index, "project_deploy.md": note("deploy", "We ship on Tuesdays.\n"),
             "orphan_note.md": note("orphan", "The staging host restarts nightly.\n")}
    memory = project(tmp_path, files).read("MEMORY.md").decode()
    assert index.rstrip("\n") in memory
    assert memory.count("(project_deploy.md)") == 1  # linked by the author, not added again
    assert "(orphan_note.md)" in memory.split(index.rstrip("\n"), 1)[1]


def test_every_file_an_index_line_links_is_in_the_index_not_an_addition(tmp_path):
    """An index line may list several files (`[a](a.md) · [b](b.md)`); none of them is added again under
    "not in the index", and only a file the index never links is."""
    index = ("# Index\n\n## Habits\n- [Tabs](habit_tabs.md) · [Short commits](habit_commits.md) · "
             "[[habit-reviews]]\n")
    files = {"MEMORY.md": index, "habit_tabs.md": note("tabs", "Indent with tabs.\n"),
             "habit_commits.md": note("commits", "Keep commits under 200 lines.\n"),
             "habit-reviews.md": note("reviews", "Ask for a review before merging.\n"),
             "orphan_note.md": note("orphan", "The staging host restarts nightly.\n")}
    memory = project(tmp_path, files).read("MEMORY.md").decode()
    assert index.rstrip("\n") in memory
    added = memory.split("## Also in the knowledge graph (not in the index), ranked", 1)[1]
    assert "orphan_note.md" in added
    for name in ("habit_tabs.md", "habit_commits.md", "habit-reviews.md"):
        assert memory.count(f"({name})") + memory.count("[[habit-reviews]]") * (name == "habit-reviews.md") == 1, name


def test_an_index_link_to_a_name_with_spaces_or_parentheses_is_in_the_index(tmp_path):
    """Windows and macOS users name files `release plan.md` or `report (1).md`; an index links them as
    `<release plan.md>`, `%20`, bare (`[x](🚀 launch.md)`) or with a title. None is added again under
    "not in the index"; prose in parentheses after a bracket links nothing."""
    index = ("# Index\n\n- [Plan](<release plan.md>) — the plan\n- [Copy](report (1).md) — a copy\n"
             "- [Launch](🚀 launch.md) — launch steps\n- [Ops](ops%20notes.md \"on-call\") — ops\n"
             "- [Ask](the on-call person) before a deploy\n")
    files = {"MEMORY.md": index, "release plan.md": note("plan", "Ship the beta in May.\n"),
             "report (1).md": note("copy", "The export runs at midnight.\n"),
             "🚀 launch.md": note("launch", "Tag, then announce in the channel.\n"),
             "ops notes.md": note("ops", "Pager rotation changes on Mondays.\n"),
             "the on-call person.md": note("person", "The rota lives in the wiki.\n")}
    memory = project(tmp_path, files).read("MEMORY.md").decode()
    assert index.rstrip("\n") in memory
    added = memory.split("## Also in the knowledge graph (not in the index), ranked", 1)[1]
    assert "the on-call person.md" in added
    for name in ("release plan.md", "report (1).md", "🚀 launch.md", "ops notes.md"):
        assert name not in added, name


def test_a_file_the_index_names_without_a_link_is_in_the_index_not_an_addition(tmp_path):
    """An author may name a file in the index without a Markdown link: in a code span ("kept out of the
    list on purpose"), in bold, bare, or as a path. The file is in the index by the author's own words;
    listing it under "not in the index" says otherwise (judge12). A name that only contains another
    file's name (`old_drafts.md.bak`, `mydrafts.md`) names nothing."""
    index = ("# Index\n\n- [Deploys](deploys.md) — Fridays only\n\n## Elsewhere\n"
             "- loose ends go in `drafts.md`, deliberately unlisted\n- **Glossary.md** holds the team's words\n"
             "- see memory/oncall_rota.md for the rota; old_inbox.md.bak is gone, myinbox.md too\n")
    files = {"MEMORY.md": index, "deploys.md": note("deploys", "Deploys happen on Fridays.\n"),
             "drafts.md": note("drafts", "Half-formed idea: cache the tariff table.\n"),
             "glossary.md": note("glossary", "A berth is a parking slot for a ship.\n"),
             "oncall_rota.md": note("rota", "The rota changes on Mondays.\n"),
             "inbox.md": note("inbox", "Reply to the harbour office about the invoice.\n")}
    memory = project(tmp_path, files).read("MEMORY.md").decode()
    assert index.rstrip("\n") in memory
    added = memory.split("## Also in the knowledge graph (not in the index), ranked", 1)[1]
    assert "(inbox.md)" in added, added
    for name in ("drafts.md", "glossary.md", "oncall_rota.md"):
        assert name not in added, name


def test_a_file_added_under_not_in_the_index_is_linked_so_a_markdown_reader_follows_it(tmp_path):
    """A file the index does not link is listed with a link a Markdown reader resolves to that very file:
    `[x](sprint notes.md)` is no link at all (CommonMark ends a bare destination at the space), so a name
    with a space or a parenthesis goes in `<…>`; copied back into the index, the line still indexes it."""
    from urllib.parse import unquote

    from markdown_it import MarkdownIt

    files = {"MEMORY.md": "# Index\n\n- [Deploys](deploys.md) — Fridays only\n",
             "deploys.md": note("deploys", "Deploys happen on Fridays.\n"),
             "sprint notes.md": note("sprint", "The retro is on the last Thursday of the sprint.\n"),
             "budget (draft).md": note("budget", "The cloud budget is reviewed every quarter.\n")}
    memory = project(tmp_path, files).read("MEMORY.md").decode()
    added = memory.split("## Also in the knowledge graph (not in the index), ranked", 1)[1]
    tokens = [t for block in MarkdownIt().parse(added) for t in (block.children or [])]
    followed = {unquote(str(t.attrs["href"])) for t in tokens if t.type == "link_open"}
    assert {"sprint notes.md", "budget (draft).md"} <= followed, added
    lines = [line for line in added.splitlines() if line.startswith("- [")]
    reindexed = {**files, "MEMORY.md": files["MEMORY.md"] + "\n".join(lines) + "\n"}
    again = project(tmp_path / "again", reindexed).read("MEMORY.md").decode()
    assert "## Also in the knowledge graph (not in the index)" not in again


def test_a_mark_on_a_line_that_links_several_files_names_the_file_it_is_about():
    index = "- [Tabs](habit_tabs.md) · [Reviews](habit_reviews.md)\n- [Deploys](deploys.md) — Fridays\n"
    indexed = {"habit_tabs.md": ConceptLine("habit_tabs", "habit_tabs.md", "Tabs", "", "project"),
               "habit_reviews.md": ConceptLine("habit_reviews", "habit_reviews.md", "Reviews", "", "project",
                                               "1 disputed"),
               "deploys.md": ConceptLine("deploys", "deploys.md", "Deploys", "", "project", "1 disputed")}
    lines = render_memory(MemorySnapshot("notes", "2026-05-01", {}, host_index=index, indexed=indexed)).splitlines()
    assert "- [Tabs](habit_tabs.md) · [Reviews](habit_reviews.md) ⟨kg: habit_reviews.md: 1 disputed⟩" in lines
    assert "- [Deploys](deploys.md) — Fridays ⟨kg: 1 disputed⟩" in lines, "one file: the line is about it"


def test_a_file_no_other_source_speaks_to_is_shown_exactly_as_written(tmp_path):
    """No appendix saying there is nothing to add: the agent reads its own file, byte for byte (the last
    line without its newline too), and an appendix appears where another source does speak."""
    alone = note("queue-limits", "The job queue holds at most 500 jobs.\n\n| queue | limit |\n|---|---|\n| jobs | 500 |")
    view = project(tmp_path, {"queue_limits.md": alone,
                              "db_a.md": note("db-a", "- The payment service keeps its ledger in Postgres.\n"),
                              "db_b.md": note("db-b", "- The payment service keeps its ledger in Postgres.\n")})
    assert view.read("queue_limits.md") == alone.encode()
    assert "kgbridge" in view.read("db_a.md").decode(), "db_b.md agrees: that is worth a line"


@requires_fuse
def test_through_the_mount_subfolders_and_other_files_stay_readable(tmp_path):
    """A real folder may keep notes in a subfolder or a script beside them: the mount must not hide them
    (read-only, as every file the host has; symlinks are not followed)."""
    slot = tmp_path / "memory"
    host = {"MEMORY.md": "- [Tabs](habit_tabs.md) — tabs\n- [Old plan](archive/plan_v1.md) — the first plan\n",
            "habit_tabs.md": note("tabs", "Indent with tabs.\n"), "restore.sh": "#!/bin/sh\necho restore\n",
            "archive/plan_v1.md": "The first plan shipped on a Tuesday.\n",
            "archive/older/plan_v0.md": "A sketch nobody shipped.\n", "archive/.hidden.md": "not shown\n"}
    for name, text in host.items():
        (slot / name).parent.mkdir(parents=True, exist_ok=True)
        (slot / name).write_text(text, encoding="utf-8")
    (slot / "archive" / "elsewhere.md").symlink_to("/etc/hostname")
    Ontology(tmp_path / "K", "notes", create=True).close()
    mount(tmp_path / "K", "notes", slot, state_dir=tmp_path / "state")
    try:
        def cat(name: str) -> str:
            return subprocess.run(["cat", str(slot / name)], capture_output=True, text=True, timeout=30,
                                  check=True).stdout

        assert "archive" in os.listdir(slot) and "restore.sh" in os.listdir(slot)
        assert sorted(os.listdir(slot / "archive")) == ["elsewhere.md", "older", "plan_v1.md"]
        assert os.readlink(slot / "archive" / "elsewhere.md") == "/etc/hostname", "the link itself, as on disk"
        for name in ("restore.sh", "archive/plan_v1.md", "archive/older/plan_v0.md"):
            assert cat(name) == host[name], name
        assert cat("habit_tabs.md") == host["habit_tabs.md"]
        try:
            os.open(slot / "archive" / "new.md", os.O_WRONLY | os.O_CREAT, 0o644)
            raise AssertionError("a write into a subfolder must fail")
        except OSError as exc:
            assert exc.errno == errno.EROFS
    finally:
        unmount(slot, tmp_path / "state")
    assert processes_under(tmp_path) == {}, "unmount returned while its daemon still ran"
    assert (slot / "archive" / "plan_v1.md").read_text() == host["archive/plan_v1.md"], "the host folder untouched"


@requires_fuse
def test_through_the_mount_two_files_whose_names_differ_only_in_case_are_two_files(tmp_path):
    """`Deploy.md` and `deploy.md` are two files on a case-sensitive disk, and the agent reads both: each
    is listed and read as written, with nothing of the other's appended (one lower-cased concept key made
    each file's appendix "add" the other's lines, harm14); the index links each to its own file."""
    slot = tmp_path / "memory"
    slot.mkdir()
    host = {"MEMORY.md": "- [Deploy](Deploy.md) — how the web app ships\n- [deploy](deploy.md) — the cron box\n",
            "Deploy.md": "---\nname: Deploy\ndescription: how the web app ships\ntype: project\n---\n"
                         "- The web app ships through the blue-green pipeline on Tuesdays.\n",
            "deploy.md": "---\nname: deploy\ndescription: the cron box rollout\ntype: project\n---\n"
                         "- The cron box is patched by hand on Fridays.\n"}
    for name, text in host.items():
        (slot / name).write_text(text, encoding="utf-8")
    onto = Ontology(tmp_path / "K", "notes", create=True)
    ingest_host_files(onto, slot)
    with onto.reader() as conn:
        keys = {r[0]: r[1] for r in conn.execute("SELECT filename, concept FROM memory_files WHERE kind = 'memory'")}
    onto.close()
    mount(tmp_path / "K", "notes", slot, state_dir=tmp_path / "state")
    try:
        names = os.listdir(slot)
        assert "Deploy.md" in names and "deploy.md" in names, names
        for name in ("Deploy.md", "deploy.md"):
            text = subprocess.run(["cat", str(slot / name)], capture_output=True, text=True, timeout=30,
                                  check=True).stdout
            assert text == host[name], (name, text)
        index = subprocess.run(["cat", str(slot / "MEMORY.md")], capture_output=True, text=True, timeout=30,
                               check=True).stdout
        assert host["MEMORY.md"].rstrip("\n") in index and "not in the index" not in index, index
    finally:
        unmount(slot, tmp_path / "state")
    assert keys["Deploy.md"] != keys["deploy.md"], keys


def _ledger_entry(session: str, day: str, body: str) -> bytes:
    return (f"---\nsession: {session}\nepoch: 1\ncontext_pct: 40\ntimestamp: {day}T09:00:00Z\nphase: progress\n---\n"
            f"{body}").encode()


def _cat(path: Path) -> str:
    return subprocess.run(["cat", str(path)], capture_output=True, text=True, timeout=30, check=True).stdout


@requires_fuse
@pytest.mark.parametrize("ledger_first", [False, True], ids=["file-first", "ledger-first"])
def test_through_the_mount_a_capitalised_file_is_reached_by_a_heading_a_mention_and_a_wikilink(tmp_path,
                                                                                                 ledger_first):
    """`Architecture.md` is a common name in a hand-made folder. A ledger section headed "## Architecture",
    a ledger line naming the architecture and a wikilink `[[architecture]]` are keyed in lower case; after
    harm14 kept the file's capital in its key they no longer reached it: its appendix lost what the ledger
    adds, and a generated `architecture.md` stood beside `Architecture.md` (a near-duplicate the folder
    never had). They reach it again, whichever arrived first (case14)."""
    slot = tmp_path / "memory"
    slot.mkdir()
    host = {"MEMORY.md": "- [Architecture](Architecture.md) — how the parts fit; queue: Beanstalk\n"
                         "- [Invoices](invoice_runs.md) — the monthly run\n",
            "Architecture.md": "---\nname: Architecture\ndescription: how the parts fit\ntype: project\n"
                               "modified: 2026-03-02T08:00:00Z\n---\n- Queue: Beanstalk\n"
                               "- The edge proxy hands orders to the basket worker over plain HTTP.\n",
            "invoice_runs.md": "---\nname: invoices\ndescription: the monthly run\ntype: project\n---\n"
                               "- Invoices go out on the third working day.\n- The run's place is in [[architecture]].\n"}
    for name, text in host.items():
        (slot / name).write_text(text, encoding="utf-8")
    onto = Ontology(tmp_path / "K", "notes", create=True)
    entries = [("2026-03-09T0900Z_e001.md", _ledger_entry("t1", "2026-03-09",
                "## Architecture\n- Queue: NATS\n- The basket worker keeps its carts in a Valkey 8 node.\n")),
               ("2026-03-10T0900Z_e002.md", _ledger_entry("t2", "2026-03-10",
                "## Progress\n- Ops agreed the architecture keeps one edge proxy per region.\n"))]
    if not ledger_first:
        ingest_host_files(onto, slot)
    for name, data in entries:
        onto.ingest(name, data, Channel.CLI)
    if ledger_first:
        ingest_host_files(onto, slot)
    with onto.reader() as conn:
        linked = queries.concept(conn, "Architecture")["relations"]
        asked = queries.concept(conn, "architecture")  # kg_concept by the name a heading or wikilink says
        searched = search(conn, "Valkey", filters=Filters(concept="architecture"))  # kg_search's concept filter
    onto.close()
    mount(tmp_path / "K", "notes", slot, state_dir=tmp_path / "state")
    try:
        names = sorted(os.listdir(slot))
        topic = _cat(slot / "Architecture.md")
        index = _cat(slot / "MEMORY.md")
    finally:
        unmount(slot, tmp_path / "state")
    assert "architecture.md" not in names, names  # no near-duplicate page beside the author's file
    assert topic.startswith(host["Architecture.md"]), topic
    appendix = topic.partition(APPENDIX_MARKER)[2]
    assert "ledger t1 (2026-03-09) supersedes: “Queue: NATS” on “Queue: Beanstalk”" in appendix, topic  # the heading
    assert "adds: “The basket worker keeps its carts in a Valkey 8 node”" in appendix, topic
    if not ledger_first:  # a mention reaches a concept the graph already knows (ADR 0004's order limit)
        assert "ledger t2 (2026-03-10) adds: “Ops agreed the architecture keeps one edge proxy per region”" \
            in appendix, topic
        assert "progress.md" not in names, names
    assert "queue: Beanstalk ⟨kg: 1 disputed⟩" in index, index  # the index line's mark, as before harm14
    assert {"concept": "invoice-runs", "kind": "wikilink"} in [dict(r) for r in linked["in"]], linked
    assert asked is not None and asked["key"] == "Architecture", asked
    assert [h.concept for h in searched] == ["Architecture"], searched


@requires_fuse
def test_through_the_mount_a_heading_reaches_the_twin_written_in_its_case(tmp_path):
    """`Deploy.md` and `deploy.md` are two files: a ledger's "## Deploy" section is about the first, its
    "## deploy" section about the second, and neither file shows the other's (case14)."""
    slot = tmp_path / "memory"
    slot.mkdir()
    host = {"Deploy.md": "---\nname: Deploy\ndescription: how the web app ships\ntype: project\n---\n"
                         "- The web app ships through the blue-green pipeline on Tuesdays.\n",
            "deploy.md": "---\nname: deploy\ndescription: the cron box rollout\ntype: project\n---\n"
                         "- The cron box is patched by hand on Fridays.\n"}
    for name, text in host.items():
        (slot / name).write_text(text, encoding="utf-8")
    onto = Ontology(tmp_path / "K", "notes", create=True)
    ingest_host_files(onto, slot)
    onto.ingest("2026-03-09T0900Z_e001.md", _ledger_entry("t1", "2026-03-09",
                "## Deploy\n- The canary stage holds five percent of traffic for an hour.\n"
                "## deploy\n- The cron box reboots after each kernel patch.\n"), Channel.CLI)
    onto.close()
    mount(tmp_path / "K", "notes", slot, state_dir=tmp_path / "state")
    try:
        names = sorted(os.listdir(slot))
        texts = {name: _cat(slot / name) for name in host}
    finally:
        unmount(slot, tmp_path / "state")
    assert [n for n in names if n.casefold() == "deploy.md"] == ["Deploy.md", "deploy.md"], names
    canary, reboot = "The canary stage holds five percent", "The cron box reboots after each kernel patch"
    assert texts["Deploy.md"].startswith(host["Deploy.md"]) and texts["deploy.md"].startswith(host["deploy.md"])
    assert canary in texts["Deploy.md"] and reboot not in texts["Deploy.md"], texts["Deploy.md"]
    assert reboot in texts["deploy.md"] and canary not in texts["deploy.md"], texts["deploy.md"]
    assert "blue-green" not in texts["deploy.md"] and "by hand" not in texts["Deploy.md"], texts


@requires_fuse
def test_through_the_mount_a_heading_two_capitalised_files_share_but_for_case_reaches_neither(tmp_path):
    """`API.md` and `Api.md` are two files; a ledger's "## api" names either, so its lines go to neither
    file's appendix (precision first), and its section gets no page `api.md` beside them: a third file
    named like both but for case, the same name as each on a case-blind disk (case14)."""
    slot = tmp_path / "memory"
    slot.mkdir()
    host = {"API.md": "---\nname: API\ndescription: the public API\ntype: reference\n---\n"
                      "- The public API pages results fifty at a time.\n",
            "Api.md": "---\nname: Api\ndescription: the internal api client\ntype: reference\n---\n"
                      "- The internal client retries twice before giving up.\n"}
    for name, text in host.items():
        (slot / name).write_text(text, encoding="utf-8")
    onto = Ontology(tmp_path / "K", "notes", create=True)
    ingest_host_files(onto, slot)
    onto.ingest("2026-03-09T0900Z_e001.md", _ledger_entry("t1", "2026-03-09",
                "## api\n- Rate limits are counted per token, not per address.\n"), Channel.CLI)
    onto.close()
    mount(tmp_path / "K", "notes", slot, state_dir=tmp_path / "state")
    try:
        names = sorted(os.listdir(slot))
        texts = {name: _cat(slot / name) for name in host}
    finally:
        unmount(slot, tmp_path / "state")
    assert [n for n in names if n.casefold() == "api.md"] == ["API.md", "Api.md"], names
    for name, text in texts.items():
        assert text == host[name], (name, text)


@requires_fuse
def test_through_the_mount_a_folder_from_a_user_we_had_not_met_reads_as_written(tmp_path):
    """blind10, through a real mount: a Notepad UTF-16 note reads as its characters, notes named with
    spaces and emoji stay indexed where the author's index links them, a paste with NUL bytes (refused,
    with its reason in the log) and a Thai note in a subfolder read back byte for byte."""
    slot = tmp_path / "memory"
    index = ("# Memory\n\n- [Printer](printer.md) — saved by Notepad\n- [Plan](<release plan.md>) — the plan\n"
             "- [Launch](🚀 launch.md) — launch steps\n- [Paste](paste.md) — a bad paste\n")
    utf16 = note("printer", "- The label printer is on `print01`, port 9100.\r\n").replace("\n", "\r\n")
    host = {"MEMORY.md": index.encode(), "printer.md": b"\xff\xfe" + utf16.encode("utf-16-le"),
            "release plan.md": note("plan", "- Ship the beta in May.\n").encode(),
            "🚀 launch.md": note("launch", "- Tag, then announce.\n").encode(),
            "paste.md": b"- Queue alert at 500 jobs.\n- \x00\x01 a bad paste\n",
            "topics/ข้อมูล.md": "- เซิร์ฟเวอร์ทดสอบใช้พอร์ต 3000\n".encode()}
    for name, data in host.items():
        (slot / name).parent.mkdir(parents=True, exist_ok=True)
        (slot / name).write_bytes(data)
    Ontology(tmp_path / "K", "notes", create=True).close()
    mount(tmp_path / "K", "notes", slot, state_dir=tmp_path / "state")
    try:
        def cat(name: str) -> bytes:
            return subprocess.run(["cat", str(slot / name)], capture_output=True, timeout=30, check=True).stdout

        memory = cat("MEMORY.md").decode()
        assert index.rstrip("\n") in memory
        assert "release plan.md" not in memory.replace("<release plan.md>", "") and memory.count("🚀 launch.md") == 1
        assert cat("printer.md").decode().startswith(utf16.replace("\r\n", "\n"))
        for name in ("paste.md", "topics/ข้อมูล.md"):
            assert cat(name) == host[name], name
    finally:
        unmount(slot, tmp_path / "state")
    assert processes_under(tmp_path) == {}, "unmount returned while its daemon still ran"


@requires_fuse
def test_through_the_mount_a_symlinked_index_or_note_is_the_same_link(tmp_path):
    """A dotfiles setup links MEMORY.md and notes from a repository. Links are never ingested (one may
    reach any file), so the mount showed a generated index instead of the author's and no note at all.
    Now it shows each link as the folder does and the reader resolves it: the author's words, verbatim."""
    repo, slot = tmp_path / "dotfiles", tmp_path / "memory"
    repo.mkdir()
    slot.mkdir()
    index = "- [Deploys](deploys.md) — ship with make ship\n- [Style](style.md) — short answers\n"
    (repo / "MEMORY.md").write_text(index)
    (repo / "style.md").write_text(note("style", "Keep answers short.\n", "feedback"))
    (slot / "deploys.md").write_text(note("deploys", "Ship with `make ship` from main.\n"))
    (slot / "MEMORY.md").symlink_to(repo / "MEMORY.md")
    (slot / "style.md").symlink_to(repo / "style.md")
    (slot / "deploys-alias.md").symlink_to("deploys.md")
    Ontology(tmp_path / "K", "notes", create=True).close()
    mount(tmp_path / "K", "notes", slot, state_dir=tmp_path / "state")
    try:
        assert {"MEMORY.md", "style.md", "deploys.md", "deploys-alias.md"} <= set(os.listdir(slot))
        assert os.readlink(slot / "MEMORY.md") == str(repo / "MEMORY.md")
        assert (slot / "MEMORY.md").read_text() == index, "the author's index, not a generated one"
        assert (slot / "style.md").read_text() == (repo / "style.md").read_text()
        assert (slot / "deploys-alias.md").read_text() == (slot / "deploys.md").read_text()
        try:
            os.open(slot / "style.md", os.O_RDONLY | os.O_NOFOLLOW)
            raise AssertionError("a link opened without following is a link")
        except OSError as exc:
            assert exc.errno == errno.ELOOP
    finally:
        unmount(slot, tmp_path / "state")
    assert processes_under(tmp_path) == {}, "unmount returned while its daemon still ran"
    assert os.readlink(slot / "MEMORY.md") == str(repo / "MEMORY.md"), "the host folder untouched"


def over_budget_index(n: int = 260) -> str:
    """An index taller than MEMORY.md may be: the agent can see only its head there."""
    return "# Index\n\n" + "".join(f"- [Step {i}](step_{i}.md) — what step {i} does\n" for i in range(n))


def test_an_index_over_budget_stays_whole_under_its_own_name(tmp_path):
    """Under the mount MEMORY.md is ours and must fit; the entries it leaves out stay readable, as they
    were on disk, in MEMORY.full.md (named in the footer), and only while something is left out."""
    index = over_budget_index()
    view = project(tmp_path, {"MEMORY.md": index, "step_0.md": note("step-0", "Step zero runs first.\n")})
    memory = view.read("MEMORY.md").decode()
    assert len(memory.splitlines()) <= 200 and "- [Step 259](step_259.md)" not in memory
    assert "MEMORY.full.md" in memory.splitlines()[-1]
    assert "MEMORY.full.md" in view.names() and view.read("MEMORY.full.md") == index.encode()
    small = project(tmp_path / "small", {"MEMORY.md": over_budget_index(20)})
    assert "MEMORY.full.md" not in small.names() and small.read("MEMORY.full.md") is None


def test_an_edit_of_a_cut_index_keeps_the_entries_the_agent_never_saw():
    from projection.indexedit import index_from_view

    index = over_budget_index()
    snap = MemorySnapshot("notes", "2026-05-01", {}, host_index=index)
    shown = render_memory(snap)
    edited = shown.replace("- [Step 3](step_3.md) — what step 3 does\n", "").replace(
        "- [Step 5](step_5.md) — what step 5 does\n", "- [Step 5](step_5.md) — what step 5 does, twice a day\n"
                                                     "- [Step 5b](step_5b.md) — a new step\n")
    saved = index_from_view(edited, shown, index)
    expected = index.replace("- [Step 3](step_3.md) — what step 3 does\n", "").replace(
        "- [Step 5](step_5.md) — what step 5 does\n", "- [Step 5](step_5.md) — what step 5 does, twice a day\n"
                                                     "- [Step 5b](step_5b.md) — a new step\n")
    assert saved == expected
    assert index_from_view(shown + "- [Last](last.md) — added at the end\n", shown, index) == \
        index + "- [Last](last.md) — added at the end\n", "a line added after the footer goes after the last entry"


@requires_fuse
@pytest.mark.parametrize("tool", ["Edit", "Write"])
def test_an_index_edit_through_the_mount_keeps_what_the_cut_view_left_out(tmp_path, tool):
    """Claude Code edits MEMORY.md to add an entry; the MEMORY.md it read was cut to the budget. The
    version saved is the whole index with the edit, not the view it saw."""
    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    bridge.memory_dir.mkdir(parents=True, exist_ok=True)
    index = over_budget_index()
    (bridge.memory_dir / "MEMORY.md").write_text(index, encoding="utf-8")
    assert bridge.cli("mount").returncode == 0
    try:
        target = bridge.memory_dir / "MEMORY.md"
        assert "- [Step 259]" not in target.read_text() and (bridge.memory_dir / "MEMORY.full.md").read_text() == index
        step_2 = "- [Step 2](step_2.md) — what step 2 does\n"
        edit = {"old_string": step_2, "new_string": f"{step_2}- [Step 2b](step_2b.md) — new\n"}
        if tool == "Write":  # a rewrite of what it read (the cut view), with the new line
            edit = {"content": target.read_text().replace(edit["old_string"], edit["new_string"])}
        payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse", "tool_name": tool,
                   "tool_input": {"file_path": str(target), **edit}}
        assert json.loads(bridge.hook(payload).stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert wait_for(lambda: [p for p in drops(bridge.ingest) if p.name.endswith(".MEMORY.md")])
        saved = [p.read_text() for p in drops(bridge.ingest) if p.name.endswith(".MEMORY.md")]
        assert saved == [index.replace("what step 2 does\n", "what step 2 does\n- [Step 2b](step_2b.md) — new\n")]
    finally:
        bridge.cli("unmount")
        force_unmount(bridge.memory_dir)


BOM_CRLF = "\ufeff---\r\nname: deploy\r\ndescription: how we deploy\r\ntype: project\r\n---\r\n- Deploy on Tuesdays.\r\n" \
           "- Tag releases v1.x.\r\n"
NO_FINAL_NEWLINE = "---\nname: tags\ndescription: how we tag\ntype: project\n---\n- Tag releases v1.x.\n- Never retag."
SAYS_TOO = "---\nname: release\ndescription: the release day\ntype: project\n---\n- Deploy on Tuesdays.\n"


def test_a_note_is_read_back_byte_for_byte_bom_crlf_and_missing_final_newline_kept(tmp_path):
    """write14: a note with a byte-order mark and CRLF line ends was served with LF and no mark; with the evidence
    appendix too, the note's own bytes come first, exactly, and the appendix follows in the note's line ends."""
    view = project(tmp_path, {"deploy.md": BOM_CRLF, "tags.md": NO_FINAL_NEWLINE, "release.md": SAYS_TOO})
    shown = view.read("deploy.md")
    assert shown.startswith(BOM_CRLF.encode()) and APPENDIX_MARKER.encode() in shown  # release.md agrees
    assert b"\n" not in shown.replace(b"\r\n", b""), "the appendix in the note's line ends"
    assert view.read("tags.md").startswith(NO_FINAL_NEWLINE.encode() + b"\n" + APPENDIX_MARKER.encode())
    for name, text in (("deploy.md", BOM_CRLF), ("tags.md", NO_FINAL_NEWLINE)):
        assert project(tmp_path / name, {name: text}).read(name) == text.encode()
    index = over_budget_index().replace("\n", "\r\n").encode()  # cut: the whole index is served as written
    assert project(tmp_path / "index", {"MEMORY.md": index}).read("MEMORY.full.md") == index


@requires_fuse
@pytest.mark.parametrize(("name", "text", "with_appendix"), [
    ("deploy.md", BOM_CRLF, False), ("deploy.md", BOM_CRLF, True), ("tags.md", NO_FINAL_NEWLINE, False),
    ("tags.md", NO_FINAL_NEWLINE, True)])
def test_an_edit_through_the_mount_changes_only_what_it_changes(tmp_path, name, text, with_appendix):
    """write14: an Edit through the mount of a BOM + CRLF note was saved with LF and no mark, and one of a note
    without a final newline gained one. Claude Code keeps the mark and the line ends when it edits a file: the
    version saved is the note's bytes with only the edit applied."""
    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    bridge.memory_dir.mkdir(parents=True, exist_ok=True)
    (bridge.memory_dir / name).write_bytes(text.encode())
    if with_appendix:  # another note says the same, so the mount shows an appendix after the note
        (bridge.memory_dir / "release.md").write_text(SAYS_TOO.replace("Tuesdays", "Tuesdays.\n- Tag releases v1.x"))
    assert bridge.cli("mount").returncode == 0
    try:
        target = bridge.memory_dir / name
        assert target.read_bytes().startswith(text.encode())
        assert (APPENDIX_MARKER in target.read_text(encoding="utf-8")) == with_appendix
        # Two lines, as the model writes them (LF): Claude Code matches them in a CRLF file too.
        old = "Tuesdays.\n- Tag releases v1.x" if name == "deploy.md" else "v1.x.\n- Never"
        payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse", "tool_name": "Edit",
                   "tool_input": {"file_path": str(target), "old_string": old, "new_string": old.replace("v1.x", "v2.x")}}
        assert json.loads(bridge.hook(payload).stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert bridge.cli("flush").returncode == 0
        saved = [p.read_bytes() for p in drops(bridge.ingest) if p.name.endswith(f".{name}")]
        assert saved == [text.replace("v1.x", "v2.x").encode()]
    finally:
        bridge.cli("unmount")
        force_unmount(bridge.memory_dir)


@requires_fuse
@pytest.mark.parametrize("index", [
    "\ufeff# Index\r\n\r\n- [Deploy](deploy.md) — how we deploy\r\n- [Tags](tags.md) — how we tag",
    "# Index\n\n- [Deploy](deploy.md) — how we deploy\n- [Tags](tags.md) — how we tag",
    "# Index\r\n\r\n- [Deploy](deploy.md) — how we deploy\r\n- [Tags](tags.md) — how we tag\r\n"])
def test_an_edit_of_memory_md_through_the_mount_keeps_the_indexs_own_bytes(tmp_path, index):
    """write14: the MEMORY.md the agent edits is our rendering (LF, no mark, a footer last), so an Edit of a
    BOM + CRLF index was saved with LF and no mark, every line changed, and one without a final newline gained
    one. The saved index is the author's bytes with only the edit's change."""
    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    bridge.memory_dir.mkdir(parents=True, exist_ok=True)
    (bridge.memory_dir / "MEMORY.md").write_bytes(index.encode())
    (bridge.memory_dir / "deploy.md").write_text(note("deploy", "- Deploy on Tuesdays.\n"))
    assert bridge.cli("mount").returncode == 0
    try:
        target = bridge.memory_dir / "MEMORY.md"
        assert "\r" not in target.read_text() and "- [Deploy](deploy.md) — how we deploy\n" in target.read_text()
        old = "- [Deploy](deploy.md) — how we deploy"
        payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse", "tool_name": "Edit",
                   "tool_input": {"file_path": str(target), "old_string": old, "new_string": old + ", on Tuesdays"}}
        assert json.loads(bridge.hook(payload).stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert bridge.cli("flush").returncode == 0
        saved = [p.read_bytes() for p in drops(bridge.ingest) if p.name.endswith(".MEMORY.md")]
        assert saved == [index.replace(old, old + ", on Tuesdays").encode()]
    finally:
        bridge.cli("unmount")
        force_unmount(bridge.memory_dir)


@pytest.mark.parametrize("index", ["- [A](a.md) — a\n \t\n- [B](b.md) — b\n  \n", "- [A](a.md) — a\n\n\n",
                                   "   \n- [A](a.md) — a\n"])
def test_whitespace_only_lines_of_the_index_are_shown_and_saved_as_written(index):
    """write14: the index's whitespace-only lines at its end were shown as our blank line before the footer (and an
    edit saved them away), and one next to a section of ours was taken for our blank line by an edit. The blank
    lines around the index are now always ours, exactly "", and the author's are kept as written."""
    from projection.indexedit import index_from_view

    disputed = [DisputedLine("a.md", "Deploys run on Fridays", "CONTESTED", "for: a.md / against: b.md")]
    for snap in (MemorySnapshot("notes", "2026-05-01", {}, host_index=index),
                 MemorySnapshot("notes", "2026-05-01", {}, host_index=index, disputed=disputed)):
        shown = render_memory(snap)
        assert index in shown
        assert index_from_view(shown) == index
        edited = shown.replace("- [A](a.md) — a", "- [A](a.md) — a, edited")
        assert index_from_view(edited) == index.replace("- [A](a.md) — a", "- [A](a.md) — a, edited")


def test_a_toml_note_missing_from_the_index_is_summarised_as_a_yaml_note_is(tmp_path):
    """write14: a note with TOML (`+++`) frontmatter missing from the index got an added index line whose summary
    was its raw `+++` block. Its description is the summary, as a YAML note's is; without one, its first prose."""
    view = project(tmp_path, {
        "MEMORY.md": "# Index\n\n- [Deploy](deploy.md) — how we deploy\n",
        "deploy.md": note("deploy", "- Deploy on Tuesdays.\n"),
        "release-tags.md": '+++\ntitle = "Release tagging"\ndescription = "how releases are tagged"\n+++\n- Tag v1.x.\n',
        "staging.md": "+++\ndate = 2026-01-02\n+++\n\nThe staging box reboots nightly.\n"})
    added = view.read("MEMORY.md").decode().split("## Also in the knowledge graph")[1]
    assert "+++" not in added and "date =" not in added
    assert "(release-tags.md) — how releases are tagged" in added and "(staging.md) — The staging box reboots nightly" in added
    assert view.read("staging.md").decode().startswith("+++\ndate = 2026-01-02\n+++\n"), "the note itself as written"


OWN_FULL = note("memory-full", "- The author's own notes on a full memory, kept under this name.\n")


@pytest.mark.parametrize("n", [20, 260])
def test_an_authors_own_memory_full_md_stays_theirs_cut_or_not(tmp_path, n):
    """write14: `MEMORY.full.md` is the name the whole index is served under while MEMORY.md is cut. An author's
    own file of that name was hidden by our index (cut) or not served from the graph at all (not cut); it is
    theirs, and the whole index takes the next free name, which the footer gives."""
    index = over_budget_index(n)
    view = project(tmp_path, {"MEMORY.md": index, "MEMORY.full.md": OWN_FULL})
    assert view.read("MEMORY.full.md") == OWN_FULL.encode() and "MEMORY.full.md" in view.names()
    memory = view.read("MEMORY.md").decode()
    if n == 20:
        assert "MEMORY.full.kgbridge.md" not in view.names() and view.read("MEMORY.full.kgbridge.md") is None
    else:
        assert "your whole index: MEMORY.full.kgbridge.md)" in memory.splitlines()[-1]
        assert view.read("MEMORY.full.kgbridge.md") == index.encode() and "MEMORY.full.kgbridge.md" in view.names()


@requires_fuse
@pytest.mark.parametrize(("name", "tool", "saved_as"), [
    ("MEMORY.full.md", "Edit", "MEMORY.full.md"), ("MEMORY.full.md", "Write", "MEMORY.full.md"),
    ("MEMORY.full.kgbridge.md", "Edit", "MEMORY.md")])
def test_a_write_of_the_authors_memory_full_md_through_the_mount_is_saved_to_it(tmp_path, name, tool, saved_as):
    """write14: a Write or Edit of the author's own `MEMORY.full.md` through the mount was saved as MEMORY.md,
    replacing the index with that note. It is saved to the note; a write to the whole index we serve (under the
    name the footer gives) is still the index."""
    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    bridge.memory_dir.mkdir(parents=True, exist_ok=True)
    index = over_budget_index()
    (bridge.memory_dir / "MEMORY.md").write_text(index, encoding="utf-8")
    (bridge.memory_dir / "MEMORY.full.md").write_text(OWN_FULL, encoding="utf-8")
    assert bridge.cli("mount").returncode == 0
    try:
        target = bridge.memory_dir / name
        shown = target.read_text()
        assert shown == (OWN_FULL if name == "MEMORY.full.md" else index)
        old = "kept under this name" if name == "MEMORY.full.md" else "- [Step 2](step_2.md) — what step 2 does\n"
        new = "kept under this name, edited" if name == "MEMORY.full.md" else old + "- [Step 2b](step_2b.md) — new\n"
        edit = {"content": shown.replace(old, new)} if tool == "Write" else {"old_string": old, "new_string": new}
        payload = {"session_id": "s1", "cwd": str(bridge.project), "hook_event_name": "PreToolUse", "tool_name": tool,
                   "tool_input": {"file_path": str(target), **edit}}
        assert json.loads(bridge.hook(payload).stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert wait_for(lambda: [p for p in drops(bridge.ingest) if p.name.endswith(".md")])
        assert bridge.cli("flush").returncode == 0
        saved = {p.name: p.read_text() for p in drops(bridge.ingest)}
        assert [n for n in saved if not n.endswith(f".{saved_as}")] == [], saved.keys()
        assert list(saved.values()) == [shown.replace(old, new)]
    finally:
        bridge.cli("unmount")
        force_unmount(bridge.memory_dir)


def test_a_block_taller_than_the_budget_shows_its_first_lines_not_nothing():
    """A table (or paragraph) of 260 lines in the index: a harness reading the file's first 200 lines
    shows its head; so does MEMORY.md, whole lines, with the whole index named in the footer."""
    rows = [f"| k{i} | value {i} |" for i in range(260)]
    index = "# Settings\n\n| key | value |\n|---|---|\n" + "\n".join(rows) + "\n"
    text = render_memory(MemorySnapshot("notes", "2026-05-01", {}, host_index=index))
    lines = text.splitlines()
    assert len(lines) <= 200 and len(text.encode()) <= 24_000
    assert "# Settings" in lines and "| key | value |" in lines and "| k150 | value 150 |" in lines
    shown = [ln for ln in lines if ln.startswith("| k") and ln[3].isdigit()]
    assert shown == rows[: len(shown)], "the table's first rows, in order, none clipped"
    assert "MEMORY.full.md" in lines[-1]


def test_an_index_line_gains_no_confirmed_count_when_another_file_restates_its_claim(tmp_path):
    """Two notes of one folder saying the same thing (a boilerplate line, a cross-reference's blurb) is
    no confirmation: the author's index line stays as written; the topic file names the other file."""
    index = "- [Cache notes](cache_notes.md) — how the cache works\n- [Ops notes](ops_notes.md) — runbooks\n"
    same = "Refresh this note from the vendor changelog before relying on it.\n"
    view = project(tmp_path, {"MEMORY.md": index, "cache_notes.md": note("cache", same),
                              "ops_notes.md": note("ops", same)})
    memory = view.read("MEMORY.md").decode()
    assert index in memory, memory
    assert "ops_notes.md" in view.read("cache_notes.md").decode().split("kgbridge", 1)[1], "the agreement, traced"


def test_a_disputed_line_never_dates_a_file_by_the_day_it_was_ingested(tmp_path):
    """Files that state no date were not written on the day the mount read them: the disputed section
    says they are undated instead of giving every side today's date."""
    view = project(tmp_path, {"MEMORY.md": "- [Jobs](jobs.md) — nightly jobs\n",
                              "jobs.md": note("jobs", "The `sync_orders` job runs nightly at two.\n"),
                              "cleanup.md": note("cleanup", "Old jobs: `sync_orders` removed.\n")})
    memory = view.read("MEMORY.md").decode()
    disputed = [ln for ln in memory.splitlines() if ln.startswith("- **CONTESTED**")]
    assert disputed and "jobs.md (undated)" in disputed[0] and "cleanup.md (undated)" in disputed[0], memory


def test_the_footer_counts_only_what_was_left_out():
    index = "- [Deploys](deploys.md) — Fridays\n"
    text = render_memory(MemorySnapshot("notes", "2026-05-01", {}, host_index=index))
    assert "Not shown" not in text and " 0 " not in text.splitlines()[-1], "nothing left out: nothing to count"


def test_a_memory_file_its_author_emptied_no_longer_shows_what_it_said(tmp_path):
    """Emptying MEMORY.md or a topic file is a new version of it that says nothing: the agent must not
    go on reading the old text (a blank artifact was refused, so the previous version stayed)."""
    old_line = "- [Release train](release_train.md) — ship on the lilac pipeline"
    view = project(tmp_path, {"MEMORY.md": old_line + "\n",
                              "release_train.md": note("release-train", "- Ship on the lilac pipeline.\n")})
    assert old_line in view.read("MEMORY.md").decode()
    folder = tmp_path / "memory"
    (folder / "MEMORY.md").write_bytes(b"")
    (folder / "release_train.md").write_bytes(b"\n")
    ingest_host_files(view.ontology, folder)
    fresh = ProjectionView(view.ontology)
    assert old_line not in fresh.read("MEMORY.md").decode()
    topic = fresh.read("release_train.md").decode()
    assert not topic.startswith("---") and "lilac" not in topic.split("<!-- kgbridge:", 1)[0]
    # The generated index (MEMORY.md was emptied too) names the file, never what it no longer says.
    index = fresh.read("MEMORY.md").decode()
    assert "release_train.md" in index and "lilac" not in index and "in short" not in index, index


def test_mcp_and_http_serve_the_whole_index_where_memory_md_cuts_it(root):
    """A cut MEMORY.md names `MEMORY.full.md`, which only a mount serves: over HTTP (and MCP kg_memory)
    the footer names the way that client can ask for it, and `?full=1` / full=true answers with the
    author's whole index."""
    from starlette.testclient import TestClient

    from kgbridge.serve import SERVED_FULL_INDEX, projected_memory
    from ontology.server import build_app

    folder = root.parent / "memory"
    folder.mkdir()
    index = "# Index\n\n" + "".join(f"- [Note {i}](note_{i}.md) — hook number {i} of a long index\n" for i in range(260))
    (folder / "MEMORY.md").write_text(index, encoding="utf-8")
    onto = Ontology(root, "shop", create=True)
    ingest_host_files(onto, folder)
    onto.close()
    (root / "ontology" / "shop" / "ingest").mkdir(parents=True, exist_ok=True)
    app = build_app(root, watch=False, memory=projected_memory)
    with TestClient(app.asgi, base_url="http://127.0.0.1") as client:
        cut = client.get("/ontologies/shop/memory").text
        whole = client.get("/ontologies/shop/memory", params={"full": "1"}).text
    assert "Note 259" not in cut and "MEMORY.full.md" not in cut and SERVED_FULL_INDEX in cut.splitlines()[-1]
    assert whole == index
