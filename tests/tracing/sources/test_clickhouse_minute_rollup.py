"""Schema 6 on chdb: the per-minute map rollup answers a range's partial hours (a range from a whole
minute reads minute buckets of at most one hour, never a facts row), trace counts come from the
rollups, the failures page reads its newest rows from the failures ordered by start, and `init`
adds all of it to a schema-5 database. Costs are the `rows_read` ClickHouse reports (deterministic,
not timing); answers are compared with the schema-5 reads of the same database and the memory
source."""

from __future__ import annotations

from typing import Any

from janux.tracing.sources.clickhouse import map_parts, schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.derived import DerivedReads
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from tests.support.clickhouse_rows import insert_statement
from tests.support.demo_traces import demo_traces
from tests.tracing.sources.test_clickhouse_facts_projection import _close, _Counting, _facts_over_a_day
from tests.tracing.sources.test_clickhouse_map_rollup import (
    LONG_EDGES,
    SECOND_EDGES,
    _assert_maps_equal_memory,
)
from tests.tracing.sources.test_clickhouse_rollup import (
    BASE_NS,
    HOUR_NS,
    HOUR_SPLIT_RANGES,
    MINUTE,
    _spread,
    drop_schema_6,
)

FROM_4_20 = TraceFilter(start_ns=BASE_NS + 4 * HOUR_NS + 20 * MINUTE, end_ns=BASE_NS + 9 * HOUR_NS)
"""A range starting at 04:20 of the day: 40 minutes of a partial hour, on whole minutes."""
RANGES = (FROM_4_20, TraceFilter(start_ns=FROM_4_20.start_ns + 10 * 10**9), TraceFilter(), *LONG_EDGES)


def _schema_5(client: ChdbClient) -> DerivedReads:
    """The reads of schema 5 on this database (the hourly rollup and the facts rows only)."""
    return DerivedReads(lambda sql, p: list(client.query(sql, p).result_rows), minute_rollup=False)


def test_a_partial_hour_reads_minute_buckets_not_facts_rows(client: ChdbClient) -> None:
    day = _facts_over_a_day(client)
    counting = _Counting(client)
    found = ClickHouseSource(counting).agent_map(FROM_4_20, HOUR_NS)
    assert not any(schema.FACTS in query for query, _ in counting.read)  # no facts row read
    rollups = [n for query, n in counting.read if schema.MAP_HOURLY in query]
    assert len(rollups) == 1 and schema.MAP_MINUTE in counting.read[-1][0], counting.read
    assert rollups[0] < day // 4, (rollups, day)  # one query of the rollups
    assert _close(found, _schema_5(client).agent_map(FROM_4_20, HOUR_NS))
    # the same range starting 10 s later: only that minute's traces come from facts rows
    counting.read.clear()
    later = TraceFilter(start_ns=FROM_4_20.start_ns + 10 * 10**9, end_ns=FROM_4_20.end_ns)
    found = ClickHouseSource(counting).agent_map(later, HOUR_NS)
    assert _close(found, _schema_5(client).agent_map(later, HOUR_NS))
    # (read by granule from the projection ordered by start: a few granules, not the day's rows)
    assert max(n for query, n in counting.read if schema.FACTS in query) < day // 2
    # a 15-minute timeline over the range is read from the minute rollup's timeline rows too
    counting.read.clear()
    quarter = ClickHouseSource(counting).agent_map(FROM_4_20, HOUR_NS // 4)
    assert not any(schema.FACTS in query for query, _ in counting.read)
    assert _close(quarter.timeline, _schema_5(client).agent_map(FROM_4_20, HOUR_NS // 4).timeline)


def test_trace_counts_come_from_the_rollups(client: ChdbClient) -> None:
    _facts_over_a_day(client)
    counting = _Counting(client)
    source = ClickHouseSource(counting)
    for flt in RANGES:
        counting.read.clear()
        assert source.count_traces(flt) == _schema_5(client).count_traces(flt), flt
        rollup = [n for query, n in counting.read if schema.MAP_HOURLY in query]
        assert rollup and not any(f"{schema.FACTS} FINAL" in query for query, _ in counting.read), flt
    counting.read.clear()
    assert source.count_traces(TraceFilter(status="error")) == _schema_5(client).count_traces(
        TraceFilter(status="error")
    )
    assert any(f"{schema.FACTS} FINAL" in query for query, _ in counting.read)  # another filter: facts


FAILURE_COPIES = 3_000
"""Copies of the demo set's derived rows (12 failed handoffs in 20 traces), a second apart."""


def _failures_over_an_hour(client: ChdbClient) -> tuple[int, int]:
    """The demo set derived, its facts and failure rows copied (new trace ids, a second later
    each): (failure rows, the start of the newest copied trace)."""
    client.command(insert_statement(demo_traces().spans))
    derive_pending(client, quiet_s=0)
    for table, start in ((schema.FACTS, "start_ns"), (schema.FAILURES, "span_start_ns")):
        client.command(
            f"INSERT INTO {table} SELECT * EXCEPT (n) REPLACE (concat(trace_id, toString(n)) AS trace_id, "
            f"{start} + n * 10000000000 AS {start}) FROM {table}, "
            f"(SELECT number AS n FROM numbers(1, {FAILURE_COPIES})) AS copies"
        )
    rows = client.query(
        f"SELECT (SELECT count() FROM {schema.FAILURES}), (SELECT max(start_ns) FROM {schema.FACTS})"
    ).result_rows
    return int(rows[0][0]), int(rows[0][1])


def test_the_failures_page_reads_its_newest_rows_only(client: ChdbClient) -> None:
    failures, newest = _failures_over_an_hour(client)
    assert failures > 30_000
    counting = _Counting(client)
    reads = DerivedReads(lambda sql, p: list(counting.query(sql, p).result_rows))
    before = DerivedReads(lambda sql, p: list(counting.query(sql, p).result_rows), minute_rollup=False)
    for flt, limit in ((TraceFilter(), 5), (TraceFilter(), 500), (TraceFilter(status="ok"), 5),
                       (TraceFilter(end_ns=newest - 3_600 * 10**9), 20)):  # fmt: skip
        counting.read.clear()
        found = reads.failed_handoff_ids(flt, limit)
        read = sum(n for _, n in counting.read)
        counting.read.clear()
        assert found == before.failed_handoff_ids(flt, limit), (flt, limit)
        assert len(found) == limit
        if flt == TraceFilter() and limit == 5:
            # the newest rows of the index and the facts of their traces, not every failure and
            # every facts row as schema 5 read them
            assert read < sum(n for _, n in counting.read), (read, counting.read)
    # flat: as many failures and facts again, older (new trace ids, 1,000 s earlier, so the newest
    # stay the same): the page reads the index's newest rows and its traces' facts by the primary
    # key, so it reads about the same rows with twice the rows stored
    first = _newest_five_read(client)
    for table, start in ((schema.FACTS, "start_ns"), (schema.FAILURES, "span_start_ns")):
        client.command(
            f"INSERT INTO {table} SELECT * REPLACE (concat(trace_id, 'older') AS trace_id, "
            f"{start} - 1000000000000 AS {start}) FROM {table}"
        )
    again = _newest_five_read(client)
    assert again[0] == first[0] and again[1] < first[1] * 1.3, (first[1], again[1])


def _newest_five_read(client: ChdbClient) -> tuple[list[tuple[str, str, int]], int]:
    """The failures page's newest five failed handoffs (parts merged, as in time) and the rows read."""
    for table in (schema.FACTS, schema.FAILURES_BY_START):
        client.command(f"OPTIMIZE TABLE {table} FINAL")
    counting = _Counting(client)
    found = DerivedReads(lambda sql, p: list(counting.query(sql, p).result_rows)).failed_handoff_ids(
        TraceFilter(), 5
    )
    return found, sum(n for _, n in counting.read)


def _minute_rollup(client: ChdbClient) -> list[Any]:
    """The minute rollup summed per (part, minute, key, loop minute), keys with rows left only."""
    sums = ", ".join(f"sum({name})" for name in map_parts.MAP_SUMS if not name.endswith("_cost"))
    maps = ", ".join(f"sumMap({name})" for name, _ in map_parts.MAP_MAPS)
    return client.query(
        f"SELECT part, minute_ns, key, at_ns, {sums}, round(sum(a_cost), 9), round(sum(b_cost), 9), "
        f"{maps} FROM {schema.MAP_MINUTE} GROUP BY part, minute_ns, key, at_ns HAVING sum(rows) != 0 "
        "ORDER BY ALL"
    ).result_rows


def test_init_adds_the_minute_rollup_and_the_failure_index_to_a_schema_5_database(
    client: ChdbClient,
) -> None:
    spans = _spread()
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    expected = _minute_rollup(client)
    assert expected
    drop_schema_6(client)
    client.command(f"TRUNCATE TABLE {schema.SCHEMA}")
    client.command(f"INSERT INTO {schema.SCHEMA} (version, applied) VALUES (5, now64(3))")
    memory = MemoryTraceSource(spans)
    source = ClickHouseSource(client)  # schema 5: the hourly rollup and the facts rows
    assert source.count_traces(SECOND_EDGES[0]) == memory.count_traces(SECOND_EDGES[0])
    for _ in range(2):  # the second run adds nothing
        assert schema.init(client) == schema.SCHEMA_VERSION == 9
        assert _minute_rollup(client) == expected
    source = ClickHouseSource(client)
    for flt in (*HOUR_SPLIT_RANGES, *SECOND_EDGES):
        _assert_maps_equal_memory(source, spans, flt)
        assert source.count_traces(flt) == memory.count_traces(flt), flt
        assert source.failed_handoff_spans(flt, 3) == memory.failed_handoff_spans(flt, 3), flt
    indexed = client.query(f"SELECT count() FROM {schema.FAILURES_BY_START}").result_rows
    assert int(indexed[0][0]) == int(client.query(f"SELECT count() FROM {schema.FAILURES}").result_rows[0][0])
