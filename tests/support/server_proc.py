"""A real `kgbridge serve` process for tests that need the full stack, and a look into its graph."""

from __future__ import annotations

# The process itself lives in the package so that bench/ can use it too without importing tests.
from kgbridge.server_process import (KGBRIDGE, ServerProcess, artifact_rows, free_port,  # noqa: F401
                                     wait_drained)
