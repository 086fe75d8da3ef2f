"""Connection limits for the HTTP server, so idle or slow clients cannot starve it, and a loop that
can no longer serve ends the process (a supervisor restarts it) instead of holding the port mute.

Invariants: at most `MAX_CONNECTIONS` connections are open (a new one past the cap evicts the
oldest connection still waiting for its request, or is closed); a request must arrive whole within
`REQUEST_READ_SECONDS` of the connection (or of the previous response), so idle and slow-drip
clients are closed, and its head within `MAX_HEADER_BYTES`; an event loop that stops answering for `LOOP_STALL_SECONDS` exits the process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("kgbridge.server")

# Far above what local hooks, an MCP client and a FUSE daemon open at once (tens), far below the
# descriptor limit (20,000 here; serve() raises the soft limit towards the hard one).
MAX_CONNECTIONS = 1000
# A local client sends its whole request (<= 2 MiB) in milliseconds; 10 s also covers a loaded
# machine, while an attacker must reconnect every 10 s to hold a slot.
REQUEST_READ_SECONDS = 10.0
# uvicorn's idle time between requests on a kept-alive connection.
KEEP_ALIVE_SECONDS = 5
# The listen queue, which asyncio also uses as the most connections accepted in one loop turn: the
# cap is enforced between turns, so descriptors stay within MAX_CONNECTIONS + about two of these.
BACKLOG = 128
# Request line plus headers; ours are a few hundred bytes.
MAX_HEADER_BYTES = 16 * 1024
# No handler blocks the loop (all I/O runs in threads): a loop silent this long is broken.
LOOP_STALL_SECONDS = 60.0
EXIT_LOOP_DEAD = 70  # EX_SOFTWARE
_HEAD_END = b"\r\n\r\n"


def _waiting_for_request(proto: LimitedHttpToolsProtocol) -> bool:
    """No whole request in hand: none yet, its body still arriving, or the last one answered."""
    cycle = proto.cycle
    return cycle is None or cycle.response_complete or cycle.more_body


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol (a C parser: a POST costs the event loop about a third less than
    with h11) with a connection cap, a whole-request read deadline and a bound on the request head
    (uvicorn sets none for httptools). Connections waiting for a request are registered oldest first
    on the server's shared state, so the one to evict is found in O(1) even in a flood of new ones."""

    _deadline: asyncio.TimerHandle | None = None
    # Bytes of request line and headers still allowed before the head must end; None while a body
    # is read. Counted per read up to the head's end, so it holds however the head is split.
    _head_left: int | None = MAX_HEADER_BYTES

    def _waiting(self) -> dict[LimitedHttpToolsProtocol, None]:
        registry = getattr(self.server_state, "kg_waiting", None)
        if registry is None:
            registry = self.server_state.kg_waiting = {}  # type: ignore[attr-defined]
        return registry

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > MAX_CONNECTIONS:
            waiting = self._waiting()
            if not waiting:
                log.warning("connection cap (%d) reached: refusing a new connection", MAX_CONNECTIONS)
                transport.close()
                return
            victim = next(iter(waiting))  # the oldest idle one makes room: idle clients cannot lock us out
            victim._disarm()
            victim.transport.close()
        self._arm()

    def _arm(self) -> None:
        self._deadline = self.loop.call_later(REQUEST_READ_SECONDS, self._read_timed_out)
        self._waiting()[self] = None

    def _disarm(self) -> None:
        self._waiting().pop(self, None)
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _read_timed_out(self) -> None:
        self._deadline = None
        self._waiting().pop(self, None)
        if not self.transport.is_closing() and _waiting_for_request(self):
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._head_left is not None:
            end = data.find(_HEAD_END)
            self._head_left -= len(data) if end < 0 else end
            if self._head_left < 0:
                self._refuse_head()
                return
        super().data_received(data)

    def _refuse_head(self) -> None:
        """431 and close: the request line and headers passed MAX_HEADER_BYTES."""
        body = b"request line and headers over %d bytes" % MAX_HEADER_BYTES
        self.transport.write(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\n"
                             b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
        self.transport.close()

    def on_headers_complete(self) -> None:
        self._head_left = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head_left = MAX_HEADER_BYTES  # the next request's head
        self._disarm()  # the whole request is in

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self._deadline is None and _waiting_for_request(self):
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def uvicorn_limits() -> dict[str, Any]:
    """The uvicorn.Config keywords that bound connections (uvicorn's own options where they exist),
    with the protocol and loop they were written for."""
    # uvicorn answers 503 once connections or tasks reach limit_concurrency; our cap keeps connections
    # at MAX_CONNECTIONS, so its limit bounds the tasks. The loop is asyncio's even where uvloop is
    # installed (uvicorn would pick it): under uvloop, /health behind 1,100 idle connections got a 503
    # instead of a slot an idle one made room for (tests/reliability; the cap counts on asyncio's accepts).
    return {"http": LimitedHttpToolsProtocol, "loop": "asyncio", "limit_concurrency": MAX_CONNECTIONS + 1,
            "timeout_keep_alive": KEEP_ALIVE_SECONDS, "backlog": BACKLOG}


def raise_descriptor_limit() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 65536
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def watch_loop(loop: asyncio.AbstractEventLoop, stall: float = LOOP_STALL_SECONDS) -> threading.Thread:
    """Exit the process when the loop stops answering or its exception handler fails: the port is
    then freed for a supervisor's restart instead of being held by a server that answers nothing."""
    def handler(loop_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        try:
            loop_.default_exception_handler(context)
        except BaseException:  # noqa: BLE001 - the loop's last resort failed: nothing left to serve with
            os._exit(EXIT_LOOP_DEAD)

    loop.set_exception_handler(handler)

    def run() -> None:
        while loop.is_running():
            answered = threading.Event()
            try:
                loop.call_soon_threadsafe(answered.set)
            except RuntimeError:
                return  # the loop closed: a normal shutdown
            if not answered.wait(stall) and loop.is_running():
                log.critical("event loop unresponsive for %.0f s: exiting so a supervisor can restart", stall)
                os._exit(EXIT_LOOP_DEAD)
            threading.Event().wait(min(5.0, stall))

    thread = threading.Thread(target=run, name="kg-loop-watch", daemon=True)
    thread.start()
    return thread
