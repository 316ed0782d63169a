"""Deadlines that really cancel, and remember why.

`run_with_deadline` runs a coroutine as a child task and cancels that task when the deadline
passes. Before cancelling it records the reason (`timeout` for a per-attempt timeout, `max_time`
for a delegation's wall-clock budget) on a `CancelScope` held in a contextvar, so every span that
closes while the cancellation unwinds can say why it ended. Cancellation from outside propagates
into the child task as usual, so nothing keeps running in the background.

`spawn_call` starts one tool call of a parallel round as a task the runtime owns. A cancellation of
such a task counts as a cancellation of the work only when the runtime asked for it
(`cancel_and_wait`: the round is being torn down); a tool that cancels its own task has failed,
it has not cancelled the turn.
"""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

from janux.runtime.errors import DeadlineExceeded, error_type_of
from janux.tracing.conventions import ERROR_CANCELLED

T = TypeVar("T")


class CancelScope:
    """One deadline's record of why it cancelled its task (`None` while it has not fired)."""

    __slots__ = ("parent", "reason")

    def __init__(self, parent: CancelScope | None) -> None:
        self.parent = parent
        """The enclosing scope, consulted when this one did not fire."""
        self.reason: str | None = None
        """Why this scope cancelled its task."""

    def effective_reason(self) -> str | None:
        """The reason of the innermost scope (this one or an enclosing one) that fired."""
        scope: CancelScope | None = self
        while scope is not None:
            if scope.reason is not None:
                return scope.reason
            scope = scope.parent
        return None


_SCOPE: contextvars.ContextVar[CancelScope | None] = contextvars.ContextVar(
    "janux_cancel_scope", default=None
)


def cancel_reason() -> str:
    """Why the current work is being cancelled: a deadline's reason, or `cancelled`."""
    scope = _SCOPE.get()
    reason = scope.effective_reason() if scope is not None else None
    return reason or ERROR_CANCELLED


_CALLS: weakref.WeakKeyDictionary[asyncio.Task[Any], list[bool]] = weakref.WeakKeyDictionary()
"""Every live task `spawn_call` started, with a one-item flag: whether the runtime asked to cancel it."""


def being_cancelled() -> bool:
    """Whether the work running here is being cancelled (from outside, by a deadline, or by the round
    it belongs to).

    A `CancelledError` that surfaces while this is false was raised by something the code awaited
    (a future cancelled elsewhere), or by a tool that cancelled the call task it runs in: not a
    cancellation of this work.
    """
    task = asyncio.current_task()
    if task is None or task.cancelling() == 0:
        return False
    requested = _CALLS.get(task)
    return requested is None or requested[0]


def exit_error_type(exc: BaseException) -> str:
    """`error.type` of a span ended by `exc` passing through: why the work was cancelled, or the
    exception's type."""
    if isinstance(exc, asyncio.CancelledError) and being_cancelled():
        return cancel_reason()
    return error_type_of(exc)


def forgive_cancellation() -> None:
    """After a stray cancellation was handled as a failure: clear this task's pending cancellation
    count, so later awaits of the run (a deadline, a wait) are not mistaken for cancelled."""
    task = asyncio.current_task()
    if task is not None and task.cancelling() > 0 and not being_cancelled():
        task.uncancel()


def spawn_call(coroutine: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """Start one tool call of a parallel round as a task the runtime owns (see the module doc)."""
    task = asyncio.create_task(coroutine)
    _CALLS[task] = [False]
    return task


def _request_cancel(task: asyncio.Task[Any]) -> None:
    requested = _CALLS.get(task)
    if requested is not None:
        requested[0] = True
    task.cancel()


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel every unfinished task and wait until all have finished, even if cancelled meanwhile.

    A further cancellation of the caller while it waits is held back until the tasks are done, then
    re-raised: returning earlier would leave them running behind the caller's back.
    """
    pending = {task for task in tasks if not task.done()}
    for task in pending:
        _request_cancel(task)
    interrupted = False
    while pending:
        try:
            await asyncio.wait(pending)
        except asyncio.CancelledError:
            interrupted = True
        pending = {task for task in pending if not task.done()}
    if interrupted:
        raise asyncio.CancelledError


def _expire(scope: CancelScope, task: asyncio.Task[object], reason: str) -> None:
    if not task.done():
        scope.reason = reason
        task.cancel()


async def run_with_deadline(factory: Callable[[], Awaitable[T]], timeout_ms: float | None, reason: str) -> T:
    """Await `factory()`; after `timeout_ms` cancel it and raise `DeadlineExceeded(reason)`.

    With no timeout the coroutine runs in the current task at no extra cost.
    """
    if timeout_ms is None:
        return await factory()
    scope = CancelScope(_SCOPE.get())
    context = contextvars.copy_context()
    context.run(_SCOPE.set, scope)
    task: asyncio.Task[T] = asyncio.create_task(_call(factory), context=context)
    handle = asyncio.get_running_loop().call_later(max(timeout_ms, 0) / 1000, _expire, scope, task, reason)
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if scope.reason is not None and (current is None or current.cancelling() == 0):
            raise DeadlineExceeded(scope.reason, timeout_ms) from None
        raise
    finally:
        handle.cancel()


async def _call(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()
