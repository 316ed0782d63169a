"""The agent map's tables and the words of its pictures: node/edge tables, paths, a timeline, how a
cost, a duration and an edge read (the clickable map itself is `map_chart`).

Everything is drawn from one `AgentMap` (the source's exact aggregate over a range); every chart
has the table it was drawn from.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from janux.tracing.analysis import figures
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.agentmap.build import percentile
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, EdgeStats
from janux.tracing.analysis.money_cells import cost_cell
from janux.tracing.analysis.trace_parts import Usage

WidthBy = Literal["count", "cost"]
"""What an edge's width shows: how many delegations, or the inclusive cost they carried."""
MIN_PEN, MAX_PEN = 1.0, 8.0
"""Thinnest and thickest edge (stroke width, px)."""
UNKNOWN_CALLER = "(caller not in trace)"
"""Name shown for edges whose caller's spans are missing."""
ROOT_PATH = "(top level)"
"""The parent shown for top-level loops."""
FAILURE_KINDS = ("denied", "failed", "fallback", "cut", "timeout", "open")
"""Failure kinds, in the order the edge table shows them."""


def usd(usage: Usage) -> str:
    """Cost of a usage, exact, its unpriced tokens with it (`$0.003685 + 221 unpriced tokens`),
    `unpriced` or `—`: a tooltip's text (`figures.page_text`)."""
    return figures.page_text(figures.cost(usage))


def usd_label(usage: Usage) -> str:
    """Cost of a usage as a chart label, short and rounded as the map's panel rounds it
    (`$0.00329 + 221 unpriced`, `figures.chart_label`)."""
    return figures.chart_label(figures.cost(usage))


def rate_label(fraction: float) -> str:
    """A share as the map's labels and panel both show it (`43.8%`, `figures.chart_label`)."""
    return figures.chart_label(figures.share(fraction))


def ms(value: float | None) -> str:
    """A percentile duration, `—` when there was none to take."""
    return fmt.NO_USAGE if value is None else fmt.ms(value)


def failure_color(rate: float) -> str:
    """Green (no failures) through orange to red (half or more failed)."""
    if rate <= 0:
        return "#2e7d32"
    if rate < 0.1:
        return "#f9a825"
    if rate < 0.5:
        return "#ef6c00"
    return "#c62828"


def caller_name(edge: EdgeStats) -> str:
    """The edge's caller, or a marker when the caller's spans are missing."""
    return edge.caller or UNKNOWN_CALLER


def edge_label(edge: EdgeStats) -> str:
    """`triage → researcher (delegate)`: how an edge is named in lists and selections."""
    return f"{caller_name(edge)} → {edge.target} ({edge.kind})"


def nodes_frame(agent_map: AgentMap) -> pd.DataFrame:
    """One row per agent: the numbers the map's nodes show."""
    rows = [
        {
            "agent": n.agent, "runs": n.runs, "traces": n.traces, "errors": n.errors,
            "error rate": round(n.error_rate, 4),
            "own USD": cost_cell(n.own.cost, n.own.unpriced_tokens),
            "inclusive USD": cost_cell(n.inclusive.cost, n.inclusive.unpriced_tokens),
            "own tokens": n.own.total_tokens, "unpriced tokens": n.inclusive.unpriced_tokens,
            "p50 ms": n.p50_ms, "p95 ms": n.p95_ms,
        }
        for n in agent_map.nodes
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=_NODE_COLUMNS)


_NODE_COLUMNS = [
    "agent", "runs", "traces", "errors", "error rate", "own USD", "inclusive USD", "own tokens",
    "unpriced tokens", "p50 ms", "p95 ms",
]  # fmt: skip


def edges_frame(agent_map: AgentMap) -> pd.DataFrame:
    """One row per edge: count, attempts, failures by kind, durations, cost carried."""
    rows = []
    for e in agent_map.edges:
        row = {
            "caller": caller_name(e), "target": e.target, "kind": e.kind, "delegations": e.count,
            "attempts": e.attempts, "failed delegations": e.failed,
            "failure rate": round(e.failure_rate, 4),
        }  # fmt: skip
        row.update({kind: e.failures.get(kind, 0) for kind in FAILURE_KINDS})
        row.update(
            {
                "p50 ms": e.p50_ms, "p95 ms": e.p95_ms,
                "carried USD": cost_cell(e.cost.cost, e.cost.unpriced_tokens),
                "carried tokens": e.cost.total_tokens, "traces": e.traces,
            }
        )  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)


def reasons_frame(edge: EdgeStats) -> pd.DataFrame:
    """Failed delegations of one edge by reason, most frequent first."""
    rows = sorted(edge.reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    return pd.DataFrame(rows, columns=["reason", "delegations"])


@dataclass(frozen=True, slots=True)
class Choice:
    """One entry of the "inspect" selector: an agent or an edge."""

    label: str
    """What the selector shows."""
    agent: str | None = None
    """The agent, for a node."""
    edge: tuple[str, str, str] | None = None
    """(caller, target, kind), for an edge."""


def agent_names(agent_map: AgentMap) -> list[str]:
    """Every agent the map draws: its nodes, then callers and targets that never ran (a target every
    handoff to was denied), so the chart and the inspector list the same agents."""
    names = [n.agent for n in agent_map.nodes]
    for edge in agent_map.edges:
        for name in (caller_name(edge), edge.target):
            if name not in names:
                names.append(name)
    return names


def choices(agent_map: AgentMap) -> list[Choice]:
    """Every agent the map draws (but the stand-in for an unknown caller) then every edge, as
    selector entries."""
    names = [name for name in agent_names(agent_map) if name != UNKNOWN_CALLER]
    out = [Choice(f"agent: {name}", agent=name) for name in names]
    out += [Choice(f"edge: {edge_label(e)}", edge=e.key) for e in agent_map.edges]
    return out


def paths_frame(agent_map: AgentMap) -> pd.DataFrame:
    """One row per delegation path, with its parent path (what the icicle is drawn from)."""
    rows = [
        {
            "path": " > ".join(p.path), "agent": p.path[-1], "depth": len(p.path) - 1,
            "parent": " > ".join(p.path[:-1]) or ROOT_PATH, "runs": p.runs,
            "own USD": cost_cell(p.own.cost, p.own.unpriced_tokens),
            "inclusive USD": cost_cell(p.inclusive.cost, p.inclusive.unpriced_tokens),
            "inclusive tokens": p.inclusive.total_tokens, "unpriced tokens": p.inclusive.unpriced_tokens,
        }
        for p in agent_map.paths
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=_PATH_COLUMNS)


_PATH_COLUMNS = [
    "path", "agent", "depth", "parent", "runs", "own USD", "inclusive USD", "inclusive tokens",
    "unpriced tokens",
]  # fmt: skip


def icicle_frame(agent_map: AgentMap, value: Literal["cost", "tokens"] = "cost") -> pd.DataFrame:
    """Rectangles of an icicle of inclusive cost (or tokens) by delegation path: each path spans
    [x0, x1) inside its parent's span, in proportion to its own inclusive value; depth is the row.
    Each also says its `amount` (the sized value as a label), a `short` form of it for a narrow
    bar, its `cost` and its `tokens`.

    A path's children never exceed it (inclusive covers them), so they nest; what is left of a
    parent's span is its own rounds. Unpriced paths get no width in the cost icicle (their tokens
    are in the tokens icicle, where every path that ran has its place)."""

    def amount(usage: Usage) -> float:
        return float(usage.cost or 0.0) if value == "cost" else float(usage.total_tokens)

    by_parent: dict[tuple[str, ...], list[_Slice]] = {}
    for p in agent_map.paths:
        by_parent.setdefault(p.path[:-1], []).append(_Slice(p.path, amount(p.inclusive), p.inclusive))
    rows: list[dict[str, object]] = []
    roots = by_parent.get((), [])
    _place(by_parent, roots, (0.0, 1.0), sum(r.value for r in roots), value, rows)
    return pd.DataFrame(
        rows, columns=["path", "agent", "depth", "x0", "x1", "value", "amount", "short", "cost", "tokens"]
    )


def _icicle_amounts(usage: Usage, value: Literal["cost", "tokens"]) -> tuple[str, str]:
    """A bar's amount and a shorter form of it, each saying what it counts: tokens in and out
    apart, as the Costs header counts them (`30.1K in · 1,338 out`), else their sum labelled as one
    (`31.4K in+out`); a cost as a chart label (`$0.0348`)."""
    if value == "cost":
        text = figures.chart_label(figures.money(usage.cost))
        return text, text
    tokens_in, tokens_out = fmt.compact_count(usage.input_tokens), fmt.compact_count(usage.output_tokens)
    return f"{tokens_in} in · {tokens_out} out", f"{fmt.compact_count(usage.total_tokens)} in+out"


@dataclass(frozen=True, slots=True)
class _Slice:
    path: tuple[str, ...]
    value: float
    usage: Usage


def _place(
    by_parent: dict[tuple[str, ...], list[_Slice]],
    items: Iterable[_Slice],
    span: tuple[float, float],
    total: float,
    value: Literal["cost", "tokens"],
    rows: list[dict[str, object]],
) -> None:
    if total <= 0:
        return
    x, width = span
    for item in sorted(items, key=lambda item: -item.value):
        share = width * item.value / total
        if share <= 0:
            continue
        usage = item.usage
        text, short = _icicle_amounts(usage, value)
        rows.append(
            {"path": " > ".join(item.path), "agent": item.path[-1], "depth": len(item.path) - 1, "x0": x,
             "x1": x + share, "value": item.value, "amount": text, "short": short, "cost": usd(usage),
             "tokens": usage.total_tokens}
        )  # fmt: skip
        # Children share the parent's span in proportion to the parent's inclusive value.
        _place(by_parent, by_parent.get(item.path, []), (x, share), item.value, value, rows)
        x += share


def timeline_frame(agent_map: AgentMap) -> pd.DataFrame:
    """Own cost and tokens per time bucket and agent, plus one `unpriced` band of tokens."""
    return _bands((bucket, agent, usage) for (bucket, agent), usage in agent_map.timeline.items())


def model_timeline_frame(rows: Iterable[tuple[int, str, Usage]]) -> pd.DataFrame:
    """Cost and tokens per time bucket and requested model (`TraceSource.model_timeline`), plus one
    `unpriced` band of tokens."""
    return _bands((bucket, model or "(no model)", usage) for bucket, model, usage in rows)


def _bands(items: Iterable[tuple[int, str, Usage]]) -> pd.DataFrame:
    rows: list[dict[str, object]] = []
    for bucket, agent, usage in items:
        when = pd.Timestamp(bucket, unit="ns", tz="UTC")
        priced_tokens = usage.total_tokens - usage.unpriced_tokens
        rows.append({"time": when, "band": agent, "cost USD": usage.cost or 0.0, "tokens": priced_tokens})
        if usage.unpriced_tokens:
            rows.append({"time": when, "band": "unpriced", "cost USD": None, "tokens": usage.unpriced_tokens})
    return pd.DataFrame(rows, columns=["time", "band", "cost USD", "tokens"])


def turn_cost_summary(agent_map: AgentMap) -> dict[str, float | int | None]:
    """p50/p95 cost per turn (priced top-level loops) and how many turns had no price at all."""
    return {
        "turns": len(agent_map.turn_costs) + agent_map.unpriced_turns,
        "p50 USD": percentile(agent_map.turn_costs, 50),
        "p95 USD": percentile(agent_map.turn_costs, 95),
        "unpriced turns": agent_map.unpriced_turns,
    }
