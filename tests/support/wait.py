"""Waiting for a condition instead of sleeping: the one deadline helper of the test suite.

A test that sleeps a fixed time and then asserts passes or fails by timing luck; one that waits
for the condition it asserts (an event, a counter, a file) fails only when the condition never
comes, and then names it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0
"""Generous: the deadline only bounds a test that is already failing, it never decides a pass."""


def wait_until(
    condition: Callable[[], T],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = 0.01,
    what: str = "the condition",
) -> T:
    """Call `condition` until it returns something truthy and return that; fail naming `what` after
    `timeout_s`. Exceptions from `condition` propagate (a dead process should fail the test at once)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(interval_s)
