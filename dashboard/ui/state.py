"""The trace source of this session (sidebar selector) and cached rebuilt traces.

Tests and embedding code may put a ready `TraceSource` into `st.session_state[SOURCE_OVERRIDE]`;
otherwise the sidebar offers the embedded store (default), a ClickHouse `otel_traces` table,
uploaded files, or the file named by `JANUX_SOURCE=memory-file:<path>`. The data directory and the
ClickHouse connection are the server's settings, shown read-only, unless the dashboard was started
with `--allow-source-edit` (then only an existing store may be opened from the page).
"""

from __future__ import annotations

import gc
import importlib
import logging
import pkgutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import streamlit as st

from janux.dashboard import ui as dashboard_ui
from janux.dashboard import views as dashboard_views
from janux.dashboard.ui import map_data
from janux.dashboard.ui.login import access, sign_out_everyone, ticket_params
from janux.dashboard.ui.uploads import UPLOAD_PARAM, linked_token, uploaded_source
from janux.dashboard.ui.view_cache import SHARED
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.sources.protocol import TraceSource
from janux.tracing.sources.source_config import (
    ClickHouseSettings,
    SourceConfig,
    SourceUnavailable,
    config_from_env,
    open_source,
)

logger = logging.getLogger(__name__)

SOURCE_OVERRIDE = "janux_source"
"""Session-state key of an injected `TraceSource` (tests); it wins over the sidebar choice."""
_CHOICE = "janux_source_choice"
_LINK_PARAMS = "janux_link_params"

STORE, CLICKHOUSE, UPLOAD, FILE = "Embedded store", "ClickHouse otel_traces", "Uploaded files", "Trace file"
"""Labels of the sidebar's source choices."""


@st.cache_resource(show_spinner=False, max_entries=8)
def _opened(key: str, _cfg: SourceConfig) -> TraceSource:
    """One open source per configuration, shared by sessions (the store is thread-safe); at most
    eight stay open (a page allowed to edit the source could otherwise open sources without end)."""
    del key  # only the cache key
    return open_source(_cfg)


def _configured() -> SourceConfig:
    return config_from_env(argv=sys.argv[1:])


def _clickhouse_inputs(base: ClickHouseSettings) -> ClickHouseSettings:
    side = st.sidebar
    return ClickHouseSettings(
        host=side.text_input("Host", base.host, key="janux_ch_host"),
        port=int(side.number_input("Port", 1, 65535, base.port, key="janux_ch_port")),
        database=side.text_input("Database", base.database, key="janux_ch_db"),
        table=side.text_input("Table", base.table, key="janux_ch_table"),
        user=side.text_input("User", base.user, key="janux_ch_user"),
        password=side.text_input("Password", base.password, type="password", key="janux_ch_password"),
    )


def _choose() -> tuple[str, TraceSource | None]:
    """The sidebar selector; returns (cache key, source or None when it cannot be opened)."""
    try:
        cfg = _configured()
    except SourceUnavailable as exc:
        st.sidebar.error(fmt.markdown_text(str(exc)))
        cfg = SourceConfig()
    options = [STORE, CLICKHOUSE, UPLOAD] + ([FILE] if cfg.kind == "memory-file" else [])
    default = {"store": STORE, "clickhouse": CLICKHOUSE, "memory-file": FILE}[cfg.kind]
    if linked_token() is not None:
        default = UPLOAD  # opened from a link in a tab that showed uploaded files
    choice = st.sidebar.radio("Trace source", options, index=options.index(default), key=_CHOICE)
    if choice == UPLOAD:
        key, source, token = uploaded_source()
        if token is not None:
            st.session_state[_LINK_PARAMS] = {UPLOAD_PARAM: token}
        return key, source
    editable = access().allow_source_edit
    if choice == STORE:
        cfg = replace(cfg, kind="store")
        if not editable:
            st.sidebar.caption(fmt.markdown_text(f"Data directory: {cfg.resolved_data_dir()}"))
        else:
            configured = str(cfg.resolved_data_dir())
            data_dir = st.sidebar.text_input("Data directory", configured, key="janux_data_dir")
            if data_dir != configured and not (Path(data_dir).expanduser() / "traces.sqlite3").is_file():
                st.sidebar.error(fmt.markdown_text(f"No Janux store in {data_dir}."))
                return f"store:{data_dir}", None
            cfg = replace(cfg, data_dir=data_dir)
    elif choice == CLICKHOUSE:
        ch = cfg.clickhouse if not editable else _clickhouse_inputs(cfg.clickhouse)
        if not editable:
            where = f"ClickHouse: {ch.user}@{ch.host}:{ch.port}/{ch.database}.{ch.table}"
            st.sidebar.caption(fmt.markdown_text(where))
        cfg = replace(cfg, kind="clickhouse", clickhouse=ch)
    else:
        st.sidebar.text(f"File: {cfg.path}")
    try:
        return cfg.key(), _opened(cfg.key(), cfg)
    except SourceUnavailable as exc:
        st.sidebar.error(fmt.markdown_text(str(exc)))
        return cfg.key(), None


def _show_stats(source: TraceSource) -> None:
    try:
        stats = source.ingest_stats()
    except Exception as exc:  # a source that fails must not take the page down
        st.sidebar.warning(fmt.markdown_text(f"ingest stats unavailable: {exc}"))
        return
    st.sidebar.caption("Ingest")
    st.sidebar.metric("Spans", f"{stats.spans:,}")
    left, right = st.sidebar.columns(2)
    left.metric("Duplicates", f"{stats.duplicates:,}")
    right.metric("Rejected", f"{stats.rejected:,}")
    if stats.truncated or stats.repaired:
        # Stored, but not exactly as sent: say so next to the counts instead of hiding it.
        left, right = st.sidebar.columns(2)
        left.metric("Truncated", f"{stats.truncated:,}", help="spans with values cut to the store's limits")
        right.metric("Repaired", f"{stats.repaired:,}", help="spans whose invalid text was replaced")
    if stats.recent_errors:
        with st.sidebar.expander(f"Latest rejections ({len(stats.recent_errors)})"):
            for message in stats.recent_errors:
                st.text(message)


def warm_up() -> None:
    """At server start, before any visitor: open the configured source (the same cached resource the
    pages open) and start reading its agent map facts in the background, so a freshly started
    dashboard's first map finds them read or under way. A failure only leaves the work to the page."""
    try:
        cfg = _configured()
        map_data.warm(cfg.key(), _opened(cfg.key(), cfg))
    except Exception:  # never fatal: the first page opens the source as before
        logger.warning("dashboard warm-up failed; the first page reads the source", exc_info=True)


def load_page_modules() -> None:
    """Import what the pages import, then take every object that exists now out of the garbage
    collector's scans (`gc.freeze`).

    Run before the server takes visitors: imported on the first page's script thread instead,
    pandas and Altair cost that page a second or more (several on a loaded machine). And Streamlit
    runs a full collection after every script run (`runner.postScriptGC`), which otherwise walks
    these modules' hundred thousand objects each time: 50-250 ms of every page and every click.
    The modules live as long as the process, so nothing frozen was ever going to be freed.
    """
    for package in (dashboard_views, dashboard_ui):
        for module in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            try:
                importlib.import_module(module.name)
            except Exception:  # an import that fails here fails the page that needs it, visibly
                logger.debug("warm-up import of %s failed", module.name, exc_info=True)
    gc.collect()
    gc.freeze()


def render_sidebar() -> None:
    """Draw the source selector and ingest stats; remember the chosen source for the pages."""
    st.session_state[_LINK_PARAMS] = {}
    injected: Any = st.session_state.get(SOURCE_OVERRIDE)
    if injected is not None:
        st.sidebar.text("Trace source: provided by the host")
        key, source = f"injected:{id(injected)}", injected
    else:
        key, source = _choose()
    st.session_state["janux_active_key"] = key
    st.session_state["janux_active_source"] = source
    if source is not None:
        # The agent map's facts, read in the background from the first page on: the Agent map (and
        # the cost pictures) then open without reading every trace (issue 14).
        map_data.warm(key, source)
        _show_stats(source)
    if access().token is not None:
        st.sidebar.button(
            "Sign out every browser",
            key="janux_sign_out_all",
            on_click=sign_out_everyone,
            help="Revoke every sign-in and link ticket of this dashboard: everyone enters the token again",
        )


def link_params() -> dict[str, str]:
    """Query parameters a link to another page must carry to show the same source in a new tab
    (and, with sign-in, to be signed in there)."""
    return {**source_params(), **ticket_params()}


def source_params() -> dict[str, str]:
    """Query parameters that name this session's source in a URL (the upload token, if any): kept
    by every page switch, so the address stays a link to the same data."""
    return dict(st.session_state.get(_LINK_PARAMS, {}))


def active_source() -> tuple[str, TraceSource] | None:
    """The session's source (after `render_sidebar`); shows a message and returns None when unset."""
    source = st.session_state.get("janux_active_source")
    if source is None:
        st.info("No trace source is open: choose one in the sidebar.")
        return None
    return str(st.session_state["janux_active_key"]), source


def get_views(trace_ids: list[str]) -> dict[str, TraceView]:
    """Rebuilt traces of the active source (cached for a few seconds)."""
    active = active_source()
    if active is None or not trace_ids:
        return {}
    key, source = active
    return SHARED.views(source, key, trace_ids)


def prefetch_view(trace_id: str) -> None:
    """Start rebuilding a trace of the active source on the cache's worker thread (a later
    `get_views` waits for it): the page draws what comes before the trace meanwhile."""
    source = st.session_state.get("janux_active_source")
    if source is not None:
        SHARED.prefetch(source, str(st.session_state["janux_active_key"]), trace_id)
