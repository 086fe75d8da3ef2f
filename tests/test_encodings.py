"""Memory files not in UTF-8: UTF-16/UTF-32 with a byte-order mark, UTF-16 without one whose NUL bytes
name its byte order, and Windows-1252 that is plainly Western text are read exactly and reach the graph,
search, MCP, the generated index, the mount and `project --to` as the same characters; anything else is
refused with its reason and loses nothing else. tests/fixtures/encodings holds files in those encodings."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import httpx
import pytest
from mcp import Client

from conftest import FIXTURES
from kgbridge import deliver, forgetting
from ontology.artifact import ArtifactRejected, Channel
from ontology.ingest import Ontology
from ontology.parse import decode_text, parse_artifact
from projection.mount import ingest_host_files
from projection.view import ProjectionView
from support.bridge_env import BridgeEnv
from support.fuse_helpers import requires_fuse, unmount
from support.server_proc import ServerProcess

ENCODED = FIXTURES / "encodings"
# file -> (a phrase of its body, as the author wrote it, and the encoding it is read from)
READABLE = {
    "deploy_windows.md": ("Le déploiement utilise Chocolatey sur le poste de Zoé.", "UTF-16-LE"),
    "build_cache.md": ("Der Build-Cache liegt auf dem Laufwerk D: von Jörg.", "UTF-16-BE"),
    "backup_policy.md": ("Retención: 30 días “sin excepción”.", "cp1252"),
    "print_queue.md": ("La file d'impression tourne sur le serveur de Loïc, port 631.", "UTF-16-LE"),  # no BOM
}
MOJIBAKE = ("\ufffd", "Ã", "Ð", "ÿþ", "þÿ", "\x00")


def clean(text: str) -> bool:
    return not any(mark in text for mark in MOJIBAKE)


@pytest.mark.parametrize("name", sorted(READABLE))
def test_a_file_in_utf16_or_plain_cp1252_is_read_as_its_author_wrote_it(name):
    phrase, encoding = READABLE[name]
    art = parse_artifact("notes", name, (ENCODED / name).read_bytes())
    assert phrase in art.text and clean(art.text) and "\r" not in art.text
    assert art.name and art.description and clean(art.description)
    assert f"read as {encoding}" in art.notes


@pytest.mark.parametrize(("text", "codec"), [
    ("Привет, сервер перезапускается каждую ночь.", "cp1251"),  # Cyrillic: words of accented letters only
    ("Καλημέρα, ο διακομιστής είναι έτοιμος.", "cp1253"),
    ("デプロイは月曜日です。", "shift_jis"),
    ("部署在周一进行。", "gbk"),
    ("Türkçe değil, şimdi kapalı.", "cp1254"),  # ğ ş read as cp1252 would be ð þ
    ("Wdrożenie się udało, łatwo.", "cp1250"),
    ("Změna je hotová, dům také.", "cp1250"),  # ě ů read as cp1252 would be ì ù inside words
    ("Nasazení přes skript, také každý den.", "cp1250"),  # ž beside ř (read as ø): Central European, not Danish
])
def test_bytes_that_are_not_plainly_western_text_are_refused_not_guessed(text, codec):
    with pytest.raises(ArtifactRejected, match="not valid UTF-8.*save it as UTF-8"):
        decode_text(text.encode(codec))


@pytest.mark.parametrize("text", ["Però così è più facile, lunedì.", "Història del mòbil, però.",
                                  "Først og fremmest på søndag.", "Où est la fenêtre? Très bien, père."])
def test_western_grave_accents_and_o_slash_are_still_read_as_cp1252(text):
    """Italian and French write ì ù at a word's end, Catalan ò inside one, Danish ø: still plain cp1252."""
    assert decode_text(text.encode("cp1252")) == (text, "cp1252")


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_bom_is_read_when_its_nul_bytes_name_the_byte_order(codec):
    text = "- Tests run with `pytest -q` on the CI runner.\n- Le déploiement passe par 一 script.\n"
    assert decode_text(text.encode(codec)) == (text, codec.upper())


@pytest.mark.parametrize("data", [
    "部署在周一进行，日志保存十四天。".encode("utf-16-le"),  # no NUL pattern to name the byte order
    "- The port is 8080.\x00\n".encode("utf-16-le"),  # a NUL character: binary after all
    "- The port is 8080.\n".encode("utf-16-le")[:-1],  # an odd number of bytes
    bytes(range(256)) * 4,
], ids=["han", "nul-char", "odd", "binary"])
def test_bytes_with_nuls_that_are_not_plainly_utf16_stay_refused(data):
    with pytest.raises(ArtifactRejected, match="NUL bytes"):
        decode_text(data)


def test_a_file_mixing_utf8_and_another_encoding_is_refused():
    with pytest.raises(ArtifactRejected, match="not valid UTF-8"):
        decode_text("café — naïve\n".encode("utf-8") + b"d\xe9j\xe0 vu\n")


def test_a_byte_order_mark_over_bytes_of_another_encoding_is_refused_with_its_reason():
    with pytest.raises(ArtifactRejected, match="UTF-16-LE byte-order mark but is not valid UTF-16-LE"):
        decode_text(b"\xff\xfe" + "ok".encode("utf-16-le") + b"\x00\xd8")


def test_a_move_carries_a_non_utf8_file_unchanged():
    data = (ENCODED / "backup_policy.md").read_bytes()
    record = forgetting.move("old_policy.md", "backup_policy.md", data, "2026-11-30T10:00:00Z")
    art = parse_artifact("notes", "move.0123456789ab.backup_policy.md", record)
    assert READABLE["backup_policy.md"][0] in art.text and clean(art.text)


def _folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for path in ENCODED.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "plain.md").write_text("---\nname: plain\ndescription: a UTF-8 neighbour\ntype: project\n---\n\n"
                                     "- Seq keeps the logs for fourteen days.\n", encoding="utf-8")
    (folder / "MEMORY.md").write_text("- [Deploy](deploy_windows.md) — poste Windows\n"
                                      "- [Backups](backup_policy.md) — copias\n- [Plain](plain.md) — logs\n")
    return folder


def test_the_hook_delivers_non_utf8_bytes_verbatim_and_search_and_mcp_find_them(root, tmp_path):
    (root / "ontology" / "notes" / "ingest").mkdir(parents=True)
    folder = _folder(tmp_path / "memory")
    with ServerProcess(root) as server:
        answers = {path.name: deliver._post(f"{server.url}/ingest", None, "notes", path.name, path.read_bytes())
                   for path in sorted(folder.iterdir())}
        assert {n: a.outcome for n, a in answers.items()} == {
            **{n: deliver.SendOutcome.DELIVERED for n in answers}, "russian_notes.md": deliver.SendOutcome.REFUSED}
        assert "save it as UTF-8" in json.dumps(answers["russian_notes.md"].detail, ensure_ascii=False)
        with httpx.Client(base_url=server.url, timeout=10) as client:
            for query, name in (("Chocolatey", "deploy_windows.md"), ("días", "backup_policy.md"),
                                ("Laufwerk", "build_cache.md")):
                hits = client.get("/ontologies/notes/search", params={"q": query}).json()["hits"]
                assert hits and clean(hits[0]["text"]) and query in hits[0]["text"], (query, hits)
            index = client.get("/ontologies/notes/memory").text
            assert "[Backups](backup_policy.md)" in index and clean(index), index

        async def mcp() -> str:
            async with Client(f"{server.url}/mcp") as client:
                found = await client.call_tool("kg_search", {"query": "Núria", "ontology": "notes"})
                return found.content[0].text
        said = asyncio.run(mcp())
        assert "Núria" in said and clean(said)
    # The archive keeps the author's bytes: a rebuild from it reads them again.
    onto = Ontology(root, "notes")
    try:
        assert onto.rebuild() >= 4
        with onto.reader() as conn:
            texts = dict(conn.execute("SELECT filename, text FROM memory_files"))
        for name, (phrase, _) in READABLE.items():
            assert phrase in texts[name]
        assert "russian_notes.md" not in texts
    finally:
        onto.close()


@requires_fuse
def test_the_mount_and_project_to_show_the_same_characters_as_utf8(tmp_path):
    bridge = BridgeEnv(tmp_path).setup()
    assert bridge.cli("activate").returncode == 0
    _folder(bridge.memory_dir)
    refused = (bridge.memory_dir / "russian_notes.md").read_bytes()
    result = bridge.cli("mount")
    assert result.returncode == 0, result.stderr
    try:
        for name, (phrase, _) in READABLE.items():
            shown = (bridge.memory_dir / name).read_bytes().decode("utf-8")
            assert phrase in shown and clean(shown), name
        # Refused: still there, as the author's bytes, from the folder underneath.
        assert (bridge.memory_dir / "russian_notes.md").read_bytes() == refused
        index = (bridge.memory_dir / "MEMORY.md").read_bytes().decode("utf-8")
        assert "[Deploy](deploy_windows.md)" in index and clean(index)
        out = tmp_path / "projected"
        assert bridge.cli("project", "--to", str(out)).returncode == 0
        for name in READABLE:
            assert (out / name).read_bytes() == (bridge.memory_dir / name).read_bytes()
    finally:
        bridge.cli("unmount")
        unmount(bridge.memory_dir)


def test_a_folder_file_we_refuse_is_named_with_its_reason_and_the_rest_goes_on(tmp_path, caplog):
    """blind10: a KOI8-R note and a paste with NUL bytes in the memory folder were refused at mount time
    without a word; the reason is logged under the file's own name, and the folder's other notes go on."""
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "zametki.md").write_bytes("- Сервер `ledger` слушает порт 7070.\n- Копии хранятся 30 дней.\n"
                                        .encode("koi8-r"))
    (folder / "paste.md").write_bytes(b"- Queue depth alert at 500 jobs.\n- a bad paste \x00\x01 here\n")
    (folder / "ports.md").write_bytes(b"- The `ledger` service listens on port 7070.\n")
    onto = Ontology(tmp_path / "K", "notes", create=True)
    try:
        with caplog.at_level(logging.WARNING, logger="projection.mount"):
            ingest_host_files(onto, folder)
        said = [r.getMessage() for r in caplog.records if r.name == "projection.mount"]
        assert any("zametki.md" in m and "save it as UTF-8" in m for m in said), said
        assert any("paste.md" in m and "NUL bytes" in m for m in said), said
        assert b"port 7070" in ProjectionView(onto).read("ports.md")
    finally:
        onto.close()
