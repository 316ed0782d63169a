"""Find inside traces on the embedded store, over every trace of the range (issue 19), next to the
trace list in the same run.

Run: `.venv/bin/python -m bench.bench_find [--quick] [--traces N] [--runs N]`. Writes N synthetic traces of
about 40 spans (random delegations, some timed out) into a fresh store, then times from a new
`TraceStore` (medians of `--runs`):

- the trace list's first page and count (the baseline every row is compared with);
- find by span attribute (SQLite's JSON functions over the spans), agent anywhere and error text
  (SQL over `agent_links` and the error-text index);
- find by failure reason: the first call of a process that never saw the traces (rebuilds the ones
  that can have a reason, keeps their facts beside the store), later calls, and a new process
  (reads the kept facts);
- what the Traces page did before: read the newest 1,000 traces of the filter and rebuild them.

Also the write path's CPU time per span with the error-text index, which the store's write path pays.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from janux.tracing.analysis.trace_find import TraceQuery, matches
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.sources.store import open_store
from janux.tracing.testing import synthetic_trace

SECOND_NS = 10**9
OLD_SCAN = 1_000
"""Traces the Traces page read (and rebuilt) to find inside them before."""


def _traces(count: int) -> list[SpanRecord]:
    """`count` synthetic traces of about 40 spans, one a second (distinct ids and starts)."""
    spans: list[SpanRecord] = []
    for i in range(count):
        spans += [
            replace(s, start_ns=s.start_ns + i * SECOND_NS) for s in synthetic_trace(40, seed=1_000 + i)
        ]
    return spans


def _median(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _old_find(store: object, query: TraceQuery) -> int:
    """The Traces page's find before: the newest 1,000 traces of the filter, rebuilt one by one."""
    listed = store.list_traces(TraceFilter(), limit=OLD_SCAN)  # type: ignore[attr-defined]
    spans = store.get_traces([s.trace_id for s in listed])  # type: ignore[attr-defined]
    return sum(1 for trace in spans.values() if matches(reconstruct(trace), query))


def _write(spans: list[SpanRecord], data_dir: Path) -> float:
    """Spans per CPU second of the store's write path (this process: staging and the writer thread)."""
    with open_store(data_dir) as store:
        start = time.process_time()
        for at in range(0, len(spans), 20_000):
            store.write(spans[at : at + 20_000])
        return len(spans) / (time.process_time() - start)


def _queries(spans: list[SpanRecord]) -> dict[str, TraceQuery]:
    """An attribute, an agent (of the first trace) and an error text the data holds."""
    view = reconstruct([s for s in spans if s.trace_id == spans[0].trace_id])
    agent = next(n.agent for n in view.nodes if n.agent.startswith("agent"))
    return {
        "span attribute": TraceQuery(attribute="gen_ai.request.model=gpt-4o-mini"),
        f"agent anywhere ({agent})": TraceQuery(agent=agent),
        "error text (TIMEOUT)": TraceQuery(error="TIMEOUT"),
    }


def _rows(spans: list[SpanRecord], data_dir: Path, runs: int) -> list[tuple[str, float, str]]:
    everything = TraceFilter()
    reason = TraceQuery(reason="timeout")
    rows: list[tuple[str, float, str]] = []
    with open_store(data_dir) as store:
        listed = _median(lambda: (store.list_traces(everything), store.count_traces(everything)), runs)
        rows.append(("trace list, first page + count", listed, "baseline"))
        for name, query in _queries(spans).items():
            found = store.find_traces(everything, query).total
            took = _median(lambda q=query: store.find_traces(everything, q), runs)
            rows.append((f"find: {name}", took, f"{found:,} found"))
        start = time.perf_counter()
        found = store.find_traces(everything, reason).total
        took = time.perf_counter() - start
        rebuilt = store._find_cache.computed
        rows.append(
            ("find: failure reason, first call ever", took, f"{found:,} found; {rebuilt:,} traces rebuilt")
        )
        took = _median(lambda: store.find_traces(everything, reason), runs)
        rows.append(("find: failure reason, later calls", took, "facts kept in this process"))
        old = _old_find(store, reason)
        took = _median(lambda: _old_find(store, reason), 1)
        rows.append(("before: the newest 1,000 rebuilt", took, f"{old:,} found (of the newest 1,000 only)"))
    with open_store(data_dir) as fresh:
        took = _median(lambda: fresh.find_traces(everything, reason), 1)
        rows.append(("find: failure reason, a new process", took, "reads the facts kept beside the store"))
    return rows


def main(argv: list[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", type=int, default=5_000, help="synthetic traces of ~40 spans")
    parser.add_argument("--runs", type=int, default=5, help="runs of each timed call")
    parser.add_argument("--quick", action="store_true", help="1,000 traces (CI smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.traces = 1_000
    spans = _traces(args.traces)
    with tempfile.TemporaryDirectory(prefix="janux-bench-find-") as tmp:
        rate = _write(spans, Path(tmp) / "store")
        rows = _rows(spans, Path(tmp) / "store", args.runs)
    base = rows[0][1]
    print(f"## find inside traces: {args.traces:,} traces, {len(spans):,} spans (embedded store)\n")
    print("| step | median | vs trace list | note |")
    print("|---|---:|---:|---|")
    for name, seconds, note in rows:
        print(f"| {name} | {seconds * 1000:,.1f} ms | {seconds / base:,.1f}x | {note} |")
    print(f"\nstore write path: {rate:,.0f} spans per CPU second (staging, writer, error-text index)")


if __name__ == "__main__":
    main()
