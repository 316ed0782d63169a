"""Sign-in before any page renders, when the dashboard has a token (`JANUX_UI_TOKEN`).

A visitor enters the shared token once per browser (`janux.dashboard.sign_ins`): other tabs of that
browser are then signed in too. Links that open a new tab also carry a ticket (`?auth=`): random,
single-use, short-lived, valid only in the browser it was issued to, never the token itself.
Attempts are limited per session (a pause after a wrong token) and per process (`GUESSES`).
"""

from __future__ import annotations

import hmac
import os
import time

import streamlit as st

from janux.dashboard.access import AccessMisconfigured, DashboardAccess
from janux.dashboard.sign_ins import GUESSES, SIGN_INS, XSRF_COOKIE, browser_key
from janux.tracing.analysis import formatting as fmt

TICKET_PARAM = "auth"
"""Query parameter of a sign-in ticket."""
WRONG_TOKEN_DELAY_S = 1.0
"""Pause after a wrong token (slows down guessing from one session)."""
_SIGNED_IN = "janux_signed_in"
"""Session key: the sign-in generation this session signed in under (see `SignIns.generation`)."""
_TICKET = "janux_ticket"


def access() -> DashboardAccess:
    """The access settings; a misconfiguration stops the page with its message."""
    try:
        return DashboardAccess.from_env(os.environ)
    except AccessMisconfigured as exc:
        st.error(fmt.markdown_text(f"The dashboard is misconfigured: {exc}"))
        st.stop()
        raise  # not reached: st.stop() raises


def _browser() -> bytes | None:
    """This session's browser (from the cookies its websocket was opened with), when known."""
    try:
        return browser_key(st.context.cookies.get(XSRF_COOKIE))
    except Exception:  # no browser (AppTest) or no cookies: unknown
        return None


def _session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def _already_signed_in(browser: bytes | None) -> bool:
    """Signed in before, in this session (not revoked since) or in another tab of this browser."""
    signed_in_under = st.session_state.get(_SIGNED_IN)
    # Renewed while in use (the gate's record of it expires otherwise), unless revoked since.
    if signed_in_under is not None and SIGN_INS.renew(_session_id() or "", browser, signed_in_under):
        return True
    if SIGN_INS.has_browser(browser):
        _signed_in(browser)
        return True
    ticket = str(st.query_params.get(TICKET_PARAM, ""))
    if ticket and SIGN_INS.redeem_ticket(ticket, browser):
        _signed_in(browser)
        return True
    return False


def require_sign_in() -> None:
    """Render nothing but a sign-in form (and stop) until this session has entered the token."""
    token = access().token
    if token is None:
        return
    browser = _browser()
    if _already_signed_in(browser):
        st.session_state[_TICKET] = None  # each page run hands out a fresh single-use ticket
        return
    st.title("Janux")
    with st.form("janux_sign_in"):
        given = st.text_input("Dashboard token", type="password", key="janux_token_input")
        submitted = st.form_submit_button("Sign in")
    if submitted:
        if not GUESSES.allow():
            st.error("Too many sign-in attempts on this dashboard; wait a minute and try again.")
            st.stop()
        if hmac.compare_digest(given.strip().encode(), token.encode()):
            _signed_in(browser)
            st.rerun()
        time.sleep(WRONG_TOKEN_DELAY_S)
        st.error("Wrong token.")
    st.stop()


def _signed_in(browser: bytes | None) -> None:
    session_id = _session_id()
    st.session_state[_SIGNED_IN] = SIGN_INS.add(session_id or "", browser)
    st.session_state[_TICKET] = None


def ticket_params() -> dict[str, str]:
    """Query parameters that sign in a tab opened from this session (empty without sign-in): one
    ticket per page run, issued when a link first asks for it."""
    if access().token is None or st.session_state.get(_SIGNED_IN) != SIGN_INS.generation:
        return {}
    ticket = st.session_state.get(_TICKET)
    if ticket is None:
        ticket = SIGN_INS.issue_ticket(_browser())
        st.session_state[_TICKET] = ticket
    return {TICKET_PARAM: str(ticket)}


def sign_out_everyone() -> None:
    """Revoke every sign-in and ticket of this dashboard: every visitor must enter the token again."""
    SIGN_INS.revoke_all()
    st.session_state.pop(_SIGNED_IN, None)
