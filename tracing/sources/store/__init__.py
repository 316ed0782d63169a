"""The embedded trace store: SQLite (WAL) in a data directory, readable by several processes.

store = open_store()                  # $JANUX_DATA_DIR or ~/.janux/data
store.write(spans)                    # durable when it returns (group commit)
store.list_traces(TraceFilter())      # the TraceSource queries
"""

from __future__ import annotations

from janux.tracing.sources.store.maintenance import PruneResult
from janux.tracing.sources.store.store import DATA_DIR_ENV, TraceStore, default_data_dir, open_store
from janux.tracing.sources.store.writer import WriteResult

__all__ = ["DATA_DIR_ENV", "PruneResult", "TraceStore", "WriteResult", "default_data_dir", "open_store"]
