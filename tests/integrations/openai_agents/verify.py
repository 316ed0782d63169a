"""The checks every traced run must pass, and readers of its spans."""

from __future__ import annotations

from typing import Any

from janux.tracing import conventions as c
from janux.tracing.analysis import TraceView, reconstruct
from janux.tracing.records import SpanRecord
from tests.support.contract_checker import Traced, contract_problems, outline

KEYS = (
    c.JANUX_AGENT_DEPTH,
    c.JANUX_HANDOFF_ATTEMPT,
    c.JANUX_HANDOFF_STATUS,
    c.JANUX_HANDOFF_ATTEMPTS,
    c.JANUX_HANDOFF_DENY_REASON,
    c.JANUX_HANDOFF_STOP_REASON,
    c.JANUX_STOP_REASON,
    c.JANUX_DENY_REASON,
    c.JANUX_HANDOFF_FROM,
    c.JANUX_HANDOFF_TO,
)
"""Attributes shown in outlines."""


def checked(traced: Traced) -> tuple[list[SpanRecord], TraceView]:
    """The finished spans after the contract checker and the dashboard's reconciliation checks pass."""
    records = traced.records()
    assert contract_problems(records) == []
    view = reconstruct(records)
    assert [check for check in view.checks if not check.ok] == []
    return records, view


def shape(traced: Traced) -> list[str]:
    """The span tree, one line per span (see tests.support.contract_checker.outline)."""
    return outline(traced.tree(), KEYS)


def spans_named(records: list[SpanRecord], prefix: str) -> list[SpanRecord]:
    """Spans whose name starts with `prefix`, in start order."""
    return sorted((s for s in records if s.name.startswith(prefix)), key=lambda s: s.start_ns)


def attr(span: SpanRecord, key: str) -> Any:
    """One attribute of a span (None when absent)."""
    return span.attributes.get(key)
