"""What `janux ui` runs: the Streamlit app (`streamlit_app.py`) behind the sign-in gate.

`streamlit run server_app.py` finds `app` and serves it; `SignInGate` sees every HTTP request before
Streamlit does, so uploads and media files stay out of reach until the visitor signs in, and
uploads stay within their memory caps (see `janux.dashboard.gate`). When the server starts, before
it takes visitors, it opens the configured source, starts reading the agent map's facts in the
background (`state.warm_up`) and imports the pages' modules (`state.load_page_modules`): the first
page of a fresh dashboard then neither imports pandas and Altair nor shares the process with a
thread that does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from janux.dashboard.gate import SignInGate


def _prepare() -> None:
    # Imported here, off the event loop: the state module imports the pages' dependencies.
    from janux.dashboard.ui.state import load_page_modules, warm_up

    warm_up()  # the map's facts are read on their own thread, beside the imports
    load_page_modules()


@asynccontextmanager
async def _warm_up(_app: st.App) -> AsyncIterator[None]:
    """Prepare (a second or two), then serve: the server answers its first request prepared."""
    await asyncio.to_thread(_prepare)
    yield None


app = st.App(
    Path(__file__).resolve().with_name("streamlit_app.py"),
    middleware=[Middleware(SignInGate)],
    lifespan=_warm_up,
)
"""The ASGI app `streamlit run` serves."""
