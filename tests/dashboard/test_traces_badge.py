"""The Traces page's reconciliation badge comes from the source's `bill_reconciled` flag.

A page of janux traces is listed without rebuilding any of them; only traces the source has no
flag for (other runtimes, a root not received yet) are rebuilt. The badge says the same thing
either way: a trace whose bill differs from the sum of its loops is marked failed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.tracing import conventions as c
from janux.tracing.analysis import reconstruct
from janux.tracing.analysis.trace_list import BADGE_BILL_DIFFERS, BADGE_OK, badge
from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter, TraceSource
from tests.dashboard.app_helpers import OpenPage
from tests.support.contract_traces import contract_trace, plain_trace

GOOD = contract_trace(seed=1)
PLAIN = plain_trace()


def _overbilled(seed: int = 7) -> list[SpanRecord]:
    """A contract trace whose root bills 1 input token more than its loops used."""
    spans = contract_trace(seed=seed, conversation_id="conv-bad")
    root = next(s for s in spans if not s.parent_span_id)
    attrs = dict(root.attributes)
    attrs[c.JANUX_BILL_INPUT_TOKENS] = int(attrs[c.JANUX_BILL_INPUT_TOKENS]) + 1
    return [dataclasses.replace(s, attributes=attrs) if s is root else s for s in spans]


BAD = _overbilled()


class _Counting(MemoryTraceSource):
    """The in-memory source, noting which traces the page reads span by span."""

    def __init__(self, spans: list[SpanRecord]) -> None:
        super().__init__(spans)
        self.read: list[str] = []

    def get_traces(self, trace_ids: list[str]) -> dict[str, list[SpanRecord]]:
        self.read += trace_ids
        return super().get_traces(trace_ids)


@pytest.fixture(params=["memory", "store"])
def flagged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TraceSource]:
    """The good, the over-billed and the plain trace, in memory and in the embedded store."""
    spans = GOOD + BAD + PLAIN
    if request.param == "memory":
        yield MemoryTraceSource(spans)
        return
    from janux.tracing.sources.store import open_store

    with open_store(tmp_path / "data") as store:
        store.write(spans)
        yield store


def _badges(at: object) -> dict[str, str]:
    table = next(e.value for e in at.dataframe if "checks" in e.value.columns)  # type: ignore[attr-defined]
    return dict(zip(table["trace"], table["checks"], strict=True))


def test_the_source_flags_the_bill_that_differs(flagged: TraceSource) -> None:
    flags = {s.trace_id: s.bill_reconciled for s in flagged.list_traces(TraceFilter())}
    assert flags == {GOOD[0].trace_id: True, BAD[0].trace_id: False, PLAIN[0].trace_id: None}


def test_badge_from_the_flag_means_what_the_rebuild_says(open_page: OpenPage, flagged: TraceSource) -> None:
    badges = _badges(open_page(flagged))
    assert badges == {
        GOOD[0].trace_id: BADGE_OK,
        BAD[0].trace_id: BADGE_BILL_DIFFERS,
        PLAIN[0].trace_id: "foreign: 100% read",  # another runtime: how much of its usage was read
    }
    # The rebuild agrees: the good trace passes every check, the over-billed one fails one.
    assert badge(reconstruct(GOOD)) == BADGE_OK
    rebuilt_bad = reconstruct(BAD)
    assert badge(rebuilt_bad).startswith("✗") and BADGE_BILL_DIFFERS.startswith("✗")
    assert [chk.name for chk in rebuilt_bad.failed_checks] == ["bill_vs_turns"]


def _failing(source: MemoryTraceSource) -> set[str]:
    """Traces whose summary shows a failed handoff or an ERROR span."""
    return {s.trace_id for s in source.list_traces(TraceFilter()) if s.failed_handoffs or s.error_spans}


def test_only_traces_without_a_flag_or_with_failures_are_rebuilt(open_page: OpenPage) -> None:
    source = _Counting(GOOD + BAD + PLAIN + contract_trace(seed=11))
    at = open_page(source)
    assert len(_badges(at)) == 4
    # The other runtime's trace for its badge and estimate; failing traces for status and failure.
    assert set(source.read) == {PLAIN[0].trace_id} | _failing(source)
    table = next(e.value for e in at.dataframe if "checks" in e.value.columns).set_index("trace")
    assert table.loc[PLAIN[0].trace_id, "estimated USD"] > 0


def test_a_trace_without_its_root_is_rebuilt_for_its_badge(open_page: OpenPage) -> None:
    rootless = [s for s in contract_trace(seed=13) if s.parent_span_id]
    source = _Counting(GOOD + rootless)
    badges = _badges(open_page(source))
    assert set(source.read) == {rootless[0].trace_id} | _failing(source)
    assert badges[rootless[0].trace_id] == badge(reconstruct(rootless))
    assert badges[rootless[0].trace_id].endswith(", incomplete")
