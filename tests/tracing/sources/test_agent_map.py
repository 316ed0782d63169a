"""The agent map equals the sums over the Trace pages of the same traces, in every source."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from janux.tracing.records import SpanRecord
from janux.tracing.sources.agentmap.spans import agent_map_of_traces
from janux.tracing.testing import synthetic_trace
from tests.support.agent_map_expect import actual, expected
from tests.support.contract_traces import contract_trace, plain_trace
from tests.support.demo_traces import demo_traces


def by_trace(spans: Sequence[SpanRecord]) -> dict[str, list[SpanRecord]]:
    out: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        out[span.trace_id].append(span)
    return dict(out)


def test_in_memory_map_equals_the_trace_pages_on_the_demo_set() -> None:
    traces = by_trace(demo_traces().spans)
    got = actual(agent_map_of_traces(traces.items()))
    want = expected(traces.values())
    assert got["nodes"] == want["nodes"]
    assert got["edges"] == want["edges"]
    assert len(got["edges"]) >= 5 and any(e["failures"] for e in got["edges"].values())


def test_in_memory_map_equals_the_trace_pages_on_contract_and_foreign_traces() -> None:
    traces = [
        contract_trace(), plain_trace(), synthetic_trace(300, seed=4), synthetic_trace(300, seed=5, janux=False)
    ]
    pairs = [(spans[0].trace_id, spans) for spans in traces]
    got = actual(agent_map_of_traces(pairs))
    want = expected(traces)
    assert got == want
