"""A trace's facts (`analysis.trace_facts.TraceFacts`) as rows of Janux's ClickHouse tables, and back.

The deriver writes with `fact_rows`; the source reads the same columns back into `TraceSummary`,
`LoopFacts` and `DelegationFacts` (`summary_of`, `loop_of`, `delegation_of`), so what a page adds
up from ClickHouse is exactly what the analysis layer computed (the parity tests hold it so).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

from janux.tracing.analysis.agentmap.loops import DelegationFacts, LoopFacts
from janux.tracing.analysis.facts import TraceSummary
from janux.tracing.analysis.trace_facts import TraceFacts
from janux.tracing.analysis.trace_links import cross_trace_links
from janux.tracing.records import SpanRecord
from janux.tracing.sources.clickhouse import schema as s
from janux.usage import Usage

TableRows = dict[str, list[list[Any]]]
"""Rows to insert, per table name (columns as `schema` lists them)."""


def day_of(start_ns: int) -> dt.date:
    """The UTC day a trace started: its partition."""
    return dt.datetime.fromtimestamp(start_ns / 1e9, tz=dt.UTC).date()


def _finite(value: Any) -> Any:
    """Non-finite floats as NULL (ClickHouse's JSON input refuses them; the analysis layer never
    produces them, this guards a writer against a future change)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _all_finite(values: Iterable[Any]) -> list[Any]:
    """`_finite` of each value, as one comprehension (a call per value was a third of building the
    rows: every trace writes a few hundred values)."""
    isfinite = math.isfinite
    return [None if isinstance(v, float) and not isfinite(v) else v for v in values]


Replaced = tuple[int, list[tuple[Any, ...]]]
"""The start (Unix ns) and usage rows ((dimension, *`usage_rows.GROUP_COLUMNS`) each) of the facts
version a new facts row replaces: what the rollup takes back."""
NOTHING_REPLACED: Replaced = (0, [])


ReplacedMap = tuple[int, list[tuple[Any, ...]], list[tuple[Any, ...]]]
"""The version a new facts row replaces (0: none) and its loops and delegations (values of
`schema.MAP_LOOP_FIELDS` / `MAP_DELEGATION_FIELDS` each): what the agent-map rollup takes back."""
NO_MAP_REPLACED: ReplacedMap = (0, [], [])
_SUMMARY_VALUES = attrgetter(*(name for name, _ in s.SUMMARY_COLUMNS))
_LOOP_AT = [4 + [n for n, _ in s.LOOP_COLUMNS].index(name) for name in s.MAP_LOOP_FIELDS]
_DELEGATION_AT = [4 + [n for n, _ in s.DELEGATION_COLUMNS].index(name) for name in s.MAP_DELEGATION_FIELDS]


def _map_arrays(loops: Sequence[Sequence[Any]], delegations: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Loop and delegation rows (map fields only) as the parallel arrays of `schema.MAP_FACTS_COLUMNS`."""
    return [[row[i] for row in loops] for i in range(len(s.MAP_LOOP_FIELDS))] + [
        [row[i] for row in delegations] for i in range(len(s.MAP_DELEGATION_FIELDS))
    ]


def _usage_arrays(usage: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    """Usage rows (dimension, key, count, failed, input, output, cost, unpriced, unread) as the
    parallel arrays of `schema.ROLLUP_USAGE_FIELDS`."""
    if not usage:
        return [[] for _ in s.ROLLUP_USAGE_FIELDS]
    columns = [_all_finite(column) for column in zip(*usage, strict=True)]
    if len(columns) != len(s.ROLLUP_USAGE_FIELDS):
        raise ValueError(f"usage rows of {len(columns)} values, expected {len(s.ROLLUP_USAGE_FIELDS)}")
    return columns


def fact_rows(
    facts: TraceFacts, day: dt.date, last_inserted_ms: int, rows: TableRows,
    replaced: Replaced = NOTHING_REPLACED, replaced_map: ReplacedMap = NO_MAP_REPLACED,
) -> None:  # fmt: skip
    """Append the rows of one trace's facts to `rows` (children before the facts row: see
    `deriver.write`); the facts row carries its usage rows, loops and delegations and those of the
    version it replaced (`replaced`, `replaced_map`: the hourly rollups' views add the first and
    take back the second)."""
    key = [facts.trace_id, day, facts.span_count]
    loops = rows.setdefault(s.LOOPS, [])
    first_loop, first_delegation = len(loops), len(rows.get(s.DELEGATIONS, []))
    for seq, loop in enumerate(facts.loops):
        agent, path, ref, duration, error, top, *usage = loop
        loops.append([*key, seq, agent, list(path), ref[0], ref[2], _finite(duration), error, top,
                      *_all_finite(usage)])  # fmt: skip
    delegations = rows.setdefault(s.DELEGATIONS, [])
    for seq, d in enumerate(facts.delegations):
        cost = d.cost
        delegations.append([
            *key, seq, d.caller, d.target, d.kind, d.tool, d.status, d.attempts, _finite(d.duration_ms),
            d.failure, d.reason, d.span_id, d.start_ns, cost.input_tokens, cost.output_tokens,
            _finite(cost.cost), cost.unpriced_tokens,
        ])  # fmt: skip
    usage_rows = rows.setdefault(s.USAGE, [])
    for seq, (dimension, group) in enumerate(facts.usage):
        usage_rows.append([*key, seq, facts.summary.start_ns, dimension, *_all_finite(group)])
    row = _all_finite(_SUMMARY_VALUES(facts.summary))
    row += [day, facts.span_count, facts.janux, last_inserted_ms]
    row += _usage_arrays([(dimension, *group) for dimension, group in facts.usage])
    row += [replaced[0], *_usage_arrays(replaced[1]), 1, replaced_map[0]]
    row += _map_arrays(
        [[loop[i] for i in _LOOP_AT] for loop in loops[first_loop:]],
        [[d[i] for i in _DELEGATION_AT] for d in delegations[first_delegation:]],
    )
    row += _map_arrays(replaced_map[1], replaced_map[2])
    rows.setdefault(s.FACTS, []).append(row)


def failure_rows(facts: TraceFacts, day: dt.date, spans: Sequence[SpanRecord], rows: TableRows) -> None:
    """Append the failed-handoff rows of one trace (the span to open and its start)."""
    starts = {span.span_id: span.start_ns for span in spans}
    failures = rows.setdefault(s.FAILURES, [])
    for seq, span_id in enumerate(facts.failed_span_ids):
        failures.append([facts.trace_id, day, facts.span_count, seq, span_id, starts.get(span_id, 0)])


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


_SUMMARY_KINDS = {name: kind for name, kind in s.SUMMARY_COLUMNS}


def typed_value(kind: str, value: Any) -> Any:
    """A value read back (chdb gives 64-bit ints as text) as the Python type of ClickHouse `kind`."""
    if value is None:
        return None
    if kind.startswith("Array"):
        return [str(v) for v in value]
    if "Float" in kind:
        return float(value)
    if "Int" in kind:
        return int(value)
    if "Bool" in kind:
        return bool(value) if not isinstance(value, str) else value == "true"
    return str(value)


def _summary_value(name: str, value: Any) -> Any:
    typed = typed_value(_SUMMARY_KINDS[name], value)
    return tuple(typed) if isinstance(typed, list) else typed  # `TraceSummary.agent_path` is a tuple


def summary_of(row: Sequence[Any]) -> TraceSummary:
    """A `SUMMARY_COLUMNS` row as the trace list's row."""
    return TraceSummary(**{name: _summary_value(name, v) for (name, _), v in zip(s.SUMMARY_COLUMNS, row,
                                                                              strict=True)})  # fmt: skip


def loop_of(trace_id: str, row: Sequence[Any]) -> LoopFacts:
    """A `LOOP_COLUMNS` row as the facts of one loop."""
    agent, path, start, span_id, duration, error, top, oi, oo, oc, ou, ii, io, ic, iu = row
    return LoopFacts(
        str(agent), tuple(str(p) for p in path), (int(start), trace_id, str(span_id)), _float(duration),
        bool(error), bool(top), int(oi), int(oo), _float(oc), int(ou), int(ii), int(io), _float(ic), int(iu),
    )  # fmt: skip


def delegation_of(row: Sequence[Any]) -> DelegationFacts:
    """A `DELEGATION_COLUMNS` row as the facts of one delegation."""
    (caller, target, kind, tool, status, attempts, duration, failure, reason, span_id, start, ci, co, cc,
     cu) = row  # fmt: skip
    return DelegationFacts(
        caller=str(caller), target=str(target), kind=str(kind), tool=str(tool), status=str(status),
        attempts=int(attempts), duration_ms=_float(duration),
        failure=None if failure is None else str(failure),
        reason=str(reason), span_id=str(span_id), start_ns=int(start),
        cost=Usage(int(ci), int(co), _float(cc), int(cu)),
    )  # fmt: skip


def usage_group(row: Sequence[Any]) -> tuple[Any, ...]:
    """A summed `janux_usage` row (key, count, failed, input, output, cost, unpriced, unread) as
    a `usage_rows.GROUP_COLUMNS` row."""
    key, count, failed, tokens_in, tokens_out, cost, unpriced, unread = row
    usage = (_int(tokens_in), _int(tokens_out), _float(cost), _int(unpriced))
    return (str(key), int(count), int(failed), *usage, int(unread or 0))


def trace_link_rows(trace_id: str, day: dt.date, spans: Sequence[SpanRecord], rows: TableRows) -> None:
    """Append the link index rows of one trace's spans (`schema.TRACE_LINKS`: two per link)."""
    found = rows.setdefault(s.TRACE_LINKS, [])
    for link in cross_trace_links(span for span in spans if span.links and span.trace_id == trace_id):
        found.append([link.trace_id, link.linked_trace_id, link.span_id, link.linked_span_id, 1, day])
        found.append([link.linked_trace_id, link.trace_id, link.linked_span_id, link.span_id, 0, day])
