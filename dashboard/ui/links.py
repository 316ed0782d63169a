"""Links between the agent map, the Failures page and the failed-handoff screen."""

from __future__ import annotations

from urllib.parse import urlencode

from janux.dashboard.ui.state import link_params

FAILURES_PAGE = "failures"
"""URL path of the Failures page (`?caller=&target=` filters it to one edge)."""
HANDOFF_PAGE = "handoff"
"""URL path of the failed-handoff screen (`?trace_id=&span_id=`)."""


def failures_link(caller: str, target: str) -> str:
    """The Failures page filtered to the edge `caller -> target`."""
    return f"{FAILURES_PAGE}?{urlencode({'caller': caller, 'target': target, **link_params()})}"


def handoff_link(trace_id: str, span_id: str) -> str:
    """The failed-handoff screen of one delegation (its tool span, or attempt span for direct nesting)."""
    return f"{HANDOFF_PAGE}?{urlencode({'trace_id': trace_id, 'span_id': span_id, **link_params()})}"
