"""The detached delivery worker: one per project at a time, it drains the outbox and backs off.

Hooks start it (fork + exec, kgbridge.bounded.detach) and return; it holds the project's worker
slot for its whole life, so every other worker leaves its item in the outbox and exits. Invariant:
no item is stranded by that hand-off — after giving up the slot the worker looks once more, and a
rescan request (Stop, SessionStart, ...) wakes it from a backoff. Standard library only.
"""

from __future__ import annotations

import time

from kgbridge.capture import (EDIT_READ_TIMEOUT_S, apply_pending_edits, codex_memory_agent, log, refresh_context,
                              rescan)
from kgbridge.deliver import DrainReport, drain
from kgbridge.detect import detect
from kgbridge.project import Harness, Project, resolve, vetoed
from kgbridge.state import ProjectState, StateUnusable

# A worker keeps retrying a backend that is away for this long, then leaves the outbox to the next
# hook, rescan or `kgbridge flush` (a process per project, not one forever).
WORKER_LIFETIME_S = 120.0
# Waits between attempts after a transient failure (5xx, timeout, refused connection).
BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
# While backing off, how often the worker looks for a rescan request (a Stop hook, `flush`).
WAKE_POLL_S = 0.2


def _pending(state: ProjectState) -> bool:
    try:
        return bool(state.outbox_items() or state.edit_items()) or state.rescan_requested()
    except StateUnusable:
        return False


def _one_pass(project: Project, state: ProjectState) -> DrainReport:
    detection = detect(project, use_cache=False)
    try:
        wanted = state.take_rescan_requests()
    except OSError:
        wanted = {Harness.CLAUDE}  # the marker cannot even be removed: the state dir is unusable, rescan anyway
    if wanted:
        return rescan(project, detection, Harness.CODEX if Harness.CODEX in wanted else Harness.CLAUDE)
    stuck = apply_pending_edits(project, EDIT_READ_TIMEOUT_S)
    with state.lock():
        try:
            report = drain(state, detection)
        except StateUnusable as exc:
            return DrainReport(0, 0, 0, str(exc))
    return report._replace(stopped=report.stopped or stuck)


def _sleep(state: ProjectState, seconds: float) -> None:
    """Back off, but wake early when someone asks for a rescan."""
    until = time.monotonic() + seconds
    while time.monotonic() < until and not state.rescan_requested():
        time.sleep(min(WAKE_POLL_S, max(0.0, until - time.monotonic())))


def _work(project: Project, state: ProjectState, end: float) -> None:
    attempts = 0
    while state.dir.exists():  # gone (a removed test or bench directory): nothing left to deliver
        report = _one_pass(project, state)
        if report.stopped is None:
            if report.waiting == 0 and not state.rescan_requested():
                state.clear_retry()
                return
            continue  # more arrived meanwhile
        delay = BACKOFF_S[min(attempts, len(BACKOFF_S) - 1)]
        attempts += 1
        try:
            state.set_retry(attempts, time.time() + delay, report.stopped)
        except OSError:
            pass  # status reports the unusable state dir itself
        if time.monotonic() + delay > end:
            log(f"worker for {project.slug}: giving up for now after {attempts} attempts ({report.stopped}); "
                f"{report.waiting} wait for the next hook, rescan or `kgbridge flush`")
            return
        _sleep(state, delay)


def run(cwd: str, harness: str, *, rescan_first: bool) -> None:
    if harness == Harness.CODEX and codex_memory_agent(cwd):
        return  # Codex's memory agent: not a project (its files are captured by rescans)
    project = resolve(cwd)
    if vetoed(project):
        return
    state = ProjectState(project.slug)
    end = time.monotonic() + WORKER_LIFETIME_S
    try:
        if rescan_first:
            state.request_rescan(harness)
        while True:
            with state.worker_slot() as mine:
                if not mine:
                    return  # the holder drains what we left
                _work(project, state, end)
                refresh_context(project)  # the next start's context, if it is behind
            # An item that arrived while its worker found our slot taken must not wait for the next
            # hook: look again now that the slot is free.
            if time.monotonic() > end or not _pending(state):
                return
    except OSError as exc:  # an unusable state dir: one unlocked rescan, deliveries stay idempotent
        log(f"worker for {project.slug}: state directory unusable ({exc}); rescanning without the outbox")
        rescan(project, detect(project, use_cache=False), harness)
