"""The Costs page's what-if table: each agent's own usage over the range, recorded and repriced.

Every cell is a figure of `janux.tracing.analysis.repricing` rendered by its medium's one rule:
`figures.page_text` on the page, `figures.csv_value` in the CSV, so the file keeps the page's exact
digits. No Streamlit import here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pandas as pd

from janux.dashboard.views.usage_tables import NO_KEY
from janux.tracing.analysis import figures
from janux.tracing.analysis.repricing import AgentRepricing, RangeRepricing

PICKED: Final = "repriced by the what-if"
"""The `what if` cell of the agent the what-if reprices."""
KEPT: Final = "as recorded"
"""The `what if` cell of every other agent."""


def _what_if(row: AgentRepricing) -> str:
    if row.picked:
        return PICKED
    if row.recorded.unpriced_tokens:
        return f"{KEPT}: its unpriced tokens stay unpriced"
    return KEPT


def _rows(result: RangeRepricing, cell: Callable[[figures.Figure], Any]) -> list[dict[str, Any]]:
    return [
        {
            "agent": row.agent or NO_KEY,
            "loops": cell(figures.count(row.loops)),
            "tokens in": cell(row.input_tokens),
            "tokens out": cell(row.output_tokens),
            "recorded cost": cell(row.recorded),
            "unpriced (recorded)": cell(figures.count(row.recorded.unpriced_tokens)),
            "what-if cost": cell(row.repriced),
            "unpriced (what-if)": cell(figures.count(row.repriced.unpriced_tokens)),
            "what if": _what_if(row),
        }
        for row in result.rows
    ]


def repricing_frame(result: RangeRepricing) -> pd.DataFrame:
    """One row per agent, every figure as the page shows it (text cells)."""
    return pd.DataFrame(_rows(result, figures.page_text))


def repricing_csv(result: RangeRepricing) -> bytes:
    """The same rows as a UTF-8 CSV file: money as exact plain digits, counts as integers."""
    text: str = pd.DataFrame(_rows(result, figures.csv_value)).to_csv(index=False)
    return text.encode()
