"""`kgbridge serve`: the watcher, the HTTP API and MCP at /mcp in one process, behind one guard.

Invariant: loopback by default; any other bind address needs a token, and then every request must
carry it. On SIGTERM uvicorn stops accepting and finishes requests in flight, then the lifespan
stops the watcher, whose workers finish the artifact in hand before the writers close.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Callable

import uvicorn
from filelock import FileLock, Timeout
from starlette.applications import Starlette
from starlette.routing import Route

from ontology.atomic import atomic_write
from ontology.backend import Backend
from ontology.connections import raise_descriptor_limit, uvicorn_limits, watch_loop
from ontology.guard import Guard, is_loopback
from ontology.errors import BadRequest, Conflict
from ontology.http import EXCEPTION_HANDLERS, VERSION, Ingest, JsonIngest, Pools, routes
from ontology.watcher import DropWatcher

log = logging.getLogger("kgbridge.server")


class InsecureBind(BadRequest, RuntimeError):
    """Binding off loopback without a token would expose every ontology to the network."""


class AlreadyServing(Conflict, RuntimeError):
    """Another `kgbridge serve` holds this knowledge root: two would race as writers and watchers."""


def hold_root(root: Path, host: str, port: int) -> FileLock:
    """The root's serve lock (`<root>/ontology/.serve.lock`), held for the life of the process,
    with who holds it written beside."""
    base = root / "ontology"  # beside the ontologies, so the root itself holds nothing else
    base.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(base / ".serve.lock"))
    holder = base / ".serve.holder"
    try:
        lock.acquire(timeout=0)
    except Timeout:
        try:
            who = holder.read_text(encoding="utf-8").strip()
        except OSError:
            who = "another process"
        raise AlreadyServing(f"{root} is already served by {who}; stop that server first") from None
    atomic_write(holder, f"pid {os.getpid()} at http://{host}:{port}\n".encode())
    return lock


@dataclass
class App:
    backend: Backend
    watcher: DropWatcher
    asgi: Guard

    def health(self) -> dict[str, Any]:
        """The server is healthy while it serves (its watcher runs); each ontology's health is its
        own (`ontology_status`), so one ontology's failure never makes hooks of the others treat
        the whole backend as absent."""
        watcher = self.watcher.status()
        degraded = self.backend.degraded_writers()
        slugs = self.backend.slugs()
        return {"status": "healthy" if watcher["running"] else "degraded", "version": VERSION,
                "ontologies": slugs, "watcher": watcher, "degraded_writers": degraded,
                "ontology_status": {slug: "degraded" if slug in degraded else "healthy" for slug in slugs},
                "writers": {slug: vars(state) for slug, state in self.backend.states().items()}}


# What the layers above plug in (kgbridge.serve wires both): MEMORY.md of a slug as the projection
# renders it, given the backend; and the slug of a project path, as the hooks resolve it.
MemorySource = Callable[[Backend], Callable[..., str]]  # (slug[, full]) -> text
ProjectSlug = Callable[[str], str]


def build_app(root: Path, *, token: str | None = None, allow_remote_hosts: bool = False,
              watch: bool = True, memory: MemorySource | None = None,
              project_slug: ProjectSlug | None = None) -> App:
    backend = Backend(root)
    watcher = DropWatcher(backend)
    render = memory(backend) if memory is not None else None
    holder: dict[str, App] = {}

    def health() -> dict[str, Any]:
        return holder["app"].health()

    mcp = LazyMCP(_mcp_builder(backend, health, render, project_slug))

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        watch_loop(asyncio.get_running_loop())
        backend.catch_up_in_background()
        if watch:
            watcher.start()
        try:
            yield
        finally:
            await mcp.close()
            if watch:
                watcher.stop()
            backend.close()

    # The MCP SDK's own route (/mcp), not its app mounted at "/": mounted, it answered every unknown path
    # with its plain-text 404 instead of our error shape. Its session manager runs from the first request.
    pools = Pools()
    starlette = Starlette(routes=[*routes(backend, health, render, pools), Route("/mcp", endpoint=mcp)],
                          lifespan=lifespan, exception_handlers=EXCEPTION_HANDLERS)
    # JSON ingests, the hot path, skip Starlette's layers (ontology.http.JsonIngest); the Guard checks all.
    app = App(backend, watcher, Guard(JsonIngest(starlette, Ingest(backend, pools)), token=token,
                                      allow_remote_hosts=allow_remote_hosts))
    holder["app"] = app
    return app


class LazyMCP:
    """MCP at /mcp, built on its first request. The MCP SDK (pydantic models and all) is about two
    thirds of the server's start-up CPU, and most servers, every test's and a hook-only user's,
    never see an MCP request. The SDK is imported in a worker thread, so the event loop keeps
    answering meanwhile; requests that arrive while it loads wait for it. The SDK's session manager
    then runs in a task of its own until `close` (the lifespan's end)."""

    def __init__(self, build: Callable[[], tuple[Any, Route]]) -> None:
        self._build = build
        self._route: Route | None = None
        self._ready: asyncio.Future[Route] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        route = self._route or await self._start()
        await route.handle(scope, receive, send)

    async def _start(self) -> Route:
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._run(self._ready))
        return await asyncio.shield(self._ready)

    async def _run(self, ready: asyncio.Future[Route]) -> None:
        try:
            mcp, route = await asyncio.to_thread(self._build)
            async with mcp.session_manager.run():
                self._route = route
                ready.set_result(route)
                await self._stop.wait()
        except asyncio.CancelledError:
            ready.cancel()
            raise
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task


def _mcp_builder(backend: Backend, health: Callable[[], dict[str, Any]], render: Callable[..., str] | None,
                 project_slug: ProjectSlug | None) -> Callable[[], tuple[Any, Route]]:
    def build() -> tuple[Any, Route]:
        started = time.monotonic()
        from ontology.mcp_tools import build_mcp

        mcp = build_mcp(backend, health, render, project_slug)
        mcp_app = mcp.streamable_http_app(stateless_http=True, json_response=True,
                                          # Host/Origin are checked by our Guard for every route alike.
                                          transport_security=None, host="0.0.0.0")
        route, = mcp_app.routes  # /mcp, the one route the SDK adds without auth
        # uvicorn's logger: the server log's other lines (startup, shutdown) are there
        logging.getLogger("uvicorn.error").info("MCP at /mcp: SDK loaded on the first request in %.1f s",
                                                time.monotonic() - started)
        return mcp, route
    return build


class _Server(uvicorn.Server):
    """uvicorn re-raises a captured SIGTERM after shutting down, so the process would die "by signal"
    even after a graceful stop; a completed graceful shutdown exits 0 instead."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[override]
        with super().capture_signals():
            yield
            getattr(self, "_captured_signals", []).clear()


def serve(root: Path, host: str = "127.0.0.1", port: int = 8765, token: str | None = None,
          memory: MemorySource | None = None, project_slug: ProjectSlug | None = None) -> None:
    remote = not is_loopback(host)
    if remote and not token:
        raise InsecureBind(f"refusing to bind {host}: set KG_TOKEN (or --token) to serve off loopback")
    lock = hold_root(root, host, port)
    app = build_app(root, token=token, allow_remote_hosts=remote, memory=memory, project_slug=project_slug)
    raise_descriptor_limit()
    # No access log: a line per request cost the event loop about a tenth of a POST's handling
    # (bench/server.py); failures are logged where they happen, with their reason. No proxy-header
    # middleware either: nothing reads the client's address, and a layer per request is not free.
    config = uvicorn.Config(app.asgi, host=host, port=port, log_level="info", lifespan="on", access_log=False,
                            proxy_headers=False, timeout_graceful_shutdown=30, **uvicorn_limits())
    try:
        _Server(config).run()
    finally:
        lock.release()
