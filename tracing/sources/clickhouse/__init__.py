"""The ClickHouse backend: an OpenTelemetry Collector's `otel_traces` table read as a trace source.

`source` is the `TraceSource` (its SQL mirrors the analysis layer's rules: see its docstring),
`links` reads the agent map's link rows, `foreign` reads traces without Janux accounting whole, and
`chdb_client` runs the same SQL on chdb (the ClickHouse engine in-process) for tests and benches.
"""
