"""The facts table's projections (schema 5) on chdb: a map's partial hour reads the granules of its
time range from the projection ordered by trace start, not every granule of its day partition
(facts are ordered by trace id), and `init` adds them to a schema-4 database, whose maps stay the
same. Counted by the `rows_read` ClickHouse reports for each query (deterministic, not timing)."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from janux.tracing.sources.clickhouse import schema
from janux.tracing.sources.clickhouse.chdb_client import ChdbClient, ChdbResult
from janux.tracing.sources.clickhouse.deriver import derive_pending
from janux.tracing.sources.clickhouse.source import ClickHouseSource
from janux.tracing.sources.protocol import TraceFilter
from janux.tracing.testing import synthetic_trace
from tests.support.clickhouse_rows import insert_statement
from tests.tracing.sources.test_clickhouse_map_rollup import (
    LONG_EDGES,
    _assert_maps_equal_memory,
    _dense,
    _last_bits,
)
from tests.tracing.sources.test_clickhouse_rollup import (
    BASE_NS,
    HOUR_NS,
    HOUR_SPLIT_RANGES,
    MINUTE,
    _spread,
    drop_schema_6,
)

COPIES = 800
"""Copies of each derived facts row (new trace ids, starts moved by whole hours within the day):
enough rows that a day partition spans many granules."""
EDGE = TraceFilter(start_ns=BASE_NS + 4 * HOUR_NS + 40 * MINUTE + 10 * 10**9, end_ns=BASE_NS + 9 * HOUR_NS)
"""A range whose first 20 minutes are a partial hour: whole minutes from the minute rollup, its
partial first minute (taken back from that minute) from the facts rows."""


class _Counting:
    """A chdb client that keeps the `rows_read` of every query it runs."""

    def __init__(self, client: ChdbClient) -> None:
        self.client = client
        self.read: list[tuple[str, int]] = []
        """(query, rows read) of each query, in order."""

    def query(self, query: str, parameters: dict[str, Any] | None = None) -> ChdbResult:
        """Run `query`, keeping the rows it read."""
        raw = self.client.raw_query(query, parameters, "JSONCompact")
        document = json.loads(raw) if raw.strip() else {}
        self.read.append((query, int(document.get("statistics", {}).get("rows_read", 0))))
        return ChdbResult(document.get("data", []))

    def command(self, statement: str) -> None:
        """Run a statement."""
        self.client.command(statement)


def _close(left: object, right: object) -> bool:
    """Equal, floats to 1e-9 relative (costs summed in another order: the last digits differ)."""
    if dataclasses.is_dataclass(left) and dataclasses.is_dataclass(right):
        return _close(dataclasses.asdict(left), dataclasses.asdict(right))  # type: ignore[arg-type]
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_close(left[k], right[k]) for k in left)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(_close(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float) and isinstance(right, float):
        return math.isclose(left, right, rel_tol=1e-9)
    return left == right


def _facts_over_a_day(client: ChdbClient) -> int:
    """Facts rows over 11 hours of one day, in one part per partition; returns how many."""
    client.command(insert_statement(_dense(150)))  # 02:37 the last
    derive_pending(client, quiet_s=0)
    client.command(
        f"INSERT INTO {schema.FACTS} SELECT * EXCEPT (n) REPLACE (concat(trace_id, toString(n)) AS trace_id, "
        f"start_ns + (n % 9) * {HOUR_NS} AS start_ns) FROM {schema.FACTS}, "
        f"(SELECT number AS n FROM numbers(1, {COPIES})) AS copies"
    )
    for table in (schema.FACTS, schema.MAP_HOURLY):
        client.command(f"OPTIMIZE TABLE {table} FINAL")
    rows = client.query(f"SELECT count(), uniqExact(day) FROM {schema.FACTS}").result_rows
    assert int(rows[0][1]) == 1
    return int(rows[0][0])


def _map_reads(client: ChdbClient) -> tuple[Any, list[int]]:
    """The map (and its hourly timeline) of `EDGE`, and the rows each of its queries of the facts
    table read."""
    counting = _Counting(client)
    found = ClickHouseSource(counting).agent_map(EDGE, HOUR_NS)
    reads = [n for query, n in counting.read if schema.FACTS in query]
    assert reads  # the partial hour is read from the facts rows
    return _last_bits(found), reads


def test_a_partial_hour_reads_its_time_range_not_its_day(client: ChdbClient) -> None:
    day = _facts_over_a_day(client)
    found, reads = _map_reads(client)
    assert max(reads) < day, (reads, day)  # each query reads less than the day partition holds
    # the same reads without the projections read every row of the day, and answer the same
    for name, _ in schema.FACTS_PROJECTIONS:
        client.command(f"ALTER TABLE {schema.FACTS} DROP PROJECTION {name}")
    without, whole = _map_reads(client)
    assert max(whole) >= day and sum(whole) >= 4 * sum(reads), (whole, reads)
    assert without == found


def test_init_adds_the_projections_to_a_schema_4_database(client: ChdbClient) -> None:
    day = _facts_over_a_day(client)
    expected, _ = _map_reads(client)
    # back to what schema 4 left: no projections, nor the merge mode they need
    for name, _ in schema.FACTS_PROJECTIONS:
        client.command(f"ALTER TABLE {schema.FACTS} DROP PROJECTION {name}")
    client.command(f"ALTER TABLE {schema.FACTS} RESET SETTING deduplicate_merge_projection_mode")
    created = client.query(f"SHOW CREATE TABLE {schema.FACTS}").result_rows[0][0]
    assert "PROJECTION" not in created and "deduplicate_merge_projection_mode" not in created
    drop_schema_6(client)
    client.command(f"TRUNCATE TABLE {schema.SCHEMA}")
    client.command(f"INSERT INTO {schema.SCHEMA} (version, applied) VALUES (4, now64(3))")
    whole = _map_reads(client)[1]
    assert max(whole) >= day
    for _ in range(2):  # the second run changes nothing
        assert schema.init(client) == schema.SCHEMA_VERSION == 8
    assert schema.applied_version(client) == 8
    found, reads = _map_reads(client)
    assert _close(found, expected)  # the minute rollup back-filled: costs summed in another order
    assert max(reads) < day and sum(whole) >= 4 * sum(reads), (whole, reads)  # the older parts too
    # a trace derived after the upgrade is in the projection (inserts fill it)
    late = [dataclasses.replace(s, trace_id="f" * 32) for s in synthetic_trace(12, seed=999)]
    client.command(insert_statement(late))
    assert derive_pending(client, quiet_s=0).traces == 1
    parts = client.query(
        "SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = {t:String} "
        "AND active AND rows > 0 AND NOT has(projections, {p:String})",
        parameters={"t": schema.FACTS, "p": schema.FACTS_BY_START},
    ).result_rows
    assert int(parts[0][0]) == 0


def test_a_trace_derived_again_with_the_same_spans_stays_in_the_partial_hours(client: ChdbClient) -> None:
    """A span inserted twice (an exporter's retry) derives its trace again with the same span
    count: the new facts row names its own version as the one it replaced. The current-version
    rule must keep it (a rule "no row names my version" would drop the trace from every partial
    hour)."""
    spans = _spread()
    client.command(insert_statement(spans))
    derive_pending(client, quiet_s=0)
    firsts = {s.trace_id: s for s in spans}
    client.command(insert_statement(list(firsts.values())))
    assert derive_pending(client, quiet_s=0).traces == len(firsts)
    same = client.query(f"SELECT count() FROM {schema.FACTS} WHERE replaced_version = version").result_rows
    assert int(same[0][0]) == len(firsts)
    source = ClickHouseSource(client)
    for flt in (*HOUR_SPLIT_RANGES, *LONG_EDGES):
        _assert_maps_equal_memory(source, spans, flt)
