"""Every place the dashboard reads traces from, behind one protocol (`janux.tracing.sources.protocol`).

- `store`: the embedded store (SQLite in WAL mode) that `janux collect` writes;
- `clickhouse`: the `otel_traces` table of the OTel Collector's ClickHouse exporter (`chdb_client`
  runs the same SQL in-process, for tests and demos);
- `memory`: spans held in memory (uploaded files, tests), loaded by `file_loader`.
"""

from janux.tracing.sources.protocol import (
    IngestStats,
    TraceFilter,
    TraceSource,
    TraceSummary,
    UsageAggregate,
    UsageDimension,
)

__all__ = ["IngestStats", "TraceFilter", "TraceSource", "TraceSummary", "UsageAggregate", "UsageDimension"]
