"""Sign-in before any page renders, when the dashboard has a token (`JANUX_UI_TOKEN`).

A visitor enters the shared token once per browser session. Links that open a new tab (a new
Streamlit session) carry a sign-in ticket (`?auth=`): random, issued at sign-in, valid for
`TICKET_LIFETIME_S`, never the token itself.
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
import time

import streamlit as st

from janux.dashboard.access import AccessMisconfigured, DashboardAccess
from janux.tracing.analysis import formatting as fmt

TICKET_PARAM = "auth"
"""Query parameter of a sign-in ticket."""
TICKET_LIFETIME_S = 12 * 3600.0
"""How long a ticket stays valid."""
WRONG_TOKEN_DELAY_S = 1.0
"""Pause after a wrong token (slows down guessing)."""
_SIGNED_IN = "janux_signed_in"
_TICKET = "janux_ticket"
_MAX_TICKETS = 10_000


class _Tickets:
    """Issued tickets and their expiry, process-wide and thread-safe."""

    def __init__(self) -> None:
        self._expiry: dict[str, float] = {}
        self._lock = threading.Lock()

    def issue(self) -> str:
        ticket = secrets.token_urlsafe(24)
        now = time.monotonic()
        with self._lock:
            self._expiry = {t: e for t, e in self._expiry.items() if e > now}
            if len(self._expiry) >= _MAX_TICKETS:
                self._expiry.pop(next(iter(self._expiry)))
            self._expiry[ticket] = now + TICKET_LIFETIME_S
        return ticket

    def valid(self, ticket: str) -> bool:
        with self._lock:
            expiry = self._expiry.get(ticket)
        return expiry is not None and expiry > time.monotonic()


TICKETS = _Tickets()
"""The tickets of this dashboard process."""


def access() -> DashboardAccess:
    """The access settings; a misconfiguration stops the page with its message."""
    try:
        return DashboardAccess.from_env(os.environ)
    except AccessMisconfigured as exc:
        st.error(fmt.markdown_text(f"The dashboard is misconfigured: {exc}"))
        st.stop()
        raise  # not reached: st.stop() raises


def require_sign_in() -> None:
    """Render nothing but a sign-in form (and stop) until this session has entered the token."""
    token = access().token
    if token is None or st.session_state.get(_SIGNED_IN):
        return
    ticket = str(st.query_params.get(TICKET_PARAM, ""))
    if ticket and TICKETS.valid(ticket):
        _signed_in(ticket)
        return
    st.title("Janux")
    with st.form("janux_sign_in"):
        given = st.text_input("Dashboard token", type="password", key="janux_token_input")
        submitted = st.form_submit_button("Sign in")
    if submitted:
        if hmac.compare_digest(given.strip().encode(), token.encode()):
            _signed_in(TICKETS.issue())
            st.rerun()
        time.sleep(WRONG_TOKEN_DELAY_S)
        st.error("Wrong token.")
    st.stop()


def _signed_in(ticket: str) -> None:
    st.session_state[_SIGNED_IN] = True
    st.session_state[_TICKET] = ticket


def ticket_params() -> dict[str, str]:
    """Query parameters that sign in a tab opened from this session (empty without sign-in)."""
    ticket = st.session_state.get(_TICKET)
    return {TICKET_PARAM: str(ticket)} if ticket else {}
