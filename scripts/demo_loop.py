"""The main job, end to end, on the embedded default (run by scripts/demo.sh).

Everything lives under one demo directory (knowledge root, Claude home, state, a git project), so
the user's real ~/.claude and ~/Knowledge are never touched. Steps: start `kgbridge serve`, activate
the project, replay two sessions through the real `kgbridge-hook` with Claude Code payloads (the
second contradicts the first), wait for ingestion, mount the projection over the memory slot (or
materialize it without FUSE), show MEMORY.md, a topic file with a contested claim, and status.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from kgbridge.server_process import free_port
from projection.mounts import fuse_available

BIN = Path(sys.executable).parent
SESSION_1 = {
    "memory": ("testing-real-db.md", """---
name: testing-real-db
description: Integration tests must hit a real database, not mocks
type: feedback
---
Never mock the database in integration tests.

**Why:** the mocked suite passed while the production migration failed.
**How to apply:** start the postgres service container before the integration job.

- database: postgres
"""),
    "ledger": ("2026-04-05T1445Z_e001.md", """---
session: 7f3a-demo-session-1
transcript: {home}/projects/demo/7f3a.jsonl
epoch: 1
context_pct: 48
timestamp: 2026-04-05T14:45:00Z
phase: progress
---
Fixed the flaky checkout test with the user.

Key decisions:
- Integration tests hit the real database
- The test runner is pytest

Open threads:
- arm64 runners time out on the e2e job
"""),
}
SESSION_2_LEDGER = ("2026-04-12T0930Z_e001.md", """---
session: 91bc-demo-session-2
transcript: {home}/projects/demo/91bc.jsonl
epoch: 1
context_pct: 62
timestamp: 2026-04-12T09:30:00Z
phase: handoff
---
CI got slow; the user asked to speed up the integration suite.

Key decisions:
- Mock the database in integration tests to speed up CI
- database: sqlite
- The test runner is pytest

Open threads:
- arm64 runners time out on the e2e job
""")


def run(env: dict[str, str], cwd: Path, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(args, input=stdin, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def hook(env: dict[str, str], project: Path, payload: dict[str, object]) -> None:
    run(env, project, str(BIN / "kgbridge-hook"), stdin=json.dumps(payload))


def wait_until(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", default="demo-root", help="Where everything lives (recreated).")
    parser.add_argument("--keep", action="store_true", help="Leave the server running and the projection mounted.")
    args = parser.parse_args()
    base = Path(args.dir).resolve()
    if base.exists():
        subprocess.run(["fusermount", "-uz", str(base / "claude" / "projects")], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
    project = base / "work" / "shop"
    (project / ".git").mkdir(parents=True)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("KG_", "CLAUDE_"))},
           "KG_KNOWLEDGE_ROOT": str(base / "Knowledge"), "CLAUDE_CONFIG_DIR": str(base / "claude"),
           "KG_STATE_DIR": str(base / "state"), "KG_URL": f"http://127.0.0.1:{port}",
           "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
    kg = str(BIN / "kgbridge")

    print(f"== 1. serve on 127.0.0.1:{port} (root {base / 'Knowledge'})")
    log = open(base / "server.log", "wb")
    server = subprocess.Popen([kg, "serve", "--port", str(port)], env=env, cwd=project, stdout=log, stderr=log,
                              start_new_session=True)
    mounted_at: Path | None = None
    try:
        import httpx
        wait_until(lambda: _healthy(port), 30, "the server")

        print("== 2. activate the project")
        print(run(env, project, kg, "activate").strip())
        status = json.loads(run(env, project, kg, "status", "--json"))
        memory_dir, ledger_dir = Path(status["memory_dir"]), Path(status["ledger_dir"])
        memory_dir.mkdir(parents=True, exist_ok=True)
        ledger_dir.mkdir(parents=True, exist_ok=True)

        print("== 3. session 1 writes a memory file and a ledger entry (real hook, real payloads)")
        name, text = SESSION_1["memory"]
        (memory_dir / name).write_text(text)
        common = {"session_id": "7f3a-demo-session-1", "transcript_path": str(base / "claude" / "t1.jsonl"),
                  "cwd": str(project), "permission_mode": "default"}
        hook(env, project, {**common, "hook_event_name": "SessionStart", "source": "startup"})
        hook(env, project, {**common, "hook_event_name": "PostToolUse", "tool_name": "Write",
                            "tool_input": {"file_path": str(memory_dir / name), "content": text},
                            "tool_response": {"filePath": str(memory_dir / name), "success": True}})
        lname, ltext = SESSION_1["ledger"]
        (ledger_dir / lname).write_text(ltext.format(home=base / "claude"))
        hook(env, project, {**common, "hook_event_name": "Stop", "stop_hook_active": False})

        print("== 4. session 2 contradicts it, then ends")
        common = {**common, "session_id": "91bc-demo-session-2", "transcript_path": str(base / "claude" / "t2.jsonl")}
        lname, ltext = SESSION_2_LEDGER
        (ledger_dir / lname).write_text(ltext.format(home=base / "claude"))
        hook(env, project, {**common, "hook_event_name": "PreCompact", "trigger": "auto"})
        hook(env, project, {**common, "hook_event_name": "SessionEnd", "reason": "exit"})

        ingest = base / "Knowledge" / "ontology" / "shop" / "ingest"
        wait_until(lambda: _count(port) >= 3 and not any(p for p in ingest.iterdir() if not p.name.startswith(".")),
                   60, "ingestion")

        if fuse_available():
            print(f"== 5. mount the projection over the memory slot {memory_dir}")
            print(run(env, project, kg, "mount").strip())
            mounted_at, shown = memory_dir, memory_dir
        else:
            shown = base / "projection"
            print(f"== 5. FUSE unavailable: materialize the projection into {shown}")
            print(run(env, project, kg, "project", "--to", str(shown)).strip())

        print(f"\n== 6. {shown / 'MEMORY.md'}\n")
        print((shown / "MEMORY.md").read_text())
        print(f"== 7. {shown / name} (a topic file with contested claims)\n")
        print((shown / name).read_text())
        print("== 8. kgbridge status\n")
        print(run(env, project, kg, "status"))
        if args.keep:
            print(f"left running: server pid {server.pid} on port {port}; "
                  f"unmount with: CLAUDE_CONFIG_DIR={env['CLAUDE_CONFIG_DIR']} {kg} unmount --at {memory_dir}")
            return
        del httpx
    finally:
        if not args.keep:
            if mounted_at is not None:
                run(env, project, kg, "unmount")
            server.send_signal(signal.SIGTERM)
            server.wait(30)


def _healthy(port: int) -> bool:
    import httpx
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()["status"] == "healthy"
    except (httpx.HTTPError, ValueError, KeyError):
        return False


def _count(port: int) -> int:
    import httpx
    try:
        data = httpx.get(f"http://127.0.0.1:{port}/ontologies/shop", timeout=2).json()
        return int(data["counts"]["artifacts"])
    except (httpx.HTTPError, ValueError, KeyError):
        return 0


if __name__ == "__main__":
    main()
