"""The memory one receiver process may spend on requests at once, shared by OTLP/HTTP and gRPC.

Every request reserves what it will hold before it holds it and gives it back once answered:
its body while it is read, then its estimated decoded size while it is decoded and stored. When
a pool is spent, a request waits its turn (first come, first served) for at most `wait_s`, then
is answered "busy, retry" (HTTP 503 / UNAVAILABLE, which OTLP clients retry with backoff). A
request that alone needs more than a pool is refused at once. So memory stays bounded however
many large requests arrive together, and the event loop never blocks: async callers await,
gRPC's threads wait.

Bodies and decoding draw on two pools (`ProcessBudget`). With one pool, requests holding their
bodies could fill it and then all wait for room to decode: none would ever get it. With two, a
request waits for the decoding pool only while it holds body memory, and a decoding request
never waits again (it decodes, commits and leaves), so every wait ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from janux.errors import JanuxError

DEFAULT_BUDGET_BYTES = 384 * 1024 * 1024
"""Default memory budget of one receiver process (both pools)."""
DEFAULT_WAIT_S = 10.0
"""Default longest wait for room in the budget."""


class BudgetExceeded(JanuxError):
    """One request needs more than the whole budget (HTTP 413 / RESOURCE_EXHAUSTED)."""


class BudgetBusy(JanuxError):
    """No room in the budget within the wait (HTTP 503 / UNAVAILABLE: retry later)."""


@dataclass(slots=True)
class _Waiter:
    size: int
    wake: Callable[[], None]
    granted: bool = False


@dataclass(slots=True)
class MemoryBudget:
    """A count of reserved bytes, at most `total`, with a first-come-first-served queue of waiters."""

    total: int = DEFAULT_BUDGET_BYTES
    """Bytes that may be reserved at once."""
    wait_s: float = DEFAULT_WAIT_S
    """Longest wait for room before `BudgetBusy`."""
    on_drained: Callable[[], None] | None = None
    """Called (under the budget's lock: it must be quick) when the budget empties after more than a
    quarter of it was in use: a burst is over, its memory may be given back to the system."""
    _used: int = 0
    _high: int = 0
    _waiters: deque[_Waiter] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def used(self) -> int:
        """Bytes reserved right now."""
        with self._lock:
            return self._used

    def reserve(self, size: int) -> None:
        """Reserve `size` bytes, waiting on this thread (for gRPC's handler threads)."""
        ready = threading.Event()
        waiter = self._enter(size, ready.set)
        if waiter is not None and not ready.wait(self.wait_s):
            self._leave(waiter)
            raise self._busy()

    async def reserve_async(self, size: int) -> None:
        """Reserve `size` bytes, waiting without blocking the event loop."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not ready.done():
                ready.set_result(None)

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the server is stopping
                loop.call_soon_threadsafe(settle)

        waiter = self._enter(size, wake)
        if waiter is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.wait_s)
        except TimeoutError:
            self._leave(waiter)
            raise self._busy() from None
        except asyncio.CancelledError:
            self._leave(waiter)
            raise

    def release(self, size: int) -> None:
        """Give back `size` reserved bytes and let waiters in, in arrival order."""
        with self._lock:
            self._used -= size
            self._admit()
            self._note_drained()

    def _enter(self, size: int, wake: Callable[[], None]) -> _Waiter | None:
        """Take `size` now (None), or queue a waiter to be woken once it is granted."""
        if size > self.total:
            raise BudgetExceeded(
                f"the request needs about {size / 2**20:,.0f} MiB, more than the receiver's memory "
                f"budget of {self.total / 2**20:,.0f} MiB"
            )
        with self._lock:
            if not self._waiters and self._used + size <= self.total:
                self._used += size
                self._high = max(self._high, self._used)
                return None
            waiter = _Waiter(size, wake)
            self._waiters.append(waiter)
            return waiter

    def _leave(self, waiter: _Waiter) -> None:
        """Leave the queue (timeout, cancellation); a grant that raced it is given back."""
        with self._lock:
            if waiter.granted:
                self._used -= waiter.size
            else:
                self._waiters.remove(waiter)
            self._admit()
            self._note_drained()

    def _busy(self) -> BudgetBusy:
        return BudgetBusy(
            f"the receiver is busy (its memory budget of {self.total / 2**20:,.0f} MiB stayed in use "
            f"for {self.wait_s:g} s); retry later"
        )

    def _admit(self) -> None:
        """Grant queued waiters in order while they fit (the caller holds the lock)."""
        while self._waiters and self._used + self._waiters[0].size <= self.total:
            waiter = self._waiters.popleft()
            waiter.granted = True
            self._used += waiter.size
            self._high = max(self._high, self._used)
            waiter.wake()

    def _note_drained(self) -> None:
        """Call `on_drained` when a burst just ended (the caller holds the lock)."""
        if self._used == 0 and self._high > self.total // 4:
            self._high = 0
            if self.on_drained is not None:
                self.on_drained()


class Reservation:
    """What one request holds of a `MemoryBudget`, grown step by step and given back once."""

    def __init__(self, budget: MemoryBudget) -> None:
        self._budget = budget
        self.size = 0
        """Bytes held."""

    async def grow_async(self, size: int) -> None:
        """Hold `size` more bytes (event loop)."""
        await self._budget.reserve_async(size)
        self.size += size

    def grow(self, size: int) -> None:
        """Hold `size` more bytes (waiting on this thread)."""
        self._budget.reserve(size)
        self.size += size

    def shrink_to(self, size: int) -> None:
        """Give back what is held beyond `size`."""
        if size < self.size:
            self._budget.release(self.size - size)
            self.size = size

    def close(self) -> None:
        """Give back everything."""
        self.shrink_to(0)


@dataclass(frozen=True, slots=True)
class ProcessBudget:
    """The two pools of one process: request bodies being read, and requests being decoded and stored."""

    bodies: MemoryBudget
    """Bytes of request bodies (as sent) being received."""
    decoding: MemoryBudget
    """Estimated decoded size of requests being decoded, stored and answered."""

    @classmethod
    def split(
        cls, total: int, wait_s: float, max_body_bytes: int, on_drained: Callable[[], None] | None = None
    ) -> ProcessBudget:
        """A quarter of `total` for bodies (at least one largest body, at most half), the rest
        for decoding; `on_drained` is called when either pool empties after a burst."""
        bodies = min(total // 2, max(max_body_bytes, total // 4))
        return cls(MemoryBudget(bodies, wait_s, on_drained), MemoryBudget(total - bodies, wait_s, on_drained))
