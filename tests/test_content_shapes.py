"""Content shapes of memory folders from users we had not met (blind11, ADR 0009): an open task box
is a thing to do, not a fact; a generic `Key: value` line several service files each state about
their own service is no agreement; a folder of sixty such files reads as written through a real mount."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from conftest import FIXTURES
from ontology.ingest import Ontology
from projection.mount import ingest_host_files, mount, unmount
from projection.topic import APPENDIX_MARKER
from projection.view import ProjectionView
from support.fuse_helpers import requires_fuse
from support.leftovers import processes_under


def _note(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {name} notes\ntype: project\n---\n\n{body}"


def _view(tmp_path: Path, files: dict[str, str]) -> tuple[Ontology, ProjectionView]:
    folder = tmp_path / "memory"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    onto = Ontology(tmp_path / "K", "shapes", create=True)
    ingest_host_files(onto, folder)
    return onto, ProjectionView(onto)


def _appendix(view: ProjectionView, name: str) -> str:
    return view.read(name).decode().partition(APPENDIX_MARKER)[2]


def test_an_open_task_box_states_nothing_a_ticked_one_does(tmp_path):
    """"- [ ] Status page live" in the launch plan says the page is not live yet: it must not agree
    with the session that ticked it, and its wrapped second line is not glued to the item before."""
    onto, view = _view(tmp_path, {
        "project_launch.md": _note("launch", "1. [x] Error tracking wired to the crash reporter\n"
                                             "2. [ ] Status page live on the public domain\n"
                                             "3. [ ] Support inbox routed\n"
                                             "   to the shared mailbox\n"),
        "session_0612.md": _note("session", "- [x] Status page live on the public domain\n"),
    })
    try:
        with onto.reader() as conn:
            stated = {text: n for text, n in conn.execute(
                "SELECT a.text, count(*) FROM assertions a JOIN stances s ON s.assertion_id = a.id GROUP BY a.id")}
        assert stated.get("Status page live on the public domain") == 1, stated  # the ticked item only
        assert not any("mailbox" in text or "inbox" in text for text in stated), stated
        assert " agrees: " not in _appendix(view, "project_launch.md")
        assert " agrees: " not in _appendix(view, "session_0612.md")
    finally:
        onto.close()


def test_a_generic_key_each_service_file_states_of_its_own_service_is_no_agreement(tmp_path):
    """"Owner: search team", "Replicas in prod: 2", "负责人：搜索组" and "Status: active" in the files of three
    services are facts about three services; a claim that names its thing (the `orders` topic), or the same
    generic fact in two files of one dated series, still agrees."""
    shared = "- The `orders` Kafka topic is partitioned by customer id.\n"
    onto, view = _view(tmp_path, {
        f"project_svc_{name}.md": _note(f"svc-{name}", f"- Owner: search team\n- Replicas in prod: 2\n"
                                                       f"- 负责人：搜索组\n- Status: active\n- Port: {port}\n{shared}")
        for name, port in (("plover", 7001), ("snipe", 7002), ("stint", 7003))} | {
        f"status_2026-04-0{day}.md": _note(f"status-{day}", "- Owner of the integration: Dana\n")
        for day in (1, 8)})
    try:
        # One subject's dated series: the same generic fact in two weeks' status files still agrees.
        assert "agrees: “Owner of the integration: Dana”" in _appendix(view, "status_2026-04-01.md")
        for name in ("plover", "snipe", "stint"):
            appendix = _appendix(view, f"project_svc_{name}.md")
            assert "agrees: “The `orders` Kafka topic" in appendix, appendix
            assert " agrees: " in appendix, appendix
            assert all(word not in appendix for word in ("Owner", "Replicas", "负责人", "active")), appendix
    finally:
        onto.close()


def test_a_title_case_generic_key_is_as_generic_as_its_lower_case(tmp_path):
    """"Primary Owner: Dana Whitfield" and "Replicas In Prod: 2" in three services' files: capitals on every
    word of a key are its style, not a name, so each file says it of its own service, as "Primary owner"
    would (judge12). A key with a word of another shape ("Orders DB") names its thing and still agrees."""
    onto, view = _view(tmp_path, {
        f"project_svc_{name}.md": _note(f"svc-{name}", "- Primary Owner: Dana Whitfield\n- Replicas In Prod: 2\n"
                                                       "- Orders DB: Postgres on the shared cluster\n")
        for name in ("heron", "egret", "ibis")})
    try:
        for name in ("heron", "egret", "ibis"):
            appendix = _appendix(view, f"project_svc_{name}.md")
            assert "agrees: “Orders DB: Postgres on the shared cluster”" in appendix, appendix
            assert "Primary Owner" not in appendix and "Replicas In Prod" not in appendix, appendix
    finally:
        onto.close()


def test_names_in_code_that_differ_only_in_case_are_no_agreement(tmp_path):
    """`sessionId` and `sessionID` are two names to the code that reads them: a file that writes one does
    not confirm a file that writes the other, however alike the two lines are (judge12). The same line
    with the same spelling still agrees, and a capital that opens a sentence is no name."""
    onto, view = _view(tmp_path, {
        "reference_cache.md": _note("cache", "- Session key file: `/srv/cache/sessionId` (TTL 3600)\n"
                                             "- Deploy the cache before the API, never after\n"),
        "reference_config.md": _note("config", "- Session key file: `/srv/cache/sessionID` (TTL 3600)\n"
                                               "- deploy the cache before the API, never after\n"),
        "reference_tokens.md": _note("tokens", "- Session key file: `/srv/cache/sessionId` (TTL 3600)\n")})
    try:
        cache = _appendix(view, "reference_cache.md")
        config = _appendix(view, "reference_config.md")
        assert "sessionID" not in cache and "sessionId" not in config, (cache, config)
        assert "reference_tokens.md" in cache and "agrees: “Session key file: `/srv/cache/sessionId`" in \
            _appendix(view, "reference_tokens.md")
        assert "agrees: “deploy the cache before the API, never after”" in cache, cache
    finally:
        onto.close()


@requires_fuse
def test_through_the_mount_sixty_service_files_read_as_written(tmp_path):
    """The sixty_topics trap folder through a real FUSE mount: every file starts with the author's text
    byte for byte, no service's appendix lists the others' per-service values, the index is the author's."""
    slot = tmp_path / "memory"
    shutil.copytree(FIXTURES / "traps" / "sixty_topics", slot)
    host = {p.name: p.read_bytes() for p in slot.glob("*.md")}
    Ontology(tmp_path / "K", "notes", create=True).close()
    mount(tmp_path / "K", "notes", slot, state_dir=tmp_path / "state")
    try:
        for name, data in sorted(host.items()):
            seen = subprocess.run(["cat", str(slot / name)], capture_output=True, timeout=30, check=True).stdout
            assert data.rstrip(b"\n") in seen, name
            assert b" agrees: " not in seen, (name, seen.decode()[-600:])
    finally:
        unmount(slot, tmp_path / "state")
    assert processes_under(tmp_path) == {}, "unmount returned while its daemon still ran"
