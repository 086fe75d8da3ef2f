"""A real `kgbridge serve` process for tests that need the full stack, and a look into its graph."""

from __future__ import annotations

import sqlite3
from pathlib import Path

# The process itself lives in the package so that bench/ can use it too without importing tests.
from kgbridge.server_process import KGBRIDGE, ServerProcess, free_port, wait_drained  # noqa: F401


def artifact_rows(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT s.identity, a.sha256 FROM artifacts a JOIN sources s ON s.id = a.source_id").fetchall()
    finally:
        conn.close()
