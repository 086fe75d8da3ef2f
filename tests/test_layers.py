"""The layering of docs/adr/0001 holds: import-linter's contracts in pyproject.toml are all kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_import_contracts_are_kept():
    """ontology imports neither projection nor kgbridge, projection never imports kgbridge, and bench
    and tests import nothing of each other. The report names every forbidden import it found."""
    done = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout and " 0 broken" in done.stdout
