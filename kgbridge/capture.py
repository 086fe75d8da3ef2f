"""Capture: what the hook does once it knows there is work. Standard library only.

A PostToolUse on a memory file is delivered inline (bounded by detection's budget plus one small
write); a rescan delivers every memory file and ledger entry not yet delivered and flushes the
outbox. Never reads our own projection back (a mount on the memory directory is skipped), and
never touches a path behind a possibly hung FUSE mount outside a bounded child.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from kgbridge.bounded import TimedOut, call_bounded
from kgbridge.deliver import Outcome, deliver, flush
from kgbridge.detect import Detection, Transport, behind_fuse, detect
from kgbridge.project import Harness, Project, resolve, vetoed
from kgbridge.state import ProjectState, state_root
from ontology.layout import memory_source
from projection.mounts import fuse_mounts

WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit"})
_PATCH_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Move to): (.+?)\s*$", re.MULTILINE)


def log(message: str) -> None:
    from ontology.clock import utc_now  # lazily: only a hook that has something to log pays for datetime

    try:
        root = state_root()
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(root / "hook.log", "a", encoding="utf-8") as log:
            log.write(f"{utc_now()} {message}\n")
    except OSError:
        pass


def _inside(path: Path, directory: Path) -> bool:
    """Path containment without touching a possibly hung mount: lexical first, then realpath only
    where no FUSE mount covers either side (symlinked config dirs)."""
    lexical, base = os.path.abspath(path), os.path.abspath(directory)
    if lexical == base or lexical.startswith(base.rstrip("/") + "/"):
        return True
    if behind_fuse(Path(lexical)) or behind_fuse(Path(base)):
        return False
    real, real_base = os.path.realpath(lexical), os.path.realpath(base)
    return real == real_base or real.startswith(real_base.rstrip("/") + "/")


def projection_mounted(directory: Path) -> bool:
    """True when a FUSE filesystem is mounted on `directory` (our projection): never capture what we
    projected. Compares mount-table strings only; stat'ing a mount point could hang."""
    return os.path.abspath(directory) in {os.path.abspath(p) for p in fuse_mounts()}


def edited_paths(payload: dict, harness: str) -> list[Path]:
    """Files a PostToolUse changed: `tool_input.file_path`, or an apply_patch's file headers."""
    tool_input = payload.get("tool_input") or {}
    if not isinstance(tool_input, dict):
        return []
    cwd = Path(payload.get("cwd") or os.getcwd())
    tool = payload.get("tool_name") or ""
    if tool in WRITE_TOOLS and isinstance(tool_input.get("file_path"), str):
        return [cwd / tool_input["file_path"]]
    if tool == "apply_patch" or harness == Harness.CODEX:
        patch = tool_input.get("command") or tool_input.get("patch") or tool_input.get("input") or ""
        if isinstance(patch, list):
            patch = "\n".join(str(part) for part in patch)
        return [cwd / match for match in _PATCH_HEADER.findall(str(patch))]
    return []


def _memory_files(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if p.suffix == ".md" and p.is_file() and not p.name.startswith("."))
    except OSError:
        return []


def rescan(project: Project, detection: Detection) -> dict[str, int]:
    """Deliver every memory file and ledger entry not yet delivered, then flush the outbox."""
    state = ProjectState(project.slug)
    counts = {Outcome.DELIVERED: 0, Outcome.OUTBOX: 0}
    with state.lock():
        delivered = state.delivered()
        flush(state, detection)
        sources: list[tuple[str, Path]] = []
        if not projection_mounted(project.memory_dir):
            sources += [("memory", p) for p in _memory_files(project.memory_dir)]
        sources += [("ledger", p) for p in _memory_files(project.ledger_dir)]
        for kind, path in sources:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            outcome = deliver(state, detection, kind, path.name, data, delivered)
            if outcome in counts:
                counts[outcome] += 1
    return counts


def intended_content(tool: str, tool_input: dict, current: str) -> str | None:
    """What a Write/Edit/MultiEdit would have left in the file."""
    if tool == "Write":
        content = tool_input.get("content")
        return content if isinstance(content, str) else None
    edits = tool_input.get("edits") if tool == "MultiEdit" else [tool_input]
    text = current
    for edit in edits if isinstance(edits, list) else []:
        old, new = edit.get("old_string"), edit.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        text = text.replace(old, new) if edit.get("replace_all") else text.replace(old, new, 1)
    return text


def redirect_write(payload: dict, project: Project) -> dict | None:
    """PreToolUse on the mounted memory slot: send the intended content to ingestion and deny the
    write (the mount is read-only), telling the agent where its memory went."""
    tool = payload.get("tool_name") or ""
    tool_input = payload.get("tool_input") or {}
    path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    memory_dir = project.memory_dir
    if tool not in WRITE_TOOLS or not isinstance(path, str) or not projection_mounted(memory_dir):
        return None
    target = Path(payload.get("cwd") or os.getcwd()) / path
    if not _inside(target, memory_dir) or vetoed(project):
        return None
    current = ""
    if tool != "Write":
        try:
            current = call_bounded(lambda: target.read_text(encoding="utf-8"), 1.0)  # type: ignore[assignment]
        except (OSError, TimedOut):
            current = ""
    content = intended_content(tool, tool_input, str(current))
    if content is None:
        return None
    # What the agent saw was a topic file: save what this memory file now says (its own text without
    # the projection's evidence appendix), as the next version of that same file.
    from projection.topic import topic_to_memory

    content = topic_to_memory(str(current), content, memory_source(project.slug, target.name)) or content
    outcome = deliver(ProjectState(project.slug), detect(project), "memory", target.name, content.encode("utf-8"))
    where = "the knowledge graph" if outcome in (Outcome.DELIVERED, Outcome.SEEN) else "the kgbridge outbox (backend away)"
    reason = (f"Saved to {where} instead: this memory directory is kgbridge's read-only projection. "
              f"{target.name} will be merged and weighed against what other sessions said; MEMORY.md and "
              f"the topic files show the result (also MCP kg_search / kg_concept).")
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


def handle(payload: dict, harness: str = Harness.CLAUDE) -> dict | None:
    """Act on one non-rescan hook event; returns the JSON decision to print, if any."""
    event = payload.get("hook_event_name") or ""
    cwd = payload.get("cwd") or os.getcwd()
    project = resolve(cwd)
    if event == "PreToolUse":
        return redirect_write(payload, project)
    if event == "PostToolUse":
        memory_dir = project.memory_dir
        if projection_mounted(memory_dir):
            return None
        targets = [p for p in edited_paths(payload, harness) if p.suffix == ".md" and _inside(p, memory_dir)]
        if not targets or vetoed(project):
            return None
        detection = detect(project)
        state = ProjectState(project.slug)
        for path in targets:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            deliver(state, detection, "memory", path.name, data)
        return None
    return None


# The SessionStart fallback must fit Claude Code's additionalContext (10,000 characters); bytes
# bound characters from above, so rendering to this many bytes keeps the promise.
CONTEXT_BYTES = 10_000
CONTEXT_LINES = 120
CONTEXT_HTTP_TIMEOUT_S = 0.5


def _local_memory(database: Path, slug: str) -> str:
    import sqlite3

    from projection.render import render_memory
    from projection.snapshot import memory_snapshot

    from dataclasses import replace

    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1.0)
    try:
        conn.execute("BEGIN")
        # Not mounted: the harness loads the host's own MEMORY.md itself, so the context adds only
        # what that index lacks (disputes, concepts it does not link), not the index a second time.
        return render_memory(replace(memory_snapshot(conn, slug), host_index=None), CONTEXT_LINES, CONTEXT_BYTES)
    finally:
        conn.close()


def session_context(payload: dict) -> dict | None:
    """SessionStart without a mounted projection: hand the agent a compact MEMORY.md as context."""
    project = resolve(payload.get("cwd") or os.getcwd())
    if vetoed(project) or projection_mounted(project.memory_dir):
        return None
    detection = detect(project)
    text = ""
    if detection.transport == Transport.DIR and detection.ingest_target:
        database = Path(detection.ingest_target).parent / "graph.db"
        try:
            if behind_fuse(database):
                text = str(call_bounded(lambda: _local_memory(database, project.slug), 1.0))
            elif database.exists():
                text = _local_memory(database, project.slug)
        except Exception as exc:  # noqa: BLE001 - context is optional: log it, start the session anyway
            log(f"session context unavailable: {exc}")
    elif detection.transport == Transport.HTTP and detection.ingest_target:
        from kgbridge.detect import backend_token, http_get

        base = detection.ingest_target.rsplit("/ingest", 1)[0]
        try:
            status, body = http_get(f"{base}/ontologies/{project.slug}/memory", backend_token(),
                                    CONTEXT_HTTP_TIMEOUT_S)
            text = body.decode("utf-8", "replace") if status == 200 else ""
        except OSError:
            text = ""
    text = text[:CONTEXT_BYTES]
    if not text.strip():
        return None
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


def worker(cwd: str) -> None:
    project = resolve(cwd)
    if vetoed(project):
        return
    rescan(project, detect(project))
