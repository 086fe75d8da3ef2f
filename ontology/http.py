"""The HTTP API (docs/reference.md §7) as Starlette routes over a `Backend`.

Invariant: handlers never block the event loop: every file or database touch runs in a worker
thread. Input is validated at this edge (slug, filename, body size); a refusal is a `UserError`
raised anywhere below, answered by one handler as `{"error", "detail"}` with its status.
"""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from importlib.metadata import version
from typing import Any, AsyncGenerator, Callable, TypeVar

from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ontology import queries
from ontology import search as search_mod
from ontology.artifact import Channel
from ontology.backend import Backend
from ontology.errors import BadRequest, NotFound, TooLarge, Unavailable, UserError
from ontology.evidence import Label
from ontology.ingest import OntologyMissing, Status
from ontology.layout import validate_slug
from ontology.parse import MAX_ARTIFACT_BYTES

log = logging.getLogger("kgbridge.server")

VERSION = version("kgbridge")  # one source: pyproject.toml
T = TypeVar("T")
# A request body may carry one artifact (<= 1 MiB) plus multipart or JSON-escaping overhead. Larger
# bodies are refused unread (413); an artifact over 1 MiB inside a smaller body is kept as rejected.
MAX_BODY_BYTES = 2 * MAX_ARTIFACT_BYTES


# Worker threads per kind of work. Writes may wait on a held writer (at most MAX_WAITING_CALLERS per
# ontology, see ontology.ingest), so they have their own pool; /health and reads never queue
# behind them. anyio's shared default pool (40) is left to the MCP tools.
WRITE_THREADS = 48
READ_THREADS = 16


class BodyTooLarge(TooLarge):
    """The request body passed its limit; refused before more of it was read."""


class Pools:
    """Separate thread pools for reads and writes, created on first use. A call is handed over with
    the loop's own `run_in_executor`: anyio's `to_thread` (limiter, cancel scopes, backend lookup)
    cost the event loop about twice as much per POST (bench.ingest --modes post)."""

    def __init__(self) -> None:
        self._reads: ThreadPoolExecutor | None = None
        self._writes: ThreadPoolExecutor | None = None

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        if self._reads is None:
            self._reads = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="kg-read")
        return await asyncio.get_running_loop().run_in_executor(self._reads, fn, *args)

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        if self._writes is None:
            self._writes = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="kg-write")
        return await asyncio.get_running_loop().run_in_executor(self._writes, fn, *args)


async def budgeted(request: Request, limit: int = MAX_BODY_BYTES) -> AsyncGenerator[bytes, None]:
    """The request body as it arrives, refused (`BodyTooLarge`) as soon as it passes `limit` bytes,
    declared or not (a chunked upload has no Content-Length): never more than `limit` is read."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"body over {limit} bytes")
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"body over {limit} bytes")
        yield chunk


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    return b"".join([chunk async for chunk in budgeted(request, limit)])


def parse_json(body: bytes) -> Any:
    """`json.loads`, with input nested too deep to parse (RecursionError) refused as bad JSON."""
    try:
        return json.loads(body)
    except RecursionError:
        raise ValueError("JSON nests too deeply") from None


class Ingest:
    """What `POST /ingest` does once the body is read, for both ways in: the Starlette route
    (multipart uploads) and `JsonIngest` (the JSON body every bridge and MCP client sends)."""

    def __init__(self, backend: Backend, pools: Pools) -> None:
        self.backend, self.pools = backend, pools

    def existing(self, slug: str) -> str:
        """The slug, valid and activated; else `UnsafeName` (400) or `OntologyMissing` (404)."""
        validate_slug(slug)
        if not self.backend.exists(slug):
            raise OntologyMissing(f"ontology {slug!r} does not exist (activate it with POST /ontologies)")
        return slug

    async def __call__(self, slug: str, filename: str, data: bytes, mcp: bool) -> tuple[int, dict[str, Any]]:
        """(status, JSON body) of an ingest; a refusal raises its `UserError`."""
        checked = self.existing(slug)
        channel = Channel.MCP if mcp else Channel.HTTP
        try:
            result = await self.pools.write(self.backend.ingest, checked, filename, data, channel)
        except UserError:  # WriterBusy among them: nothing was taken, the client comes back
            raise
        except OSError as exc:  # disk full or read-only: the client keeps the artifact and retries
            raise Unavailable(f"backend cannot store artifacts right now: {exc}") from exc
        return 422 if result.status is Status.REJECTED else 200, {"ontology": checked, **result.to_json()}


def routes(backend: Backend, health: Callable[[], dict[str, Any]], memory: Callable[..., str] | None = None,
           pools: Pools | None = None) -> list[Route]:
    pools = pools or Pools()
    core = Ingest(backend, pools)
    existing = core.existing

    async def get_health(request: Request) -> Response:
        return JSONResponse(await pools.read(health))

    async def list_ontologies(request: Request) -> Response:
        return JSONResponse({"ontologies": await pools.read(backend.slugs)})

    async def get_ontology(request: Request) -> Response:
        checked = existing(request.path_params["slug"])

        def read() -> dict[str, Any]:
            state = backend.states().get(checked)
            error_text = state.last_error if state is not None else None
            with backend.get(checked).reader() as conn:
                return {"slug": checked, "counts": queries.counts(conn),
                        "status": "degraded" if error_text else "healthy", "last_error": error_text}
        return JSONResponse(await pools.read(read))

    async def create_ontology(request: Request) -> Response:
        try:
            payload = parse_json(await read_body(request, 64 * 1024))
            name = validate_slug(payload["name"])
        except (ValueError, KeyError, TypeError):
            raise BadRequest('expected JSON {"name": "<slug: [a-z0-9-], 1-64 chars>"}') from None
        await pools.write(backend.create, name)  # OntologyExists: 409
        return JSONResponse({"slug": name, "created": True}, status_code=201)

    async def ingest(request: Request) -> Response:
        slug, filename, data = await _ingest_payload(request)
        status, body = await core(slug, filename, data, request.headers.get("x-kg-channel") == "mcp")
        return JSONResponse(body, status_code=status)

    async def list_assertions(request: Request) -> Response:
        checked = existing(request.path_params["slug"])
        status = request.query_params.get("status")
        label = parse_label(status) if status else None

        def read() -> list[dict[str, Any]]:
            with backend.get(checked).reader() as conn:
                return [a.to_json() for a in queries.assertions(conn, status=label.value if label else None)]
        return JSONResponse(await pools.read(read))

    async def get_concept(request: Request) -> Response:
        checked = existing(request.path_params["slug"])
        ref = request.path_params["ref"]

        def read() -> dict[str, Any] | None:
            with backend.get(checked).reader() as conn:
                return queries.concept(conn, ref)
        data = await pools.read(read)
        if data is None:
            raise NotFound(f"no concept {ref!r} in {checked!r}")
        return JSONResponse(data)

    async def search(request: Request) -> Response:
        checked = existing(request.path_params["slug"])
        params = request.query_params
        q = params.get("q", "")
        limit_text = params.get("limit", "20")
        if not limit_text.isdigit():
            raise BadRequest(f"limit must be a whole number, not {limit_text!r}")
        filters = search_mod.parse_filters(params.getlist("status"), params.get("concept"), params.get("since"))

        def read() -> list[dict[str, Any]]:
            with backend.get(checked).reader() as conn:  # an unknown concept is a SearchError (400)
                return [h.to_json() for h in search_mod.search(conn, q, limit=max(1, min(int(limit_text), 100)),
                                                                filters=filters)]
        return JSONResponse({"query": q, "hits": await pools.read(read)})

    async def get_memory(request: Request) -> Response:
        checked = existing(request.path_params["slug"])
        assert memory is not None
        if request.query_params.get("full", "").lower() in ("1", "true", "yes"):  # the whole index (ADR 0005)
            text = await pools.read(memory, checked, True)
        else:
            text = await pools.read(memory, checked)
        return Response(text, media_type="text/markdown; charset=utf-8")

    table = [
        Route("/health", get_health, methods=["GET"]),
        Route("/ontologies", list_ontologies, methods=["GET"]),
        Route("/ontologies", create_ontology, methods=["POST"]),
        Route("/ontologies/{slug}", get_ontology, methods=["GET"]),
        Route("/ingest", ingest, methods=["POST"]),
        Route("/ontologies/{slug}/assertions", list_assertions, methods=["GET"]),
        Route("/ontologies/{slug}/concepts/{ref}", get_concept, methods=["GET"]),
        Route("/ontologies/{slug}/search", search, methods=["GET"]),
    ]
    if memory is not None:
        table.append(Route("/ontologies/{slug}/memory", get_memory, methods=["GET"]))
    return table


def parse_label(text: str) -> Label:
    """A label from a query parameter, any case; an unknown one is a `BadRequest` naming the valid."""
    try:
        return Label(text.upper())
    except ValueError:
        raise BadRequest(f"unknown status {text!r}; one of {', '.join(label.value for label in Label)}") from None


async def on_user_error(request: Request, exc: Exception) -> Response:
    """Every refusal the client can act on: `{"error": kind, "detail": what to do}` with its status."""
    assert isinstance(exc, UserError)
    return JSONResponse({"error": exc.kind, "detail": str(exc)}, status_code=exc.status, headers=exc.headers)


async def on_http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such route, wrong method) in the same shape."""
    assert isinstance(exc, HTTPException)
    phrase = HTTPStatus(exc.status_code).phrase
    detail = exc.detail
    if exc.status_code in (404, 405) and detail == phrase:  # the router's own: say what was asked for
        detail = f"no route {request.method} {request.url.path}"
    return JSONResponse({"error": phrase.lower().replace(" ", "-"), "detail": detail}, status_code=exc.status_code,
                        headers=exc.headers)


async def on_unexpected(request: Request, exc: Exception) -> Response:
    """A bug: the traceback goes to the server's log, the client learns only that it happened."""
    log.error("unexpected error in %s %s", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"error": "internal", "detail": "unexpected server error; the server log has the traceback"},
                        status_code=500)


EXCEPTION_HANDLERS = {UserError: on_user_error, HTTPException: on_http_exception, Exception: on_unexpected}


async def _ingest_payload(request: Request) -> tuple[str, str, bytes]:
    """(ontology, filename, bytes) from multipart (kg-system compatible) or JSON."""
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        parser = MultiPartParser(request.headers, budgeted(request), max_files=1, max_fields=8,
                                 max_part_size=64 * 1024)
        try:
            form = await parser.parse()
        except MultiPartException as exc:
            raise BadRequest(f"malformed multipart body: {exc.message}") from None
        upload = form.get("file")
        ontology = form.get("ontology")
        if upload is None or isinstance(upload, str) or not isinstance(ontology, str):
            raise BadRequest("multipart ingest needs a 'file' part and an 'ontology' field")
        data = await upload.read()
        if len(data) > MAX_BODY_BYTES:
            raise BodyTooLarge(f"body over {MAX_BODY_BYTES} bytes")
        name = form.get("filename")
        filename = name if isinstance(name, str) and name else (upload.filename or "upload.md")
        return ontology, filename, data
    return _json_payload(await read_body(request))


def _json_payload(body: bytes) -> tuple[str, str, bytes]:
    try:
        payload = parse_json(body)
        ontology, filename, content = payload["ontology"], payload["filename"], payload["content"]
    except (ValueError, KeyError, TypeError):
        raise BadRequest('expected multipart (file, ontology) or JSON {"ontology", "filename", "content"}') from None
    if not all(isinstance(v, str) for v in (ontology, filename, content)):
        raise BadRequest("ontology, filename and content must be strings")
    return ontology, filename, content.encode("utf-8", "surrogatepass")


def _json_bytes(content: Any) -> bytes:
    """What Starlette's JSONResponse renders, byte for byte."""
    return json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode("utf-8")


class JsonIngest:
    """`POST /ingest` with a JSON body as a plain ASGI app in front of Starlette: the hot path (the
    bridge and MCP clients send one artifact per request) skips Starlette's two middlewares, its
    router and its Request and Response objects (ADR 0007, "Single POST path"). Same bounds and
    answers as the route it stands in for: the body limit, declared or not; the error shape and
    statuses; a bug is logged and answered 500. Multipart uploads and every other request go on to
    `app`. The Guard runs before this, as before every route."""

    def __init__(self, app: ASGIApp, ingest: Ingest) -> None:
        self.app, self.ingest = app, ingest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/ingest" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared = content_type = channel = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = value
            elif name == b"content-type":
                content_type = value
            elif name == b"x-kg-channel":
                channel = value
        if content_type is not None and content_type.startswith(b"multipart/form-data"):
            await self.app(scope, receive, send)
            return
        headers: dict[str, str] | None = None
        try:
            body = await _receive_body(receive, declared, MAX_BODY_BYTES)
            if body is None:
                return  # the client went away: nobody to answer
            status, payload = await self.ingest(*_json_payload(body), channel == b"mcp")
        except UserError as exc:
            status, payload, headers = exc.status, {"error": exc.kind, "detail": str(exc)}, exc.headers
        except Exception as exc:  # noqa: BLE001 - the app's edge, as on_unexpected
            log.error("unexpected error in POST /ingest", exc_info=exc)
            status, payload = 500, {"error": "internal", "detail": "unexpected server error; the server log has the traceback"}
        content = _json_bytes(payload)
        raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
        raw += [(b"content-length", str(len(content)).encode("latin-1")), (b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": content})


async def _receive_body(receive: Receive, declared: bytes | None, limit: int) -> bytes | None:
    """The request body, refused (`BodyTooLarge`) as soon as it passes `limit` bytes, declared or
    not, as `budgeted` does; None when the client disconnected first."""
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"body over {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None  # http.disconnect
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"body over {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
