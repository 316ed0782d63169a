"""Who signed in to this dashboard process: sessions, browsers, tickets, and the limit on guessing.

Process-wide and thread-safe, no Streamlit import: the sign-in form (`ui/login.py`) writes here, and
the web server's gate (`gate.py`) reads here before it lets an upload or a media download through.

- A browser is known by the token inside Streamlit's XSRF cookie (random, one per browser, sent
  with every request and with the page's websocket). A session that enters the token signs in its
  browser for `BROWSER_SIGN_IN_S`: another tab of the same browser is signed in without asking.
- A ticket (`?auth=` in links that open a new tab) is random, lives `TICKET_LIFETIME_S`, is used
  once, and works only in the browser it was issued to (when that browser is known).
- Wrong guesses are limited per process (`GuessLimit`), not only per session: opening more
  sessions does not buy more guesses.
- `revoke_all()` forgets every sign-in and ticket: every visitor must enter the token again.
"""

from __future__ import annotations

import binascii
import secrets
import threading
import time
from collections import OrderedDict

XSRF_COOKIE = "_streamlit_xsrf"
"""Streamlit's anti-forgery cookie: one random token per browser, re-masked on every answer."""
BROWSER_SIGN_IN_S = 12 * 3600.0
"""How long a browser stays signed in after its last sign-in."""
TICKET_LIFETIME_S = 120.0
"""How long a ticket may wait to be used (a link opened in a new tab uses it at once)."""
MAX_REMEMBERED = 10_000
"""Sessions, browsers and tickets remembered each (the oldest are forgotten first)."""
GUESSES_PER_MINUTE = 30
"""Sign-in attempts per minute for the whole process (a burst of up to `GUESS_BURST` at once)."""
GUESS_BURST = 10
"""Sign-in attempts allowed back to back before the per-minute rate applies."""


def browser_key(xsrf_cookie: str | None) -> bytes | None:
    """The browser's token inside a Streamlit XSRF cookie (`2|mask|masked token|time`), or None."""
    if not xsrf_cookie:
        return None
    parts = xsrf_cookie.strip("\"'").split("|")
    if len(parts) != 4 or parts[0] != "2":
        return None
    try:
        mask, masked = binascii.a2b_hex(parts[1]), binascii.a2b_hex(parts[2])
    except (binascii.Error, ValueError):
        return None
    if not mask or len(masked) < 16:
        return None
    return bytes(b ^ mask[i % len(mask)] for i, b in enumerate(masked))


class _Expiring:
    """Keys with an expiry, oldest first, at most `MAX_REMEMBERED` (the caller holds the lock)."""

    def __init__(self) -> None:
        self._expiry: OrderedDict[object, float] = OrderedDict()

    def put(self, key: object, lifetime_s: float) -> None:
        self._expiry[key] = time.monotonic() + lifetime_s
        self._expiry.move_to_end(key)
        while len(self._expiry) > MAX_REMEMBERED:
            self._expiry.popitem(last=False)

    def alive(self, key: object) -> bool:
        expiry = self._expiry.get(key)
        return expiry is not None and expiry > time.monotonic()

    def pop(self, key: object) -> bool:
        """Remove `key`; whether it was there and alive."""
        expiry = self._expiry.pop(key, None)
        return expiry is not None and expiry > time.monotonic()

    def clear(self) -> None:
        self._expiry.clear()


class SignIns:
    """The sign-ins of one dashboard process."""

    def __init__(self) -> None:
        self._sessions = _Expiring()
        self._browsers = _Expiring()
        self._tickets: OrderedDict[str, tuple[float, bytes | None]] = OrderedDict()
        self._lock = threading.Lock()
        self.generation = 0
        """Bumped by `revoke_all`: a session signed in under an older generation is signed out."""

    def add(self, session_id: str, browser: bytes | None) -> int:
        """`session_id` (in `browser`, when known) entered the token; returns the generation."""
        with self._lock:
            self._sessions.put(session_id, BROWSER_SIGN_IN_S)
            if browser:
                self._browsers.put(browser, BROWSER_SIGN_IN_S)
            return self.generation

    def renew(self, session_id: str, browser: bytes | None, generation: int) -> bool:
        """Renew a sign-in made under `generation`; False (nothing renewed) when revoked since."""
        with self._lock:
            if generation != self.generation:
                return False
            self._sessions.put(session_id, BROWSER_SIGN_IN_S)
            if browser:
                self._browsers.put(browser, BROWSER_SIGN_IN_S)
            return True

    def has_session(self, session_id: str) -> bool:
        """Whether this session signed in (and was not revoked since)."""
        with self._lock:
            return self._sessions.alive(session_id)

    def has_browser(self, browser: bytes | None) -> bool:
        """Whether a session of this browser signed in (and was not revoked since)."""
        with self._lock:
            return browser is not None and self._browsers.alive(browser)

    def issue_ticket(self, browser: bytes | None) -> str:
        """A new single-use ticket, valid only in `browser` when it is known."""
        ticket = secrets.token_urlsafe(24)
        with self._lock:
            self._tickets[ticket] = (time.monotonic() + TICKET_LIFETIME_S, browser)
            while len(self._tickets) > MAX_REMEMBERED:
                self._tickets.popitem(last=False)
        return ticket

    def redeem_ticket(self, ticket: str, browser: bytes | None) -> bool:
        """Use `ticket` up; True if it was issued, unused, unexpired, and to this browser."""
        with self._lock:
            entry = self._tickets.pop(ticket, None)
        if entry is None:
            return False
        expiry, issued_to = entry
        return expiry > time.monotonic() and (issued_to is None or issued_to == browser)

    def revoke_all(self) -> None:
        """Forget every sign-in and ticket."""
        with self._lock:
            self._sessions.clear()
            self._browsers.clear()
            self._tickets.clear()
            self.generation += 1


class GuessLimit:
    """A token bucket of sign-in attempts shared by every session of the process."""

    def __init__(self, per_minute: float = GUESSES_PER_MINUTE, burst: int = GUESS_BURST) -> None:
        self._rate = per_minute / 60.0
        self._burst = float(burst)
        self._tokens = float(burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def allow(self) -> bool:
        """Take one attempt; False when the process is out of attempts for now."""
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._rate)
            self._last = now
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True


SIGN_INS = SignIns()
"""The sign-ins of this dashboard process."""
GUESSES = GuessLimit()
"""The sign-in attempts left to this dashboard process."""
