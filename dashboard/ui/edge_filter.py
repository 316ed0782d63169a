"""The Failures page narrowed to one agent-map edge (`?caller=&target=`)."""

from __future__ import annotations

import streamlit as st

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.trace_parts import Failure


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
