"""What `janux ui` runs: the Streamlit app (`streamlit_app.py`) behind the sign-in gate.

`streamlit run server_app.py` finds `app` and serves it; `SignInGate` sees every HTTP request before
Streamlit does, so uploads and media files stay out of reach until the visitor signs in, and
uploads stay within their memory caps (see `janux.dashboard.gate`). When the server starts, before
any visitor, it opens the configured source and starts reading the agent map's facts
(`state.warm_up`), so the first page of a fresh dashboard does not wait for them alone.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from janux.dashboard.gate import SignInGate


def _warm_up_now() -> None:
    # Imported here, on the warm-up thread: the pages' modules (pandas, Altair) load off the event
    # loop, and are loaded when the first visitor's script needs them.
    from janux.dashboard.ui.state import warm_up

    warm_up()


@asynccontextmanager
async def _warm_up(_app: st.App) -> AsyncIterator[None]:
    """Start the warm-up in the background (the server answers at once) and serve."""
    threading.Thread(target=_warm_up_now, name="janux-warm-up", daemon=True).start()
    yield None


app = st.App(
    Path(__file__).resolve().with_name("streamlit_app.py"),
    middleware=[Middleware(SignInGate)],
    lifespan=_warm_up,
)
"""The ASGI app `streamlit run` serves."""
