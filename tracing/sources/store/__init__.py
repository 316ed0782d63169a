"""The embedded trace store: SQLite (WAL) in a data directory, readable by several processes.

store = open_store()                  # $JANUX_DATA_DIR or ~/.janux/data
store.write(spans)                    # durable when it returns (group commit)
store.list_traces(TraceFilter())      # the TraceSource queries

The names below are loaded on first use, so the store's leaf modules (`usage`, `schema`, ...) can
be imported by the rest of `sources` without loading the whole store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from janux.tracing.sources.store.maintenance import PruneResult
    from janux.tracing.sources.store.store import DATA_DIR_ENV, TraceStore, default_data_dir, open_store
    from janux.tracing.sources.store.writer import WriteResult

__all__ = ["DATA_DIR_ENV", "PruneResult", "TraceStore", "WriteResult", "default_data_dir", "open_store"]

_HOMES = {
    "PruneResult": "maintenance", "WriteResult": "writer", "DATA_DIR_ENV": "store", "TraceStore": "store",
    "default_data_dir": "store", "open_store": "store",
}  # fmt: skip


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
