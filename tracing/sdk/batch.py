"""The span queue and its export thread: what `BoundedSpanProcessor` does on the agent's thread is one
deque append (plus a wake-up when a batch is ready), everything else happens on the export thread.

`SpanAccounting` owns the queue and the counts of every span's fate. Admission takes no lock: the
queue's length is the admission state (`admitted` = taken by an export + still queued). A lock
guards only what several threads update: taking a batch, counting an export's outcome, and the
(rare) refusals.

`BatchWorker` calls the exporter on its own thread: full batches when woken, whatever is queued
after `schedule_delay_ms`, on `force_flush` and at shutdown. One thread hand-over per batch, as in
the SDK's processor: each hand-over to a thread that waits for the GIL costs the agent's thread
(a call thread per export, waited for by the worker, made spans twice as expensive). An exporter
that hangs holds only this thread: the queue fills, new spans are refused and counted, and
`force_flush` and shutdown stop waiting after their timeouts; shutdown counts the batch still in
the exporter's hands as dropped, whatever that call returns later.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import deque
from collections.abc import Callable

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, set_value
from opentelemetry.sdk.trace import ReadableSpan

from janux.tracing.sdk.settings import BatchSettings


class SpanAccounting:
    """The export queue and counts of spans admitted, handed to the exporter, exported and dropped."""

    def __init__(self, capacity: int) -> None:
        """`capacity` is the most spans that may wait for export at once."""
        self._capacity = capacity
        self.queue: deque[ReadableSpan] = deque()
        """Ended spans waiting for export, oldest first (appended without a lock)."""
        self._lock = threading.Lock()
        self.handed_off = 0
        """Spans taken from the queue by an export call (or written off at shutdown)."""
        self.exported = 0
        """Spans the exporter acknowledged."""
        self.dropped_queue_full = 0
        """Spans refused because the queue was full."""
        self.dropped_export = 0
        """Spans in batches that failed, raised, timed out or met a still-hanging export."""
        self.dropped_shutdown = 0
        """Spans ended after shutdown, or still queued (or in a hanging export) when shutdown ended."""
        self._in_flight = 0
        self._books_closed = False

    @property
    def capacity(self) -> int:
        """The most spans that may wait for export at once."""
        return self._capacity

    @property
    def admitted(self) -> int:
        """Spans accepted into the queue."""
        with self._lock:
            return self.handed_off + len(self.queue)

    @property
    def dropped(self) -> int:
        """Every span that will never reach the exporter's destination."""
        with self._lock:
            return self.dropped_queue_full + self.dropped_export + self.dropped_shutdown

    @property
    def pending(self) -> int:
        """Spans admitted but not yet taken by an export call."""
        return len(self.queue)

    def refuse_full(self) -> None:
        """Count one span refused because the queue was full."""
        with self._lock:
            self.dropped_queue_full += 1

    def record_after_shutdown(self) -> None:
        """A span ended after shutdown."""
        with self._lock:
            self.dropped_shutdown += 1

    def take(self, most: int) -> list[ReadableSpan]:
        """Remove and return up to `most` of the oldest queued spans (counted as handed off)."""
        with self._lock:
            pop = self.queue.popleft
            batch = [pop() for _ in range(min(most, len(self.queue)))]
            self.handed_off += len(batch)
            self._in_flight += len(batch)
            return batch

    def record_batch(self, count: int, exported: bool) -> None:
        """An export call of `count` spans succeeded or not (ignored once shutdown wrote it off)."""
        with self._lock:
            if self._books_closed:
                return
            self._in_flight -= count
            if exported:
                self.exported += count
            else:
                self.dropped_export += count

    def reset_after_fork(self) -> None:
        """In a forked child: the parent's queued spans are the parent's to export; its lock may
        have been held by a thread that does not exist here."""
        self._lock = threading.Lock()
        self.queue.clear()

    def write_off_pending(self) -> int:
        """Count every still-queued span, and any batch a hanging export still holds, as dropped
        (shutdown is over); return how many."""
        with self._lock:
            queued = len(self.queue)
            self.queue.clear()
            left = queued + self._in_flight
            self.handed_off += queued
            self.dropped_shutdown += left
            self._in_flight = 0
            self._books_closed = True
            return left


class BatchWorker:
    """One daemon thread exporting queued spans in batches of at most `max_export_batch_size`."""

    def __init__(
        self,
        accounting: SpanAccounting,
        export: Callable[[list[ReadableSpan]], object],
        batch: BatchSettings,
    ) -> None:
        """Export `accounting.queue` through `export` (which must not raise) under `batch` limits."""
        self._accounting = accounting
        self._export = export
        self._batch_size = batch.max_export_batch_size
        self._delay_s = batch.schedule_delay_ms / 1000
        self._join_s = batch.export_timeout_ms / 1000
        self._stopping = False
        self._start()
        if hasattr(os, "register_at_fork"):  # a forked child gets its own (empty) queue and thread
            reinit = weakref.WeakMethod(self._after_fork)

            def after_fork_in_child() -> None:
                method = reinit()
                if method is not None:
                    method()

            os.register_at_fork(after_in_child=after_fork_in_child)

    def _start(self) -> None:
        self.wake = threading.Event()
        """Set by the processor when a full batch is queued (and by `flush` and `stop`)."""
        self._flushes: list[threading.Event] = []
        self._thread = threading.Thread(target=self._run, name="janux-span-batcher", daemon=True)
        self._thread.start()

    def _after_fork(self) -> None:
        self._accounting.reset_after_fork()
        if not self._stopping:
            self._start()

    def _run(self) -> None:
        # The exporter's own HTTP/gRPC calls must not be traced (the SDK processor does the same).
        attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        while not self._stopping:
            timed_out = not self.wake.wait(self._delay_s)
            self.wake.clear()
            flushes, self._flushes = self._flushes, []
            self._export_queued(everything=timed_out or bool(flushes) or self._stopping)
            for done in flushes:
                done.set()
        self._export_queued(everything=True)

    def _export_queued(self, everything: bool) -> None:
        """Export full batches, or every queued span with `everything`."""
        queue = self._accounting.queue
        while queue and (everything or len(queue) >= self._batch_size):
            self._export(self._accounting.take(self._batch_size))

    def flush(self, timeout_s: float) -> bool:
        """Have the export thread export everything queued now; False if it did not finish within
        `timeout_s` (the exporter is slow or hanging)."""
        done = threading.Event()
        self._flushes.append(done)
        self.wake.set()
        return done.wait(timeout_s)

    def stop(self) -> None:
        """Export what is queued and end the thread, waiting at most one export timeout."""
        self._stopping = True
        self.wake.set()
        self._thread.join(self._join_s)
