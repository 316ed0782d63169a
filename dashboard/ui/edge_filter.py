"""The Failures page narrowed to one agent-map edge (`?caller=&target=`), with explain links."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from janux.dashboard.ui.links import handoff_link
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_parts import Failure

EXPLAIN_LINK = st.column_config.LinkColumn("explain", display_text="explain ›", width="small")
"""Config of the `explain` column: a link to the failed-handoff screen."""


def edge_only(failures: list[Failure]) -> list[Failure]:
    """`failures` of the edge named in the URL (`caller`, `target`), all of them when none is named."""
    caller = st.query_params.get("caller")
    target = st.query_params.get("target")
    if caller is None and target is None:
        return failures
    st.caption(fmt.markdown_text(f"Only the edge {caller or '(any caller)'} → {target or '(any target)'}."))
    return [
        f for f in failures
        if (caller is None or (f.caller or "") == caller) and (target is None or f.target == target)
    ]  # fmt: skip


def explain_links(frame: pd.DataFrame) -> list[str]:
    """The failed-handoff screen's link of every row (trace, span)."""
    return [handoff_link(t, s) for t, s in zip(frame["trace"], frame["span"], strict=True)]
