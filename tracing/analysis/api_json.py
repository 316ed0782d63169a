"""The command line's JSON: an API, not the pages' labels (docs/json.md documents every key).

`janux traces --json` prints one object per trace (`trace_row`), `janux trace --json` one object
for a trace (`report.trace_report`, which stamps the same `SCHEMA`). Keys are snake_case and stable;
values are raw: times as ISO 8601 UTC (`started_at`), durations in milliseconds (`duration_ms`),
money as USD numbers with the unit in the key (`cost_usd`), rounded by the one money rule
(`formatting.money`), and unknown as null, never 0. A change that renames or removes a key, or
changes a value's meaning, raises `SCHEMA`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.facts import TraceSummary
from janux.tracing.analysis.trace_list import summary_status
from janux.tracing.analysis.trace_view import TraceView

SCHEMA: Final = 1
"""Version of the JSON the command line prints (`schema` in every object)."""


def iso_utc(unix_ns: int) -> str:
    """`2026-12-03T13:49:02.123456Z`: an instant in ISO 8601, UTC, to the microsecond."""
    moment = datetime.fromtimestamp(unix_ns // 1_000 / 1e6, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def duration_ms(duration_ns: int) -> float | None:
    """Milliseconds of a duration in nanoseconds; None while open (negative)."""
    return None if duration_ns < 0 else duration_ns / 1e6


def usd(value: float | None) -> float | None:
    """A USD amount as the JSON carries it: the one money rule's export rounding; None stays None."""
    return None if value is None else fmt.money(value)


def _usage(summary: TraceSummary, view: TraceView | None) -> dict[str, Any]:
    """Tokens and money of a list row: the recorded bill, else what the rebuild found (unknown is
    null: usage that could not be read has no count and no cost)."""
    if view is not None and (summary.bill_cost is None or view.total.estimated_cost is not None):
        total = view.total
        if view.model_calls_unrecorded:  # agents ran, no model call recorded: unknown, never 0
            return {"input_tokens": None, "output_tokens": None, "cost_usd": None, "estimated_cost_usd": None,
                    "unpriced_tokens": None, "usage_known": False}  # fmt: skip
        unknown = total.unread_rounds > 0
        if not unknown and not total.rounds and not total.total_tokens and total.cost is None:
            # Nothing ran that uses a model (a graph built, no agent): no figure, not 0.
            return {"input_tokens": None, "output_tokens": None, "cost_usd": None, "estimated_cost_usd": None,
                    "unpriced_tokens": None, "usage_known": True}  # fmt: skip
        return {
            "input_tokens": None if total.is_unknown else total.input_tokens,
            "output_tokens": None if total.is_unknown else total.output_tokens,
            "cost_usd": None if unknown else usd(total.cost),
            "estimated_cost_usd": None if unknown else usd(total.estimated_cost),
            "unpriced_tokens": None if total.is_unknown else total.unpriced_tokens,
            "usage_known": not unknown,
        }
    unknown = summary.bill_cost is None and summary.inference_spans > summary.usage_read_spans
    return {
        "input_tokens": summary.bill_input_tokens,
        "output_tokens": summary.bill_output_tokens,
        "cost_usd": usd(summary.bill_cost),
        "estimated_cost_usd": None,
        "unpriced_tokens": summary.bill_unpriced_tokens,
        "usage_known": not unknown,
    }


def _reconciled(summary: TraceSummary, view: TraceView | None) -> bool | None:
    """The bill equals the loops (the source's flag), else every check of the rebuild passed; None
    when there is nothing to reconcile (no bill and no Janux accounting)."""
    if summary.bill_reconciled is not None:
        return summary.bill_reconciled
    if view is None or not view.is_janux:
        return None
    return not view.failed_checks


def trace_row(summary: TraceSummary, view: TraceView | None) -> dict[str, Any]:
    """One trace of `janux traces --json` (`view`: its rebuild, when the list needed one)."""
    failures = view.failures if view is not None else []
    return {
        "schema": SCHEMA,
        "trace_id": summary.trace_id,
        "started_at": iso_utc(summary.start_ns),
        "duration_ms": duration_ms(summary.duration_ns),
        "service": summary.service_name or None,
        "root_agent": summary.root_agent or None,
        "agent_path": list(summary.agent_path),
        "conversation_id": summary.conversation_id or None,
        "status": summary_status(summary, view),
        "failure": outcomes.failure_text(failures) or None,
        **_usage(summary, view),
        "reconciled": _reconciled(summary, view),
        "delegations": summary.delegations,
        "transfers": summary.transfers,
        "attempts": summary.attempts,
        "failed_handoffs": summary.failed_handoffs,
        "error_spans": summary.error_spans,
        "span_count": summary.span_count,
        "linked_traces": summary.linked_traces,
        "model_calls": summary.inference_spans,
        "model_calls_read": summary.usage_read_spans,
        "unrecognised_spans": summary.unrecognised_spans,
    }
