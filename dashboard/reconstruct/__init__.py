"""Rebuild handoff trees, attempts, costs, failures and reconciliation checks from spans alone.

Plain functions over `janux.tracing.records.SpanRecord` lists; nothing here imports Streamlit or the
runtime. The entry point is `reconstruct(spans) -> TraceView`.
"""

from __future__ import annotations

from janux.dashboard.reconstruct.model import (
    AgentNode,
    Attempt,
    BudgetBurn,
    Check,
    Delegation,
    Failure,
    Usage,
)
from janux.dashboard.reconstruct.rebuild import TraceView, reconstruct
from janux.dashboard.reconstruct.tree import LOOSE_AGENT, HandoffTree, build_tree
from janux.tracing.spantree.index import SpanIndex, TraceIssues, build_index

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
