"""What a person reads in a table drawn by `st.dataframe`, rebuilt from the AppTest element.

Streamlit draws a styled table's cells from the Styler's display values and every missing
value as the table's placeholder (or "None" without one); this helper applies the same rules,
so tests assert on the text on screen, not on the numbers underneath.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd
from streamlit import dataframe_util

_ESCAPED = re.compile(r"\\(.)")

DEFAULT_PLACEHOLDER = "None"
"""What Streamlit shows for a missing value when the table sets no placeholder."""


def shown(element: Any) -> pd.DataFrame:
    """The cells of an AppTest `Dataframe` element as the browser shows them (strings)."""
    raw: pd.DataFrame = element.value
    arrow = element.proto.arrow_data
    if arrow.HasField("styler") and arrow.styler.display_values:
        text = dataframe_util.convert_arrow_bytes_to_pandas_df(arrow.styler.display_values)
        text.index = raw.index
    else:
        text = raw.astype(str)
    proto = element.proto
    placeholder = proto.placeholder if proto.HasField("placeholder") else DEFAULT_PLACEHOLDER
    return text.astype(object).where(~raw.isna(), placeholder)


def rendered(markdown: str) -> str:
    """The text a markdown element shows for backslash-escaped source (`fmt.markdown_text`)."""
    return _ESCAPED.sub(r"\1", markdown)


def tree_rows(at: Any) -> pd.DataFrame:
    """The Trace page's tree (`janux.dashboard.ui.trace_tree`) as shown: one row of text per span,
    with each row's span id in `span_id` (read from the component's data)."""
    (tree,) = [e for e in at.get("bidi_component") if e.proto.component_name == "janux_trace_tree"]
    data = json.loads(tree.proto.json)
    # Each row as the component draws it: [id, guides, state, label, kind, left, width, duration,
    # tokens, cost, hover, hit, outcome] (`trace_tree._rows_data`).
    cells = [[r[3], "", r[7], r[8], r[9]] for r in data["rows"]]
    frame = pd.DataFrame(cells, columns=data["columns"])
    frame["kind"] = [r[4] for r in data["rows"]]
    frame["span_id"] = [r[0] for r in data["rows"]]
    frame["state"] = [r[2] for r in data["rows"]]
    frame["hit"] = [r[11] for r in data["rows"]]
    frame["guides"] = ["".join(r[1]) for r in data["rows"]]
    return frame


def detail_tables(at: Any) -> dict[str, dict[str, Any]]:
    """The Trace page's span detail (`janux.dashboard.ui.text_tables`) as sent: each table by name
    (`facts`, `price`, `budget`, `attributes`, `events`), with its `caption`, `columns` and `rows`."""
    (tables,) = [e for e in at.get("bidi_component") if e.proto.component_name == "janux_text_tables"]
    return {block["name"]: block for block in json.loads(tables.proto.json)["blocks"]}
