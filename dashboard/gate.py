"""What the dashboard's web server lets through before sign-in, and how much uploads may hold.

Streamlit serves two kinds of request outside the page's websocket: file uploads
(`PUT /_stcore/upload_file/<session>/<file>`) and media downloads (`GET /media/<id>`). Neither goes
through the page's sign-in form, so `SignInGate` (an ASGI middleware in front of Streamlit, see
`server_app.py`) checks them first, before a byte of a body is read:

- with a token, an upload is accepted only into a session that signed in (`sign_ins.SIGN_INS`), and a
  media file only for a browser that signed in (its Streamlit XSRF cookie, which Streamlit keeps
  the same for the browser, was seen by a signed-in session): 403 otherwise;
- every upload must say its size (411 otherwise), and is refused (413) when it would take the
  session's uploads past `max_upload_session_mb` or all sessions' past `max_upload_total_mb`
  (files Streamlit holds plus uploads being received).

No Streamlit import at module level: the server (`server_app.py`) imports the gate; the sign-ins it
checks are written by the page's sign-in form (`ui/login.py`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from janux.dashboard.access import DashboardAccess
from janux.dashboard.sign_ins import SIGN_INS, XSRF_COOKIE, browser_key

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

UPLOAD_ROUTE = "/_stcore/upload_file/"
"""Streamlit's upload endpoint (followed by `<session id>/<file id>`)."""
MEDIA_ROUTE = "/media/"
"""Streamlit's media endpoint (images, download buttons)."""
MIB = 1024 * 1024


class UploadRoom:
    """Bytes of uploads being received, per session, added to what Streamlit already holds
    (`held(session_id)` -> (that session's bytes, all sessions' bytes))."""

    def __init__(self, session_cap: int, total_cap: int, held: Callable[[str], tuple[int, int]]) -> None:
        self.session_cap = session_cap
        """Most bytes one session's uploads may hold."""
        self.total_cap = total_cap
        """Most bytes all sessions' uploads may hold."""
        self._held = held
        self._receiving: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, session_id: str, size: int) -> str | None:
        """Reserve `size` bytes for an upload into `session_id`; the reason it does not fit, or None."""
        session_held, total_held = self._held(session_id)
        with self._lock:
            session = session_held + self._receiving.get(session_id, 0)
            total = total_held + sum(self._receiving.values())
            if session + size > self.session_cap:
                return f"this session's uploads would exceed {self.session_cap // MIB} MiB"
            if total + size > self.total_cap:
                return f"the dashboard's uploads would exceed {self.total_cap // MIB} MiB; retry later"
            self._receiving[session_id] = self._receiving.get(session_id, 0) + size
            return None

    def give_back(self, session_id: str, size: int) -> None:
        """The upload was stored (then Streamlit holds it) or failed."""
        with self._lock:
            left = self._receiving.get(session_id, 0) - size
            if left > 0:
                self._receiving[session_id] = left
            else:
                self._receiving.pop(session_id, None)


def streamlit_uploads_held(session_id: str) -> tuple[int, int]:
    """Bytes of uploaded files Streamlit holds: for `session_id`, and for all sessions."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return 0, 0
    # Streamlit's in-memory manager keeps the files per session (`file_storage`); list() copies in
    # one step under the GIL, so a concurrent upload cannot break the walk.
    by_session: Any = getattr(Runtime.instance().uploaded_file_mgr, "file_storage", {})
    sizes = {sid: sum(len(f.data) for f in list(files.values())) for sid, files in list(by_session.items())}
    return sizes.get(session_id, 0), sum(sizes.values())


class SignInGate:
    """ASGI middleware in front of Streamlit: uploads and media only after sign-in, uploads capped."""

    def __init__(self, app: AsgiApp, access: DashboardAccess | None = None) -> None:
        self._app = app
        self._access = access if access is not None else DashboardAccess.from_env(os.environ)
        self._room = UploadRoom(
            self._access.max_upload_session_mb * MIB,
            self._access.max_upload_total_mb * MIB,
            streamlit_uploads_held,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check an upload or media request, then hand it to Streamlit."""
        path = str(scope.get("path", ""))
        if scope["type"] != "http":
            await self._app(scope, receive, send)
        elif UPLOAD_ROUTE in path:
            await self._upload(scope, receive, send, path.split(UPLOAD_ROUTE, 1)[1])
        elif path.startswith(MEDIA_ROUTE) and not self._browser_signed_in(scope):
            await _refuse(send, 403, "sign in first")
        else:
            await self._app(scope, receive, send)

    async def _upload(self, scope: Scope, receive: Receive, send: Send, rest: str) -> None:
        session_id = rest.split("/", 1)[0]
        method = scope.get("method", "")
        if self._access.token is not None and method != "OPTIONS" and not SIGN_INS.has_session(session_id):
            await _refuse(send, 403, "sign in first")
            return
        if method != "PUT":
            await self._app(scope, receive, send)
            return
        size = _content_length(scope)
        if size is None:
            await _refuse(send, 411, "an upload must state its Content-Length")
            return
        problem = self._room.take(session_id, size)
        if problem is not None:
            await _refuse(send, 413, problem)
            return
        try:
            await self._app(scope, receive, send)
        finally:
            self._room.give_back(session_id, size)

    def _browser_signed_in(self, scope: Scope) -> bool:
        if self._access.token is None:
            return True
        return SIGN_INS.has_browser(browser_key(_cookie(scope, XSRF_COOKIE)))


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _content_length(scope: Scope) -> int | None:
    declared = _header(scope, b"content-length")
    return int(declared) if declared is not None and declared.strip().isdigit() else None


def _cookie(scope: Scope, name: str) -> str | None:
    from http.cookies import CookieError, SimpleCookie

    header = _header(scope, b"cookie")
    if header is None:
        return None
    cookies: SimpleCookie = SimpleCookie()
    try:
        cookies.load(header)
    except CookieError:
        return None
    morsel = cookies.get(name)
    return morsel.value if morsel is not None else None


async def _refuse(send: Send, status: int, message: str) -> None:
    body = f"{message}\n".encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
