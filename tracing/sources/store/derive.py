"""Trace-level numbers of traces without Janux accounting, read from their whole structure.

Another runtime's trace says who delegated to whom only through its span tree (an agent below a
tool span, however deep; a handoff span; an agent nested in another), and its agents' own usage
is the sum of the model calls whose nearest loop they are. Neither can be summed span by span as
the batch arrives, so after each batch the store reads every trace it touched that carries no
Janux accounting (`trace_summary.Janux = 0`), or a Janux transfer (whose loop may hold agent
segments, `structure.is_read_whole`), once more, whole, with the same facts every source
uses (`janux.tracing.analysis.readers.structure`), and replaces that trace's agent and delegation rows, its
agent map rows (`agent_links`, resolved from the same structure: `agentmap.foreign_rows`), its
structural counts, its root agent and the path of a transferred conversation (`summary.root_agent`,
`summary.agent_path`: read from the structure when the root span names none). A trace read this
way keeps `Derived = 1`: should Janux accounting show up in
a later batch, its rows are recomputed from its spans then too (Janux's own rows).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from janux.tracing.analysis.agentmap.classify import LinkRow
from janux.tracing.analysis.agentmap.foreign_rows import foreign_rows
from janux.tracing.analysis.derived_rows import derived_rows
from janux.tracing.analysis.readers.structure import facts_of, is_read_whole, structure
from janux.tracing.analysis.span_index import build_index
from janux.tracing.analysis.summary import agent_path, root_agent, root_span
from janux.tracing.analysis.usage_aggregate import span_rows
from janux.tracing.analysis.usage_rows import USAGE_COLUMNS
from janux.tracing.records import SpanRecord
from janux.tracing.sources.store.bulk import insert_rows
from janux.tracing.sources.store.links import INSERT_LINKS, LINK_COLUMNS, link_values
from janux.tracing.sources.store.rows import SELECT_SPAN_COLUMNS, RowReader, path_text

_IDS_PER_QUERY = 500
# A Janux trace with a transfer may hold agent segments (`structure.is_read_whole`): read it whole too.
NEEDS_READING = "(Janux = 0 OR Derived = 1 OR Transfers > 0)"
"""The `trace_summary` condition of a trace read whole after a batch (see the module docstring)."""
_TO_DERIVE = (
    "SELECT TraceId, SpanCount, Janux FROM main.trace_summary WHERE TraceId IN ({marks}) AND "
    + NEEDS_READING
)
_SPANS = f"SELECT {SELECT_SPAN_COLUMNS} FROM main.otel_traces WHERE TraceId = ?"

_STORE_USAGE = f"INSERT OR REPLACE INTO main.span_usage ({', '.join(USAGE_COLUMNS)})"

_COUNTS = """
UPDATE main.trace_summary SET Derived = 1, Delegations = ?, Attempts = ?, FailedHandoffs = ?,
    ForeignFailed = 0, Transfers = ?, InferenceSpans = ?, UsageReadSpans = ?, UnrecognisedSpans = ?,
    InferenceInput = ?, InferenceOutput = ?, RootAgent = CASE WHEN ? THEN RootAgent ELSE ? END,
    AgentPath = CASE WHEN ? THEN AgentPath ELSE ? END
WHERE TraceId = ?
"""


def _to_derive(conn: sqlite3.Connection, trace_ids: list[str]) -> ToDerive:
    """(trace id, stored spans, Janux accounting) of the traces among `trace_ids` without Janux
    accounting, with a transfer, or read structurally before."""
    found: list[tuple[str, int, bool]] = []
    for start in range(0, len(trace_ids), _IDS_PER_QUERY):
        chunk = trace_ids[start : start + _IDS_PER_QUERY]
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(_TO_DERIVE.format(marks=marks), chunk)
        found += [(trace_id, int(count), bool(janux)) for trace_id, count, janux in rows]
    return found


ToDerive = list[tuple[str, int, bool]]
"""(trace id, stored spans, Janux accounting) of the traces to read whole (`to_derive`)."""


def to_derive(conn: sqlite3.Connection, trace_ids: Iterable[str]) -> ToDerive:
    """The traces among `trace_ids` without Janux accounting, or read structurally before: those
    `derive` reads whole (their `agent_links` rows too, so the write path need not store any)."""
    return _to_derive(conn, sorted(trace_ids))


def derive_traces(
    conn: sqlite3.Connection, trace_ids: Iterable[str], batch: Sequence[SpanRecord] = ()
) -> int:
    """Re-read the touched traces that need it (see the module docstring); returns how many."""
    wanted = to_derive(conn, trace_ids)
    derive(conn, wanted, batch)
    return len(wanted)


def derive(conn: sqlite3.Connection, wanted: ToDerive, batch: Sequence[SpanRecord] = ()) -> None:
    """Read each of `wanted` whole and replace its rows (see the module docstring).

    `batch` holds the records just stored (every one of them stored, or only some of their
    traces: `StagedBatch.spans`): a trace all of whose stored spans are in it is read from them
    instead of from the database."""
    if not wanted:  # the common case (traces with Janux accounting): nothing to read
        return
    in_batch: dict[str, list[SpanRecord]] = {}
    for span in batch:
        in_batch.setdefault(span.trace_id, []).append(span)
    reader = RowReader()
    usage: list[tuple[object, ...]] = []
    links: list[LinkRow] = []
    for trace_id, stored, janux in wanted:
        spans = in_batch.get(trace_id, [])
        if len(spans) != stored:  # spans stored before this batch: read the trace back whole
            spans = [reader.span(row) for row in conn.execute(_SPANS, (trace_id,))]
        built = structure(build_index(spans))
        root = root_span(spans)
        facts = facts_of(built, janux)
        if janux and not is_read_whole(spans):  # Janux's own rows: each loop's and delegation's span
            derived = [(span.span_id, span.parent_span_id, row) for span, row in span_rows(spans)
                       if row.dimension != "model"]  # fmt: skip
            links += [row for row in map(link_values, spans) if row is not None]
        else:
            derived = derived_rows(facts)
            links += foreign_rows(built, facts)
        usage += [(trace_id, span_id, parent, *row) for span_id, parent, row in derived]
        conn.execute(
            _COUNTS,
            (facts.delegations, facts.attempts, facts.failed_handoffs, facts.transfers, facts.inference_spans,
             facts.usage_read_spans, facts.unrecognised_spans, facts.input_tokens, facts.output_tokens,
             janux, root_agent(root, facts), janux, path_text(agent_path(root, facts)), trace_id),
        )  # fmt: skip
    _replace_rows(conn, [trace_id for trace_id, _, _ in wanted], usage, links)


def _replace_rows(
    conn: sqlite3.Connection, trace_ids: list[str], usage: list[tuple[object, ...]], links: list[LinkRow]
) -> None:
    """Replace the agent and tool `span_usage` rows and the `agent_links` rows of `trace_ids`."""
    for start in range(0, len(trace_ids), _IDS_PER_QUERY):
        chunk = trace_ids[start : start + _IDS_PER_QUERY]
        marks = ", ".join("?" * len(chunk))
        conn.execute(f"DELETE FROM main.span_usage WHERE TraceId IN ({marks}) AND Dim IN ('agent', 'tool')",
                     chunk)  # fmt: skip
        conn.execute(f"DELETE FROM main.agent_links WHERE TraceId IN ({marks})", chunk)
    insert_rows(conn, _STORE_USAGE, len(USAGE_COLUMNS), usage)
    insert_rows(conn, INSERT_LINKS, len(LINK_COLUMNS), links)
