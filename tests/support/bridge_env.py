"""An isolated bridge environment: its own knowledge root, Claude home, state dir and git project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HOOK = [sys.executable, "-m", "kgbridge.hook"]
CLI = [sys.executable, "-m", "kgbridge.cli"]


@dataclass
class BridgeEnv:
    base: Path

    @property
    def project(self) -> Path:
        return self.base / "work" / "shop"

    @property
    def root(self) -> Path:
        return self.base / "Knowledge"

    @property
    def claude(self) -> Path:
        return self.base / "claude"

    @property
    def state(self) -> Path:
        return self.base / "state"

    @property
    def memory_dir(self) -> Path:
        return self.claude / "projects" / str(self.project).replace("/", "-").replace("_", "-").replace(".", "-") / "memory"

    @property
    def ledger_dir(self) -> Path:
        return self.claude / "ledger" / "shop"

    @property
    def ingest(self) -> Path:
        return self.root / "ontology" / "shop" / "ingest"

    @property
    def outbox(self) -> Path:
        return self.state / "shop" / "outbox"

    def environ(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KG_", "CLAUDE_"))}
        env.update({"KG_KNOWLEDGE_ROOT": str(self.root), "CLAUDE_CONFIG_DIR": str(self.claude),
                    "KG_STATE_DIR": str(self.state), "HOME": str(self.base / "home"), **extra})
        return env

    def setup(self) -> "BridgeEnv":
        (self.project / ".git").mkdir(parents=True)
        self.memory_dir.mkdir(parents=True)
        self.ledger_dir.mkdir(parents=True)
        (self.base / "home").mkdir()
        return self

    def hook(self, payload: object, *args: str, env: dict[str, str] | None = None,
             timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return run_bounded([*HOOK, *args], data, env or self.environ(), self.project, timeout)

    def cli(self, *args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        done = run_bounded([*CLI, *args], b"", env or self.environ(), self.project, timeout)
        return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())

    def status(self, env: dict[str, str] | None = None) -> dict[str, object]:
        result = self.cli("status", "--json", env=env)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def worker_idle(self, slug: str = "shop") -> bool:
        """No delivery worker holds the project's slot (it keeps it until it has delivered everything
        and kept the session context for the next start, kgbridge.worker)."""
        import fcntl

        try:
            fd = os.open(self.state / slug / "worker.lock", os.O_RDONLY)
        except FileNotFoundError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    def wait_detached(self, timeout: float = 120.0) -> None:
        """Until nothing naming this environment runs any more: the workers its hooks detached
        (their own session, not our children) have done their work and exited. Call it with no
        server or mount of the environment's own still up. Generous: it catches a worker that
        never ends, it does not time one."""
        from support.leftovers import processes_under

        if not wait_for(lambda: not processes_under(self.base), timeout=timeout, interval=0.05):
            raise AssertionError(f"still running after {timeout} s: {processes_under(self.base)}")

    def post_tool_use(self, path: Path, tool: str = "Write") -> dict[str, object]:
        return {"session_id": "s1", "transcript_path": str(self.base / "t.jsonl"), "cwd": str(self.project),
                "hook_event_name": "PostToolUse", "tool_name": tool,
                "tool_input": {"file_path": str(path), "content": path.read_text()},
                "tool_response": {"filePath": str(path), "success": True}}

    def event(self, name: str) -> dict[str, object]:
        return {"session_id": "s1", "transcript_path": str(self.base / "t.jsonl"), "cwd": str(self.project),
                "hook_event_name": name}


def run_bounded(args: list[str], stdin: bytes, env: dict[str, str], cwd: Path,
                timeout: float) -> subprocess.CompletedProcess[bytes]:
    """Like subprocess.run, but a child stuck in uninterruptible sleep (a hung FUSE request) fails
    the test instead of hanging it: on timeout we kill and stop waiting, never reap."""
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=cwd)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"{args[-1]!r} did not return within {timeout} s (hung?)") from None
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def drops(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if not p.name.startswith("."))
    except OSError:
        return []


def wait_for(predicate, timeout: float = 20.0, interval: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
