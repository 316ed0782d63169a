"""Every table of the dashboard goes through `show_table`: one look for money, tokens and gaps.

Money columns (`... USD`) keep their numbers, so a click on the header sorts by amount, and are
rendered by `janux.tracing.analysis.money_cells` (`$0.001234`, `unpriced`, `—`); other numbers get thousands
separators; any missing value reads `—`, never "None".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from janux.dashboard.ui.nav import picked_row
from janux.tracing.analysis import money_cells as cells

MAX_ROWS = 2_000
"""Rows drawn in one table; longer tables are cut (with a note) and stay whole in their CSV."""
ROW_PX, HEADER_PX = 35, 38
"""Height of a table row and of the header row (Streamlit's defaults), to size tall tables."""


def _number_columns(frame: pd.DataFrame, configured: Mapping[str, Any]) -> dict[str, Any]:
    """Thousands separators for the plain number columns nobody configured."""
    config: dict[str, Any] = {}
    for col in frame.columns:
        if col in configured or cells.is_money(col) or cells.is_rate(col):
            continue
        if not pd.api.types.is_numeric_dtype(frame[col]):
            continue
        if pd.api.types.is_bool_dtype(frame[col]):
            continue
        config[col] = st.column_config.NumberColumn(col, format="localized")
    return config


def show_table(
    frame: pd.DataFrame,
    *,
    key: str,
    column_config: Mapping[str, Any] | None = None,
    max_rows: int = MAX_ROWS,
    visible_rows: int | None = None,
    selectable: bool = False,
    by_cell: bool = False,
) -> int | None:
    """Draw a table (index hidden) with the shared cell conventions.

    `visible_rows` makes a long list taller than Streamlit's default of about ten rows. A
    `selectable` table reruns the page on a click on any of its cells and returns the position of
    the clicked row (None before a click, and always for other tables); `by_cell` selects cells
    only (no row checkboxes: the arrow keys then move the selection from row to row).
    """
    configured = dict(column_config or {})
    if len(frame) > max_rows:
        st.caption(f"Showing the first {max_rows:,} of {len(frame):,} rows.")
        frame = frame.head(max_rows)
    config = {**_number_columns(frame, configured), **configured}
    styled = any(
        cells.is_money(c) or cells.is_rate(c) or (cells.is_tokens(c) and frame[c].dtype == object)
        for c in frame
    )
    data: Any = cells.money_styler(frame) if styled else frame
    height: Any = "auto"
    if visible_rows is not None and len(frame) > 10:
        height = HEADER_PX + ROW_PX * min(len(frame), visible_rows) + 2
    if not selectable:
        st.dataframe(
            data, hide_index=True, key=key, column_config=config, placeholder=cells.MISSING, height=height
        )
        return None
    event = st.dataframe(
        data, hide_index=True, key=key, column_config=config, placeholder=cells.MISSING, height=height,
        on_select="rerun", selection_mode="single-cell" if by_cell else ["single-row", "single-cell"],
    )  # fmt: skip
    return picked_row(event)
