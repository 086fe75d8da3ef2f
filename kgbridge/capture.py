"""Capture: what the hook does once it knows there is work. Standard library only.

A PostToolUse on a memory file is delivered inline (bounded by detection's budget plus one small
write); a rescan delivers every memory file and ledger entry not yet delivered and flushes the
outbox. Never reads our own projection back (a mount on the memory directory is skipped), and
never touches a path behind a possibly hung FUSE mount outside a bounded child. For Codex, its own
memory store (`memory_summary.md`, ad-hoc notes) is captured too, and its memory agent ignored.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from kgbridge.bounded import TimedOut, call_bounded
from kgbridge.deliver import Outcome, deliver, flush
from kgbridge.detect import Detection, Transport, behind_fuse, detect
from kgbridge.project import Harness, Project, codex_memories, resolve, vetoed
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


def codex_memory_agent(cwd: str | Path) -> bool:
    """Codex's background memory agent runs its sessions, and so our hooks, inside its own store:
    not a project. What it consolidates is captured from the files (`codex_memory_files`)."""
    return _inside(Path(cwd), codex_memories())


def codex_memory_files() -> list[Path]:
    """Codex's own memory: the summary injected at every session start and the notes "remember"
    requests append. Per user, so each active project it works in receives them (ADR 0010)."""
    root = codex_memories()
    summary = root / "memory_summary.md"
    return ([summary] if summary.is_file() else []) + _memory_files(root / "extensions" / "ad_hoc" / "notes")


def rescan(project: Project, detection: Detection, harness: str = Harness.CLAUDE) -> dict[str, int]:
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
        if harness == Harness.CODEX:
            sources += [("memory", p) for p in codex_memory_files()]
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
    if harness == Harness.CODEX and codex_memory_agent(cwd):
        return None
    project = resolve(cwd)
    if event == "PreToolUse":
        return redirect_write(payload, project)
    if event == "PostToolUse":
        memory_dirs = [] if projection_mounted(project.memory_dir) else [project.memory_dir]
        if harness == Harness.CODEX:
            memory_dirs.append(codex_memories())
        targets = [p for p in edited_paths(payload, harness)
                   if p.suffix == ".md" and any(_inside(p, d) for d in memory_dirs)]
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
# Codex cuts a SessionStart context above 2,500 tokens in the middle, counting 4 bytes a token (a
# 9,969-byte context arrived whole, 12,459 bytes were cut at ~10,000): 9,600 bytes stay under it
# even where the hook carries no additionalContextLimit.
CODEX_CONTEXT_BYTES = 9_600
# Codex has no memory directory of ours to open: the projection's file links mean nothing to it.
CODEX_PREFACE = ("kgbridge memory for this project (names in it are kgbridge concepts, not files on disk: "
                 "look them up with the MCP tools kg_concept / kg_search when the server is registered).\n\n")
_MD_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\s]+\.md\)")


def _local_memory(database: Path, slug: str, max_bytes: int) -> str:
    import sqlite3

    from projection.render import render_memory
    from projection.snapshot import memory_snapshot

    from dataclasses import replace

    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1.0)
    try:
        conn.execute("BEGIN")
        # Not mounted: the harness loads the host's own MEMORY.md itself, so the context adds only
        # what that index lacks (disputes, concepts it does not link), not the index a second time.
        return render_memory(replace(memory_snapshot(conn, slug), host_index=None), CONTEXT_LINES, max_bytes)
    finally:
        conn.close()


# Closes a context cut to size, so the agent knows there is more and where (whole lines only).
CUT_NOTE = "_Cut to fit the session context: {lines} more lines in kgbridge (MCP kg_memory / kg_search)._\n"


def _whole_lines(text: str, max_bytes: int) -> str:
    """At most `max_bytes` UTF-8 bytes of `text`: whole lines, and a closing note when cut."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    room = max_bytes - len(CUT_NOTE.format(lines=len(text.splitlines())).encode("utf-8"))
    cut = data[:max(room, 0)].rfind(b"\n")
    kept = data[: cut + 1].decode("utf-8") if cut > 0 else ""
    return kept + CUT_NOTE.format(lines=len(text.splitlines()) - len(kept.splitlines()))


def session_context(payload: dict, harness: str = Harness.CLAUDE) -> dict | None:
    """SessionStart without a mounted projection: hand the agent a compact MEMORY.md as context
    (for Codex: smaller, so it arrives whole, and without links to files it cannot open)."""
    cwd = payload.get("cwd") or os.getcwd()
    if harness == Harness.CODEX and codex_memory_agent(cwd):
        return None
    project = resolve(cwd)
    if vetoed(project) or (harness != Harness.CODEX and projection_mounted(project.memory_dir)):
        return None
    preface = CODEX_PREFACE if harness == Harness.CODEX else ""
    budget = (CODEX_CONTEXT_BYTES if harness == Harness.CODEX else CONTEXT_BYTES) - len(preface.encode("utf-8"))
    detection = detect(project)
    text = ""
    if detection.transport == Transport.DIR and detection.ingest_target:
        database = Path(detection.ingest_target).parent / "graph.db"
        try:
            if behind_fuse(database):
                text = str(call_bounded(lambda: _local_memory(database, project.slug, budget), 1.0))
            elif database.exists():
                text = _local_memory(database, project.slug, budget)
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
    text = _whole_lines(text, budget)  # the HTTP route renders for a MEMORY.md slot, larger than this
    if not text.strip():
        return None
    if harness == Harness.CODEX:
        text = _MD_LINK.sub(r"\1", text)  # only shortens: still within the budget
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": preface + text}}


def worker(cwd: str, harness: str = Harness.CLAUDE) -> None:
    if harness == Harness.CODEX and codex_memory_agent(cwd):
        return
    project = resolve(cwd)
    if vetoed(project):
        return
    rescan(project, detect(project), harness)
