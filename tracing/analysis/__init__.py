"""The analysis layer: every rule that turns a trace's spans into answers, written once.

Below both the trace sources (`janux.tracing.sources`, which store spans and query them) and the
dashboard (`janux.dashboard`, which only draws): the span tree (`span_index`), one reader per
instrumentation convention (`readers`), the rebuilt trace with its loops, delegations, attempts,
own and inclusive usage, failures and checks (`trace_view`), the per-trace facts the trace list,
`usage_by` and the agent map add up (`trace_facts`, `summary`, `usage_rows`, `agentmap`), what
the command line prints (`report`, `trace_list`, `formatting`, the one money rule), and the
definitions every page shares (`outcomes`, `trace_outline`).

The entry points for one trace are `reconstruct(spans) -> TraceView` (everything the Trace page
shows) and `analyse(trace_id, spans) -> TraceFacts` (what it adds to every list and aggregate).
Names are imported lazily so that a source importing one rule does not import them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from janux.tracing.analysis.handoff_tree import LOOSE_AGENT, HandoffTree, build_tree
    from janux.tracing.analysis.span_index import SpanIndex, TraceIssues, build_index
    from janux.tracing.analysis.trace_facts import TraceFacts, analyse
    from janux.tracing.analysis.trace_parts import (
        AgentNode,
        Attempt,
        BudgetBurn,
        Check,
        Delegation,
        Failure,
        Usage,
    )
    from janux.tracing.analysis.trace_view import TraceView, reconstruct

_EXPORTS = {
    "LOOSE_AGENT": "handoff_tree",
    "HandoffTree": "handoff_tree",
    "build_tree": "handoff_tree",
    "TraceFacts": "trace_facts",
    "analyse": "trace_facts",
    "TraceView": "trace_view",
    "reconstruct": "trace_view",
    "SpanIndex": "span_index",
    "TraceIssues": "span_index",
    "build_index": "span_index",
    "AgentNode": "trace_parts",
    "Attempt": "trace_parts",
    "BudgetBurn": "trace_parts",
    "Check": "trace_parts",
    "Delegation": "trace_parts",
    "Failure": "trace_parts",
    "Usage": "trace_parts",
}

__all__ = [
    "LOOSE_AGENT",
    "AgentNode",
    "Attempt",
    "BudgetBurn",
    "Check",
    "Delegation",
    "Failure",
    "HandoffTree",
    "SpanIndex",
    "TraceFacts",
    "TraceIssues",
    "TraceView",
    "Usage",
    "analyse",
    "build_index",
    "build_tree",
    "reconstruct",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
