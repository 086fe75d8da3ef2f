"""`kgbridge-hook`: the entry point Claude Code and Codex run on hook events. Standard library only.

Invariants: always exits 0 and prints nothing but a JSON decision where one is needed. Start-up
imports only json, os and sys, so the common events cost little more than the interpreter: an edit
that cannot be a memory file (not `.md`) exits at once; rescans (SessionStart, Stop, SubagentStop,
PreCompact, SessionEnd) fork+exec a detached worker (new session, stdio on /dev/null) that survives
the harness's teardown; only real work loads `kgbridge.capture` (SessionStart also prints the
projection as additionalContext when none is mounted). Errors go to `<state>/hook.log`.
"""

import json
import os
import sys

MAX_PAYLOAD_BYTES = 8 * 1024 * 1024  # payloads carry file contents; anything larger is not ours
RESCAN_EVENTS = frozenset({"SessionStart", "Stop", "SubagentStop", "PreCompact", "SessionEnd"})


def _may_touch_markdown(payload: dict) -> bool:
    """Cheap pre-check: could this tool call have written a `.md` file (a memory file)?"""
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return False
    path = tool_input.get("file_path")
    if isinstance(path, str):
        return path.endswith(".md")
    patch = tool_input.get("command") or tool_input.get("patch") or tool_input.get("input")
    return ".md" in (json.dumps(patch) if isinstance(patch, list) else str(patch or ""))


def detach_worker(cwd: str, harness: str) -> None:
    """fork + exec the rescan worker in its own session; the hook returns at once."""
    if os.fork() != 0:
        return
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 1024)
        os.execv(sys.executable, [sys.executable, "-m", "kgbridge.hook", "--worker", cwd, "--harness", harness])
    finally:
        os._exit(0)


def run(args: list) -> None:
    harness = args[args.index("--harness") + 1] if "--harness" in args[:-1] else "claude"
    if args[:1] == ["--worker"] and len(args) > 1:
        from kgbridge import capture

        capture.worker(args[1], harness)
        return
    raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
    payload = json.loads(raw) if raw.strip() and len(raw) <= MAX_PAYLOAD_BYTES else {}
    if not isinstance(payload, dict):
        return
    event = payload.get("hook_event_name")
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else os.getcwd()
    if event in RESCAN_EVENTS:
        detach_worker(cwd, harness)
        if event != "SessionStart":
            return
        from kgbridge import capture  # SessionStart only: the projection as context when not mounted

        decision = capture.session_context(payload, harness)
        if decision is not None:
            sys.stdout.write(json.dumps(decision))
        return
    if event in ("PostToolUse", "PreToolUse") and not _may_touch_markdown(payload):
        return
    from kgbridge import capture

    decision = capture.handle(payload, harness)
    if decision is not None:
        sys.stdout.write(json.dumps(decision))


def main(argv=None) -> None:
    try:
        run(sys.argv[1:] if argv is None else argv)
    except BaseException as exc:  # noqa: BLE001 - process boundary: a hook must never fail the agent
        try:
            from kgbridge.capture import log

            log(f"hook failed: {type(exc).__name__}: {exc}")
        except BaseException:  # noqa: BLE001 - even logging may fail (unusable state dir)
            pass
    finally:
        try:
            sys.stdout.flush()
        except OSError:
            pass
        os._exit(0)  # never wait on anything a hung mount may still hold


if __name__ == "__main__":
    main()
