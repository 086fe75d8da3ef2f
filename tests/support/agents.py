"""The real Claude Code and Codex binaries in a sandbox: own HOME, knowledge root, state dir and git
project, talking to the scripted fake model (support/fake_model.py, a separate process) on loopback.

The binaries come from scripts/agents.sh (pinned versions, npm, into ./.agents). Where npm or the
registry is missing the tests skip with the reason; under CI (`CI=true`) they fail instead.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from kgbridge.server_process import die_with_parent
from support.bridge_env import BridgeEnv

REPO = Path(__file__).resolve().parents[2]
FAKE_MODEL = Path(__file__).with_name("fake_model.py")
VENV_BIN = Path(sys.executable).parent
# One agent session against the fake model takes about a second; far more means something hangs.
SESSION_TIMEOUT_S = 120
# Codex's model must be one `codex debug models` lists, or it offers no apply_patch tool.
CODEX_MODEL = "gpt-5.5"
MODEL_KEY_ENV = "KGBRIDGE_FAKE_MODEL_KEY"


@functools.cache
def _install() -> tuple[Path | None, str]:
    if not shutil.which("npm") and not (REPO / ".agents" / "node_modules" / ".bin" / "claude").exists():
        return None, "npm is not installed (the e2e tests install Claude Code and Codex with it)"
    done = subprocess.run(["bash", str(REPO / "scripts" / "agents.sh")], capture_output=True, text=True,
                          timeout=900)
    if done.returncode != 0:
        return None, f"scripts/agents.sh failed: {done.stderr.strip()[-500:]}"
    return Path(done.stdout.strip().splitlines()[-1]), ""


def agent_bin() -> Path:
    """The directory holding `claude` and `codex`; skips (fails under CI) when they cannot be had."""
    found, why = _install()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"agent binaries unavailable in CI: {why}")
        pytest.skip(why)
    return found


class FakeModel:
    """The fake model API as a process; `script` adds sessions, `requests` reads what it was sent."""

    def __init__(self, api: str, directory: Path) -> None:
        self.api = api
        self.script_file = directory / f"{api}-script.json"
        self.record = directory / f"{api}-requests.jsonl"
        self.sessions: dict[str, list[dict]] = {}
        self.script_file.write_text("{}")
        self.proc = subprocess.Popen([sys.executable, str(FAKE_MODEL), "--api", api, "--script", str(self.script_file),
                                      "--record", str(self.record)], stdout=subprocess.PIPE, text=True,
                                     preexec_fn=die_with_parent())
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def script(self, marker: str, steps: list[dict]) -> None:
        self.sessions[marker] = steps
        self.script_file.write_text(json.dumps(self.sessions))

    def requests(self, marker: str | None = None) -> list[dict]:
        """Request bodies in arrival order; with `marker`, only those of that scripted session."""
        try:
            lines = self.record.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        bodies = [json.loads(line)["body"] for line in lines if line.strip()]
        return [b for b in bodies if marker is None or marker in json.dumps(b)]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@dataclass
class AgentSandbox(BridgeEnv):
    """A BridgeEnv whose Claude home is the real default (`$HOME/.claude`), with a Codex home, the
    agent binaries and the fake model they talk to."""

    bin: Path = Path()
    model: FakeModel | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    server_url: str | None = None  # a `kgbridge serve` on `root`, when the test started one

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def claude(self) -> Path:
        return self.home / ".claude"

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    @property
    def codex_notes(self) -> Path:
        return self.codex_home / "memories_v2" / "extensions" / "ad_hoc" / "notes"

    @property
    def fake(self) -> FakeModel:
        assert self.model is not None
        return self.model

    def setup(self) -> "AgentSandbox":
        self.project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(self.project)], check=True)  # Codex works in git repos
        self.memory_dir.mkdir(parents=True)
        self.codex_home.mkdir()
        (self.codex_home / "config.toml").write_text(
            f'model = "{CODEX_MODEL}"\nmodel_provider = "fake"\n\n[model_providers.fake]\nname = "fake"\n'
            f'base_url = "http://127.0.0.1:{self.fake.port}/v1"\nwire_api = "responses"\nenv_key = "{MODEL_KEY_ENV}"\n')
        return self

    def environ(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in super().environ(**extra).items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CODEX_"))}
        return {**env, "CODEX_HOME": str(self.codex_home), "PATH": f"{self.bin}:{VENV_BIN}:{os.environ.get('PATH', '')}",
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.fake.port}", "ANTHROPIC_API_KEY": "test-key",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                MODEL_KEY_ENV: "test-key", **self.extra_env}

    def run(self, *args: str, timeout: float = SESSION_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=self.project, env=self.environ(), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout)

    def kg(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.cli(*args)

    def claude_session(self, marker: str, steps: list[dict], debug_log: Path | None = None) -> dict:
        """One `claude -p` session scripted by `steps`; returns its JSON result."""
        self.fake.script(marker, steps)
        debug = ["--debug-file", str(debug_log)] if debug_log else []
        done = self.run(str(self.bin / "claude"), "-p", f"{marker}: go on", "--output-format", "json", *debug)
        assert done.returncode == 0, f"claude failed ({done.returncode}): {done.stderr[-2000:]}"
        return json.loads(done.stdout)

    def codex_session(self, marker: str, steps: list[dict]) -> subprocess.CompletedProcess[str]:
        """One `codex exec` session scripted by `steps` (hooks run only if trusted: no bypass flag)."""
        self.fake.script(marker, steps)
        done = self.run(str(self.bin / "codex"), "exec", "--dangerously-bypass-approvals-and-sandbox",
                        f"{marker}: go on")
        assert done.returncode == 0, f"codex failed ({done.returncode}): {done.stderr[-2000:]}"
        return done

    def trace_hook_starts(self) -> None:
        """Put a `kgbridge-hook` first on PATH (install-hooks then writes its path) that records every
        start of the hook, i.e. every payload a gate let through to Python, then runs the real one."""
        tracer = self.base / "tracer" / "kgbridge-hook"
        tracer.parent.mkdir()
        tracer.write_text(f"#!/bin/sh\np=$(cat)\nprintf '%s\\n' \"$p\" >> '{self.hook_starts_log}'\n"
                          f"printf %s \"$p\" | exec '{VENV_BIN / 'kgbridge-hook'}' \"$@\"\n")
        tracer.chmod(0o755)
        self.extra_env["PATH"] = f"{tracer.parent}:{self.environ()['PATH']}"

    @property
    def hook_starts_log(self) -> Path:
        return self.base / "hook-starts.jsonl"

    def hook_starts(self) -> list[dict]:
        """The payloads the traced hook started with, in order (see trace_hook_starts)."""
        try:
            lines = self.hook_starts_log.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def settled(self, timeout: float = 120.0) -> None:
        """Until what the sessions' hooks started has reached the graph: no hook of this sandbox runs
        any more (the gates' background hooks, the workers they detached) and the drop directory holds
        no file the server has not taken in (the watcher removes a drop once it is committed). An agent
        returns before its background hooks have run, so an assertion on what a worker delivers, or on
        which hooks started, waits for this event first (ADR 0010, "Session 14 (flaky14)"). Generous:
        it catches a worker that never ends, it does not time one."""
        from support.leftovers import processes_under

        def hooks() -> dict[int, str]:  # not the server, the fake model or a mount, which stay up
            found = {}
            for pid, shown in processes_under(self.base).items():
                try:  # the whole command line: a gate's sh names the hook after its checks
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue  # ended meanwhile
                if b"kgbridge-hook" in cmdline or b"kgbridge.hook" in cmdline:
                    found[pid] = shown
            return found

        def drops() -> list[str]:
            try:
                return sorted(p.name for p in self.ingest.iterdir() if not p.name.startswith("."))
            except FileNotFoundError:
                return []

        if not wait_until(lambda: not hooks() and not drops(), timeout, interval=0.05):
            raise AssertionError(f"not settled after {timeout} s: hooks {hooks()}, drops {drops()[:5]}")

    def assertions(self) -> list[dict]:
        """The ontology's assertions with labels and sources, from the server (a CLI run costs ~1 s)."""
        assert self.server_url, "start a server first"
        response = httpx.get(f"{self.server_url}/ontologies/shop/assertions", timeout=10)
        return response.json() if response.status_code == 200 else []

    def sources_of(self, text: str) -> tuple[str, set[str]]:
        """(label, source identities) of the assertion saying `text`, or ("", set())."""
        for assertion in self.assertions():
            if assertion["text"] == text:
                return assertion["status"], {s["source"] for s in assertion["sources"]}
        return "", set()


def memory_file(name: str, description: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: project\n---\n{body}\n"


def conversation(request: dict) -> str:
    """The messages of a request (Claude Code's `messages`, Codex's `input`) as one JSON string:
    hook context arrives there, as a system message or a developer message."""
    return json.dumps(request.get("messages") or request.get("input") or [], ensure_ascii=False)


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.1) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
