"""Two traces side by side: which loops and delegations appear, vanish or change, and what it cost."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pandas as pd

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis import outcomes
from janux.tracing.analysis.trace_parts import AgentNode
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.sources.protocol import TraceSummary


def node_paths(view: TraceView) -> dict[str, AgentNode]:
    """Each loop keyed by its path of delegations from its root (`planner/delegate.x[1]#2`).

    `[k]` numbers repeated calls of the same tool by one loop, `#n` is the attempt number, so
    the same shape of run gives the same keys in two traces.
    """
    paths: dict[int, str] = {}
    out: dict[str, AgentNode] = {}
    calls: dict[tuple[int, str], int] = {}
    seen_delegation: dict[int, int] = {}
    root_no = 0
    for node in view.nodes:  # parents first
        if node.parent is None or node.via is None:
            root_no += 1
            path = f"{node.agent}" if root_no == 1 else f"{node.agent}~{root_no}"
        else:
            delegation = view.delegations[node.via]
            if delegation.index not in seen_delegation:
                key = (node.parent, delegation.tool)
                calls[key] = calls.get(key, 0) + 1
                seen_delegation[delegation.index] = calls[key]
            call_no = seen_delegation[delegation.index]
            path = f"{paths[node.parent]}/{delegation.tool}[{call_no}]#{node.attempt or 1}"
        paths[node.index] = path
        out[path] = node
    return out


def tree_diff(a: TraceView, b: TraceView) -> pd.DataFrame:
    """One row per loop path in either trace: present where, status, own and inclusive cost."""
    left, right = node_paths(a), node_paths(b)
    rows: list[dict[str, Any]] = []
    for path in list(left) + [p for p in right if p not in left]:
        na, nb = left.get(path), right.get(path)
        if na is None or nb is None:
            change = "only in B" if na is None else "only in A"
        elif (outcomes.loop_outcome(na), na.own.total_cost, na.own.total_tokens) != (
            outcomes.loop_outcome(nb),
            nb.own.total_cost,
            nb.own.total_tokens,
        ):
            change = "changed"  # a loop that failed another way (model_error vs timeout) changed
        else:
            change = "same"
        ca = cells.total_cell(na.inclusive) if na else None
        cb = cells.total_cell(nb.inclusive) if nb else None
        rows.append(
            {
                "loop": path,
                "change": change,
                "status A": outcomes.loop_outcome(na) if na else None,
                "status B": outcomes.loop_outcome(nb) if nb else None,
                # Unpriced tokens travel with the cost: an own and an inclusive cost that read the same
                # amount never hide that the tokens below were not priced.
                "own A": fmt.usage_cost_full(na.own) if na else None,
                "own B": fmt.usage_cost_full(nb.own) if nb else None,
                "inclusive A": fmt.usage_cost_full(na.inclusive) if na else None,
                "inclusive B": fmt.usage_cost_full(nb.inclusive) if nb else None,
                "inclusive Δ USD": cells.delta_cell(ca, cb),
                "tokens A": na.inclusive.total_tokens if na else None,
                "tokens B": nb.inclusive.total_tokens if nb else None,
            }
        )
    return pd.DataFrame(rows)


def cost_diff(a: TraceView, b: TraceView) -> pd.DataFrame:
    """Totals of both traces side by side, with the difference, as text (one unit per row)."""
    ta, tb = a.total, b.total
    ca, cb = cells.total_cell(ta), cells.total_cell(tb)
    rows = [
        {
            "measure": "cost",
            "A": cells.money_text(ca, estimated=ta.is_estimated),
            "B": cells.money_text(cb, estimated=tb.is_estimated),
            "B − A": cells.money_text(cells.delta_cell(ca, cb), signed=True),
        }
    ]
    for label, va, vb in (
        ("input tokens", ta.input_tokens, tb.input_tokens),
        ("output tokens", ta.output_tokens, tb.output_tokens),
        ("unpriced tokens", ta.unpriced_tokens, tb.unpriced_tokens),
        ("agent loops", len(a.nodes), len(b.nodes)),
        ("delegations", len(a.delegations), len(b.delegations)),
        ("attempts", _attempts(a), _attempts(b)),
        ("failed handoffs", _failed(a), _failed(b)),
    ):
        rows.append(
            {"measure": label, "A": f"{va:,}", "B": f"{vb:,}", "B − A": f"{vb - va:+,}" if vb != va else "0"}
        )
    return pd.DataFrame(rows)


def _failed(view: TraceView) -> int:
    return sum(1 for d in view.delegations if outcomes.is_failed_handoff(d))


def failure_diff(a: TraceView, b: TraceView) -> pd.DataFrame:
    """Failure reasons of both traces (`kind: reason` with counts), where they differ."""
    count_a = Counter(f"{f.kind}: {f.reason}" for f in a.failures)
    count_b = Counter(f"{f.kind}: {f.reason}" for f in b.failures)
    rows = [
        {"failure": key, "A": count_a.get(key, 0), "B": count_b.get(key, 0)}
        for key in sorted(set(count_a) | set(count_b))
        if count_a.get(key, 0) != count_b.get(key, 0)
    ]
    return pd.DataFrame(rows, columns=["failure", "A", "B"])


def _attempts(view: TraceView) -> int:
    return view.attempts


def summary_cost(summary: TraceSummary) -> str:
    """The recorded bill of a trace as text: `$0.001234`, `unpriced` (tokens used, no recorded
    price: also every trace of another runtime), or `—` (no tokens)."""
    if summary.bill_cost is not None:
        return cells.money_text(summary.bill_cost)
    used = (
        (summary.bill_unpriced_tokens or 0)
        + (summary.bill_input_tokens or 0)
        + (summary.bill_output_tokens or 0)
    )
    return fmt.UNPRICED if used else cells.MISSING


def trace_label(summary: TraceSummary) -> str:
    """How a trace is offered in a picker, told apart from its neighbours by its conversation:
    `2025-01-31 09:15:02 · triage · conv-42 · $0.001234 · 4547684b`."""
    agent = summary.agents_shown or summary.root_name or "(no root yet)"
    conversation = summary.conversation_id or "no conversation"
    cost = summary_cost(summary)
    return (
        f"{fmt.utc(summary.start_ns)} · {agent} · {conversation} · {cost} · {fmt.short_id(summary.trace_id)}"
    )
