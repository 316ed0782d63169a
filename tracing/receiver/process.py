"""Process-wide settings of a process that ingests spans: the receiver's (the collect process and its
workers) and `janux import`'s."""

from __future__ import annotations

import gc
import threading

YOUNG_COLLECTION_THRESHOLD = 10_000
"""Allocations between two young-generation collections (CPython's default is 700). One export
request (or one import batch) allocates tens of thousands of short-lived objects; collecting every
700 of them walks the same in-flight batch again and again."""

_settled = threading.Event()


def settle_heap() -> None:
    """Collect once, then freeze what start-up left (modules, protobuf descriptors, the app), so the
    collector never walks it again while serving, and collect the young generation less often.

    Only the first call in a process does it (a process that starts receivers again and again, as
    a test run does, would otherwise freeze objects it later drops)."""
    if _settled.is_set():
        return
    _settled.set()
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(YOUNG_COLLECTION_THRESHOLD, young), middle, old)
