"""What `janux ui` runs: the Streamlit app (`streamlit_app.py`) behind the sign-in gate.

`streamlit run server_app.py` finds `app` and serves it; `SignInGate` sees every HTTP request before
Streamlit does, so uploads and media files stay out of reach until the visitor signs in, and
uploads stay within their memory caps (see `janux.dashboard.gate`).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from janux.dashboard.gate import SignInGate

app = st.App(Path(__file__).resolve().with_name("streamlit_app.py"), middleware=[Middleware(SignInGate)])
"""The ASGI app `streamlit run` serves."""
