"""Blocking calls bounded in time: `BoundedCall` runs a call on a daemon thread and stops waiting for
it after a timeout.

The thread is kept for the next call (a thread started per export batch would be paid for on the
agent's thread) and leaves after `RUNNER_IDLE_S` without work. A call
that times out keeps its thread: while it still hangs, later calls answer "busy" at once instead
of piling up threads; once it returns, that thread leaves.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, Literal, TypeVar

T = TypeVar("T")

OutcomeKind = Literal["ok", "failure", "error", "timeout", "busy"]
"""How one bounded call ended: returned success, returned failure, raised, timed out, or was
refused because an earlier call is still hanging."""

RUNNER_IDLE_S = 30.0
"""How long a call thread waits for the next call before it leaves."""


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """Result of one `BoundedCall.run`."""

    kind: OutcomeKind
    value: T | None = None
    error: BaseException | None = None


class _Runner:
    """One daemon thread running the calls handed to it, one at a time."""

    def __init__(self, name: str, owner: BoundedCall) -> None:
        self._calls: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._owner = owner
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def submit(self, call: Callable[[], object]) -> None:
        """Run `call` next."""
        self._calls.put(call)

    def retire(self) -> None:
        """Leave after the current call (the caller stopped waiting for it)."""
        self._calls.put(None)

    def _serve(self) -> None:
        while True:
            try:
                call = self._calls.get(timeout=RUNNER_IDLE_S)
            except queue.Empty:
                if self._owner.release_idle(self):
                    return
                continue  # a call was handed over just now
            if call is None:
                return
            call()


class BoundedCall:
    """Runs a blocking call on a daemon thread and stops waiting for it after a timeout.

    A daemon thread is used (not an executor) so a call that never returns cannot keep the
    interpreter from exiting. The caller's context is copied so the SDK's "suppress
    instrumentation" flag reaches the exporter's own HTTP/gRPC calls.
    """

    def __init__(self, name: str) -> None:
        """`name` labels the call threads (visible in thread dumps)."""
        self._name = name
        self._hanging: _Runner | None = None
        self._idle: list[_Runner] = []
        self._lock = threading.Lock()

    def run(self, func: Callable[[], T], timeout_s: float) -> Outcome[T]:
        """Call `func`, waiting at most `timeout_s`; never raises."""
        with self._lock:
            if self._hanging is not None and self._hanging.thread.is_alive():
                return Outcome("busy")
            self._hanging = None
            runner = self._idle.pop() if self._idle else None
        if runner is None:
            runner = _Runner(self._name, self)
        box: dict[str, Any] = {}
        done = threading.Event()

        def target() -> None:
            try:
                box["value"] = func()
            except BaseException as error:  # a broken exporter must not kill the call thread
                box["error"] = error
            finally:
                done.set()

        runner.submit(partial(contextvars.copy_context().run, target))
        if not done.wait(timeout_s):
            runner.retire()
            with self._lock:
                self._hanging = runner
            return Outcome("timeout")
        with self._lock:
            self._idle.append(runner)
        if "error" in box:
            return Outcome("error", error=box["error"])
        return Outcome("ok", value=box.get("value"))

    def release_idle(self, runner: _Runner) -> bool:
        """Called by a runner that waited `RUNNER_IDLE_S` for work: True (and forgotten) when it may
        leave, False when a call was handed to it meanwhile."""
        with self._lock:
            if runner in self._idle:
                self._idle.remove(runner)
                return True
            return False
