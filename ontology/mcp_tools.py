"""MCP tools over the backend, written for an agent: what the graph knows, what it disputes, and a
door for saving a memory that goes to ingestion instead of a file.

Invariant: every tool takes `ontology` explicitly or resolves it from `project_path` (the caller's
working directory, mapped to a slug exactly as the hooks do); with neither, the single existing
ontology is used, and anything ambiguous is an error that lists the choices. How a path maps to a
slug is the bridge's business: `project_slug` is handed in by the composition root (kgbridge.serve). Tools are sync: the
MCP server runs them in worker threads, so they never block its event loop.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from ontology import queries, search
from ontology.artifact import Channel
from ontology.backend import Backend
from ontology.errors import BadRequest, NotFound, UserError
from ontology.http import VERSION
from ontology.layout import validate_slug

INSTRUCTIONS = """kgbridge keeps this project's memory as evidence: each assertion carries a label
(AFFIRMATIVE, CONTESTED, CONTRADICTORY, INSUFFICIENT_DATA) computed from the independent sources
behind it. Use kg_search or kg_concept before relying on a remembered fact; check kg_contested for
what sessions disagree about; save a new memory with kg_ingest (markdown, frontmatter welcome)."""


F = TypeVar("F", bound=Callable[..., Any])


def told(fn: F) -> F:
    """A refusal the agent can act on (`UserError`: no such ontology or concept, a bad argument, the writer
    busy) reaches it as a ToolError with its reason; the SDK reports any other exception as a bare
    "Error executing tool" and logs it as a crash."""
    @functools.wraps(fn)
    def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except UserError as exc:
            raise ToolError(str(exc)) from None
    return tool  # type: ignore[return-value]


def build_mcp(backend: Backend, health: Callable[[], dict[str, Any]],
              memory: Callable[..., str] | None = None,
              project_slug: Callable[[str], str] | None = None) -> MCPServer:
    mcp = MCPServer(name="kgbridge", instructions=INSTRUCTIONS, version=VERSION)

    def pick(ontology: str | None, project_path: str | None) -> str:
        if ontology:
            slug = validate_slug(ontology)
        elif project_path:
            if project_slug is None:
                raise BadRequest("this server does not map project paths; pass ontology=...")
            slug = project_slug(project_path)
        else:
            slugs = backend.slugs()
            if len(slugs) != 1:
                raise BadRequest(f"say which ontology (ontology=... or project_path=...); have: {slugs}")
            slug = slugs[0]
        if not backend.exists(slug):
            raise NotFound(f"ontology {slug!r} does not exist; have: {backend.slugs()}")
        return slug

    @mcp.tool()
    @told
    def kg_status(ontology: str | None = None, project_path: str | None = None) -> dict[str, Any]:
        """Backend health plus this ontology's counts of concepts, assertions and labels."""
        status = health()
        try:
            slug = pick(ontology, project_path)
        except UserError as exc:
            return {**status, "ontology": None, "note": str(exc)}
        with backend.get(slug).reader() as conn:
            return {**status, "ontology": slug, "counts": queries.counts(conn)}

    @mcp.tool()
    @told
    def kg_search(query: str, ontology: str | None = None, project_path: str | None = None,
                  limit: int = 10, status: list[str] | None = None, concept: str | None = None,
                  since: str | None = None) -> list[dict[str, Any]]:
        """Search concepts and assertions. Hits containing every query word come first (`match`:
        phrase, near, all), then `partial` ones only to fill the page; assertions carry their label.
        Filters: status (AFFIRMATIVE, CONTESTED, CONTRADICTORY, INSUFFICIENT_DATA or DISPUTED),
        concept (a key), since (a date: what changed on or after it)."""
        slug = pick(ontology, project_path)
        filters = search.parse_filters(status, concept, since)
        with backend.get(slug).reader() as conn:
            hits = search.search(conn, query, limit=max(1, min(limit, 50)), filters=filters)
        return [h.to_json() for h in hits]

    @mcp.tool()
    @told
    def kg_concept(id: str, ontology: str | None = None, project_path: str | None = None) -> dict[str, Any]:
        """One concept (key or numeric id): its assertions with label, belief, plausibility, conflict,
        every source for and against, the history of what each source said, and its relations."""
        slug = pick(ontology, project_path)
        with backend.get(slug).reader() as conn:
            data = queries.concept(conn, id)
        if data is None:
            raise NotFound(f"no concept {id!r} in {slug!r}; try kg_search")
        return data

    @mcp.tool()
    @told
    def kg_contested(ontology: str | None = None, project_path: str | None = None) -> list[dict[str, Any]]:
        """What the evidence disagrees about: CONTESTED and CONTRADICTORY assertions, both sides."""
        slug = pick(ontology, project_path)
        with backend.get(slug).reader() as conn:
            items = queries.assertions(conn, status="CONTESTED") + queries.assertions(conn, status="CONTRADICTORY")
        return [a.to_json() for a in items]

    @mcp.tool()
    @told
    def kg_ingest(filename: str, content: str, ontology: str | None = None,
                  project_path: str | None = None) -> dict[str, Any]:
        """Save a memory: the markdown goes through ingestion (merged, weighed against what other
        sessions said), not to a file. Returns new / duplicate / rejected with the reason."""
        slug = pick(ontology, project_path)
        result = backend.ingest(slug, filename, content.encode("utf-8", "surrogatepass"), Channel.MCP)
        return {"ontology": slug, **result.to_json()}

    if memory is not None:
        @mcp.tool()
        @told
        def kg_memory(ontology: str | None = None, project_path: str | None = None, full: bool = False) -> str:
            """The projected MEMORY.md: ranked concepts, disputed assertions, where to read more. With
            full=true, the author's whole index when MEMORY.md had to leave entries of it out."""
            slug = pick(ontology, project_path)
            return memory(slug, True) if full else memory(slug)

    return mcp
