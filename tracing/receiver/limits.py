"""Everything the receiver bounds, in one place: request size and content, memory, time, connections.

Each is a flag of `janux collect` / `janux serve` and listed with its default in
docs/configuration.md ("Receiver limits"). The defaults are far above what an OpenTelemetry SDK or
Collector sends and far below what hurts the machine.
"""

from __future__ import annotations

import logging
import resource
from dataclasses import dataclass, replace

from janux.tracing.otlp.decode_limits import RECEIVER_LIMITS, DecodeLimits
from janux.tracing.receiver.budget import DEFAULT_BUDGET_BYTES, DEFAULT_WAIT_S

logger = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
"""Largest request accepted, as sent and after decompression: 413 / RESOURCE_EXHAUSTED beyond it."""
FD_RESERVE = 128
"""File descriptors kept free of connections (store, logs, worker pipes, the listening sockets)."""


@dataclass(frozen=True, slots=True)
class ReceiverLimits:
    """What one receiver process enforces (each OTLP/HTTP worker process enforces its own)."""

    decode: DecodeLimits = RECEIVER_LIMITS
    """Spans, attributes, events, links, nesting and decoded size of one request."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """Largest request body, both as sent and after gzip decompression."""
    memory_budget_bytes: int = DEFAULT_BUDGET_BYTES
    """Memory all requests of one process may hold at once (estimated): a quarter for bodies
    being received, the rest for requests being decoded and stored (see `ProcessBudget`)."""
    budget_wait_s: float = DEFAULT_WAIT_S
    """Longest a request waits for room in the memory budget before 503 / UNAVAILABLE."""
    header_timeout_s: float = 10.0
    """An HTTP connection must send a complete request head within this time, else it is closed
    (also a kept-alive connection that starts a request and stalls); a gRPC connection must
    finish its HTTP/2 handshake within it."""
    body_timeout_s: float = 30.0
    """An HTTP request body must arrive completely within this time, else 408 and the connection is closed."""
    keep_alive_s: float = 5.0
    """An idle kept-alive HTTP connection is closed after this time."""
    max_connections: int = 1000
    """Connections served at once per endpoint and process. At the cap, a new HTTP connection
    pushes out the one idle longest (waiting for a request head); while all are busy, up to as
    many more are answered 503 and any beyond are closed at once; gRPC refuses connections past
    it. Lowered automatically to what the process's open-file limit allows."""
    max_concurrent_rpcs: int = 64
    """gRPC Export calls handled at once; more get RESOURCE_EXHAUSTED."""

    def fitted_to_open_files(self) -> ReceiverLimits:
        """These limits with `max_connections` lowered to what the open-file limit leaves."""
        room = max(16, (open_file_limit() - FD_RESERVE) // 4)
        if self.max_connections <= room:
            return self
        logger.warning(
            "receiver: the open-file limit (%d) allows %d connections per endpoint, not %d; "
            "raise it (ulimit -n) to accept more",
            open_file_limit(),
            room,
            self.max_connections,
        )
        return replace(self, max_connections=room)


def open_file_limit() -> int:
    """The process's soft limit on open files."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one (as servers do; a connection is a file), and
    return the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY or soft >= hard:
        return open_file_limit()
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as err:
        logger.debug("could not raise the open-file limit to %d: %s", hard, err)
    return open_file_limit()
