"""The Traces, Trace, Costs and Failures pages show every foreign fixture's truth (AppTest), on the
in-memory source, the embedded store and ClickHouse (chdb), and agree with `janux trace`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.report import trace_report
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.sources.protocol import TraceSource
from tests.dashboard.app_helpers import OpenPage
from tests.support.foreign.load import all_spans, cases
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
        assert (row["input tokens"], row["output tokens"]) == (truth["input_tokens"], truth["output_tokens"])
        assert (row["delegations"], row["transfers"]) == (len(truth["delegations"]), len(truth["transfers"]))
        calls = truth["inference_calls"] + truth["unread_calls"]
        assert row["checks"].startswith(f"foreign: {100 * truth['inference_calls'] // calls}% read"), case.id
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
        tokens = f"{truth['input_tokens']:,} / {truth['output_tokens']:,}"
        assert metrics["Tokens in / out"] == tokens, case.id
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
    assert metrics["Tokens in / out"] == f"{tokens[0]:,} / {tokens[1]:,}"
    assert metrics["Traces"] == str(len(CASES))
    (warning,) = [w.value for w in at.warning if "partly unread" in w.value]
    assert warning.startswith(f"1 of {len(CASES)} traces in this range are partly unread (1 model call")
    by_tool = _table(at, "delegation tool", "delegations").set_index("delegation tool")
    want = sum(1 for c in CASES for _, target in c.truth["delegations"] if target == "researcher")
    assert by_tool.loc["ask_researcher", "delegations"] + by_tool.loc["lookup", "delegations"] == want
    by_model = _table(at, "model", "rounds")
    assert by_model["unread"].sum() == 1
    assert fmt.UNKNOWN not in str(metrics["Recorded cost"])


def test_failures_page_lists_the_failed_delegations_only(
    open_page: OpenPage, sources: dict[str, TraceSource]
) -> None:
    at = open_page(sources["memory"], "failures.py")
    table = _table(at, "kind", "final status", "trace")
    failed = table[table["final status"] == "failed"]
    raised = {c.trace_id for c in CASES if c.truth["scenario"] == "raised"}
    assert set(failed["trace"]) == raised
    assert all(failed["tool"] == "ask_researcher")
