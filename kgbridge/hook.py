"""`kgbridge-hook`: the entry point Claude Code and Codex run on hook events. Standard library only.

Invariants: always exits 0 and prints nothing but a JSON decision where one is needed; a memory
write or an edit of the mounted slot waits on nothing outside the process (no network, no read
through a mount): the file or the edit goes to the local outbox (or a local drop directory) and a
detached worker (`--drain`/`--worker`: posix_spawn, new session, stdio on /dev/null) delivers it.
Only SessionStart's context waits, on one fixed budget (started `--detached` by the sh gate, nothing
waits: a rescan runs in this process). Start-up imports only json, os, sys and time; only real work
loads `kgbridge.capture`. Errors go to `<state>/hook.log`.
"""

import json
import os
import sys
import time

MAX_PAYLOAD_BYTES = 8 * 1024 * 1024  # payloads carry file contents; anything larger is not ours
RESCAN_EVENTS = frozenset({"SessionStart", "Stop", "SubagentStop", "PreCompact", "SessionEnd"})
# SessionStart may hand the agent MEMORY.md as context: once per session, and rendering it loads
# SQLite and the renderer (~60-100 ms of imports alone), so it gets a fixed budget from the hook's
# start. It is the only wait a hook makes; every other event hands over and exits (bench/hook.py).
SESSION_START_DEADLINE_S = 0.5
# A user on a slow machine may give it more (and a test about what the context says, not about when
# it comes, does): seconds, at most SESSION_START_MAX_S. When it runs out the last good context kept
# on disk is given instead (kgbridge.capture.last_good_context, ADR 0006 session 12).
SESSION_START_ENV = "KG_SESSION_START_S"
SESSION_START_MAX_S = 10.0


def session_start_budget() -> float:
    try:
        seconds = float(os.environ.get(SESSION_START_ENV, SESSION_START_DEADLINE_S))
    except ValueError:
        return SESSION_START_DEADLINE_S
    return min(max(seconds, 0.05), SESSION_START_MAX_S) if seconds == seconds else SESSION_START_DEADLINE_S


# Given by the sh gate that runs the hook in the background (kgbridge.install.Gate.BACKGROUND): no
# agent waits, so a rescan is done in this process instead of a detached second interpreter.
DETACHED = "--detached"


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


def _fuse_mounted() -> bool:
    """Is any FUSE filesystem mounted? Read from the mount table (never stats a mount point)."""
    try:
        with open("/proc/self/mounts", "rb") as table:
            return any(line.split(b" ", 3)[2:3][0].startswith(b"fuse") for line in table if line.count(b" ") >= 3)
    except OSError:
        return True  # cannot tell: let capture decide


def run(args: list, started: float) -> None:
    harness = args[args.index("--harness") + 1] if "--harness" in args[:-1] else "claude"
    if args[:1] in (["--worker"], ["--drain"]) and len(args) > 1:
        from kgbridge import worker

        worker.run(args[1], harness, rescan_first=args[0] == "--worker")
        return
    detached = DETACHED in args
    if detached:  # started in the background by the sh gate: leave the agent's process group
        try:
            os.setsid()
        except OSError:
            pass  # already a group leader: nothing to leave
    raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
    payload = json.loads(raw) if raw.strip() and len(raw) <= MAX_PAYLOAD_BYTES else {}
    if not isinstance(payload, dict):
        return
    event = payload.get("hook_event_name")
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else os.getcwd()
    if event in RESCAN_EVENTS:
        if detached and event != "SessionStart":  # nothing waits on this process: it is the worker
            from kgbridge import worker

            worker.run(cwd, harness, rescan_first=True)
            return
        try:
            if event == "SessionStart":  # the projection as context when not mounted
                from kgbridge import capture

                decision = capture.session_context(payload, harness, started + session_start_budget())
                if decision is not None:
                    sys.stdout.write(json.dumps(decision))
                    sys.stdout.flush()
        finally:  # the rescan's interpreter starts after the context is out, not competing with it
            from kgbridge.bounded import detach

            detach([sys.executable, "-m", "kgbridge.hook", "--worker", cwd, "--harness", harness])
        return
    if event in ("PostToolUse", "PreToolUse") and not _may_touch_markdown(payload):
        return
    if event == "PreToolUse" and not _fuse_mounted():
        return  # the redirect is only for a mounted projection
    from kgbridge import capture

    decision = capture.handle(payload, harness)
    if decision is not None:
        sys.stdout.write(json.dumps(decision))


def main(argv=None) -> None:
    started = time.monotonic()
    try:
        run(sys.argv[1:] if argv is None else argv, started)
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
