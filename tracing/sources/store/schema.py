"""SQLite schema of the embedded store and the connection settings every process uses.

`otel_traces` keeps the logical columns of the OTel Collector ClickHouse exporter's table
(attribute maps, events and links as JSON, values typed) plus two derived columns (`Op`,
`HandoffStatus`) that let the write path maintain `trace_summary` with plain SQL joins.
`trace_summary` is one row per trace, maintained at write time, so the trace list never scans
spans. `span_errors` (each distinct error text of a trace, lower case) is the find index of error
text, written with the few spans that carry one; `trace_links` is the link index of runs split
across traces (`analysis.trace_links`), written with the few spans that link into another trace.
Attribute values have no index: one of every attribute of every span cost the write path a third
of its speed, so `key=value` is looked up in the spans' JSON when asked (`store.find`).
`store_counters` and `ingest_errors` say what was refused or seen twice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from janux.tracing.analysis.usage_rows import USAGE_AT as USAGE_AT
from janux.tracing.analysis.usage_rows import USAGE_COLUMNS as USAGE_COLUMNS
from janux.tracing.columns import positions
from janux.tracing.conventions import OP_INVOKE_AGENT

SCHEMA_VERSION = 9
"""`PRAGMA user_version` of a store created by this code. 2 added `span_usage`; 4 keys it by
(trace, parent, span), so finding a tool span's attempts needs no second index on the write path;
5 reads other runtimes' conventions (`span_usage.Unread`, the coverage, transfer and `Janux` /
`Derived` columns of `trace_summary`); 6 keeps an integration's `janux.bill.cost_estimate`
(`BillEstimate`); 7 adds the find index of error text (`span_errors`); 8 the path of a
transferred conversation (`trace_summary.AgentPath`) and the first agent as `RootAgent`; 9 the link
index of runs split across traces (`trace_links`). An older store is rebuilt from its spans when
opened."""

BUSY_TIMEOUT_MS = 30_000
"""How long a connection waits for another process's write lock before giving up."""

DB_FILE_NAME = "traces.sqlite3"
"""File name of the database inside the data directory."""

RECENT_ERRORS_KEPT = 100
"""How many rejection messages `ingest_errors` keeps."""

# otel_traces stays a rowid table: the write path finds the rows of a batch by their rowid range
# (see ingest.py), and a clustered primary key would move kilobytes of JSON on every insert.
_TABLES = f"""
CREATE TABLE IF NOT EXISTS otel_traces (
    Timestamp INTEGER NOT NULL,
    TraceId TEXT NOT NULL,
    SpanId TEXT NOT NULL,
    ParentSpanId TEXT NOT NULL,
    TraceState TEXT NOT NULL,
    SpanName TEXT NOT NULL,
    SpanKind TEXT NOT NULL,
    ServiceName TEXT NOT NULL,
    ResourceAttributes TEXT NOT NULL,
    ScopeName TEXT NOT NULL,
    ScopeVersion TEXT NOT NULL,
    SpanAttributes TEXT NOT NULL,
    Duration INTEGER NOT NULL,
    StatusCode TEXT NOT NULL,
    StatusMessage TEXT NOT NULL,
    Events TEXT NOT NULL,
    Links TEXT NOT NULL,
    Op TEXT NOT NULL,
    HandoffStatus TEXT NOT NULL,
    PRIMARY KEY (TraceId, SpanId)
);
CREATE INDEX IF NOT EXISTS otel_traces_agent_children
    ON otel_traces (TraceId, ParentSpanId) WHERE Op = '{OP_INVOKE_AGENT}';
CREATE TABLE IF NOT EXISTS trace_summary (
    TraceId TEXT PRIMARY KEY,
    StartNs INTEGER NOT NULL,
    EndNs INTEGER NOT NULL,
    SpanCount INTEGER NOT NULL,
    Delegations INTEGER NOT NULL,
    Attempts INTEGER NOT NULL,
    FailedHandoffs INTEGER NOT NULL,
    ForeignFailed INTEGER NOT NULL,
    ErrorSpans INTEGER NOT NULL,
    FirstService TEXT NOT NULL,
    RootStartNs INTEGER,
    RootName TEXT,
    RootService TEXT,
    RootAgent TEXT,
    ConversationId TEXT,
    RootHasBill INTEGER NOT NULL DEFAULT 0,
    BillCost REAL,
    BillInput INTEGER,
    BillOutput INTEGER,
    BillUnpriced INTEGER,
    BillEstimate REAL,
    AgentPath TEXT,
    InferenceInput INTEGER,
    InferenceOutput INTEGER,
    Janux INTEGER NOT NULL DEFAULT 0,
    Derived INTEGER NOT NULL DEFAULT 0,
    Transfers INTEGER NOT NULL DEFAULT 0,
    InferenceSpans INTEGER NOT NULL DEFAULT 0,
    UsageReadSpans INTEGER NOT NULL DEFAULT 0,
    UnrecognisedSpans INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS trace_summary_start ON trace_summary (StartNs);
CREATE INDEX IF NOT EXISTS trace_summary_end ON trace_summary (EndNs);
CREATE TABLE IF NOT EXISTS span_usage (
    TraceId TEXT NOT NULL,
    SpanId TEXT NOT NULL,
    ParentSpanId TEXT NOT NULL,
    Dim TEXT NOT NULL,
    Key TEXT NOT NULL,
    InputTokens INTEGER,
    OutputTokens INTEGER,
    Cost REAL,
    Unpriced INTEGER,
    Failed INTEGER NOT NULL,
    Unread INTEGER,
    PRIMARY KEY (TraceId, ParentSpanId, SpanId)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS span_errors (
    TraceId TEXT NOT NULL,
    Text TEXT NOT NULL,
    PRIMARY KEY (TraceId, Text)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trace_links (
    TraceId TEXT NOT NULL,
    SpanId TEXT NOT NULL,
    LinkedTraceId TEXT NOT NULL,
    LinkedSpanId TEXT NOT NULL,
    PRIMARY KEY (TraceId, SpanId, LinkedTraceId, LinkedSpanId)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS trace_links_linked ON trace_links (LinkedTraceId, TraceId);
CREATE TABLE IF NOT EXISTS store_counters (
    Name TEXT PRIMARY KEY,
    Value INTEGER NOT NULL
);
INSERT OR IGNORE INTO store_counters (Name, Value)
    VALUES ('spans', 0), ('duplicates', 0), ('rejected', 0);
CREATE TABLE IF NOT EXISTS ingest_errors (
    Id INTEGER PRIMARY KEY AUTOINCREMENT,
    Message TEXT NOT NULL
);
"""

SPAN_COLUMNS = (
    "Timestamp", "TraceId", "SpanId", "ParentSpanId", "TraceState", "SpanName", "SpanKind",
    "ServiceName", "ResourceAttributes", "ScopeName", "ScopeVersion", "SpanAttributes", "Duration",
    "StatusCode", "StatusMessage", "Events", "Links", "Op", "HandoffStatus",
)  # fmt: skip
"""Columns of `otel_traces`, in table order (the order of a staged span row)."""

SPAN_AT = positions(SPAN_COLUMNS)
"""Column name -> position in a staged span row."""


FLAG_DELEGATION = 1
"""Summary flag of a staged span: an `execute_tool` span of a delegate tool."""
FLAG_FAILING = 2
"""Summary flag of a staged span: an `execute_tool` span whose final handoff status is failing."""
FLAG_JANUX = 4
"""Summary flag of a staged span: it carries Janux accounting (the trace's numbers come from it)."""
FLAG_UNRECOGNISED = 8
"""Summary flag of a staged span: of a kind Janux does not recognise."""
FLAG_TRANSFER = 16
"""Summary flag of a staged span: a Janux `handoff` tool span (a transfer)."""

OLD_SPANS_TABLE = "otel_traces_before_upgrade"
"""Where an older store's spans wait while `ensure_schema` rebuilds the store from them."""


def database_path(data_dir: Path) -> Path:
    """Where the database lives inside `data_dir`."""
    return data_dir / DB_FILE_NAME


def connect(path: Path, *, writer: bool) -> sqlite3.Connection:
    """Open a connection with the store's settings (WAL, busy timeout, durable commits).

    Connections are in autocommit mode; callers open explicit `BEGIN IMMEDIATE` transactions so a
    batch is one atomic commit and a reader's statement always sees whole batches.
    """
    conn = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # FULL: with WAL every commit fsyncs the log, so an acknowledged batch survives kill -9 / power loss.
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA cache_size = -65536")
    conn.execute("PRAGMA temp_store = MEMORY")
    if writer:  # the store's writer checkpoints after commits, outside the write lock (writer.py)
        conn.execute("PRAGMA wal_autocheckpoint = 0")
    return conn


def ensure_schema(conn: sqlite3.Connection, rebuild: Callable[[sqlite3.Connection], object]) -> None:
    """Switch to WAL and create (or upgrade) the tables once; cheap no-op on a current store.

    An older store's spans are moved aside (`OLD_SPANS_TABLE`), the tables created anew, and
    `rebuild(conn)` stores the spans again through the write path, in the same transaction, so
    every derived table follows the current rules. Callers serialize this between processes
    (`TraceStore` holds the write lock around it).
    """
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version >= SCHEMA_VERSION:
        return
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise sqlite3.OperationalError(f"could not switch the store to WAL mode (got {mode})")
    conn.execute("BEGIN IMMEDIATE")
    try:
        upgrade = version > 0
        if upgrade:
            conn.execute("DROP INDEX IF EXISTS otel_traces_agent_children")
            conn.execute(f"ALTER TABLE otel_traces RENAME TO {OLD_SPANS_TABLE}")
            for table in ("trace_summary", "span_usage", "span_errors", "trace_links"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in _TABLES.split(";"):
            if statement.strip():
                conn.execute(statement)
        if upgrade:
            rebuild(conn)
            conn.execute(f"DROP TABLE {OLD_SPANS_TABLE}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
