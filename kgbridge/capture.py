"""Capture: what the hook does once it knows there is work, and the detached worker. Standard library only.

A PostToolUse on a memory file reads it (regular files under the artifact limit only) and hands it
to the outbox, or drops it straight into a local drop directory when nothing waits ahead of it;
the network is only ever touched by the detached worker (one per project) or `kgbridge flush`.
The hook itself waits on nothing outside the process (SessionStart's context aside). Never reads our own
projection back, and never touches a path behind a FUSE mount outside a bounded child. For Codex,
its own memory store (`memory_summary.md`, ad-hoc notes) is captured too, and its memory agent ignored.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import namedtuple
from pathlib import Path
from collections.abc import Callable

from kgbridge import forgetting
from kgbridge.bounded import StillChanging, TimedOut, alarm, call_bounded, detach, read_regular
from kgbridge.deliver import DrainReport, Outcome, SendOutcome, drain, enqueue, registry_key, send, write_drop
from kgbridge.detect import Detection, Transport, backend_token, behind_fuse, detect
from kgbridge.project import Harness, Project, codex_memories, resolve, vetoed
from kgbridge.state import Delivered, ProjectState, StateUnusable, state_root
from ontology.atomic import atomic_write
from ontology.layout import (MAX_ARTIFACT_BYTES, drop_name, knowledge_root, memory_source, ontology_paths,
                             split_drop_name)
from projection.mounts import fuse_mounts

# Reading a topic file through a healthy projection mount takes milliseconds; the worker and
# `flush` (not the hook) allow a busy daemon this long before trying again later.
EDIT_READ_TIMEOUT_S = 2.0
# A rescan takes a file only once it has been quiet this long. An agent's Write truncates, then
# writes: a rescan reading in between delivered an empty version nobody wrote (bench/hook.py: 16
# drops for 15 writes). A file still changing waits for the next round, at most QUIET_ROUNDS of
# them (the worker or `flush` waits, never a hook); its own PostToolUse delivers it meanwhile.
QUIET_S = 0.5
QUIET_ROUNDS = 4

WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit"})
_PATCH_HEADER = re.compile(r"^\*\*\* (Add File|Update File|Delete File|Move to): (.+?)\s*$", re.MULTILINE)
# Codex's own memory store, under codex_memories() (ADR 0010).
CODEX_SUMMARY = "memory_summary.md"
CODEX_NOTES = Path("extensions", "ad_hoc", "notes")


def log(message: str) -> None:
    """One line in `<state>/hook.log`; on stderr when the state directory cannot take it."""
    from ontology.clock import utc_now  # lazily: only a hook that has something to log pays for datetime

    line = f"{utc_now()} {message}\n"
    try:
        root = state_root()
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(root / "hook.log", "a", encoding="utf-8", errors="replace") as handle:
            handle.write(line)
    except OSError:
        try:
            sys.stderr.write(f"kgbridge: {line}")
        except (OSError, ValueError):
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


def _top_level(path: Path, directory: Path) -> bool:
    """Is `path` a file directly in `directory` (lexically)? Only those are memory files: the rescan,
    the mount's ingest and `rm` read the top level; a note in `archive/` is the host's, as it is."""
    parent, base = os.path.abspath(path.parent), os.path.abspath(directory)
    if parent == base:
        return True
    if behind_fuse(Path(parent)) or behind_fuse(Path(base)):
        return False
    return os.path.realpath(parent) == os.path.realpath(base)  # a symlinked config dir, as `_inside`


def projection_mounted(directory: Path) -> bool:
    """True when a FUSE filesystem is mounted on `directory` (our projection): never capture what we
    projected. Compares mount-table strings only; stat'ing a mount point could hang."""
    return os.path.abspath(directory) in {os.path.abspath(p) for p in fuse_mounts()}


class Changed(namedtuple("Changed", "written removed moved_in moved_from")):
    """What one tool call did to files (lists of paths): wrote them, removed them (deleted, or renamed
    away), or renamed them into place (`moved_in[i]` came from `moved_from[i]`). A namedtuple keeps
    `typing` out of the hook's start-up."""

    __slots__ = ()


def edited_paths(payload: dict, harness: str) -> Changed:
    """Files a PostToolUse changed: `tool_input.file_path`, or an apply_patch's file headers
    (`Update File: a` then `Move to: b` renames a to b)."""
    changed = Changed([], [], [], [])
    tool_input = payload.get("tool_input") or {}
    if not isinstance(tool_input, dict):
        return changed
    cwd = Path(payload.get("cwd") or os.getcwd())
    tool = payload.get("tool_name") or ""
    if tool in WRITE_TOOLS and isinstance(tool_input.get("file_path"), str):
        changed.written.append(cwd / tool_input["file_path"])
    elif tool == "apply_patch" or harness == Harness.CODEX:
        patch = tool_input.get("command") or tool_input.get("patch") or tool_input.get("input") or ""
        if isinstance(patch, list):
            patch = "\n".join(str(part) for part in patch)
        for header, name in _PATCH_HEADER.findall(str(patch)):
            path = cwd / name
            if header == "Delete File":
                changed.removed.append(path)
            elif header == "Move to" and changed.written:
                source = changed.written.pop()
                changed.removed.append(source)
                changed.moved_from.append(source)
                changed.moved_in.append(path)
            else:
                changed.written.append(path)
    return changed


def _memory_files(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if p.suffix == ".md" and not p.name.startswith("."))
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
    summary = root / CODEX_SUMMARY
    return ([summary] if summary.is_file() else []) + _memory_files(root / CODEX_NOTES)


def codex_memory_file(path: Path) -> bool:
    """Is `path` one of Codex's own memory files (its summary, or an ad-hoc note)? Lexical only."""
    root, parent = os.path.abspath(codex_memories()), os.path.abspath(path.parent)
    return path.suffix == ".md" and (parent == os.path.join(root, CODEX_NOTES) or
                                     (parent == root and path.name == CODEX_SUMMARY))


def codex_memory_listing() -> tuple[list[Path], frozenset[str] | None] | None:
    """Codex's memory files for the rescan's comparison, and the names that listing answers for (None:
    all of them; only the summary when the notes directory cannot be listed). None when the store
    itself cannot be read: never taken for an empty one."""
    root = codex_memories()
    if forgetting.listing(root) is None:
        return None
    notes = forgetting.listing(root / CODEX_NOTES)
    summary = root / CODEX_SUMMARY
    return ([summary] if summary.is_file() else []) + (notes or []), \
        None if notes is not None else frozenset({CODEX_SUMMARY})


def _codex_file_there(name: str) -> bool:
    root = codex_memories()
    return (root / name).is_file() if name == CODEX_SUMMARY else (root / CODEX_NOTES / name).is_file()


def read_artifact(path: Path, quiet_s: float = 0.0) -> bytes | None:
    """A memory file's bytes, or None (logged) for a FIFO, symlink, device, or one over the limit.
    With `quiet_s`, raises StillChanging for a file written moments ago (kgbridge.bounded)."""
    try:
        return read_regular(path, MAX_ARTIFACT_BYTES, quiet_s=quiet_s)
    except FileNotFoundError:
        return None
    except StillChanging:
        raise
    except OSError as exc:
        log(f"skipped {os.fsencode(path).decode('utf-8', 'replace')}: {exc.strerror or exc}")
        return None


def forget_vanished(state: ProjectState, files: list[Path], delivered: Delivered, waiting: set[str],
                    folder: forgetting.Folder = forgetting.Folder.CLAUDE,
                    answers_for: frozenset[str] | None = None,
                    there: Callable[[str], bool] | None = None) -> set[str]:
    """Queue a tombstone for each memory file of `folder` delivered before and gone now, or a move
    when a new file carries its content (docs/adr/0012); remember what the folder holds. `files` says
    nothing of known names outside `answers_for` (a part of the folder that could not be listed).
    Returns the names not to send as memory files: those a move carries, and unchanged host copies of
    files deleted through the mount. An outbox that cannot be written leaves the memory of the folder
    as it was. The folder's state is read, changed and written under its lock (hooks change it too);
    one held past LOCK_WAIT_S leaves forgetting to the next rescan. `there(name)` says whether a file
    is in the folder now: under the lock, a known file the listing missed is looked for again, since a
    hook may have written (and recorded) it between the listing and the lock."""
    present = {p.name: read_artifact(p) for p in files}  # None: there, but unreadable now
    readable = {name: data for name, data in present.items() if data is not None}
    prints = {name: forgetting.fingerprint(data) for name, data in readable.items()}
    try:
        with forgetting.held(state, folder, wait=forgetting.LOCK_WAIT_S) as known:
            if known is not None:
                if there is not None:  # written since the listing: there, not vanished (read next rescan)
                    present.update((name, None) for name in known.files if name not in present and there(name))
                return _forget_vanished(state, known, present, readable, prints, delivered, waiting, answers_for)
    except OSError as exc:
        log(f"could not lock the memory folder's state ({exc.strerror or exc})")
    else:
        log(f"the memory folder's state stayed locked for {forgetting.LOCK_WAIT_S} s; forgetting waits for the next rescan")
    unlocked = forgetting.KnownFiles(state, folder)  # read only: what not to send again still holds
    return {name for name, fp in prints.items() if unlocked.withholds(name, fp)}


def _forget_vanished(state: ProjectState, known: forgetting.KnownFiles, present: dict[str, bytes | None],
                     readable: dict[str, bytes], prints: dict[str, dict[str, object]], delivered: Delivered,
                     waiting: set[str], answers_for: frozenset[str] | None) -> set[str]:
    from ontology.clock import utc_now

    withheld = {name for name, fp in prints.items() if known.withholds(name, fp)}
    for name in [n for n, e in known.files.items() if e.get(forgetting.WITHHELD) and n not in present]:
        del known.files[name]  # deleted through the mount, now gone underneath too: its tombstone was sent
    unlisted = set() if answers_for is None else {n for n in known.files if n not in answers_for}
    moved: set[str] = set()
    for gone, successor in forgetting.vanished(known, present.keys() | unlisted, readable):
        at = utc_now()
        try:
            if successor is None:
                enqueue(state, "tombstone", gone, forgetting.tombstone(gone, at), delivered, waiting)
            else:
                data = readable[successor]
                enqueue(state, "move", successor, forgetting.move(gone, successor, data, at), delivered, waiting)
                state.record_delivered(registry_key("memory", data, successor), "move")
                delivered.add(registry_key("memory", data, successor))
                moved.add(successor)
            forgotten = forgetting.memory_keys(delivered, gone)
            state.forget_delivered(forgotten)
        except OSError as exc:
            log(f"could not queue what became of {gone} ({exc.strerror or exc}); the next rescan retries")
            return moved | withheld
        delivered.difference_update(forgotten)
        del known.files[gone]
    known.files.update((name, {**fp, forgetting.WITHHELD: True} if name in withheld else fp)
                       for name, fp in prints.items())
    try:
        known.save()
    except OSError as exc:
        log(f"could not remember the memory folder ({exc.strerror or exc})")
    return moved | withheld


def remember(state: ProjectState, files: dict[str, bytes], folder: forgetting.Folder) -> None:
    """Memory files of one folder handed over by the hook (name -> bytes), in one change: the rescan
    will know if they are gone by then. Never waits (forgetting.record: under the folder's lock if
    it is free, else left beside it); best effort: if nothing can be written, the next rescan learns
    the file itself."""
    if not files:
        return
    try:
        forgetting.record(state, folder, {name: forgetting.fingerprint(data) for name, data in files.items()})
    except OSError:
        pass


def rescan(project: Project, detection: Detection, harness: str = Harness.CLAUDE) -> DrainReport:
    """Drain the outbox, then queue every memory file and ledger entry not yet settled and drain
    again. When the outbox cannot be written, each new artifact gets one direct attempt instead,
    and what is not delivered stays in its directory for the next rescan. A file still being
    written is taken in a later round, once it has been quiet for QUIET_S."""
    report, changing = _rescan_round(project, detection, harness)
    for _ in range(QUIET_ROUNDS):
        if not changing:
            break
        time.sleep(QUIET_S)
        again, changing = _rescan_round(project, detection, harness)
        report = DrainReport(report.delivered + again.delivered, report.refused + again.refused, again.waiting,
                             again.stopped)
    if changing:
        log(f"still being written, left to their next hook or rescan: {', '.join(sorted(changing))}")
    return report


def _rescan_round(project: Project, detection: Detection, harness: str) -> tuple[DrainReport, set[str]]:
    """One rescan; also the names of the files skipped because they were still changing."""
    state = ProjectState(project.slug)
    stuck = apply_pending_edits(project, EDIT_READ_TIMEOUT_S)
    with state.lock():
        try:
            first = drain(state, detection)
            # the last waiting version of each file: an older one waiting ahead of it is not the file now
            newest = {split_drop_name(item.drop_name)[1]: item.drop_name for item in state.outbox_items()}
            waiting = set(newest.values())
        except StateUnusable as exc:
            first, waiting = DrainReport(0, 0, 0, str(exc)), set()
        delivered = state.delivered()
        sources: list[tuple[str, Path]] = []
        if not projection_mounted(project.memory_dir):
            files = forgetting.listing(project.memory_dir)
            if files is not None and (detection.active or state.is_known()):
                not_sent = forget_vanished(state, files, delivered, waiting,
                                           there=lambda name: (project.memory_dir / name).is_file())
                files = [p for p in files if p.name not in not_sent]
            sources += [("memory", p) for p in files or ()]
        sources += [("ledger", p) for p in _memory_files(project.ledger_dir)]
        # Codex's store, for a Codex session, and for `flush` once Codex has delivered here (ADR 0012).
        if harness == Harness.CODEX or (state.dir / forgetting.Folder.CODEX).exists():
            codex = codex_memory_listing()
            if codex is not None and (detection.active or state.is_known()):
                files, answers_for = codex
                not_sent = forget_vanished(state, files, delivered, waiting, forgetting.Folder.CODEX, answers_for,
                                           there=_codex_file_there)
                sources += [("memory", p) for p in files if p.name not in not_sent]
            else:
                sources += [("memory", p) for p in codex_memory_files()]
        direct, unsent, problem, changing = 0, 0, None, set()
        for kind, path in sources:
            try:
                data = read_artifact(path, QUIET_S)
            except StillChanging:
                changing.add(os.fsencode(path.name).decode("utf-8", "replace"))
                continue
            if data is None:
                continue
            try:
                enqueue(state, kind, path.name, data, delivered, waiting)
            except OSError as exc:
                problem = f"outbox unwritable: {exc.strerror or exc}"
                if detection.active and send(detection, state.slug, drop_name(kind, data, path.name),
                                             data).outcome is SendOutcome.DELIVERED:
                    direct += 1
                    delivered.add(registry_key(kind, data, path.name))
                    try:
                        state.record_delivered(registry_key(kind, data, path.name), detection.transport)
                    except OSError:
                        pass  # resent by a later rescan; the backend keeps one copy
                else:
                    unsent += 1
        if problem:
            log(f"{problem}; {unsent} artifacts stay in their directories for the next rescan")
        try:
            second = drain(state, detection) if first.stopped is None else \
                DrainReport(0, 0, len(state.outbox_items()), first.stopped)
        except StateUnusable as exc:
            second = DrainReport(0, 0, 0, str(exc))
    return DrainReport(first.delivered + second.delivered + direct, first.refused + second.refused,
                       second.waiting + unsent, problem or second.stopped or stuck), changing


def local_drop_dir(project: Project) -> Path | None:
    """The drop directory when it is a writable directory on a local (non-FUSE) disk: there a drop
    takes well under a millisecond, so the hook may do it itself (bench/hook.py). Else None."""
    try:
        ingest = ontology_paths(knowledge_root(), project.slug).ingest
    except ValueError:
        return None
    if behind_fuse(ingest) or not os.path.isdir(ingest) or not os.access(ingest, os.W_OK):
        return None
    return ingest


def hand_over(state: ProjectState, drop_dir: Path | None, kind: str, name: str, data: bytes,
              delivered: Delivered) -> Outcome:
    """The hook's delivery: dropped locally when nothing waits ahead of it, else queued for the
    worker; UNSAVED (logged) when the outbox cannot be written: the next rescan reads the file again."""
    key = registry_key(kind, data, name)
    if key in delivered:
        return Outcome.SEEN
    if drop_dir is not None:
        outcome = _drop_now(state, drop_dir, kind, name, data, key)
        if outcome is not None:
            delivered.add(key)
            return outcome
    try:
        enqueue(state, kind, name, data, delivered)
    except OSError as exc:
        log(f"outbox unwritable ({exc.strerror or exc}): {name} was not queued; the next rescan "
            f"retries it from the memory file")
        return Outcome.UNSAVED
    return Outcome.OUTBOX


def _drop_now(state: ProjectState, drop_dir: Path, kind: str, name: str, data: bytes, key: str) -> Outcome | None:
    """Drop into the local drop directory when that keeps order and sends once: nothing waits in the
    outbox ahead of it, and no drain is running that could send the same content meanwhile (a Stop
    rescan reads the same file). Under the drain lock, taken only if free this instant, the registry
    is read again and the drop and its registry line are one step to any rescan. None: queue it."""
    with state.try_lock() as mine:
        if not mine:
            return None  # a drain is running: the outbox keeps it, and that drain (or the next) sends it once
        try:
            if state.outbox_items():
                return None
        except StateUnusable:
            pass  # nothing can wait there anyway: dropping now loses nothing
        if key in state.delivered():
            return Outcome.SEEN  # a rescan sent this very content since the hook looked
        try:
            write_drop(drop_dir, drop_name(kind, data, name), data)
        except OSError:
            return None  # a full or read-only knowledge disk: the outbox keeps it
        try:
            state.record_delivered(key, Transport.DIR)
            state.mark_known()
        except OSError as exc:
            log(f"delivered {name} but could not record it ({exc.strerror or exc}); a rescan may resend it")
        return Outcome.DELIVERED


def spawn_worker(cwd: str, harness: str, *, rescan_first: bool = False, state: ProjectState | None = None) -> None:
    """Start the detached worker; a drain is not started when `state` shows one already running
    (it delivers what this hook queued: it looks at the outbox again before it exits)."""
    if not rescan_first and state is not None and state.worker_running():
        return
    detach([sys.executable, "-m", "kgbridge.hook", "--worker" if rescan_first else "--drain", cwd, "--harness", harness])


def capture_files(project: Project, paths: list[Path], harness: str, *, rescan_wanted: bool = False) -> None:
    """PostToolUse: hand each edited memory file over. Only local work happens here (a capped read
    of a regular file, an atomic write); a file behind FUSE, where a read could hang, is read by a
    rescanning worker instead, and so is a deletion or rename (`rescan_wanted`: the rescan compares
    the folder and sends the tombstone or move)."""
    state = ProjectState(project.slug)
    drop_dir = local_drop_dir(project)
    if drop_dir is None and not state.is_known():
        return  # never activated: a silent no-op
    delivered = state.delivered()
    outcomes: set[Outcome] = set()
    handed: dict[forgetting.Folder, dict[str, bytes]] = {}
    for path in dict.fromkeys(paths):  # a patch may name a file twice (add, then update)
        if behind_fuse(path):
            rescan_wanted = True
            continue
        data = read_artifact(path)
        if data is not None:
            outcome = hand_over(state, drop_dir, "memory", path.name, data, delivered)
            outcomes.add(outcome)
            if outcome is not Outcome.UNSAVED and _inside(path, project.memory_dir):
                handed.setdefault(forgetting.Folder.CLAUDE, {})[path.name] = data
            elif outcome is not Outcome.UNSAVED and harness == Harness.CODEX and codex_memory_file(path):
                handed.setdefault(forgetting.Folder.CODEX, {})[path.name] = data
    for folder, files in handed.items():
        remember(state, files, folder)
    if rescan_wanted or Outcome.UNSAVED in outcomes:
        spawn_worker(str(project.root), harness, rescan_first=True)
    elif Outcome.OUTBOX in outcomes:
        spawn_worker(str(project.root), harness, state=state)


# Claude Code's Edit finds `old_string` in the file with curly quotes read as straight ones, and writes the
# file's quote style into `new_string` (its FileEdit tool, 2.1.x). Applied literally, an edit whose
# old_string has `"v1.x"` where the file has `“v1.x”` changed nothing, though the agent was told it was
# saved (blind14).
_CURLY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
_ESCAPE = re.compile(r"(\\\\)|\\u([0-9a-fA-F]{4})")
_OPENS_AFTER = frozenset(" \t\n\r([{\u2014\u2013")


def _actual_old(text: str, old: str) -> str:
    """The span of `text` Claude Code's Edit takes `old` to mean: itself, else the same characters with
    curly quotes read as straight, else `old` with its `\\uXXXX` escapes read as characters."""
    if old in text:
        return old
    at = text.translate(_CURLY).find(old.translate(_CURLY))
    if at != -1:
        return text[at:at + len(old)]
    unescaped = _ESCAPE.sub(lambda m: m.group(1) or chr(int(m.group(2), 16)), old)
    return unescaped if unescaped != old and unescaped in text else old


def _opens(chars: list[str], i: int) -> bool:
    return i == 0 or chars[i - 1] in _OPENS_AFTER


def _in_file_style(old: str, actual: str, new: str) -> str:
    """`new` with the file's curly quotes where `old` matched only with its quotes straightened."""
    if old == actual:
        return new
    chars = list(new)
    if "\u201c" in actual or "\u201d" in actual:
        chars = [("\u201c" if _opens(chars, i) else "\u201d") if c == '"' else c for i, c in enumerate(chars)]
    if "\u2018" in actual or "\u2019" in actual:
        def single(i: int) -> str:
            before, after = chars[i - 1] if i else "", chars[i + 1] if i + 1 < len(chars) else ""
            if before.isalpha() and after.isalpha():
                return "\u2019"  # an apostrophe
            return "\u2018" if _opens(chars, i) else "\u2019"
        chars = [single(i) if c == "'" else c for i, c in enumerate(chars)]
    return "".join(chars)


class EditNotApplied(ValueError):
    """An Edit's old_string is not in the text it is applied to: Claude Code applies none of such an edit
    (nor of a MultiEdit with one such), and says so; so do we."""


def intended_content(tool: str, tool_input: dict, current: str) -> str | None:
    """What a Write/Edit/MultiEdit would have left in the file, applied as Claude Code applies it;
    `EditNotApplied` when an old_string is not in the text."""
    if tool == "Write":
        content = tool_input.get("content")
        return content if isinstance(content, str) else None
    edits = tool_input.get("edits") if tool == "MultiEdit" else [tool_input]
    # Claude Code edits a file's text without its byte-order mark and with LF line ends, then writes the mark
    # back and the line ends it found (CRLF where most lines end so): an edit changes only what it changes.
    bom = "\ufeff" if current.startswith("\ufeff") else ""
    text = current[len(bom):]
    crlf = text.count("\r\n") * 2 > text.count("\n")
    if crlf:
        text = text.replace("\r\n", "\n")
    for edit in edits if isinstance(edits, list) else []:
        old, new = edit.get("old_string"), edit.get("new_string")
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        if old == "":  # Claude Code: the file becomes new_string
            text = new
            continue
        actual = _actual_old(text, old)
        if actual not in text:
            raise EditNotApplied(f"old_string “{_clip(old)}” is not in its current text")
        new = _in_file_style(old, actual, new)
        if new == "" and not actual.endswith("\n") and actual + "\n" in text:
            actual += "\n"  # deleting a line takes its line break with it
        text = text.replace(actual, new) if edit.get("replace_all") else text.replace(actual, new, 1)
    return bom + (text.replace("\n", "\r\n") if crlf else text)


def _clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _read_topic(path: Path, timeout: float) -> str:
    """A projected file's text, read through the mount in a bounded child."""
    return str(call_bounded(lambda: read_regular(path, MAX_ARTIFACT_BYTES).decode("utf-8"), timeout))


# The author's whole index, served beside MEMORY.md while MEMORY.md cannot show all of it, under the name the
# cut MEMORY.md's footer gives (projection.render.full_index_name: `MEMORY.full.md`, or `MEMORY.full.kgbridge*.md`
# when the author has a file of that name). What is written to it is the index, saved as MEMORY.md; a write to
# the author's own file of such a name is that file's (write14). Only the footer, read through the mount, tells
# which: the hook queues a write to any such name for the worker.
_WHOLE_INDEX_RE = re.compile(r"^memory\.full(\.kgbridge(-\d+)?)?\.md$", re.IGNORECASE)


def _may_be_whole_index(target: Path) -> bool:
    return bool(_WHOLE_INDEX_RE.match(target.name))


def _whole_index_named(memory: str) -> str | None:
    """The file a MEMORY.md read through the mount names in its footer as the author's whole index (it is cut)."""
    from projection.render import full_index_named  # the worker's: the hook never reads the mount

    return full_index_named(memory)


# The author's MEMORY.md as written, served hidden by the mount (projection.view.AUTHOR_INDEX_NAME).
_AUTHOR_INDEX = ".kgbridge-author-index.md"


def _author_index(path: Path, timeout: float) -> str | None:
    try:
        return _read_topic(path, timeout)
    except (OSError, ValueError):  # none yet, or a mount from before write14
        return None


def _in_style_of(text: str, author: str | None, tool: str) -> str:
    """The index an edit of our MEMORY.md saves, in the author's own style: their byte-order mark and line ends
    (Claude Code keeps both when it writes a file), and after an Edit their final newline or its absence. The
    rendering the agent edited is ours, LF throughout: saved as is, every line of a CRLF index changed (write14)."""
    if not author:
        return text
    bom = author.startswith("\ufeff")
    body = author[1:] if bom else author
    out = text.removeprefix("\ufeff").replace("\r\n", "\n")
    if tool != "Write" and not body.endswith("\n") and out.endswith("\n"):
        out = out[:-1]
    if body.count("\r\n") * 2 > body.count("\n"):
        out = out.replace("\n", "\r\n")
    return ("\ufeff" if bom else "") + out


def _saved_name(target: Path, whole_index: str | None = None) -> str:
    """The memory file a write to `target` is saved as: MEMORY.md for the whole index we serve (`whole_index`,
    the name the footer gives), else the file's own name."""
    return "MEMORY.md" if whole_index is not None and target.name == whole_index else target.name


def _edited_content(project: Project, target: Path, tool: str, tool_input: dict, current: str,
                    full_index: str | None = None, whole_index: str | None = None) -> str | None:
    """What the memory file says after this edit of its projected topic file, whose text through the
    mount is `current` ("" for a Write, which replaces it). `full_index`: the author's whole index,
    when the MEMORY.md the agent edited left some of it out; `whole_index`: the name it is served under."""
    content = intended_content(tool, tool_input, current)
    if content is None:
        return None
    if _saved_name(target, whole_index) == "MEMORY.md":
        # The projected index: save the author's lines without ours (header, disputes, marks, footer),
        # or the next projection would show them as the author's, twice; entries the view left out
        # stay where they were.
        from projection.indexedit import index_from_view  # only writes to the mounted slot pay for it

        return index_from_view(content, current, full_index)
    # What the agent saw was a topic file: save what this memory file now says (its own text without
    # the projection's evidence appendix), as the next version of that same file.
    from projection.topic import topic_to_memory  # only writes to the mounted slot pay for it

    saved = topic_to_memory(current, content, memory_source(project.slug, target.name))
    return content if saved is None else saved  # "": the agent emptied the file's own text


def apply_pending_edits(project: Project, timeout: float) -> str | None:
    """The worker's part of PreToolUse: edits the mount was too slow for, oldest first, queued for
    delivery. Returns why it stopped (the mount still not answering, an unusable outbox), else None."""
    state = ProjectState(project.slug)
    try:
        items = state.edit_items()
    except StateUnusable as exc:
        return str(exc)
    for item in items:
        kind, content, whole_index = "memory", None, None
        try:
            record = json.loads(item.read_bytes())
            target = Path(record["target"])
            if record["tool"] == "mv":  # a rename in the mounted slot: the file's own text, moved
                kind, source = "move", Path(record["source"])
                from projection.topic import strip_appendix  # only a rename in the mounted slot pays for it

                topic = _read_topic(source, timeout)
                own = strip_appendix(topic)
                moved = (topic if own is None else own).encode("utf-8")
                content = forgetting.move(source.name, target.name, moved, record["at"]).decode("utf-8")
            else:
                tool = record["tool"]
                current = "" if tool == "Write" and target.name != "MEMORY.md" else _read_topic(target, timeout)
                shown = current
                if tool != "Write":
                    current = _after_last_edit(state, target.name, current)
                full_index = whole_index = None
                if target.name == "MEMORY.md" or _may_be_whole_index(target):
                    index = current if target.name == "MEMORY.md" else _read_topic(target.with_name("MEMORY.md"),
                                                                                  timeout)
                    whole_index = _whole_index_named(index)  # None: the view shows the whole index
                    if target.name == "MEMORY.md" and whole_index is not None:
                        full_index = _read_topic(target.with_name(whole_index), timeout)  # the view was cut
                content = _edited_content(project, target, tool, record["tool_input"], current, full_index,
                                          whole_index)
                if tool != "Write" and content is not None and content == _edited_content(
                        project, target, "Write", {"content": current}, current, full_index, whole_index):
                    raise EditNotApplied("it changed only lines kgbridge adds to what the mount shows (the evidence "
                                         "appendix, ⟨kg: …⟩ marks, header, disputed section or footer), which are "
                                         "not the file's own")
                if content is not None:
                    _remember_edit(state, target.name, shown, intended_content(tool, record["tool_input"], current))
                if content is not None and _saved_name(target, whole_index) == "MEMORY.md":
                    content = _in_style_of(content, _author_index(target.with_name(_AUTHOR_INDEX), timeout), tool)
                if _may_be_whole_index(target):  # the hook could not tell which file this write replaces
                    _keep_host_copy_back(state, _saved_name(target, whole_index))
        except TimedOut as exc:
            return f"projection did not answer: {exc}"
        except EditNotApplied as exc:
            _keep_unapplied(state, record, str(exc))
            content = None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log(f"dropped pending edit {item.name}: {exc}")
            content = None
        try:
            if content is not None:
                enqueue(state, kind, _saved_name(target, whole_index), content.encode("utf-8"))
            item.unlink(missing_ok=True)
        except OSError as exc:
            return f"cannot queue a pending edit: {exc.strerror or exc}"
    return None


def _edited_path(state: ProjectState, name: str) -> Path:
    return state.edited / (name.encode("utf-8", "surrogateescape").hex()[:200] + ".json")


def _after_last_edit(state: ProjectState, name: str, shown: str) -> str:
    """The text an edit of `name` applies to: what the mount shows, unless it still shows the text the last
    edit through it was applied to (that edit is on its way in): then what that edit gave, so two edits in a
    row both count and the second is not applied to the text before the first."""
    try:
        last = json.loads(_edited_path(state, name).read_bytes())
        if last.get("shown") == shown and isinstance(last.get("gave"), str):
            return last["gave"]
    except (OSError, ValueError, AttributeError):
        pass
    return shown


def _remember_edit(state: ProjectState, name: str, shown: str, gave: str | None) -> None:
    try:
        if gave is not None:
            atomic_write(_edited_path(state, name), json.dumps({"shown": shown, "gave": gave},
                                                                ensure_ascii=False).encode("utf-8", "surrogateescape"))
    except OSError as exc:
        log(f"could not keep the text an edit of {name} gave ({exc.strerror or exc})")


def _keep_unapplied(state: ProjectState, record: dict, why: str) -> None:
    """An edit that did not apply: kept with the agent's text (nothing of it saved), told at its next write."""
    from ontology.clock import utc_now

    name = Path(str(record.get("target", ""))).name
    log(f"edit of {name} not applied: {why}")
    try:
        state.put_unapplied({**record, "why": why, "at": utc_now()})
    except OSError as exc:
        log(f"could not keep the unapplied edit of {name} ({exc.strerror or exc})")


def unapplied_report(state: ProjectState) -> str:
    """What the agent has not been told yet: its edits through the mount that did not apply. Each is then
    marked told (its record, with the agent's text, stays in the state directory)."""
    try:
        items = state.untold_unapplied()
    except StateUnusable:
        return ""
    said = []
    for item in items:
        try:
            record = json.loads(item.read_bytes())
            tool_input = record.get("tool_input") or {}
            edits = tool_input.get("edits") if isinstance(tool_input.get("edits"), list) else [tool_input]
            news = "; ".join(f"“{_clip(str(e.get('new_string', '')), 160)}”" for e in edits if isinstance(e, dict))
            said.append(f"{record.get('tool', 'Edit')} of {Path(str(record.get('target', ''))).name} at "
                        f"{str(record.get('at', ''))[:19]} ({record.get('why', 'not applied')}); its new text {news} "
                        f"is kept in {item.with_suffix('.told')}")
            os.replace(item, item.with_suffix(".told"))
        except (OSError, ValueError, AttributeError):
            continue
    if not said:
        return ""
    return ("NOT APPLIED, nothing of it saved: " + " | ".join(said) + ". Read the file again and redo the edit "
            "against its current text. ")


def redirect_write(payload: dict, project: Project) -> dict | None:
    """PreToolUse on the mounted memory slot: hand the intended content over and deny the write (the
    mount is read-only), telling the agent where its memory went. A Write carries its whole content
    and is handed over at once. An Edit needs the file's current text, which only the mount has, and
    the hook never waits on a mount (a stopped daemon held every edit for the whole deadline): the
    edit itself is queued (`edits/`) and the worker reads, applies and delivers it."""
    tool = payload.get("tool_name") or ""
    tool_input = payload.get("tool_input") or {}
    path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    memory_dir = project.memory_dir
    if tool not in WRITE_TOOLS or not isinstance(path, str) or not projection_mounted(memory_dir):
        return None
    target = Path(payload.get("cwd") or os.getcwd()) / path
    if not _inside(target, memory_dir) or vetoed(project):
        return None
    if not _top_level(target, memory_dir):
        # Saved under its bare name it became the next version of the top-level note of that name (or
        # of the index), whose text the agent then read back as the archived one (blind14).
        return _deny(f"Not saved: {os.path.relpath(target, memory_dir)} is in a subfolder of this memory "
                     f"directory, which kgbridge's projection shows read-only as the folder holds it; only "
                     f"the top-level files are memory files. Write the note at the top level, or unmount "
                     f"the projection (`kgbridge unmount`) to change the subfolder.")
    state = ProjectState(project.slug)
    # A Write of MEMORY.md goes through the worker too: what the agent read there may have been cut to the
    # budget, and only the worker reads the mount (the whole index, to keep the entries it never saw). So does
    # a Write of a name the whole index may be served under: only MEMORY.md's footer says whether it is ours.
    if tool != "Write" or target.name == "MEMORY.md" or _may_be_whole_index(target):
        try:
            state.put_edit({"target": str(target), "tool": tool, "tool_input": tool_input})
        except OSError as exc:
            return _deny(f"Not saved: kgbridge's outbox cannot be written ({exc.strerror or exc}); retry later.")
        spawn_worker(str(project.root), Harness.CLAUDE, state=state)
        if not _may_be_whole_index(target):
            _keep_host_copy_back(state, target.name)
        # Not "saved": the edit is applied to the file's current text only after this answer (the hook never
        # waits on the mount), and one whose old_string is no longer there saves nothing (write14).
        return _deny(f"{unapplied_report(state)}Queued for kgbridge: this memory directory is kgbridge's read-only "
                     f"projection. The {tool} of {target.name} is applied to its current text in the background, "
                     f"as {tool} would apply it, and delivered; MEMORY.md and the topic files show the result once it "
                     f"is in. If its old_string is no longer in that text (or only in lines kgbridge adds), nothing "
                     f"is saved, and your next write here says so.")
    content = _edited_content(project, target, tool, tool_input, "")
    if content is None:
        return None
    try:
        _edited_path(state, target.name).unlink(missing_ok=True)  # the next edit applies to this, once it is in
    except OSError:
        pass
    outcome = hand_over(state, local_drop_dir(project), "memory", _saved_name(target), content.encode("utf-8"),
                        state.delivered())
    if outcome is Outcome.OUTBOX:
        spawn_worker(str(project.root), Harness.CLAUDE, state=state)
    elif outcome is Outcome.UNSAVED:
        return _deny("Not saved: kgbridge's outbox cannot be written (see `kgbridge status`). This memory "
                     "directory is kgbridge's read-only projection; retry once the state directory is fixed.")
    _keep_host_copy_back(state, _saved_name(target))
    where = "the knowledge graph" if outcome in (Outcome.DELIVERED, Outcome.SEEN) else \
        "the kgbridge outbox (delivered in the background)"
    return _deny(f"{unapplied_report(state)}Saved to {where} instead: this memory directory is kgbridge's read-only projection. "
                 f"{target.name} will be merged and weighed against what other sessions said; MEMORY.md and "
                 f"the topic files show the result (also MCP kg_search / kg_concept).")


READ_ONLY = ("This memory directory is kgbridge's read-only projection, so the files themselves are not "
             "touched; the projection shows the change once it is ingested.")


def redirect_removal(payload: dict, project: Project) -> dict | None:
    """PreToolUse: a Bash command that would change files in the mounted memory slot. The mount is
    read-only, so it would fail with EROFS. Plain `rm`/`mv` (and `git rm`/`git mv`) of memory files,
    alone or joined by `&&`/`;`, are recorded instead: a deletion as a tombstone, a rename as a move
    (docs/adr/0012). Anything else that writes there is refused with a sentence saying why and what
    kgbridge can record; nothing of it is recorded (kgbridge.shellplan)."""
    tool_input = payload.get("tool_input") or {}
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    memory_dir = project.memory_dir
    if payload.get("tool_name") != "Bash" or not isinstance(command, str) or not projection_mounted(memory_dir):
        return None
    from kgbridge import shellplan  # lazily: only a Bash call on a mounted memory slot pays for it

    planned = shellplan.plan(command, Path(payload.get("cwd") or os.getcwd()), memory_dir)
    if planned is None or vetoed(project):
        return None
    if planned.unrecorded is not None:
        return _deny(f"Not run, nothing recorded: {memory_dir} is kgbridge's read-only projection of this "
                     f"project's memory, where this command would fail (read-only file system), and kgbridge "
                     f"cannot record {planned.unrecorded}. It records deletions and renames of memory files given as "
                     f"plain commands: `rm <file>.md`, `mv <old>.md <new>.md` (or `git rm` / `git mv`), alone "
                     f"or joined by `&&` or `;`, without globs, pipes or redirects; edits go through the "
                     f"Write/Edit tools. Run the rest of the command on its own.")
    from ontology.clock import utc_now

    state, at = ProjectState(project.slug), utc_now()
    deleted = [p for op in planned.operations if op.verb is shellplan.Verb.DELETE for p in op.paths]
    renamed = [op.paths for op in planned.operations if op.verb is shellplan.Verb.RENAME]
    # A renamed file's text is read through the mount, which the hook never waits on: the worker does it.
    queued: list[Path] = []
    try:
        for source, target in renamed:
            queued.append(state.put_edit({"tool": "mv", "source": str(source), "target": str(target), "at": at}))
    except OSError as exc:
        for item in queued:
            item.unlink(missing_ok=True)
        return _deny(f"Not recorded: kgbridge's outbox cannot be written ({exc.strerror or exc}); retry later.")
    drop_dir, delivered = local_drop_dir(project), state.delivered()
    outcomes = {hand_over(state, drop_dir, "tombstone", p.name, forgetting.tombstone(p.name, at), delivered)
                for p in deleted}
    if Outcome.UNSAVED in outcomes:
        return _deny("Deletions not recorded: kgbridge's outbox cannot be written (see `kgbridge status`). "
                     + READ_ONLY)
    if deleted:
        _withhold(state, [p.name for p in deleted], delivered)
    if renamed or Outcome.OUTBOX in outcomes:
        spawn_worker(str(project.root), Harness.CLAUDE, state=state)
    said = []
    if deleted:
        said.append(f"Recorded as deleted in kgbridge: {', '.join(p.name for p in deleted)}. Its claims stop "
                    f"counting and it leaves MEMORY.md; its history (`kgbridge show`) keeps what it said.")
    if renamed:
        said.append("Recorded as renamed in kgbridge: " + ", ".join(f"{a.name} is now {b.name}" for a, b in renamed)
                    + " (one source, its history kept).")
    return _deny(" ".join(said + [READ_ONLY]))


def _withhold(state: ProjectState, names: list[str], delivered: Delivered) -> None:
    """Files deleted through the mount: written again through it, they are their next version (their
    delivered keys forgotten); their host copies underneath, unchanged, are not sent again after an
    unmount (KnownFiles.withhold). Best effort: a failure only means a rescan may send a copy again."""
    try:
        keys = [key for name in names for key in forgetting.memory_keys(delivered, name)]
        state.forget_delivered(keys)
        delivered.difference_update(keys)
        forgetting.record(state, forgetting.Folder.CLAUDE, withhold=names)
    except OSError as exc:
        log(f"could not record the deletion of {', '.join(names)} locally ({exc.strerror or exc})")


def _keep_host_copy_back(state: ProjectState, name: str) -> None:
    """A file written through the mount: the host's copy underneath is the text the agent replaced, so
    after an unmount a rescan does not send it back as the newest version while it is unchanged
    (KnownFiles.withhold; a later change to it is news). Best effort, like `_withhold`."""
    try:
        forgetting.record(state, forgetting.Folder.CLAUDE, withhold=[name])
    except OSError as exc:
        log(f"could not record that {name} was rewritten through the mount ({exc.strerror or exc})")


def _deny(reason: str) -> dict:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


def handle(payload: dict, harness: str) -> dict | None:
    """Act on one non-rescan hook event; returns the JSON decision to print, if any."""
    event = payload.get("hook_event_name") or ""
    cwd = payload.get("cwd") or os.getcwd()
    if harness == Harness.CODEX and codex_memory_agent(cwd):
        return None
    project = resolve(cwd)
    if event == "PreToolUse":
        return redirect_write(payload, project) or redirect_removal(payload, project)
    if event == "PostToolUse":
        memory_dirs = [] if projection_mounted(project.memory_dir) else [project.memory_dir]
        if harness == Harness.CODEX:
            memory_dirs.append(codex_memories())
        changed = edited_paths(payload, harness)

        def memory_file(p: Path) -> bool:  # what the rescan lists: a subfolder's notes are not memory files
            return p.suffix == ".md" and (any(_top_level(p, d) for d in memory_dirs if d != codex_memories())
                                          or (codex_memories() in memory_dirs and codex_memory_file(p)))

        ours = [p for p in changed.removed if memory_file(p)]
        # A memory file renamed within the folders is a move, which the rescan pairs up; one renamed
        # in from elsewhere is new.
        written = changed.written + [p for p, q in zip(changed.moved_in, changed.moved_from) if q not in ours]
        targets = [p for p in written if memory_file(p)]
        if (targets or ours) and not vetoed(project):
            capture_files(project, targets, harness, rescan_wanted=bool(ours))
    return None


# The SessionStart fallback must fit Claude Code's additionalContext (10,000 characters); bytes
# bound characters from above, so rendering to this many bytes keeps the promise.
CONTEXT_BYTES = 10_000
CONTEXT_LINES = 120
# How long the SessionStart child may take over the HTTP read: the hook stops waiting at its own
# deadline, the child goes on (orphaned, its own session) and keeps what it reads for the next start.
LATE_CONTEXT_S = 5.0
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

    from dataclasses import replace

    from projection.render import render_memory, utf8_bytes
    from projection.snapshot import memory_snapshot

    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1.0)
    try:
        conn.execute("BEGIN")
        # Not mounted: the harness loads the host's own MEMORY.md itself, so the context adds only
        # what that index lacks (disputes, concepts it does not link), not the index a second time.
        # Bytes here, not the UTF-16 units MEMORY.md is measured in: Codex counts a context's bytes.
        return render_memory(replace(memory_snapshot(conn, slug), host_index=None), CONTEXT_LINES, max_bytes,
                             utf8_bytes)
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


def context_text(project: Project, seconds: float, max_bytes: int, detection: Detection | None = None) -> str | None:
    """MEMORY.md for the session, from the local graph or over HTTP ("" when the graph has none);
    None when no backend answered (none found, or an HTTP error other than a missing ontology)."""
    detection = detection or detect(project)
    if detection.transport == Transport.DIR and detection.ingest_target:
        database = Path(detection.ingest_target).parent / "graph.db"
        return _local_memory(database, project.slug, max_bytes) if database.exists() else ""
    if detection.transport == Transport.HTTP and detection.ingest_target:
        from kgbridge.detect import http_get  # lazily: urllib only where HTTP is the transport

        base = detection.ingest_target.rsplit("/ingest", 1)[0]
        status, body = http_get(f"{base}/ontologies/{project.slug}/memory", backend_token(), seconds)
        if status == 200:
            return body.decode("utf-8", "replace")
        return "" if status == 404 else None
    return None


# The last context the graph gave this project and harness, kept in the state dir (ADR 0006, session
# 12): served when the graph does not answer within the SessionStart budget (a CPU-starved start,
# a slow backend), so a loaded machine does not start the session without what kgbridge is for.
LAST_GOOD_NOTE = ("_kgbridge did not answer in time at this session's start: this is its last answer, "
                  "from {when} UTC; the memory folder has not changed since._\n")


def context_budget(harness: str) -> int:
    """Bytes of graph text a harness's SessionStart context holds (after its preface)."""
    if harness == Harness.CODEX:
        return CODEX_CONTEXT_BYTES - len(CODEX_PREFACE.encode("utf-8"))
    return CONTEXT_BYTES


def context_cache(project: Project, harness: str) -> Path:
    return ProjectState(project.slug).dir / f"session-context.{harness}.md"


def keep_context(project: Project, harness: str, text: str, read_at: float) -> None:
    """Replace the last-good context (atomically: a reader sees the old or the new one whole), dated
    when its read began (`time.time()`): a slow read of the graph as it was then neither replaces a
    context read later nor looks newer than a memory file written while it ran."""
    path = context_cache(project, harness)
    try:
        if path.stat().st_mtime >= read_at:
            return
    except OSError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temp = path.with_name(f".{path.name}.{os.getpid()}")
        temp.write_text(text, encoding="utf-8")
        os.utime(temp, (read_at, read_at))
        os.replace(temp, path)
    except OSError as exc:
        log(f"could not keep the session context ({exc.strerror or exc})")


MAX_SCANNED = 4096  # entries the freshness check of a kept context looks at


def _newest_change(project: Project, harness: str) -> float:
    """The newest mtime among the files the graph learns this project's memory from (the memory
    folder and the ledger at their top level, Codex's memories with their subfolders, the delivery
    registry), at most MAX_SCANNED entries."""
    folders = [project.memory_dir, project.ledger_dir] + ([codex_memories()] if harness == Harness.CODEX else [])
    newest, seen = 0.0, 0
    while folders and seen < MAX_SCANNED:
        folder = folders.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > MAX_SCANNED:
                        break
                    newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
                    if harness == Harness.CODEX and entry.is_dir(follow_symlinks=False):
                        folders.append(Path(entry.path))  # Codex keeps notes in nested folders
        except OSError:
            continue
    try:
        newest = max(newest, ProjectState(project.slug).delivered_log.stat().st_mtime)
    except OSError:
        pass
    return newest


def context_stale(project: Project, harness: str) -> bool:
    """A context is kept for this harness and something it was made from changed after it."""
    try:
        return _newest_change(project, harness) > context_cache(project, harness).stat().st_mtime
    except OSError:
        return False


def last_good_context(project: Project, harness: str, max_bytes: int) -> str | None:
    """The kept context (whole lines, at most `max_bytes` with its closing note), only while nothing
    it was made from has changed since it was kept: a fact corrected in a memory file after it was
    read must not come back as it was (do no harm)."""
    path = context_cache(project, harness)
    try:
        kept = path.stat().st_mtime
        if _newest_change(project, harness) > kept:
            log("session context unavailable and the kept one is older than the memory folder: none given")
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    if not text.strip():
        return None
    note = "\n" + LAST_GOOD_NOTE.format(when=time.strftime("%Y-%m-%d %H:%M", time.gmtime(kept)))
    return _whole_lines(text.rstrip("\n") + "\n", max_bytes - len(note.encode("utf-8"))) + note


def _context_kept(project: Project, harness: str, seconds: float, max_bytes: int) -> str | None:
    """The context, kept on disk as the last good one. Runs in the bounded child, which carries on
    when the hook stops waiting: a late answer is the next session's last-good context."""
    read_at = time.time()
    text = context_text(project, seconds, max_bytes)
    if text is not None:
        keep_context(project, harness, text, read_at)
    return text


# Keeping the session context after a delivery (worker, flush; no agent waits on it): the whole
# read, and how long a drop directory's backend may take to ingest what was dropped.
CONTEXT_REFRESH_S = 5.0


def _ingested(ingest_dir: str, seconds: float) -> bool:
    """Wait until the drop directory's backend has taken every drop (it removes what it ingested).
    A drop older than `seconds` says no backend is taking them: no wait then."""
    until = time.monotonic() + seconds
    while True:
        try:
            with os.scandir(ingest_dir) as entries:
                waiting = [e.stat().st_mtime for e in entries if not e.name.startswith(".")]
        except OSError:
            return False
        if not waiting:
            return True
        if time.monotonic() > until or min(waiting) < time.time() - seconds:
            return False
        time.sleep(0.1)


def refresh_context(project: Project, detection: Detection | None = None) -> None:
    """Keep the session context the next start would read, when the kept one is older than what it
    was made from (a memory file, the ledger, a delivery): a start the graph cannot answer in time
    then gets it from disk (ADR 0006, session 12). Run by the worker when it is done and by `flush`;
    only where a SessionStart kept one already (a mounted projection gives no context: nothing to
    do), and once the graph has what was delivered (a drop directory: its backend took every drop)."""
    stale = [h for h in (Harness.CLAUDE, Harness.CODEX) if context_stale(project, h)]
    if not stale:
        return
    detection = detection or detect(project, use_cache=False)
    if detection.transport == Transport.DIR and detection.ingest_target:
        if not _ingested(detection.ingest_target, CONTEXT_REFRESH_S):
            return  # no backend is ingesting: the graph is behind, the kept context stays stale (unused)
    for harness in stale:
        read_at = time.time()
        try:
            with alarm(CONTEXT_REFRESH_S):
                text = context_text(project, CONTEXT_REFRESH_S, context_budget(harness), detection)
        except (OSError, TimeoutError) as exc:
            log(f"could not keep the session context of {project.slug} ({exc})")
            return
        if text is not None:
            keep_context(project, harness, text, read_at)


def session_context(payload: dict, harness: str, deadline: float) -> dict | None:
    """SessionStart without a mounted projection: hand the agent a compact MEMORY.md as context
    (for Codex: smaller, so it arrives whole, and without links to files it cannot open).
    Detection, name resolution and the read all run in one bounded child under the hook's deadline;
    when it does not answer in time the session starts without context (logged)."""
    cwd = payload.get("cwd") or os.getcwd()
    if harness == Harness.CODEX and codex_memory_agent(cwd):
        return None
    project = resolve(cwd)
    if vetoed(project):
        return None
    if harness != Harness.CODEX and projection_mounted(project.memory_dir):
        # The mount is the context; what this session must still hear is an earlier edit that did not apply
        # and was told to nobody (its session ended first: write14).
        told = unapplied_report(ProjectState(project.slug))
        return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext":
                                       f"kgbridge, about {project.memory_dir}: {told}"}} if told else None
    preface = CODEX_PREFACE if harness == Harness.CODEX else ""
    budget = context_budget(harness)
    # The child may finish after the hook stopped waiting; it still keeps what it read (a live answer
    # takes up to the detection budget, not this hook's, so a late one is whole).
    try:
        answer = call_bounded(lambda: _context_kept(project, harness, LATE_CONTEXT_S, budget),
                              deadline - time.monotonic())
        why = ""  # no backend answered: said only when a kept context stands in
    except (OSError, TimedOut) as exc:  # ChildFailed is an OSError
        answer, why = None, str(exc)
    if answer is None:
        kept = last_good_context(project, harness, budget)
        if why or kept:
            log(f"session context unavailable: {why or 'no backend answered'}"
                + ("; gave the last good one" if kept else ""))
        if kept is None:
            return None
        answer = kept
    text = str(answer)
    text = _whole_lines(text, budget)  # the HTTP route renders for a MEMORY.md slot, larger than this
    if not text.strip():
        return None
    if harness == Harness.CODEX:
        text = _MD_LINK.sub(r"\1", text)  # only shortens: still within the budget
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": preface + text}}
