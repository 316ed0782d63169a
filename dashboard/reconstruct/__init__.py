"""Rebuild handoff trees, attempts, costs, failures and reconciliation checks from spans alone.

Plain functions over `tracing.records.SpanRecord` lists; nothing here imports Streamlit or the
runtime. The entry point is `reconstruct(spans) -> TraceView`.
"""

from __future__ import annotations

from dashboard.reconstruct.model import (
    AgentNode,
    Attempt,
    BudgetBurn,
    Check,
    Delegation,
    Failure,
    TraceIssues,
    Usage,
)
from dashboard.reconstruct.rebuild import TraceView, reconstruct
from dashboard.reconstruct.spanindex import SpanIndex, build_index
from dashboard.reconstruct.tree import LOOSE_AGENT, HandoffTree, build_tree

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
    "TraceIssues",
    "TraceView",
    "Usage",
    "build_index",
    "build_tree",
    "reconstruct",
]
