"""Codex hook trust: ask Codex which hooks it sees and record trust for kgbridge's own, or say why not.

Codex runs a hook only when it is trusted: the hook's `currentHash` recorded as `trusted_hash` under
`[hooks.state."<key>"]` in `$CODEX_HOME/config.toml`, and for project hooks the project itself
trusted (`[projects."<root>"] trust_level = "trusted"`). We learn keys and hashes from Codex's own
app server (`hooks/list`) and write through it (`config/batchWrite`), never by guessing its hash or
editing its TOML. Only hooks whose command runs `kgbridge-hook` are ever trusted; a project is never
trusted on the user's behalf (that unlocks all of its local config), we print the instruction.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from kgbridge.project import codex_home

MARKER = "kgbridge-hook"
# The app server starts in ~0.3 s here; a cold start on a slow disk may take several seconds.
APP_SERVER_TIMEOUT_S = 20.0


class CodexUnavailable(RuntimeError):
    """The codex binary is missing or its app server did not answer."""


@dataclass(frozen=True)
class CodexHook:
    key: str
    event: str
    command: str
    current_hash: str
    trust: str  # "trusted" | "untrusted" | "modified" ... as Codex reports it
    source_path: str

    @property
    def ours(self) -> bool:
        return MARKER in self.command


def codex_binary() -> str | None:
    return os.environ.get("KG_CODEX_BIN") or shutil.which("codex")


def _rpc(cwd: Path, requests: list[tuple[str, dict]]) -> list[dict]:
    """Send requests to a fresh `codex app-server` over stdio and return their results, in order."""
    binary = codex_binary()
    if not binary:
        raise CodexUnavailable("codex is not on PATH")
    proc = subprocess.Popen([binary, "app-server"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    messages = [{"id": 0, "method": "initialize", "params": {"clientInfo": {"name": "kgbridge", "version": "0.1.0"}}},
                {"method": "initialized"},
                *({"id": i, "method": method, "params": params} for i, (method, params) in enumerate(requests, 1))]
    results: dict[int, dict] = {}
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
        proc.stdin.flush()
        deadline = time.monotonic() + APP_SERVER_TIMEOUT_S
        buffer = b""
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            while len(results) < len(requests) + 1:
                if not selector.select(max(0.0, deadline - time.monotonic())):
                    raise CodexUnavailable(f"codex app-server did not answer within {APP_SERVER_TIMEOUT_S:.0f} s")
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    raise CodexUnavailable("codex app-server exited before answering")
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    message = json.loads(line) if line.strip() else {}
                    if isinstance(message.get("id"), int):
                        if "error" in message:
                            raise CodexUnavailable(f"codex app-server refused: {message['error'].get('message')}")
                        results[message["id"]] = message.get("result") or {}
    except (OSError, ValueError) as exc:
        raise CodexUnavailable(f"codex app-server failed: {exc}") from None
    finally:
        proc.kill()
        proc.wait()
    return [results[i] for i in range(1, len(requests) + 1)]


def list_hooks(cwd: Path) -> list[CodexHook]:
    """Every hook Codex would consider for a session in `cwd`, with its trust as Codex sees it."""
    (listing,) = _rpc(cwd, [("hooks/list", {"cwds": [str(cwd)]})])
    return [CodexHook(h["key"], h["eventName"], h.get("command") or "", h["currentHash"], h["trustStatus"],
                      h.get("sourcePath") or "")
            for entry in listing.get("data", []) for h in entry.get("hooks", [])]


def trust_ours(cwd: Path) -> list[CodexHook]:
    """Record trust for kgbridge's hooks that Codex does not trust yet; returns those trusted now."""
    pending = [h for h in list_hooks(cwd) if h.ours and h.trust != "trusted"]
    if pending:
        edits = [{"keyPath": f'hooks.state."{h.key}".trusted_hash', "value": h.current_hash,
                  "mergeStrategy": "upsert"} for h in pending]
        _rpc(cwd, [("config/batchWrite", {"edits": edits})])
    return pending


def trust_project(root: Path) -> None:
    """Mark the project trusted, as `codex exec --trust` does; only on the user's explicit request."""
    _rpc(root, [("config/batchWrite", {"edits": [{"keyPath": f'projects."{root}".trust_level', "value": "trusted",
                                                  "mergeStrategy": "upsert"}]})])


def project_trusted(root: Path) -> bool:
    try:
        config = tomllib.loads((codex_home() / "config.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return False
    projects = config.get("projects")
    entry = projects.get(str(root)) if isinstance(projects, dict) else None
    return isinstance(entry, dict) and entry.get("trust_level") == "trusted"


def trust_project_instruction(root: Path) -> str:
    return (f"Codex loads project hooks only in trusted projects: run `codex exec --trust` once in {root}, "
            f"or add [projects.\"{root}\"] trust_level = \"trusted\" to {codex_home() / 'config.toml'}")


def _installed(hooks_file: Path) -> bool:
    try:
        return MARKER in hooks_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def hooks_status(root: Path) -> str:
    """One line for `kgbridge status`: will Codex run kgbridge's hooks here, and if not, what to do."""
    project_file, user_file = root / ".codex" / "hooks.json", codex_home() / "hooks.json"
    hooks_file = project_file if _installed(project_file) else user_file
    if not _installed(hooks_file):
        return "not installed (kgbridge install-hooks --codex)"
    if hooks_file == project_file and not project_trusted(root):
        return "project not trusted: " + trust_project_instruction(root)
    try:
        ours = [h for h in list_hooks(root) if h.ours and h.source_path == str(hooks_file)]
    except CodexUnavailable as exc:
        return f"unknown ({exc}); review them in Codex with /hooks"
    untrusted = [h for h in ours if h.trust != "trusted"]
    if untrusted:
        return (f"{len(untrusted)} of {len(ours)} hooks not trusted: run `kgbridge install-hooks --codex` again, "
                f"or review them in Codex with /hooks")
    return f"trusted ({len(ours)} hooks)"
