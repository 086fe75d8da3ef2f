"""A catalogue of bad input, each rejected or ingested as its case says, none stopping the others;
and the security boundary checked through the full stack."""

from __future__ import annotations

import json
import os
import random
import signal
from pathlib import Path

import httpx
import pytest

from support.server_proc import ServerProcess, artifact_rows, free_port, wait_drained

FM = "---\nname: {n}\ndescription: {d}\ntype: project\n---\n"
CATALOGUE: list[tuple[str, str, bytes, str, str | None]] = [
    # (case, filename, bytes, expected status, reason substring)
    ("malformed-yaml", "colon.md", b"---\nname: colon\ndescription: a: b: c\ntype: project\n---\nBody text here.\n", "new", None),
    ("bom", "bom.md", b"\xef\xbb\xbf" + FM.format(n="bom", d="with a BOM").encode() + b"Body.\n", "new", None),
    ("crlf", "crlf.md", FM.format(n="crlf", d="windows newlines").replace("\n", "\r\n").encode(), "new", None),
    ("nul-bytes", "nul.md", b"hello\x00world", "rejected", "NUL"),
    ("invalid-utf8", "cp1251.md", "Сервер готов".encode("cp1251"), "rejected", "UTF-8"),
    ("plain-cp1252", "latin1.md", b"caf\xe9 au lait", "new", None),
    ("utf16-bom", "utf16.md", "\ufeffnotes: Zoé".encode("utf-16-le"), "new", None),
    ("binary", "blob.bin", bytes(random.Random(1).randrange(1, 32) for _ in range(4096)), "rejected", "binary"),
    ("empty", "empty.md", b"", "rejected", "empty"),
    ("whitespace-only", "blank.md", b"  \n\n\t\n", "rejected", "empty"),
    ("oversized", "big.md", b"x" * (1024 * 1024 + 100), "rejected", "over the"),
    ("alias-bomb", "bomb.md", b"---\na: &a [x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                              b"d: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n---\nbody\n", "rejected", "alias"),
    ("deep-nesting", "deep.md", b"---\nroot: " + b"[" * 60 + b"]" * 60 + b"\n---\nbody\n", "rejected", "nests deeper"),
    ("frontmatter-only", "fmonly.md", FM.format(n="fmonly", d="nothing below").encode(), "new", None),
    ("no-body", "nobody.md", b"---\nname: nobody\ntype: user\n---\n", "new", None),
    ("no-closing-fence", "open.md", b"---\nname: open\ndescription: never closed\n\nBody.\n", "new", None),
    ("tabs-in-yaml", "tabs.md", b"---\nname: tabs\n\tdescription: tab\ntype: user\n---\nBody.\n", "new", None),
    ("path-traversal-filename", "../../escape.md", b"escape attempt text\n", "rejected", "filename"),
    ("control-char-filename", "bad\x01name.md", b"text\n", "rejected", "filename"),
    ("huge-line", "hugeline.md", (b"word " * 100_000).strip() + b"\n", "new", None),
    ("thousands-of-bullets", "bullets.md", b"".join(b"- bullet number %d is distinct\n" % i for i in range(5000)), "new", None),
    ("duplicate-keys", "dupkeys.md", b"---\nname: dup\nname: dup2\ndescription: twice\ntype: project\n---\nBody.\n", "new", None),
    ("wrong-types", "types.md", b"---\nname: [a, b]\ndescription: 42\ntype: 7\nepoch: {x: 1}\n---\nBody line.\n", "new", None),
    ("mostly-control-chars", "ctrl.md", b"\x01\x02\x03\x04" * 100 + b"text", "rejected", "binary"),
    ("memory-index-garbage", "MEMORY.md", b"- [ok](ok.md) - fine\n- [broken](\n garbage ]]] ((\n", "new", None),
    ("ledger-missing-fields", "2026-04-05T1445Z_e001.md", b"---\nsession: s\n---\nKey decisions:\n- x y z\n", "new", None),
    ("lone-surrogate-json", "surrogate.md", b"", "rejected", "UTF-8"),  # content sent as JSON "\ud800"
]


@pytest.fixture
def server(root: Path):
    (root / "ontology" / "shop" / "ingest").mkdir(parents=True)
    with ServerProcess(root) as proc:
        yield proc


def _post(client: httpx.Client, name: str, data: bytes, case: str) -> httpx.Response:
    if case == "lone-surrogate-json":
        body = '{"ontology": "shop", "filename": "surrogate.md", "content": "bad \\ud800 text"}'
        return client.post("/ingest", content=body, headers={"content-type": "application/json"})
    return client.post("/ingest", files={"file": ("upload.md", data)}, data={"ontology": "shop", "filename": name})


def test_catalogue_over_http_each_case_as_it_says_none_stops_the_others(server, root):
    assert len(CATALOGUE) >= 20
    with httpx.Client(base_url=server.url, timeout=60) as client:
        outcomes = {case: _post(client, name, data, case) for case, name, data, _, _ in CATALOGUE}
    for case, _, _, expected, reason in CATALOGUE:
        body = outcomes[case].json()
        assert body["status"] == expected, (case, body)
        assert outcomes[case].status_code == (422 if expected == "rejected" else 200), case
        if reason:
            assert reason in body["reason"], (case, body["reason"])
    kept = list((root / "ontology" / "shop" / "rejected").glob("*.reason.json"))
    assert len(kept) == sum(1 for c in CATALOGUE if c[3] == "rejected")
    assert not (root / "escape.md").exists() and not (root / "ontology" / "escape.md").exists()


def test_catalogue_through_the_drop_directory_plus_symlink_out_of_root(server, root, tmp_path):
    ingest = root / "ontology" / "shop" / "ingest"
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret outside the root")
    os.symlink(secret, ingest / "link.md")
    droppable = [c for c in CATALOGUE if "/" not in c[1] and "\x01" not in c[1] and c[0] != "lone-surrogate-json"]
    for case, name, data, _, _ in droppable:
        tmp = ingest / f".tmp-{case}"
        tmp.write_bytes(data)
        os.replace(tmp, ingest / f"{case}--{name}")
    wait_drained(ingest, timeout=120)
    reasons = [json.loads(p.read_text()) for p in (root / "ontology" / "shop" / "rejected").glob("*.reason.json")]
    assert any("symlink" in r["reason"] for r in reasons)
    assert not any("top secret" in p.read_text(errors="ignore")
                   for p in (root / "ontology" / "shop").rglob("*") if p.is_file() and p.suffix != ".db")
    expected_new = sum(1 for c in droppable if c[3] == "new")
    assert len(artifact_rows(root / "ontology" / "shop" / "graph.db")) == expected_new
    assert len(reasons) == len(droppable) - expected_new + 1


def test_security_boundary_through_the_full_stack(server, root):
    url = server.url
    assert httpx.get(f"{url}/health", headers={"Host": "attacker.example:8765"}).status_code == 421
    # A name that merely starts like a loopback address is a name, not this machine.
    assert httpx.get(f"{url}/health", headers={"Host": "127.0.0.1.attacker.example"}).status_code == 421
    assert httpx.post(f"{url}/mcp", headers={"Host": "attacker.example"}, json={}).status_code == 421
    assert httpx.get(f"{url}/ontologies", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert httpx.post(f"{url}/ingest", headers={"Origin": "https://attacker.example"},
                      json={"ontology": "shop", "filename": "a.md", "content": "x y z"}).status_code == 403
    for slug in ("../etc", "..", "a/b", "A B", "x" * 65):
        assert httpx.post(f"{url}/ontologies", json={"name": slug}).status_code == 400
    assert httpx.get(f"{url}/ontologies/..%2Fetc/assertions").status_code in (400, 404)
    r = httpx.post(f"{url}/ingest", json={"ontology": "../../tmp", "filename": "a.md", "content": "text here"})
    assert r.status_code == 400
    assert sorted(p.name for p in root.iterdir()) == ["ontology"]


def test_missing_token_is_401_off_loopback(root):
    port = free_port()
    proc = ServerProcess(root, port=port, token="t0ken", extra=["--host", "0.0.0.0"]).start()
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 401
        assert httpx.get(f"http://127.0.0.1:{port}/health", headers={"Host": "kg.internal:8765"}).status_code == 401
        ok = httpx.get(f"http://127.0.0.1:{port}/health", headers={"Authorization": "Bearer t0ken",
                                                                   "Host": "kg.internal:8765"})
        assert ok.status_code == 200
    finally:
        proc.stop(signal.SIGTERM)
