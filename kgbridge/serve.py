"""The server as `kgbridge serve` runs it: `ontology.server` wired to the projection and the bridge.

The composition root for serving: GET /ontologies/{slug}/memory and MCP `kg_memory` answer with the
projection's MEMORY.md, and MCP `project_path` maps to a slug exactly as the hooks do. The wiring
lives up here so that `ontology` imports neither `projection` nor `kgbridge` (docs/adr/0001).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kgbridge.project import resolve
from ontology import server
from ontology.backend import Backend
from projection.render import WHOLE_INDEX, full_index_named
from projection.snapshot import MEMORY_NAME
from projection.view import ProjectionView


# Where a cut MEMORY.md sends its reader for the whole index: the mount's file, which an MCP or HTTP
# client cannot open, becomes the way that client can ask for it (ADR 0005).
SERVED_FULL_INDEX = "MCP kg_memory with full=true, or GET …/memory?full=1"


def projected_memory(backend: Backend) -> Callable[..., str]:
    """MEMORY.md as the projection renders it, one cached view per slug; `full`: the author's whole
    index when MEMORY.md leaves entries of it out (else the same MEMORY.md)."""
    views: dict[str, ProjectionView] = {}

    def render(slug: str, full: bool = False) -> str:
        view = views.get(slug)
        if view is None:
            view = views[slug] = ProjectionView(backend.get(slug))
        memory = (view.read(MEMORY_NAME) or b"").decode("utf-8")
        if full:
            whole = view.full_index()
            return whole[1].decode("utf-8") if whole else memory
        named = full_index_named(memory)
        return memory.replace(f"{WHOLE_INDEX}{named}", f"{WHOLE_INDEX}{SERVED_FULL_INDEX}") if named else memory
    return render


def project_slug(path: str) -> str:
    return resolve(path).slug


def serve(root: Path, host: str = "127.0.0.1", port: int = 8765, token: str | None = None) -> None:
    server.serve(root, host=host, port=port, token=token, memory=projected_memory, project_slug=project_slug)
