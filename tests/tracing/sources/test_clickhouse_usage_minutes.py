"""Schema 9 on chdb: `usage_by` and the model timeline over a range read its partial hours from the
per-minute usage rollup (a range on whole minutes reads no facts row; a partial minute only that
minute's facts rows, through the usage projection ordered by start), equal the memory source's over
ranges with partial hours, long edges and partial minutes, and `init` adds the rollup to a schema-8
database. Costs are the `rows_read` ClickHouse reports (deterministic, not timing)."""

from __future__ import annotations

from typing import Any

from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient
from janux.tracing.sources.clickhouse.derived import DerivedReads
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.protocol import TraceFilter
from tests.support.clickhouse_rows import RecordingClient, insert_statement
from tests.tracing.sources.test_clickhouse_facts_projection import _Counting, _facts_over_a_day
from tests.tracing.sources.test_clickhouse_map_rollup import LONG_EDGES, SECOND_EDGES
from tests.tracing.sources.test_clickhouse_minute_rollup import FROM_4_20
from tests.tracing.sources.test_clickhouse_rollup import (
    HOUR_NS,
    HOUR_SPLIT_RANGES,
    MINUTE,
    _assert_usage_equals_memory,
    _spread,
    drop_schema_9,
)

SECOND = 10**9


def test_ranges_with_partial_hours_and_minutes_equal_the_memory_source(client: ChdbClient) -> None:
    spans = _spread()
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    # per-trace usage rows written twice (a deriver killed and rerun): rows of facts written before
    # schema 3 are read from them, each once
    client.command(f"INSERT INTO {schema.USAGE} SELECT * FROM {schema.USAGE}")
    recording = RecordingClient(client)
    source = ClickHouseSource(recording)
    for flt in (*HOUR_SPLIT_RANGES, *LONG_EDGES, *SECOND_EDGES):
        recording.queries.clear()
        _assert_usage_equals_memory(source, spans, flt)
        if flt in SECOND_EDGES:  # a partial minute: its facts rows (their usage arrays when it holds any)
            assert any(schema.FACTS in q for q in recording.queries), flt
        if flt in LONG_EDGES:  # a long edge: its whole hour, the rest of it taken back
            assert any("-1 * rows" in q for q in recording.queries), flt
    # the 1-minute timeline from the minute rollup (a bucket of whole minutes)
    recording.queries.clear()
    assert source.model_timeline(SECOND_EDGES[2], MINUTE) == ClickHouseSource(
        client, derived=False
    ).model_timeline(SECOND_EDGES[2], MINUTE)
    assert any(schema.USAGE_MINUTE in q for q in recording.queries)
    assert not any(f"{schema.USAGE} FINAL" in q for q in recording.queries)


def test_facts_rows_written_before_schema_3_are_read_from_janux_usage(client: ChdbClient) -> None:
    spans = _spread()
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    # half the traces' facts rows as schema 2 wrote them (no map arrays, `map_rows` = 0): their
    # partial minutes' usage comes from `janux_usage`, the others' from their facts rows' arrays
    client.command(
        f"ALTER TABLE {schema.FACTS} UPDATE map_rows = 0 WHERE cityHash64(trace_id) % 2 = 0 "
        "SETTINGS mutations_sync = 2"
    )
    source = ClickHouseSource(client)
    for flt in (*LONG_EDGES, *SECOND_EDGES):
        _assert_usage_equals_memory(source, spans, flt)


def _usage_sums(client: ChdbClient, flt: TraceFilter) -> list[Any]:
    """The model dimension's (key, count, input) over `flt`, summed afresh from the current facts
    rows' usage arrays (`FINAL`)."""
    return client.query(
        f"SELECT k, sum(c), sum(i) FROM (SELECT * FROM {schema.FACTS} FINAL WHERE start_ns >= {flt.start_ns} "
        f"AND start_ns < {flt.end_ns}) ARRAY JOIN usage_dimension AS d, usage_key AS k, usage_count AS c, "
        "usage_input AS i WHERE d = 'model' GROUP BY k ORDER BY k"
    ).result_rows


def _answer(found: list[Any]) -> list[tuple[str, int, int | None]]:
    return sorted((a.key, a.count, a.input_tokens) for a in found)


def _fold(client: ChdbClient) -> None:
    """Merge the usage rollups' parts, as background merges do in time."""
    for table in (schema.USAGE_HOURLY, schema.USAGE_MINUTE):
        client.command(f"OPTIMIZE TABLE {table} FINAL")


def _rows_read(client: ChdbClient, minute_rollup: bool) -> tuple[int, int]:
    """`usage_by` over `FROM_4_20` (checked against sums of the facts rows): the rows it read of
    the rollups and of the facts table."""
    counting = _Counting(client)
    rows = lambda sql, p: list(counting.query(sql, p).result_rows)  # noqa: E731
    found = DerivedReads(rows, usage_minutes=minute_rollup).usage_by("model", FROM_4_20, 1_000)
    assert _answer(found) == sorted(tuple(row) for row in _usage_sums(client, FROM_4_20))
    facts = sum(n for query, n in counting.read if schema.FACTS in query)
    rollups = sum(n for query, n in counting.read if schema.FACTS not in query)
    return rollups, facts


def test_a_partial_hour_reads_minute_buckets_not_facts_rows(client: ChdbClient) -> None:
    day = _facts_over_a_day(client)
    _fold(client)
    counting = _Counting(client)
    found = ClickHouseSource(counting).usage_by("model", FROM_4_20, 1_000)
    assert _answer(found) == sorted(tuple(row) for row in _usage_sums(client, FROM_4_20))
    assert not any(schema.FACTS in query for query, _ in counting.read), counting.read  # no facts row
    assert schema.USAGE_MINUTE in counting.read[-1][0]  # one query of the rollups
    assert counting.read[-1][1] < day // 10, (counting.read, day)
    minute_read, none = _rows_read(client, minute_rollup=True)
    assert none == 0
    # schema 8's reads (no minute rollup) read facts rows of the partial hour: its whole hour from
    # the hourly rollup, the 20 minutes before the range taken back from their facts rows (in a
    # schema-8 database every row of the day, no projection holding the usage arrays)
    hour_start = FROM_4_20.start_ns - 20 * MINUTE
    edge_rows = int(
        client.query(
            f"SELECT count() FROM {schema.FACTS} "
            f"WHERE start_ns >= {hour_start} AND start_ns < {FROM_4_20.start_ns}"
        ).result_rows[0][0]
    )
    _, before_read = _rows_read(client, minute_rollup=False)
    assert before_read >= edge_rows > 0
    # flat: the partial hour's traces again under new ids double its facts rows and fold into the
    # same minute buckets, so the minute path reads as many rows as before; the per-trace path at
    # least the edge's rows more (at this size both fit a few granules: the growth, not the sizes,
    # is the proof)
    client.command(
        f"INSERT INTO {schema.FACTS} SELECT * REPLACE (concat(trace_id, 'again') AS trace_id) "
        f"FROM {schema.FACTS} WHERE start_ns >= {hour_start} AND start_ns < {hour_start + HOUR_NS}"
    )
    _fold(client)
    assert _rows_read(client, minute_rollup=True) == (minute_read, 0)
    _, before_twice = _rows_read(client, minute_rollup=False)
    assert before_twice >= before_read + edge_rows, (before_read, before_twice, edge_rows)
    # ten seconds later: only that partial minute's facts rows, through the usage projection
    counting.read.clear()
    later = TraceFilter(start_ns=FROM_4_20.start_ns + 10 * SECOND, end_ns=FROM_4_20.end_ns)
    found = ClickHouseSource(counting).usage_by("model", later, 1_000)
    assert _answer(found) == sorted(tuple(row) for row in _usage_sums(client, later))
    facts = [n for query, n in counting.read if schema.FACTS in query]
    assert facts and max(facts) < day // 2, (facts, day)
    # a model timeline of 15-minute buckets over the range: the minute rollup, no facts row
    counting.read.clear()
    ClickHouseSource(counting).model_timeline(FROM_4_20, HOUR_NS // 4)
    assert not any(schema.FACTS in query for query, _ in counting.read), counting.read


def _usage_minute(client: ChdbClient) -> list[Any]:
    sums = ", ".join(f"sum({name})" for name in schema.ROLLUP_SUMS if name != "cost_sum")
    return client.query(
        f"SELECT dimension, minute_ns, key, {sums}, round(sum(cost_sum), 9) FROM {schema.USAGE_MINUTE} "
        "GROUP BY dimension, minute_ns, key HAVING sum(rows) != 0 ORDER BY ALL"
    ).result_rows


def test_init_adds_the_minute_usage_rollup_to_a_schema_8_database(client: ChdbClient) -> None:
    spans = _spread()
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    expected = _usage_minute(client)
    assert expected
    drop_schema_9(client)
    client.command(f"TRUNCATE TABLE {schema.SCHEMA}")
    client.command(f"INSERT INTO {schema.SCHEMA} (version, applied) VALUES (8, now64(3))")
    source = ClickHouseSource(client)  # schema 8: the hourly rollup and the per-trace rows
    _assert_usage_equals_memory(source, spans, LONG_EDGES[0])
    for _ in range(2):  # the second run adds nothing
        assert schema.init(client) == schema.SCHEMA_VERSION == 9
        assert _usage_minute(client) == expected
    parts = client.query(
        "SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = {t:String} "
        "AND active AND rows > 0 AND NOT has(projections, {p:String})",
        parameters={"t": schema.FACTS, "p": schema.FACTS_USAGE_BY_START},
    ).result_rows
    assert int(parts[0][0]) == 0  # the parts stored before got the projection
    source = ClickHouseSource(client)
    for flt in (*LONG_EDGES, *SECOND_EDGES):
        _assert_usage_equals_memory(source, spans, flt)
