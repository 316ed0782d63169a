"""`fact_rows`: a trace's facts as the rows of Janux's ClickHouse tables. A non-finite float (which
ClickHouse's JSON input refuses) is written as NULL wherever it appears, every other value as is."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from janux.tracing.analysis.trace_facts import analyse
from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.fact_rows import day_of, fact_rows
from tests.support.demo_traces import demo_traces


def _non_finite(rows: dict[str, list[list[object]]]) -> list[object]:
    found: list[object] = []
    for table in rows.values():
        for row in table:
            for value in row:
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, float) and not math.isfinite(item):
                        found.append(item)
    return found


def test_non_finite_floats_are_written_as_null_and_the_rest_as_is() -> None:
    spans = demo_traces().spans
    trace_id = spans[0].trace_id
    facts = analyse(trace_id, [s for s in spans if s.trace_id == trace_id])
    assert facts.loops and facts.usage
    loop = facts.loops[0]
    broken = dataclasses.replace(
        facts,
        summary=dataclasses.replace(facts.summary, bill_cost=math.inf),
        loops=[loop._replace(own_cost=math.nan), *facts.loops[1:]],
        usage=[(dimension, (*group[:5], -math.inf, *group[6:])) for dimension, group in facts.usage],
    )
    day = day_of(facts.summary.start_ns)
    replaced = (5, [("model", "m", 1, 0, 1, 2, math.inf, 0, 0)])
    rows: dict[str, list[list[object]]] = {}
    fact_rows(broken, day, 1, rows, replaced)
    assert _non_finite(rows) == []
    names = [name for name, _ in next(t.columns for t in schema.TABLES if t.name == schema.FACTS)]
    facts_row: dict[str, Any] = dict(zip(names, rows[schema.FACTS][0], strict=True))
    assert facts_row["bill_cost"] is None and facts_row["trace_id"] == trace_id
    assert facts_row["usage_cost"] == [None] * len(facts.usage)
    assert facts_row["replaced_cost"] == [None] and facts_row["replaced_output"] == [2]
    assert facts_row["loop_own_cost"][0] is None
    assert [row[-4:] for row in rows[schema.USAGE]] == [
        [group[4], None, *group[6:]] for _, group in facts.usage
    ]
    # untouched facts: the same rows, every value as analysed
    clean: dict[str, list[list[object]]] = {}
    fact_rows(facts, day, 1, clean)
    assert clean[schema.FACTS][0][: len(schema.SUMMARY_COLUMNS)] == [
        getattr(facts.summary, name) for name, _ in schema.SUMMARY_COLUMNS
    ]
    assert _non_finite(clean) == []
