"""A trace asked for ahead is rebuilt once, on the cache's worker thread, and whoever asks for it
meanwhile waits for that build; a rebuilt trace is left out of the collector's scans, which is safe
only because it holds no reference cycles."""

from __future__ import annotations

import gc
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from janux.dashboard.ui import view_cache
from janux.dashboard.ui.view_cache import (
    FREEZE_MIN_SPANS,
    PREFETCH_THREAD,
    SWEEP_EVERY,
    ViewCache,
    freeze_out_of_collector,
)
from janux.tracing.analysis.trace_view import TraceView, reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.testing import synthetic_trace
from tests.dashboard.app_helpers import OpenPage
from tests.support.contract_traces import contract_trace, plain_trace
from tests.support.hostile_traces import nested_agents
from tests.support.wait import wait_until

NO_HANG_S = 30
"""Bound of every wait here: only to turn a hang into a failure."""


class _Recording(MemoryTraceSource):
    """The in-memory source, noting which thread read which traces; reads wait for `release`."""

    def __init__(self, spans: list[SpanRecord]) -> None:
        super().__init__(spans)
        self.reads: list[tuple[tuple[str, ...], str]] = []
        self.reading = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def get_traces(self, trace_ids: list[str]) -> dict[str, list[SpanRecord]]:
        self.reads.append((tuple(trace_ids), threading.current_thread().name))
        self.reading.set()
        assert self.release.wait(NO_HANG_S), "the test never released the read"
        return super().get_traces(trace_ids)


def test_prefetched_trace_is_rebuilt_once_for_every_waiter() -> None:
    spans = contract_trace()
    trace_id = spans[0].trace_id
    source = _Recording(spans)
    source.release.clear()
    cache = ViewCache()
    cache.prefetch(source, "k", trace_id)
    assert source.reading.wait(NO_HANG_S)
    cache.prefetch(source, "k", trace_id)  # under way: not started again
    with ThreadPoolExecutor(max_workers=2) as pool:
        waiting = [pool.submit(cache.view, source, "k", trace_id) for _ in range(2)]
        source.release.set()
        views = [w.result(timeout=NO_HANG_S) for w in waiting]
    assert views[0] is views[1] is cache.view(source, "k", trace_id)
    assert len(source.reads) == 1 and source.reads[0][1].startswith(PREFETCH_THREAD)
    assert cache.rebuilt == 1


def test_waiter_gets_the_trace_before_its_memory_is_estimated(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page waiting for a trace rebuilt ahead goes on drawing while the worker estimates the
    trace's memory (`view_bytes`, 20-25 ms for 10,000 spans); then the trace is kept as before."""
    spans = contract_trace()
    trace_id = spans[0].trace_id
    source = _Recording(spans)
    handed_over = threading.Event()
    seen: list[bool] = []  # per estimate: had the waiter already got the trace?

    def estimate(view: TraceView) -> int:
        seen.append(handed_over.wait(NO_HANG_S))
        return 1_000

    monkeypatch.setattr(view_cache, "view_bytes", estimate)
    cache = ViewCache()
    cache.prefetch(source, "k", trace_id)
    view = cache.view(source, "k", trace_id)
    handed_over.set()
    wait_until(lambda: cache.held_bytes, timeout_s=NO_HANG_S, what="the trace kept")
    assert seen == [True] and cache.held_bytes == 1_000
    assert cache.view(source, "k", trace_id) is view and len(source.reads) == 1 and cache.rebuilt == 1


def test_failed_prefetch_reaches_the_waiter_and_is_not_kept() -> None:
    class Failing(_Recording):
        fail = True

        def get_traces(self, trace_ids: list[str]) -> dict[str, list[SpanRecord]]:
            if self.fail:
                self.reads.append((tuple(trace_ids), threading.current_thread().name))
                raise OSError("store unreadable")
            return super().get_traces(trace_ids)

    spans = contract_trace()
    source = Failing(spans)
    cache = ViewCache()
    cache.prefetch(source, "k", spans[0].trace_id)
    with pytest.raises(OSError, match="store unreadable"):
        cache.view(source, "k", spans[0].trace_id)
    assert cache.rebuilt == 0
    source.fail = False  # the next ask reads again: nothing failed was kept
    assert cache.view(source, "k", spans[0].trace_id).index.spans
    assert cache.rebuilt == 1 and source.reads[-1][1] == threading.current_thread().name


def test_cleared_cache_keeps_nothing_a_build_under_way_returns() -> None:
    spans = contract_trace()
    source = _Recording(spans)
    source.release.clear()
    cache = ViewCache()
    cache.prefetch(source, "k", spans[0].trace_id)
    assert source.reading.wait(NO_HANG_S)
    cache.clear()
    source.release.set()
    view = cache.view(source, "k", spans[0].trace_id)  # a read of its own, not the cleared build's
    assert view.index.spans and len(source.reads) == 2


def test_big_rebuilt_trace_is_left_out_of_the_collectors_scans() -> None:
    big, small = synthetic_trace(FREEZE_MIN_SPANS, seed=3), synthetic_trace(40, seed=4)
    source = MemoryTraceSource(big + small)
    cache = ViewCache()
    view = cache.view(source, "k", big[0].trace_id)
    kept_small = cache.view(source, "k", small[0].trace_id)
    tracked = gc.get_objects()  # frozen objects are not among them
    assert not any(obj is view or obj is view.index for obj in tracked)
    assert any(obj is kept_small for obj in tracked)  # a small trace is left to the collector


class _Cyclic:
    """An object that refers to itself: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_freezing_keeps_no_cyclic_garbage_past_a_sweep() -> None:
    """Garbage frozen with a rebuilt trace (a script run's, say) is freed by the next sweep."""
    gc.disable()  # only the freezes and their sweep may collect here
    try:
        garbage = weakref.ref(_Cyclic())
        for _ in range(SWEEP_EVERY):
            freeze_out_of_collector()
        assert garbage() is None
    finally:
        gc.unfreeze()  # the tests after this one get a collector that scans everything again
        gc.enable()


@pytest.mark.parametrize(
    "spans",
    [contract_trace(), plain_trace(), synthetic_trace(2_000, seed=7), nested_agents(500)],
    ids=["contract", "plain", "synthetic-2000", "nested-500"],
)
def test_rebuilt_trace_holds_no_reference_cycles(spans: list[SpanRecord]) -> None:
    """Reference counting alone frees a rebuilt trace (and its rebuild leaves no cyclic garbage),
    so freezing it out of the collector's scans never keeps a dropped trace alive. (The first
    rebuild of a priced trace leaves some once: the price library's first look-up of its version.)"""
    reconstruct(spans)
    gc.collect()
    kept, gc.garbage[:] = list(gc.garbage), []
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds unreachable stays in gc.garbage
    try:
        view: TraceView | None = reconstruct(spans)
        assert view is not None and view.index.spans
        del view
        gc.collect()
        # only our objects count: another test's thread may leave cyclic garbage of its own meanwhile
        ours = [type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("janux.")]
        assert not ours, ours[:20]
    finally:
        gc.set_debug(0)
        gc.garbage[:] = kept
        gc.enable()


def test_row_click_rebuilds_the_trace_once_ahead(
    open_page: OpenPage, demo: tuple[list[Any], dict[str, str]]
) -> None:
    """A click on a Traces row, the Trace page's first draw and a span click: one read and rebuild
    of the trace, started ahead on the worker thread while the page drew its title and bar (a
    trace the list showed from its stored facts, without rebuilding it)."""
    spans, ids = demo
    trace_id = ids["delegation"]
    source = _Recording(spans)
    at = open_page(source)
    listed: list[str] = at.session_state["traces_table__trace_ids"]
    assert not [read for read, _ in source.reads if trace_id in read]  # the list did not rebuild it
    at.session_state["traces_table"] = {
        "selection": {"rows": [listed.index(trace_id)], "columns": [], "cells": []}
    }
    at.run()
    assert not at.exception, at.exception
    assert at.query_params["trace_id"] == trace_id
    assert "Search this trace" in [t.label for t in at.text_input]
    other = next(s.span_id for s in spans if s.trace_id == trace_id and s.parent_span_id)
    at.query_params["span"] = other  # what a click on a tree row writes
    at.run()
    assert not at.exception, at.exception
    assert at.query_params["span"] == other and at.subheader[0].value.endswith(")")  # its detail
    reads = [thread for read, thread in source.reads if trace_id in read]
    assert len(reads) == 1 and reads[0].startswith(PREFETCH_THREAD), source.reads
