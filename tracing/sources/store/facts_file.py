"""The agent map's per-trace facts kept on disk, so a new reading process does not re-read every trace.

A reading process (the dashboard, its map helper, `janux check`) computes each trace's map facts
(`analysis.agentmap.build.map_facts`) once per span count and keeps them in memory (`MapCache`).
This file keeps them across processes: `map-facts.sqlite3` beside the store, one row per trace
(its span count and its facts, `marshal`-encoded plain tuples). A fresh process loads the rows whose
span count still matches and computes only the rest, which it writes back.

Beside them, each trace's find facts (`trace_find.FindFacts`: its agents, failure reasons and error
texts), which a search by failure reason reads instead of rebuilding the trace (`find_facts`, the
same keys and rules).

It is a cache, never the truth: a separate database, so a reader's writes never wait for the
receiver's write lock (nor slow it); every failure (a read-only directory, a locked or damaged
file) is logged and the facts are computed as without it; and it is keyed by a fingerprint of the
analysis layer's source, so facts computed by other rules (an upgrade) are never read.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import sqlite3
import threading
import time
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from janux.tracing import analysis
from janux.tracing.analysis.agentmap.fleet_stats import (
    AgentMap,
    AgentStats,
    EdgeStats,
    FailureRef,
    PathStats,
    TraceRef,
)
from janux.tracing.analysis.agentmap.loops import DelegationFacts, LoopFacts, MapFacts
from janux.tracing.analysis.trace_find import FindFacts
from janux.tracing.analysis.trace_parts import Usage

FILE_NAME = "map-facts.sqlite3"
"""The file's name in the data directory."""

_IDS_PER_QUERY = 500
_SCHEMA = """
CREATE TABLE IF NOT EXISTS map_facts (
    TraceId TEXT PRIMARY KEY, SpanCount INTEGER NOT NULL, Facts BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS facts_meta (Key TEXT PRIMARY KEY, Value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS map_results (Digest TEXT PRIMARY KEY, Map BLOB NOT NULL, SavedNs INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS find_facts (
    TraceId TEXT PRIMARY KEY, SpanCount INTEGER NOT NULL, Facts BLOB NOT NULL
) WITHOUT ROWID;
"""
MAPS_KEPT = 8
"""Whole maps kept (the newest): a fresh process asked the same range over the same traces answers at once."""

# The classes a kept map is made of: only these are rebuilt from a file (never an arbitrary class).
_MAP_CLASSES: dict[str, type[Any]] = {
    cls.__name__: cls for cls in (AgentMap, AgentStats, EdgeStats, PathStats, TraceRef, FailureRef, Usage)
}

logger = logging.getLogger(__name__)


@cache
def rules_fingerprint() -> str:
    """A hash of every source file of the analysis layer: facts written under other rules never match."""
    digest = hashlib.sha256()
    root = Path(analysis.__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:32]


def encode(facts: MapFacts) -> bytes:
    """One trace's map facts as bytes (plain tuples only: `marshal` builds no other object)."""
    loops, delegations = facts
    flat = [
        (d.caller, d.target, d.kind, d.tool, d.status, d.attempts, d.duration_ms, d.failure, d.reason,
         d.span_id, d.start_ns, tuple(getattr(d.cost, name) for name in Usage.__slots__))
        for d in delegations
    ]  # fmt: skip
    return marshal.dumps(([tuple(loop) for loop in loops], flat))


_loop = tuple.__new__  # a LoopFacts from a plain tuple, without NamedTuple's Python-level __new__


def decode(blob: bytes) -> MapFacts:
    """The map facts `encode` wrote."""
    loops, flat = marshal.loads(blob)
    return (
        [_loop(LoopFacts, loop) for loop in loops],
        [_delegation(fields) for fields in flat],
    )


def _find_facts(blob: bytes) -> FindFacts:
    """The find facts `save_find` wrote (plain lists of strings)."""
    agents, reasons, errors = marshal.loads(blob)
    return FindFacts(frozenset(map(str, agents)), frozenset(map(str, reasons)), tuple(map(str, errors)))


def _delegation(fields: tuple[Any, ...]) -> DelegationFacts:
    caller, target, kind, tool, status, attempts, ms, failure, reason, span_id, start_ns, cost = fields
    return DelegationFacts(
        caller, target, kind, tool, status, attempts, ms, failure, reason, span_id, start_ns, Usage(*cost)
    )


def _plain(value: Any) -> Any:
    """A map's value as plain data `marshal` can write: each of its dataclasses as a tagged tuple."""
    name = type(value).__name__
    if name in _MAP_CLASSES and type(value) is _MAP_CLASSES[name]:
        return ("__map__", name, tuple(_plain(getattr(value, f)) for f in value.__slots__))
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _rebuilt(value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 3 and value[0] == "__map__":
        return _MAP_CLASSES[value[1]](*(_rebuilt(v) for v in value[2]))
    if isinstance(value, list):
        return [_rebuilt(v) for v in value]
    if isinstance(value, dict):
        return {k: _rebuilt(v) for k, v in value.items()}
    return value


class FactsFile:
    """The map facts of one data directory's traces, shared by every reading process."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        """The database file."""
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._opened_lock = threading.Lock()
        self._broken = False

    def _conn(self) -> sqlite3.Connection | None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None or self._broken:
            return conn
        try:
            conn = sqlite3.connect(self.path, timeout=0.5, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # a cache: a lost last write is recomputed
            conn.executescript(_SCHEMA)
            row = conn.execute("SELECT Value FROM facts_meta WHERE Key = 'rules'").fetchone()
            if row is None or row[0] != rules_fingerprint():
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("DELETE FROM map_facts")
                conn.execute("DELETE FROM map_results")
                conn.execute("DELETE FROM find_facts")
                conn.execute("INSERT OR REPLACE INTO facts_meta VALUES ('rules', ?)", (rules_fingerprint(),))
                conn.execute("COMMIT")
        except sqlite3.Error:
            logger.warning("agent map facts file %s unusable; computing facts without it", self.path,
                           exc_info=True)  # fmt: skip
            self._broken = True
            return None
        self._local.conn = conn
        with self._opened_lock:
            self._opened.append(conn)
        return conn

    def load(self, versions: dict[str, int]) -> dict[str, MapFacts]:
        """The kept facts of the traces in `versions` (trace id -> span count) whose span count
        matches; nothing on any failure."""
        conn = self._conn()
        if conn is None or not versions:
            return {}
        found: dict[str, MapFacts] = {}
        try:
            for trace_id, count, blob in self._rows(conn, list(versions)):
                if versions.get(trace_id) == count:
                    found[trace_id] = decode(blob)
        except (sqlite3.Error, ValueError, EOFError, TypeError):
            logger.warning("agent map facts file %s unreadable; computing facts without it", self.path,
                           exc_info=True)  # fmt: skip
            return {}
        return found

    def _rows(
        self, conn: sqlite3.Connection, trace_ids: list[str], table: str = "map_facts"
    ) -> Iterable[tuple[Any, ...]]:
        """The rows of `trace_ids`: one scan when they are most of the file, else by key."""
        kept = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        if len(trace_ids) * 2 >= kept:
            return conn.execute(f"SELECT TraceId, SpanCount, Facts FROM {table}").fetchall()
        rows: list[tuple[Any, ...]] = []
        for start in range(0, len(trace_ids), _IDS_PER_QUERY):
            chunk = trace_ids[start : start + _IDS_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT TraceId, SpanCount, Facts FROM {table} WHERE TraceId IN ({marks})"
            rows += conn.execute(sql, chunk).fetchall()
        return rows

    def load_find(self, versions: dict[str, int]) -> dict[str, FindFacts]:
        """The kept find facts (`trace_find.FindFacts`) of the traces in `versions` whose span count
        matches; nothing on any failure."""
        conn = self._conn()
        if conn is None or not versions:
            return {}
        try:
            rows = self._rows(conn, list(versions), "find_facts")
            return {t: _find_facts(blob) for t, count, blob in rows if versions.get(t) == count}
        except (sqlite3.Error, ValueError, EOFError, TypeError):
            logger.warning("find facts in %s unreadable; rebuilding the traces", self.path, exc_info=True)
            return {}

    def save_find(self, facts: dict[str, tuple[int, FindFacts]]) -> None:
        """Keep find facts (trace id -> (span count, facts)); a failure only costs a later rebuild."""
        conn = self._conn()
        if conn is None or not facts:
            return
        rows = [
            (trace_id, count, marshal.dumps((sorted(f.agents), sorted(f.reasons), list(f.errors))))
            for trace_id, (count, f) in facts.items()
        ]
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO find_facts VALUES (?, ?, ?)", rows)
            conn.execute("COMMIT")
        except sqlite3.Error:
            logger.info("find facts not kept in %s", self.path, exc_info=True)
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def save(self, facts: dict[str, tuple[int, MapFacts]]) -> None:
        """Keep `facts` (trace id -> (span count, facts)); a failure only costs a later recompute."""
        conn = self._conn()
        if conn is None or not facts:
            return
        rows = [(trace_id, count, encode(found)) for trace_id, (count, found) in facts.items()]
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO map_facts VALUES (?, ?, ?)", rows)
            conn.execute("COMMIT")
        except sqlite3.Error:
            logger.info("agent map facts not kept in %s (another reader writes, or it is read-only)",
                        self.path, exc_info=True)  # fmt: skip
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def load_map(self, digest: str) -> AgentMap | None:
        """The whole map kept under `digest` (`map_cache.map_digest`), None when none is (or on any
        failure)."""
        conn = self._conn()
        if conn is None:
            return None
        try:
            row = conn.execute("SELECT Map FROM map_results WHERE Digest = ?", (digest,)).fetchone()
            found = _rebuilt(marshal.loads(row[0])) if row is not None else None
        except (sqlite3.Error, ValueError, EOFError, TypeError, KeyError):
            logger.warning("agent map facts file %s unreadable; computing the map", self.path, exc_info=True)
            return None
        return found if isinstance(found, AgentMap) else None

    def save_map(self, digest: str, agent_map: AgentMap) -> None:
        """Keep a whole map under `digest`, and only the newest `MAPS_KEPT`."""
        conn = self._conn()
        if conn is None:
            return
        blob = marshal.dumps(_plain(agent_map))
        try:
            conn.execute("BEGIN IMMEDIATE")
            row = (digest, blob, time.time_ns())
            conn.execute("INSERT OR REPLACE INTO map_results VALUES (?, ?, ?)", row)
            conn.execute(
                "DELETE FROM map_results WHERE Digest NOT IN "
                "(SELECT Digest FROM map_results ORDER BY SavedNs DESC LIMIT ?)",
                (MAPS_KEPT,),
            )
            conn.execute("COMMIT")
        except sqlite3.Error:
            logger.info("agent map not kept in %s", self.path, exc_info=True)
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def forget(self, trace_ids: list[str]) -> None:
        """Drop the facts of pruned traces."""
        conn = self._conn()
        if conn is None:
            return
        try:
            for start in range(0, len(trace_ids), _IDS_PER_QUERY):
                chunk = trace_ids[start : start + _IDS_PER_QUERY]
                marks = ", ".join("?" * len(chunk))
                conn.execute(f"DELETE FROM map_facts WHERE TraceId IN ({marks})", chunk)
                conn.execute(f"DELETE FROM find_facts WHERE TraceId IN ({marks})", chunk)
        except sqlite3.Error:
            logger.info("agent map facts of pruned traces left in %s", self.path, exc_info=True)

    def close(self) -> None:
        """Close every connection this object opened."""
        with self._opened_lock:
            for conn in self._opened:
                conn.close()
            self._opened.clear()
        self._local = threading.local()
