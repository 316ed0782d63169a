"""Janux dashboard entry point: `streamlit run dashboard/streamlit_app.py [-- --data-dir DIR --source S]`.

Pages live in `dashboard/app_pages/`; all logic lives in plain modules (`janux.tracing.analysis`,
`janux.dashboard.views`), the pages only lay it out.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from janux.dashboard.ui.login import require_sign_in
from janux.dashboard.ui.state import render_sidebar

_PAGES = Path(__file__).parent / "app_pages"

st.set_page_config(page_title="Janux", layout="wide")
require_sign_in()  # with a token configured, nothing below renders before the visitor signs in

navigation = st.navigation(
    [
        # The default page is served at "/" (Streamlit ignores its url_path).
        st.Page(_PAGES / "traces.py", title="Traces", default=True),
        st.Page(_PAGES / "trace.py", title="Trace", url_path="trace"),
        st.Page(_PAGES / "costs.py", title="Costs", url_path="costs"),
        st.Page(_PAGES / "failures.py", title="Failures", url_path="failures"),
        st.Page(_PAGES / "conversations.py", title="Conversations", url_path="conversations"),
        st.Page(_PAGES / "compare.py", title="Compare", url_path="compare"),
        # Fleet views (issue 14): the agent map and the failed-handoff screen.
        st.Page(_PAGES / "agent_map.py", title="Agent map", url_path="agent-map"),
        st.Page(_PAGES / "handoff.py", title="Failed handoff", url_path="handoff"),
    ]
)
render_sidebar()
navigation.run()
