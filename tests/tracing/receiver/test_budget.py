"""The memory budget: first come, first served, bounded waits, nothing leaked."""

from __future__ import annotations

import asyncio
import threading

import pytest

from janux.tracing.receiver.budget import BudgetBusy, BudgetExceeded, MemoryBudget, ProcessBudget, Reservation
from tests.support.wait import wait_until


def test_waiters_are_let_in_in_arrival_order_as_room_frees() -> None:
    budget = MemoryBudget(100, wait_s=30)
    budget.reserve(90)
    order: list[str] = []

    def take(name: str, size: int) -> None:
        budget.reserve(size)
        order.append(name)

    big = threading.Thread(target=take, args=("big", 60))
    big.start()
    wait_until(lambda: len(budget._waiters) == 1, what="the big request to queue")
    small = threading.Thread(target=take, args=("small", 5))  # would fit now, but must not overtake
    small.start()
    wait_until(lambda: len(budget._waiters) == 2, what="the small request to queue")
    assert order == []  # the small one would fit, but waits behind the big one
    budget.release(30)  # still no room for the big one: the small one keeps waiting
    assert budget.used == 60 and len(budget._waiters) == 2
    budget.release(60)
    big.join(10)
    small.join(10)
    assert sorted(order) == ["big", "small"] and budget.used == 65


def test_a_wait_ends_busy_and_leaves_nothing_reserved() -> None:
    budget = MemoryBudget(100, wait_s=0.05)
    budget.reserve(100)
    with pytest.raises(BudgetBusy, match="retry later"):
        budget.reserve(1)
    budget.release(100)
    assert budget.used == 0 and not budget._waiters


def test_more_than_the_whole_budget_is_refused_at_once() -> None:
    with pytest.raises(BudgetExceeded, match="more than the receiver's memory budget"):
        MemoryBudget(100).reserve(101)


async def test_async_waiters_do_not_block_the_loop_and_cancellation_gives_back() -> None:
    budget = MemoryBudget(100, wait_s=30)
    budget.reserve(100)
    waiting = asyncio.create_task(budget.reserve_async(50))
    await asyncio.sleep(0)  # the loop keeps running while the task waits
    assert len(budget._waiters) == 1
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert not budget._waiters
    granted = asyncio.create_task(budget.reserve_async(50))
    await asyncio.sleep(0)
    budget.release(100)
    await asyncio.wait_for(granted, 10)
    assert budget.used == 50


def test_a_reservation_grows_shrinks_and_gives_everything_back() -> None:
    budget = MemoryBudget(100)
    reservation = Reservation(budget)
    reservation.grow(40)
    reservation.grow(30)
    reservation.shrink_to(50)
    assert budget.used == 50
    reservation.close()
    reservation.close()
    assert budget.used == 0


def test_the_process_budget_keeps_room_for_one_largest_body() -> None:
    split = ProcessBudget.split(400, 1, max_body_bytes=16)
    assert (split.bodies.total, split.decoding.total) == (100, 300)
    assert ProcessBudget.split(64, 1, max_body_bytes=24).bodies.total == 24
