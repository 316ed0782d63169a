"""A local chat-completions server on 127.0.0.1 that replays queued replies and records requests.

It speaks the real wire format over a real socket (stdlib `http.server` in a thread), so the
client under test runs its whole HTTP stack: nothing is patched.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(slots=True)
class Reply:
    """One queued HTTP answer."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    """Never answer: hold the request until the server shuts down (a client must time out)."""
    cut_off: bool = False
    """Announce the whole body, send half of it, then close the connection."""


@dataclass(slots=True)
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    client_port: int
    """Source port of the connection: equal ports mean a reused (pooled) connection."""
    at: float = 0.0
    """`time.monotonic()` when the request arrived (the gap between two is a lower bound on a wait)."""


def completion(
    content: str | None = "",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = "stop",
    usage: dict[str, Any] | None = None,
    model: str = "served-model",
) -> Reply:
    """A 200 reply shaped like an OpenAI chat completion."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return json_reply(200, body)


def json_reply(status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
    """A reply with a JSON body."""
    return Reply(status=status, body=json.dumps(body).encode(), headers=dict(headers or {}))


def wire_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One tool call as a provider sends it."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


class ChatServer:
    """The server; use as a context manager, then `base_url`, `queue(...)` and `requests`."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._replies: list[Reply] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._httpd = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        """Base URL in the OpenAI style (`.../v1`)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def queue(self, *replies: Reply) -> None:
        """Append replies, served in order, one per request."""
        with self._lock:
            self._replies.extend(replies)

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._released.set()  # hanging requests give up
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if not self._replies:
                return json_reply(599, {"error": {"message": "test server: no reply queued"}})
            return self._replies.pop(0)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # the name http.server dispatches POST to
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                headers = {k.lower(): v for k, v in self.headers.items()}
                port = self.client_address[1]
                self._answer(server._next(Recorded("POST", self.path, headers, body, port, time.monotonic())))

            def _answer(self, reply: Reply) -> None:
                if reply.hang:
                    server._released.wait()
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                for key, value in {"content-type": "application/json", **reply.headers}.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                if reply.cut_off:
                    self.wfile.write(reply.body[: len(reply.body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(reply.body)

            def log_message(self, format: str, *args: Any) -> None:
                """Keep test output quiet."""

        return Handler


class _QuietServer(ThreadingHTTPServer):
    """A client that gave up (timed out) leaves a broken socket behind: not worth a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore a connection the client dropped."""


def serve() -> Iterator[ChatServer]:
    """Generator body for a pytest fixture."""
    with ChatServer() as server:
        yield server
