"""The Traces, Trace, Costs and Failures pages show every foreign fixture's truth (AppTest), on the
in-memory source, the embedded store and ClickHouse (chdb), and agree with `janux trace`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from janux.dashboard.views.handoff_chart import handoff_frames
from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import money_cells as cells
from janux.tracing.analysis.readers.structure import UNNAMED_AGENT
from janux.tracing.analysis.report import trace_report
from janux.tracing.analysis.trace_list import badge
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.sources.protocol import TraceSource
from tests.dashboard.app_helpers import OpenPage
from tests.support.foreign.load import all_spans, cases, failed_handoffs, listed_tokens
from tests.support.three_sources import three_sources

CASES = cases()
KINDS = ["memory", "store", "clickhouse"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, TraceSource]]:
    with three_sources(all_spans(), tmp_path_factory.mktemp("sources")) as found:
        yield found


def _table(at: AppTest, *columns: str) -> Any:
    return next(e.value for e in at.dataframe if set(columns) <= set(e.value.columns))


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


@pytest.mark.parametrize("kind", KINDS)
def test_traces_page_shows_the_truth(open_page: OpenPage, sources: dict[str, TraceSource], kind: str) -> None:
    at = open_page(sources[kind])
    at.selectbox(key="traces_size").set_value(100).run()
    table = _table(at, "trace", "checks").set_index("trace")
    assert len(table) == len(CASES)
    for case in CASES:
        row, truth = table.loc[case.trace_id], case.truth
        unknown = cells.UNKNOWN if truth["unread_calls"] else None
        want = tuple(unknown if n is None else n for n in listed_tokens(truth))
        shown = tuple(None if pd.isna(v) else v for v in (row["input tokens"], row["output tokens"]))
        assert shown == want, case.id
        assert row["failed handoffs"] == failed_handoffs(truth), case.id
        assert ("unnamed agent" in row["checks"]) == (UNNAMED_AGENT in truth["agents"]), case.id
        if truth["edges"] is not None:
            # "" where no agent ran; a transferred conversation's agents in turn
            shown = " → ".join(truth.get("agent_path") or [truth["root_agent"] or ""])
            assert row["agents"] == shown, case.id
            assert row["attempts"] == sum(e["attempts"] for e in truth["edges"] if e["kind"] == "delegate")
        assert (row["delegations"], row["transfers"]) == (len(truth["delegations"]), len(truth["transfers"]))
        calls = truth["inference_calls"] + truth["unread_calls"]
        read = f"{100 * truth['inference_calls'] // calls}% read" if calls else "no model calls"
        assert row["checks"].startswith(f"foreign: {read}"), case.id
        assert row["estimated USD"] != 0


@pytest.mark.parametrize("kind", KINDS)
def test_trace_page_shows_what_janux_trace_prints(
    open_page: OpenPage, sources: dict[str, TraceSource], kind: str
) -> None:
    source = sources[kind]
    for case in CASES:
        at = open_page(source, "trace.py", trace_id=case.trace_id)
        report = trace_report(reconstruct(source.get_trace(case.trace_id)))
        metrics = _metrics(at)
        truth = case.truth
        tokens = next(m for m in at.metric if m.label == "Tokens in / out")
        # Unknown, or the tokens read (+ unknown below them): never a silent 0.
        if truth["unread_calls"] and not truth["inference_calls"]:
            assert (tokens.value, tokens.proto.delta) == (fmt.UNKNOWN, ""), case.id
        else:
            out = f"{truth['output_tokens']:,} out" + (f" + {fmt.UNKNOWN}" if truth["unread_calls"] else "")
            assert (tokens.value, tokens.proto.delta) == (f"{truth['input_tokens']:,} in", out), case.id
        assert metrics["Delegations"] == str(report["delegations"] + report["transfers"]), case.id
        assert metrics["Failed handoffs"] == str(report["failed_handoffs"]), case.id
        assert metrics["Agent loops"] == str(len(truth["agents"])), case.id
        cost = metrics.get("Total cost (estimated)", metrics.get("Total cost", ""))
        assert cost and "$0.000000" not in cost, case.id
        assert (fmt.UNKNOWN in cost) == bool(truth["unread_calls"]), case.id
        unread = [w.value for w in at.warning if "could not read" in w.value]
        assert bool(unread) == bool(truth["unread_calls"]), case.id


@pytest.mark.parametrize("kind", KINDS)
def test_costs_page_totals_and_the_unread_warning(
    open_page: OpenPage, sources: dict[str, TraceSource], kind: str
) -> None:
    at = open_page(sources[kind], "costs.py")
    metrics = _metrics(at)
    tokens = (sum(c.truth["input_tokens"] for c in CASES), sum(c.truth["output_tokens"] for c in CASES))
    helps = {m.label: m.proto.help for m in at.metric}
    assert metrics["Tokens"] == f"{fmt.compact_count(tokens[0])} in"
    assert helps["Tokens"] == f"Exact: {tokens[0]:,} in / {tokens[1]:,} out"
    assert metrics["Traces"] == str(len(CASES))
    (warning,) = [w.value for w in at.warning if "partly unread" in w.value]
    partly = [c for c in CASES if c.truth["unread_calls"]]
    unread = sum(c.truth["unread_calls"] for c in partly)
    head = f"{len(partly)} of {len(CASES)} traces in this range are partly unread ({unread} model"
    assert warning.startswith(head)
    by_tool = _table(at, "delegation tool", "delegations")
    assert by_tool["delegations"].sum() == sum(len(c.truth["delegations"]) for c in CASES)
    by_model = _table(at, "model", "rounds")
    assert by_model["unread"].sum() == unread
    assert fmt.UNKNOWN not in str(metrics["Recorded cost"])


def test_failures_page_lists_the_failed_delegations_only(
    open_page: OpenPage, sources: dict[str, TraceSource]
) -> None:
    at = open_page(sources["memory"], "failures.py")
    table = _table(at, "kind", "final status", "trace")
    failed = table[table["final status"] == "failed"]
    assert set(failed["trace"]) == {c.trace_id for c in CASES if failed_handoffs(c.truth)}
    assert len(failed) == sum(failed_handoffs(c.truth) for c in CASES)
    raised = {c.trace_id for c in CASES if c.truth["scenario"] == "raised"}
    assert all(failed[failed["trace"].isin(raised)]["tool"] == "ask_researcher")


def test_a_failed_agent_reads_error_never_error_error() -> None:
    # Other runtimes record no `error.type`: the node of a failed agent says `error`, not a
    # made-up `error: error` (the reason is in the Failures table and the span inspector).
    failing = [c for c in CASES if c.truth["edges"] and failed_handoffs(c.truth)]
    assert len(failing) >= 3
    for case in failing:
        view = reconstruct(list(case.spans))
        points = handoff_frames(view).points
        assert "error: error" not in "\n".join(points["detail"]), case.id
        targets = {e["target"] for e in case.truth["edges"] if e["status"] == "failed"}
        failed = [n for n in view.nodes if n.agent in targets and n.status == "error"]
        assert failed and all(n.error_type is None for n in failed), case.id
        drawn_failed = points[(points["kind"] == "loop") & (points["state"] == "failed")]
        assert len(drawn_failed) >= len(failed), case.id  # drawn as failed all the same


@pytest.mark.parametrize("case", [c for c in CASES if c.truth.get("edges")], ids=lambda c: c.id)
def test_the_handoff_graph_draws_every_edge_of_the_truth(case: Any) -> None:
    """Each edge (a delegation, or a transfer whose target ran beside its caller, as swarms, graphs
    and ADK record them) is a line from the caller's loop to a mark below it: the target's loop,
    or for a run another transfer owns (graph fan-in) a note naming that target."""
    view = reconstruct(list(case.spans))
    frames = handoff_frames(view)
    agents = {n.span_id: n.agent for n in view.nodes}
    marks = {(r.row, r.depth): r for r in frames.points.itertuples() if r.kind != "handoff"}

    def agent(mark: Any) -> str:  # a loop's agent; a note's first line ends in its target
        return agents[mark.span_id] if mark.kind == "loop" else str(mark.label).split("\n")[0].split()[-1]

    drawn = set()
    for e in frames.edges.itertuples():  # an elbow's first stretch: down from the caller's mark
        below = marks.get((e.row2, e.depth + 1))
        if e.depth == e.depth2 and e.row != e.row2 and below is not None and below.kind != "more":
            drawn.add((agent(marks[(e.row, e.depth)]), agent(below)))
    truth = {(edge["caller"], edge["target"]) for edge in case.truth["edges"]}
    assert truth <= drawn, (truth, drawn)


def test_a_managed_agent_never_exported_marks_its_trace_incomplete() -> None:
    # smolagents never ends the span of a managed agent that raised: its spans hang below a missing
    # parent. The trace says so, and the failed delegation is still read from the manager's step.
    (case,) = [c for c in CASES if c.id == "smolagents_managed/managed_failed"]
    view = reconstruct(list(case.spans))
    assert view.issues.incomplete and view.issues.orphans
    assert badge(view).endswith(", incomplete")
    (failed,) = [d for d in view.delegations if d.status == "failed"]
    assert (failed.caller, failed.target, failed.attempt_count) == ("manager", "researcher", 1)
