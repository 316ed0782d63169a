"""OTLP/HTTP connections under limits: uvicorn's settings plus what uvicorn leaves open.

uvicorn bounds idle kept-alive connections (`timeout_keep_alive`), answers 503 past
`limit_concurrency` and caps a request head at 16 KiB (h11), but a connection that never sends a
complete request head stays open forever, and nothing stops connections from using up the
process's file descriptors. `GuardedH11Protocol` adds:
- a request-head timeout: a connection that sends no complete head within `header_timeout_s` is
  closed (also a kept-alive one that starts a request and stalls);
- at `max_connections` open, a new connection pushes out the one that has waited longest without
  sending a request, so a flood of silent connections cannot lock real clients out;
- when every connection is busy, up to `max_connections` more are accepted and answered 503 by
  uvicorn's `limit_concurrency`; beyond that, connections are closed as soon as accepted, so
  descriptors stay bounded;
- the raw bytes of each request's `Authorization` lines, in the ASGI scope under
  `RAW_AUTHORIZATION`: h11 strips a value's surrounding whitespace (RFC 9110 treats it as not part
  of the value), so only the raw head shows `Bearer TOKEN ` and a repeated or folded header, which
  the token check refuses (issue 21: parse strictly).
When descriptors run out anyway (a burst accepted in one go), asyncio logs a traceback per failed
accept (thousands a second); `AcceptErrorFilter` lets one through per minute, with a count.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from janux.tracing.receiver.limits import ReceiverLimits

ACCEPT_ERROR = "socket.accept() out of system resource"
"""The message asyncio logs when accepting a connection fails (no file descriptor left)."""
ACCEPT_LOG_EVERY_S = 60.0
"""At most one accept-failure log line per this many seconds (the others are counted)."""


RAW_AUTHORIZATION = "janux.raw_authorization"
"""ASGI scope key: the raw value bytes of every `Authorization` line of the request head, as sent
(absent when the head could not be seen raw)."""

_HEAD_END = re.compile(rb"\r?\n\r?\n")


def raw_authorization_values(buffered: bytes) -> list[bytes] | None:
    """The raw values (everything after the colon, whitespace kept) of the `Authorization` lines of
    the request head at the start of `buffered`; None while the head is incomplete.

    A folded continuation line (obsolete line folding) is appended to the value, so it fails an
    exact comparison instead of being merged silently.
    """
    end = _HEAD_END.search(buffered)
    if end is None:
        return None
    lines = buffered[: end.start()].split(b"\n")[1:]  # the first line is the request line
    values: list[bytes] = []
    folding = False
    for line in lines:
        line = line.removesuffix(b"\r")
        if line[:1] in (b" ", b"\t"):
            if folding:
                values[-1] += b"\n" + line
            continue
        name, colon, value = line.partition(b":")
        folding = bool(colon) and name.lower() == b"authorization"
        if folding:
            values.append(value)
    return values


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol plus a request-head timeout and a hard cap on open connections."""

    header_timeout_s: float = 10.0
    """Set per server by `protocol_class`."""
    max_connections: int = 1000
    """Set per server by `protocol_class`."""
    idle: dict[GuardedH11Protocol, None]
    """This server's connections waiting for a request head, oldest first (set by `protocol_class`)."""
    _raw_authorization: list[bytes] | None = None
    _untagged = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
        """Accept; at `max_connections`, push out the longest-idle connection; past twice that, refuse."""
        self._head_timer: asyncio.TimerHandle | None = None
        open_now = len(self.connections)
        if open_now >= self.max_connections and self.idle:
            oldest = next(iter(self.idle))
            oldest._stop_waiting()
            oldest.transport.close()
        elif open_now >= 2 * self.max_connections:
            transport.close()
            return
        super().connection_made(transport)  # type: ignore[arg-type]
        self._watch_request_heads()
        self._await_head()

    def data_received(self, data: bytes) -> None:
        """Feed uvicorn; a request head that completes ends the wait, a new one starts it."""
        super().data_received(data)
        if self._in_request():
            self._stop_waiting()
        elif self._head_timer is None and not self.transport.is_closing():
            self._await_head()  # bytes of a next request on a kept-alive connection

    def handle_events(self) -> None:
        """uvicorn's event loop over h11, then the raw `Authorization` values of a request just parsed
        into its scope (its ASGI task has not run yet)."""
        super().handle_events()
        self._tag_scope()

    def _watch_request_heads(self) -> None:
        """Wrap this connection's `next_event`: while h11 waits for a request head, the head's raw
        bytes are still in its buffer (`trailing_data`); they are read just before h11 parses them.
        uvicorn builds the scope right after a `Request` event, before asking for the next event, so
        each request's values are put in its own scope (pipelined requests included)."""
        conn = self.conn
        parse = conn.next_event

        def next_event_seeing_raw_head() -> Any:
            self._tag_scope()
            raw = None
            if conn.their_state is h11.IDLE:
                raw = raw_authorization_values(conn.trailing_data[0])
            event = parse()
            if isinstance(event, h11.Request):
                self._raw_authorization = raw
                self._untagged = True
            return event

        conn.next_event = next_event_seeing_raw_head  # type: ignore[method-assign]

    def _tag_scope(self) -> None:
        if self._untagged and self._raw_authorization is not None:
            self.scope[RAW_AUTHORIZATION] = self._raw_authorization  # type: ignore[literal-required]
        self._untagged = False

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the timer."""
        self._stop_waiting()
        if self.transport is not None:  # None: closed at once by `connection_made`
            super().connection_lost(exc)

    def _in_request(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _await_head(self) -> None:
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timed_out)
        self.idle[self] = None

    def _stop_waiting(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self.idle.pop(self, None)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self._in_request() and not self.transport.is_closing():
            self.transport.close()


def protocol_class(limits: ReceiverLimits) -> type[GuardedH11Protocol]:
    """A `GuardedH11Protocol` subclass carrying these limits (uvicorn instantiates the class)."""
    return type(
        "JanuxH11Protocol",
        (GuardedH11Protocol,),
        {"header_timeout_s": limits.header_timeout_s, "max_connections": limits.max_connections, "idle": {}},
    )


def uvicorn_config(app: Any, limits: ReceiverLimits) -> uvicorn.Config:
    """The uvicorn configuration of an OTLP/HTTP server process under `limits`."""
    return uvicorn.Config(
        app,
        http=protocol_class(limits),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=5,
        timeout_keep_alive=max(1, round(limits.keep_alive_s)),
        # Connections beyond `max_connections` exist only while all others are busy: answer them 503.
        limit_concurrency=limits.max_connections + 1,
    )


class AcceptErrorFilter(logging.Filter):
    """Passes one "accept failed" record per `every_s` (without its traceback, with the count of
    those dropped since); every other record passes untouched."""

    def __init__(self, every_s: float = ACCEPT_LOG_EVERY_S) -> None:
        super().__init__()
        self._every_s = every_s
        self._last = -every_s
        self._dropped = 0
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        """Rate-limit accept failures."""
        if not str(record.msg).startswith(ACCEPT_ERROR):
            return True
        now = time.monotonic()
        with self._lock:
            if now - self._last < self._every_s:
                self._dropped += 1
                return False
            self._last, dropped, self._dropped = now, self._dropped, 0
        error = record.exc_info[1] if record.exc_info else None
        record.msg = (
            f"{ACCEPT_ERROR}: {error}; new connections wait until descriptors are free "
            f"({dropped} similar message(s) suppressed; at most one per {self._every_s:g} s)"
        )
        record.args = None
        record.exc_info = None
        record.exc_text = None
        return True


_installed = threading.Event()


def rate_limit_accept_errors() -> None:
    """Put an `AcceptErrorFilter` on asyncio's logger (once per process)."""
    if _installed.is_set():
        return
    _installed.set()
    logging.getLogger("asyncio").addFilter(AcceptErrorFilter())
