"""`TraceStore`: the embedded trace store (SQLite in WAL mode in a data directory).

One process writes (the receiver or an import) while any number of processes read (the
dashboard). Writes go through a group-commit thread and are acknowledged only after COMMIT
(synchronous=FULL, so after the WAL was fsynced); each read is one statement over a committed
snapshot, so readers never see part of a batch and never block the writer.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Literal

from janux.tracing.analysis.agentmap.build import gc_paused
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, MapKey, MapRefs
from janux.tracing.analysis.trace_find import FoundTraces, TraceQuery
from janux.tracing.analysis.trace_links import TraceLink
from janux.tracing.analysis.trace_parts import Usage
from janux.tracing.records import SpanRecord
from janux.tracing.sources.find_cache import FindFactsCache
from janux.tracing.sources.map_cache import LoadAll, LoadSome, MapCache
from janux.tracing.sources.protocol import (
    IngestStats,
    TraceFilter,
    TraceSummary,
    UsageAggregate,
    UsageDimension,
)
from janux.tracing.sources.store import find, queries
from janux.tracing.sources.store.facts_file import FactsFile
from janux.tracing.sources.store.links_migrate import ensure_links
from janux.tracing.sources.store.links_read import read_links, read_links_of
from janux.tracing.sources.store.lock import WriteLock
from janux.tracing.sources.store.maintenance import PruneResult, prune_before
from janux.tracing.sources.store.map_process import MapProcess, MapProcessError
from janux.tracing.sources.store.migrate import rebuild_from_old_spans
from janux.tracing.sources.store.model_timeline import STORE_SQL, finish_timeline
from janux.tracing.sources.store.rows import batch_rows
from janux.tracing.sources.store.schema import connect, database_path, ensure_schema
from janux.tracing.sources.store.writer import GroupCommitWriter, WriteResult

DATA_DIR_ENV = "JANUX_DATA_DIR"
"""Environment variable naming the data directory."""

NS_PER_DAY = 86_400 * 1_000_000_000
"""Nanoseconds in a day (retention is given in days)."""

MAP_PROCESS_MIN_TRACES = 10_000
"""Traces whose map facts a store opened with `map_process=True` must still read (stored, not yet
read by this process) for it to hand its agent maps to a helper process (`map_process`): about
0.4 s of reading in this process, against about 0.2 s to start the helper."""

logger = logging.getLogger(__name__)


def default_data_dir() -> Path:
    """`$JANUX_DATA_DIR` if set, else `~/.janux/data`."""
    configured = os.environ.get(DATA_DIR_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".janux" / "data"


class TraceStore:
    """Embedded trace store; implements `janux.tracing.sources.protocol.TraceSource` and the write path.

    Thread-safe: each reading thread gets its own connection, and all writes are funnelled
    through one writer thread. Use `open_store()` to get one.
    """

    def __init__(self, data_dir: str | Path, *, map_process: bool = False) -> None:
        self.data_dir = Path(data_dir).expanduser()
        """Directory holding the database files."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = database_path(self.data_dir)
        """The SQLite database file."""
        setup = connect(self.path, writer=False)
        lock = WriteLock(self.data_dir)
        try:
            # Serialized between processes: two connections switching a new database to WAL at
            # once deadlock, and SQLite answers one of them "database is locked" without waiting.
            with lock.held():
                ensure_schema(setup, rebuild_from_old_spans)
                ensure_links(setup)
        finally:
            setup.close()
            lock.close()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._facts_file = FactsFile(self.data_dir)
        self._map_cache = MapCache(kept=self._facts_file)
        # Reasons only: error text is answered by the store's own index (`span_errors`).
        self._find_cache = FindFactsCache(kept=self._facts_file, errors=False)
        self._map_process = MapProcess(self.data_dir) if map_process else None
        self._map_process_used = False
        self.keeps_map_facts = True
        """`agent_map` keeps per-trace facts between calls (worth warming up once per process)."""
        self._writer = GroupCommitWriter(
            lambda: connect(self.path, writer=True), lambda: WriteLock(self.data_dir)
        )

    # ---------------------------------------------------------------- writing

    def submit(
        self, spans: Sequence[SpanRecord], rejected: int = 0, errors: Sequence[str] = ()
    ) -> Future[WriteResult]:
        """Queue spans (and a count of refused ones) for storage; the future resolves after COMMIT."""
        if not spans and not rejected:
            done: Future[WriteResult] = Future()
            done.set_result(WriteResult())
            return done
        return self._writer.submit(batch_rows(spans), rejected, errors)

    def write(
        self,
        spans: Sequence[SpanRecord],
        rejected: int = 0,
        errors: Sequence[str] = (),
        timeout: float | None = None,
    ) -> WriteResult:
        """Store spans and wait until they are durably committed."""
        return self.submit(spans, rejected, errors).result(timeout)

    def prune(self, older_than_days: float, now_ns: int | None = None) -> PruneResult:
        """Delete traces (spans and summaries) that ended more than `older_than_days` ago."""
        now = time.time_ns() if now_ns is None else now_ns
        conn = connect(self.path, writer=False)
        lock = WriteLock(self.data_dir)
        try:
            return prune_before(conn, now - int(older_than_days * NS_PER_DAY), lock)
        finally:
            conn.close()
            lock.close()

    def close(self) -> None:
        """Commit queued writes, stop the writer (and the map helper) and close every connection."""
        self._writer.close()
        if self._map_process is not None:
            self._map_process.close()
        self._facts_file.close()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        self._local = threading.local()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- reading

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, writer=False)
            conn.execute("PRAGMA query_only = 1")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def list_traces(self, flt: TraceFilter, limit: int = 50, offset: int = 0) -> list[TraceSummary]:
        """Trace summaries matching `flt`, newest first."""
        return queries.list_traces(self._conn(), flt, limit, offset)

    def count_traces(self, flt: TraceFilter) -> int:
        """How many traces match `flt`."""
        return queries.count_traces(self._conn(), flt)

    def find_traces(
        self, flt: TraceFilter, query: TraceQuery, limit: int = 50, offset: int = 0
    ) -> FoundTraces:
        """The traces matching `flt` with what `query` asks for inside, over all of them: one page and
        the count (`store.find`)."""
        return find.find_traces(self._conn(), flt, query, self._reasons_of, self.get_traces, limit, offset)

    def _reasons_of(self, versions: dict[str, int]) -> dict[str, frozenset[str]]:
        facts = self._find_cache.facts(versions, self.get_traces)
        return {trace_id: found.reasons for trace_id, found in facts.items()}

    def get_trace(self, trace_id: str) -> list[SpanRecord]:
        """All spans of one trace (each span once), in start order."""
        return next(iter(queries.get_traces(self._conn(), [trace_id]).values()), [])

    def get_traces(self, trace_ids: list[str]) -> dict[str, list[SpanRecord]]:
        """All spans of several traces, keyed by (lowercase) trace id."""
        return queries.get_traces(self._conn(), trace_ids)

    def trace_links(self, trace_ids: list[str]) -> list[TraceLink]:
        """The `trace_links` rows with one of `trace_ids` on either side (two index probes each)."""
        return queries.trace_links(self._conn(), trace_ids)

    def failed_handoff_spans(self, flt: TraceFilter, limit: int = 500) -> list[SpanRecord]:
        """Failing `execute_tool` spans, plus ERROR `invoke_agent` spans under other runtimes' tool
        spans, newest first."""
        return queries.failed_handoff_spans(self._conn(), flt, limit)

    def distinct_values(self, what: Literal["service", "root_agent", "conversation"]) -> list[str]:
        """Values to offer in a filter drop-down."""
        return queries.distinct_values(self._conn(), what)

    def usage_by(self, dimension: UsageDimension, flt: TraceFilter, limit: int = 100) -> list[UsageAggregate]:
        """Tokens and cost by agent, delegation tool, model or conversation over the traces matching
        `flt` (see `janux.tracing.sources.protocol.UsageAggregate`), most expensive first."""
        return queries.usage_by(self._conn(), dimension, flt, limit)

    def agent_map(self, flt: TraceFilter, bucket_ns: int | None = None) -> AgentMap:
        """Agents and the delegations between them over the traces matching `flt` (read by the
        helper process when the store was opened with `map_process=True` and has many to read)."""
        helper = self._map_process
        if helper is not None:
            # A map another process already built over these very traces is read here at once:
            # starting the helper would cost more than the read.
            kept = self._map_cache.kept_map(self._map_versions(flt), bucket_ns)
            if kept is not None:
                return kept
        if helper is not None and self._hand_maps_over():
            try:
                return helper.agent_map(flt, bucket_ns)
            except MapProcessError:  # the same read, here (a helper that is gone is not replaced)
                logger.warning("agent map helper failed; reading the map in this process", exc_info=True)
                if helper.pid is None:
                    self._map_process = None
                    helper.close()
        return self._agent_map_here(flt, bucket_ns)

    @property
    def map_helper_pid(self) -> int | None:
        """The process id of the helper reading this store's agent maps, None while maps are read
        in this process (see `agent_map`)."""
        helper = self._map_process
        return helper.pid if helper is not None else None

    def _hand_maps_over(self) -> bool:
        """True once this process would have `MAP_PROCESS_MIN_TRACES` traces to read for a map (then
        the helper reads every map: it keeps the facts)."""
        if not self._map_process_used:
            stored = self._conn().execute("SELECT count(*) FROM trace_summary").fetchone()[0]
            if stored - self._map_cache.known >= MAP_PROCESS_MIN_TRACES:
                self._map_process_used = True
                self._map_cache = MapCache(kept=self._facts_file)  # the helper keeps the facts from now on
        return self._map_process_used

    def _map_versions(self, flt: TraceFilter) -> dict[str, int]:
        """Trace id -> span count of the traces matching `flt` (what a map over them depends on)."""
        where, params = queries.filter_sql(flt)
        with gc_paused():  # 50,000 rows of tuples: no reason to scan the cached facts meanwhile
            rows = self._conn().execute(f"SELECT TraceId, SpanCount FROM trace_summary{where}", params)
            return dict(rows.fetchall())

    def _map_inputs(self, flt: TraceFilter) -> tuple[dict[str, int], LoadAll, LoadSome]:
        """What the map cache reads the traces matching `flt` from: their versions, and readers of
        all their links or of some traces' links."""
        conn = self._conn()
        where, params = queries.filter_sql(flt)
        return (
            self._map_versions(flt),
            lambda: read_links(conn, where, params),
            lambda ids: read_links_of(conn, ids),
        )

    def _agent_map_here(self, flt: TraceFilter, bucket_ns: int | None) -> AgentMap:
        return self._map_cache.agent_map(*self._map_inputs(flt), bucket_ns)

    def map_refs(self, flt: TraceFilter, key: MapKey) -> MapRefs:
        """The newest traces (and failures) of one node or edge of `agent_map(flt)`, from the same
        per-trace facts (kept by the map helper's facts file when a helper built the map)."""
        return self._map_cache.map_refs(*self._map_inputs(flt), key)

    def model_timeline(self, flt: TraceFilter, bucket_ns: int) -> list[tuple[int, str, Usage]]:
        """Usage per (bucket of trace start, model) over the traces matching `flt`."""
        where, params = queries.filter_sql(flt)
        sql = STORE_SQL.format(traces=f"SELECT TraceId, StartNs FROM trace_summary{where}")
        bucket = max(1, bucket_ns)
        return finish_timeline(self._conn().execute(sql, [bucket, bucket, *params]).fetchall())

    def ingest_stats(self) -> IngestStats:
        """Counts of what was stored and refused."""
        return queries.ingest_stats(self._conn())


def open_store(data_dir: str | Path | None = None, *, map_process: bool = False) -> TraceStore:
    """Open (creating if needed) the embedded store in `data_dir` (default: `default_data_dir()`);
    `map_process`: read big agent maps in a helper process (a long-lived server's choice)."""
    return TraceStore(default_data_dir() if data_dir is None else data_dir, map_process=map_process)
