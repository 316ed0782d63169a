"""Marks shared by the clickable graphs (the Trace page's handoff graph, the agent map)."""

from __future__ import annotations

from typing import Any

import altair as alt

HALO_PX = 4
"""Width of the white outline under a label, so a line crossing it does not hide it."""


def haloed_text(chart: alt.Chart, mark: dict[str, Any], encoding: dict[str, Any]) -> list[alt.Chart]:
    """A text mark twice: a white outline first, then the text itself on top, readable across lines."""
    halo = {key: value for key, value in encoding.items() if key != "color"}
    under = chart.mark_text(**mark, stroke="white", strokeWidth=HALO_PX, strokeJoin="round").encode(**halo)
    return [under, chart.mark_text(**mark).encode(**encoding)]
