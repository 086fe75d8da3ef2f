"""Connection limits for the HTTP server, so idle or slow clients cannot starve it, and a loop that
can no longer serve ends the process (a supervisor restarts it) instead of holding the port mute.

Invariants: at most `MAX_CONNECTIONS` connections are open (a new one past the cap evicts the
oldest connection still waiting for its request, or is closed); a request must arrive whole within
`REQUEST_READ_SECONDS` of the connection (or of the previous response), so idle and slow-drip
clients are closed; an event loop that stops answering for `LOOP_STALL_SECONDS` exits the process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

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


def _waiting_for_request(proto: H11Protocol) -> bool:
    return proto.conn.their_state in (h11.IDLE, h11.SEND_BODY) and (proto.cycle is None or proto.cycle.response_complete)


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a connection cap and a whole-request read deadline. Connections
    waiting for a request are registered oldest first on the server's shared state, so the one to
    evict is found in O(1) even in a flood of new connections."""

    _deadline: asyncio.TimerHandle | None = None

    def _waiting(self) -> dict[LimitedH11Protocol, None]:
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

    def handle_events(self) -> None:
        super().handle_events()
        if self._deadline is not None and self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._disarm()  # the whole request is in

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self._deadline is None:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def uvicorn_limits() -> dict[str, Any]:
    """The uvicorn.Config keywords that bound connections (uvicorn's own options where they exist)."""
    # uvicorn answers 503 once connections or tasks reach limit_concurrency; our cap keeps connections
    # at MAX_CONNECTIONS, so its limit bounds the tasks.
    return {"http": LimitedH11Protocol, "limit_concurrency": MAX_CONNECTIONS + 1,
            "timeout_keep_alive": KEEP_ALIVE_SECONDS, "backlog": BACKLOG,
            "h11_max_incomplete_event_size": MAX_HEADER_BYTES}


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
