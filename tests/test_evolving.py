"""A memory folder over its life (ADR 0009, session 9): the hooks deliver version after version of the
same files, tombstones and moves; what the agent reads after the last one must hold no false update,
dispute or mark. Our own scenarios (tests/fixtures/evolving/, `expected.json` names the real ones);
`python -m bench.evolving` scores the whole set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, memory
from ontology import queries
from ontology.artifact import Channel

EVOLVING = FIXTURES / "evolving"


def _updates(onto) -> list[tuple[str, str]]:
    with onto.reader() as conn:
        return [(u.older_text or u.old_text, u.newer_text) for u in queries.updates(conn)]


UPGRADE = "- 2026-05-02: upgraded to Kumo CLI 2.4 for the faster uploads."


@pytest.mark.parametrize("name, undo", [
    ("session_0502.md", UPGRADE + "\n- 2026-05-03: rolled back to Kumo CLI 2.1: 2.4 broke the deploy hooks."),
    ("session_0502.md", UPGRADE + "\n- 2026-05-03: reverted the Kumo CLI upgrade: the deploy hooks broke."),
    ("session_0502.md", "- 2026-05-02: upgraded to Kumo CLI 2.4 but rolled back to 2.1 the same day."),
    ("session_0503.md", "- 2026-05-03: rolled back to Kumo CLI 2.1: 2.4 broke the deploy hooks."),
], ids=["named-same-file", "unnamed-same-file", "same-sentence", "another-file"])
def test_a_rollback_undoes_the_upgrade_it_follows(onto, name, undo):
    """blind9: a session file said "upgraded to Kumo CLI 2.4" (the reference's "Kumo CLI 2.1" rightly
    superseded); then the author rolled it back: named or not, in the same file or in the next session's.
    The reference is current again: the agent must not read that the upgrade supersedes it."""
    reference = memory("deploy-tools", "deploy tools", "- Deploys use Kumo CLI 2.1 (`kumo push`).", "reference")
    onto.ingest("reference_deploy_tools.md", reference, Channel.CLI)
    onto.ingest("session_0502.md", memory("session-0502", "a session", UPGRADE), Channel.CLI)
    assert any("Kumo CLI 2.1" in old and "Kumo CLI 2.4" in new for old, new in _updates(onto)), _updates(onto)
    onto.ingest(name, memory(name[:-3], "a session", undo), Channel.CLI)
    assert not any("Deploys use Kumo CLI 2.1" in old for old, _ in _updates(onto)), _updates(onto)


def test_an_upgrade_after_the_rollback_still_supersedes(onto):
    """Rolled back on the 3rd, upgraded again to 2.5 on the 5th: 2.5 supersedes the reference's 2.1."""
    onto.ingest("reference_deploy_tools.md", memory("deploy-tools", "deploy tools", "- Deploys use Kumo CLI 2.1.",
                                                    "reference"), Channel.CLI)
    log = UPGRADE + "\n- 2026-05-03: rolled back to Kumo CLI 2.1.\n- 2026-05-05: upgraded to Kumo CLI 2.5."
    onto.ingest("session_0502.md", memory("session-0502", "a session", log), Channel.CLI)
    assert any(old == "Deploys use Kumo CLI 2.1" and "Kumo CLI 2.5" in new for old, new in _updates(onto)), \
        _updates(onto)


def _disputed(onto) -> list[str]:
    with onto.reader() as conn:
        return [a.text for a in queries.assertions(conn) if a.status in ("CONTESTED", "CONTRADICTORY")]


def test_a_removal_the_file_undoes_later_removes_nothing(onto):
    """blind9: a cleanup log said "2026-05-02: removed `legacy_sync`" (disputing the file whose nightly job
    calls it), then its next version adds "2026-05-04: restored `legacy_sync`". It is there now: no
    dispute, no "removed" update; the removal still counts when the restore is not dated after it."""
    onto.ingest("reference_nightly.md", memory("nightly", "jobs", "- The nightly job calls `legacy_sync` after "
                                               "the export."), Channel.CLI)
    removed = "- 2026-05-02: removed `legacy_sync` from the codebase."
    onto.ingest("project_cleanup_log.md", memory("cleanup", "removals", removed), Channel.CLI)
    assert _disputed(onto) == ["`legacy_sync` is in use"]
    restored = removed + "\n- 2026-05-04: restored `legacy_sync`; the nightly job still needs it."
    onto.ingest("project_cleanup_log.md", memory("cleanup", "removals", restored), Channel.CLI)
    assert _disputed(onto) == []
    assert not any("legacy_sync" in old for old, _ in _updates(onto)), _updates(onto)
    undated = removed + "\n- Restored `legacy_sync` for the nightly job."
    onto.ingest("project_cleanup_log.md", memory("cleanup", "removals", undated), Channel.CLI)
    assert _disputed(onto) == ["`legacy_sync` is in use"], "a restore not dated after the removal says nothing"


def test_a_restore_in_another_file_ends_the_dispute(onto):
    """blind9: the same across files: the cleanup log's dated removal, then the next session's
    "2026-05-04: restored `legacy_sync`". The use after every removal is what holds: no dispute."""
    onto.ingest("reference_nightly.md", memory("nightly", "jobs", "- The nightly job calls `legacy_sync` after "
                                               "the export."), Channel.CLI)
    onto.ingest("project_cleanup_log.md", memory("cleanup", "removals", "- 2026-05-02: removed `legacy_sync` from "
                                                 "the codebase."), Channel.CLI)
    assert _disputed(onto) == ["`legacy_sync` is in use"]
    onto.ingest("session_0504.md", memory("session", "a session", "- 2026-05-04: restored `legacy_sync`; the "
                                          "nightly job still needs it."), Channel.CLI)
    assert _disputed(onto) == []


def test_the_evolving_set_scores_clean():
    """Every scenario through the script a person reads (run as a process: tests never import bench)."""
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-m", "bench.evolving", str(EVOLVING), "--strict"], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_a_folders_history_does_not_change_what_it_shows():
    """Each scenario's last state delivered alone, at once, into a fresh graph shows the agent exactly
    what the state shows after the folder's whole life (versions, tombstones, moves): nothing a file
    said before, and no longer says, lingers (session 9, phase 3)."""
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-m", "bench.evolving", str(EVOLVING), "--final-only"], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
