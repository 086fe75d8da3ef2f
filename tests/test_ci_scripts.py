"""The setup the README's test command runs first (scripts/setup.sh) costs nothing when nothing
changed: the same pyproject.toml and interpreter skip pip (20 s here on every `scripts/test.sh`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_setup_with_nothing_changed_runs_no_pip():
    setup = ["bash", str(REPO / "scripts" / "setup.sh")]
    subprocess.run(setup, check=True, timeout=900)  # installs only where this venv has no stamp yet
    log = REPO / ".venv" / "setup.log"
    before = log.stat().st_mtime_ns
    done = subprocess.run(setup, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert log.stat().st_mtime_ns == before, "pip ran again"
    assert os.access(REPO / ".venv" / "bin" / "kgbridge", os.X_OK)
