"""The Trace and Traces pages' numbers as plain data (for `janux trace` / `janux traces`).

Built from the same rebuilt `TraceView` and the same trace-list rows as the pages, so the
dashboard and the command line cannot disagree. No Streamlit import here.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from janux.tracing.analysis import api_json as api
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis import outcomes
from janux.tracing.analysis import spanread as sr
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.analysis.trace_view import TraceView

CostKind = Literal["recorded", "estimated", "unpriced", "unknown", "none"]
"""Where a cost comes from: recorded by Janux, estimated (in part: an estimate recorded in the trace
by an integration, or made here from the price table), tokens without any price, usage that could
not be read, or no usage at all."""


def cost_kind(usage: Usage) -> CostKind:
    """What kind of cost `usage` has (`unknown` wins when some rounds could not be read)."""
    if usage.unread_rounds:
        return "unknown"
    if usage.estimated_cost is not None:
        return "estimated"
    if usage.cost is not None:
        return "unpriced" if usage.unpriced_tokens else "recorded"
    return "unpriced" if usage.total_tokens or usage.unpriced_tokens else "none"


def _money(usage: Usage, value: float | None) -> float | None:
    """An amount of `usage`, None when unknown: none known, or some rounds could not be read."""
    if usage.unread_rounds or value is None:
        return None
    return fmt.money(value)


def usage_json(usage: Usage) -> dict[str, Any]:
    """Tokens and cost of one usage as plain data (unknown is null, never 0). `cost` is the recorded
    plus the estimated part; `recorded_cost` and `estimated_cost` are the two parts (null when none);
    `unpriced_tokens` have neither, `estimated_tokens` only an estimate."""
    unknown = usage.is_unknown
    return {
        "input_tokens": None if unknown else usage.input_tokens,
        "output_tokens": None if unknown else usage.output_tokens,
        "cost_usd": _money(usage, usage.total_cost),
        "cost_kind": cost_kind(usage),
        "recorded_cost_usd": _money(usage, usage.cost),
        "estimated_cost_usd": _money(usage, usage.estimated_cost),
        "unpriced_tokens": None if unknown else usage.unpriced_tokens,
        "estimated_tokens": usage.estimated_tokens,
        "rounds": usage.rounds,
        "unread_rounds": usage.unread_rounds,
    }


def _checks(view: TraceView) -> dict[str, str]:
    """Check name -> `pass`, `fail` (an error or warning failed) or `info` (a note failed)."""
    found: dict[str, str] = {}
    for check in view.checks:
        result = "pass" if check.ok else ("info" if check.severity == "info" else "fail")
        previous = found.get(check.name, "pass")
        found[check.name] = max(previous, result, key=("pass", "info", "fail").index)
    found["usage_read"] = "fail" if view.total.unread_rounds else "pass"
    return found


def _tree(view: TraceView) -> dict[str, list[dict[str, Any]]]:
    nodes = [
        {"id": n.index, "agent": n.agent, "span_id": n.span_id, "segment": n.segment, "parent": n.parent,
         "depth": n.depth, "started_at": api.iso_utc(n.start_ns),
         "duration_ms": api.duration_ms(n.duration_ns), "status": n.status, "error_type": n.error_type,
         "transferred_from": n.transferred_from,
         "transferred_to": n.transferred_to, "own": usage_json(n.own), "inclusive": usage_json(n.inclusive)}
        for n in view.nodes
    ]  # fmt: skip
    edges = [
        {"from": d.parent_node, "to": [a.node for a in d.attempts], "kind": d.kind, "tool": d.tool,
         "caller": d.caller, "target": d.target, "status": d.status, "attempts": d.attempt_count,
         "duration_ms": d.duration_ms, "error": d.error, "tool_span_id": d.tool_span_id,
         "usage": usage_json(d.cost), "found": d.found}
        for d in view.delegations
    ]  # fmt: skip
    return {"nodes": nodes, "edges": edges}


def _failures(view: TraceView) -> list[dict[str, Any]]:
    """Every failed, denied, cut, timed-out, retried or open handoff and failed loop: kind, reason
    and the whole error message, as the Failures page lists them."""
    return [
        {"kind": f.kind, "reason": f.reason, "status": f.status, "caller": f.caller, "target": f.target,
         "tool": f.tool, "attempts": f.attempts, "error": f.error, "span_id": f.span_id}
        for f in view.failures
    ]  # fmt: skip


def _failure_line(failure: dict[str, Any]) -> str:
    via = f" via {failure['tool']}" if failure["tool"] else ""
    line = f"{failure['kind']}: {failure['caller'] or '(caller missing)'} -> {failure['target']}{via}"
    line += f", reason {failure['reason']}, final status {failure['status']}"
    return line + (f": {failure['error']}" if failure["error"] else "")


def _usage_read(view: TraceView) -> str:
    """`read/calls` over the model calls of the trace (failed calls that returned none left out)."""
    read = calls = 0
    for node in view.nodes:
        for pos in node.chat_spans:
            state, _, _ = sr.round_usage(view.index.spans[pos])
            calls += state != "failed"
            read += state == "read"
    return f"{read}/{calls}"


def trace_report(view: TraceView) -> dict[str, Any]:
    """Everything `janux trace --json` prints: the Trace page's numbers and its tree."""
    total = view.total
    usage = usage_json(total)
    if view.model_calls_unrecorded:  # agents ran, no model call recorded: unknown, never 0
        usage.update(input_tokens=None, output_tokens=None, cost_usd=None, cost_kind="unknown",
                     recorded_cost_usd=None, unpriced_tokens=None)  # fmt: skip
    spans = view.index.spans
    start = min((span.start_ns for span in spans), default=0)
    end = max((span.start_ns + max(span.duration_ns, 0) for span in spans), default=start)
    return {
        "schema": api.SCHEMA,
        "trace_id": view.trace_id,
        "linked_trace_ids": list(view.index.linked_trace_ids),
        "started_at": api.iso_utc(start) if spans else None,
        "duration_ms": api.duration_ms(end - start) if spans else None,
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "cost_usd": usage["cost_usd"],
        "cost_kind": usage["cost_kind"],
        "recorded_cost_usd": usage["recorded_cost_usd"],
        "estimated_cost_usd": usage["estimated_cost_usd"],
        "price_sources": view.price_sources,
        "unpriced_tokens": usage["unpriced_tokens"],
        "estimated_tokens": total.estimated_tokens,
        "rounds": total.rounds,
        "unread_rounds": total.unread_rounds,
        "usage_note": MODEL_CALLS_UNRECORDED if view.model_calls_unrecorded else None,
        "agents": [n.agent for n in view.nodes],
        "delegations": sum(1 for d in view.delegations if d.kind == "delegate"),
        "transfers": sum(1 for d in view.delegations if d.kind == "transfer"),
        "attempts": view.attempts,
        "failed_handoffs": sum(1 for d in view.delegations if outcomes.is_failed_handoff(d)),
        "status": outcomes.trace_status(view.failures, len(view.issues.open_spans)),
        "failures": _failures(view),
        "errors": sum(1 for span in view.index.spans if span.status_code == "Error"),
        "usage_read": _usage_read(view),
        "janux": view.is_janux,
        "checks": _checks(view),
        "coverage": list(view.tree.coverage),
        "tree": _tree(view),
    }


MODEL_CALLS_UNRECORDED = "model calls not recorded by this instrumentation"
"""Why a trace whose agents made no recorded model call has unknown usage (`usage_note`)."""


def _usage_text(usage: dict[str, Any]) -> str:
    if usage["cost_kind"] == "unknown" and usage["input_tokens"] is None:
        note = usage.get("usage_note")
        return f"usage unknown ({note})" if note else "usage unknown"
    cost = usage["cost_usd"]
    money = fmt.UNKNOWN if usage["cost_kind"] == "unknown" else (
        fmt.usd(cost, estimated=usage["cost_kind"] == "estimated") if cost is not None else fmt.UNPRICED
    )  # fmt: skip
    if usage["cost_kind"] == "none":
        money = fmt.NO_USAGE
    elif cost is not None and usage["unpriced_tokens"]:  # unpriced tokens travel with the cost
        money += f" + {usage['unpriced_tokens']:,} unpriced tokens"
    return f"{usage['input_tokens']:,} in / {usage['output_tokens']:,} out, {money}"


def _tree_lines(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> list[str]:
    """One line per loop, depth first, walked with an explicit stack (no recursion: a trace may nest
    loops thousands deep)."""
    via = {target: edge for edge in edges for target in edge["to"]}
    children: dict[int | None, list[int]] = {}
    for node in nodes:
        children.setdefault(node["parent"], []).append(node["id"])
    lines: list[str] = []
    stack = [(root, 0) for root in reversed(children.get(None, []))]
    while stack:
        node_id, depth = stack.pop()
        node = nodes[node_id]
        edge = via.get(node_id)
        how = f"{edge['kind']} via {edge['tool']} ({edge['status']}, {edge['found']}) -> " if edge else ""
        status = "" if node["status"] == "ok" else f" [{node['status']}]"
        lines.append(f"{fmt.indent(depth)}{how}{node['agent']}{status}: own {_usage_text(node['own'])}")
        stack.extend((child, depth + 1) for child in reversed(children.get(node_id, [])))
    return lines


def render_tree(report: dict[str, Any]) -> str:
    """The report as a terminal tree: one line per loop, its delegations and transfers below it."""
    edges = report["tree"]["edges"]
    lines = [
        f"trace {report['trace_id']}: {_usage_text(report)}; usage read {report['usage_read']}",
        f"delegations {report['delegations']}, transfers {report['transfers']}, "
        f"attempts {report['attempts']}, failed handoffs {report['failed_handoffs']}, "
        f"error spans {report['errors']}; status {report['status']}",
        *_tree_lines(report["tree"]["nodes"], edges),
    ]
    for edge in edges:
        if not edge["to"]:
            lines.append(f"    {edge['kind']} via {edge['tool']} -> {edge['target']} ({edge['status']})")
    lines.extend(_failure_line(failure) for failure in report["failures"])
    if report["coverage"]:
        lines.append("not read: " + "; ".join(report["coverage"]))
    if report["price_sources"]:
        lines.append("estimated costs (≈) from: " + "; ".join(report["price_sources"]))
    checks = sorted(report["checks"].items())
    lines.append("checks: " + ", ".join(f"{name} {result}" for name, result in checks))
    return "\n".join(lines)


def json_cell(value: Any) -> Any:
    """A table cell as JSON: money sentinels named, NaN and missing as null, amounts rounded by the
    one money rule (`formatting.money`)."""
    if isinstance(value, float):
        if value == cells.UNPRICED:
            return fmt.UNPRICED
        if value == cells.UNKNOWN:
            return fmt.UNKNOWN
        if math.isnan(value):
            return None
        return fmt.money(value) if math.isfinite(value) else None
    if hasattr(value, "item"):  # numpy scalars from a pandas frame
        return json_cell(value.item())
    return value
