"""Issue 20, item 8: whatever goes wrong, wherever it goes wrong, a run closes what it opened.

Hypothesis builds a random delegation tree (depth, fan-out, parallel or sequential rounds, a
transfer, retries, timeouts, budgets, reused sessions called twice at once, fallbacks) and injects
one failure (an `Exception`, a custom `BaseException`, `KeyboardInterrupt`, `SystemExit`, a stray
`CancelledError`, a cancellation of the turn, a call cancelling its own task, a stall past a
timeout) at one await point (a model call, a tool, a listener, a fallback handler). After every
run: no span left open, every HANDOFF_START paired with its HANDOFF_END (in the trace and in the
turn's events), no task of the turn still running, and the root's bill equal to the sum of the
exported loops' `janux.turn.*`.

Each example runs in its own event loop (`asyncio.run`), because `KeyboardInterrupt` and
`SystemExit` leave an event loop the way they leave a program. `make test` runs a bounded number of
examples; `make test-nightly` (HYPOTHESIS_PROFILE=nightly) runs many more.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from janux.runtime import Agent, HandoffPolicy, OnFailure, SessionMode, Subagent, function_tool
from janux.runtime.model import Message, ModelError, ModelResponse, ModelUsage, ToolCall
from janux.runtime.testing import FunctionModel
from tests.support.run_audit import RunAudit, live_tasks

NIGHTLY = os.environ.get("HYPOTHESIS_PROFILE") == "nightly"
EXAMPLES = settings.default.max_examples if NIGHTLY else 100
"""Bounded in `make test`; the nightly profile's count (tests/conftest.py) in `make test-nightly`."""


class Abort(BaseException):
    """A user's own BaseException."""


ACTIONS = ("error", "abort", "keyboard", "exit", "stray", "cancel_turn", "cancel_self", "stall", "none")


@dataclass
class Node:
    """One agent of the tree and how its caller delegates to it."""

    name: str
    children: list[Node] = field(default_factory=list)
    parallel: bool = True
    work: bool = False
    retries: int = 0
    timeout_ms: int = 0
    fallback: bool = False
    max_tokens: int | None = None
    max_ms: float | None = None
    reuse: bool = False
    fails: bool = False
    """Its model fails on every call (a failure of its own, besides the planned one): its caller
    retries, fails the delegation or falls back to the primary, so the fallback site is reached."""


@dataclass
class Plan:
    """Where the one failure strikes, and what it is."""

    site: str
    action: str
    turn: asyncio.Task[Any] | None = None
    fired: bool = False

    async def at(self, site: str) -> None:
        """An await point: strikes once, when `site` is the planned one."""
        await asyncio.sleep(0)
        if self.fired or site != self.site:
            return
        self.fired = True
        await _strike(self.action, self.turn)


async def _strike(action: str, turn: asyncio.Task[Any] | None) -> None:
    if action == "error":
        raise ValueError("injected")
    if action == "abort":
        raise Abort("injected")
    if action == "keyboard":
        raise KeyboardInterrupt
    if action == "exit":
        raise SystemExit(3)
    if action == "stray":
        upstream = asyncio.get_running_loop().create_future()
        upstream.cancel()
        await upstream
    if action == "cancel_turn" and turn is not None:
        turn.cancel()
        await asyncio.sleep(0)
    if action == "cancel_self":
        current = asyncio.current_task()
        assert current is not None
        current.cancel()
        await asyncio.sleep(0)
    if action == "stall":
        await asyncio.sleep(0.05)  # past every timeout and max_ms the tree may have


_names = iter(range(10**9))


@st.composite
def trees(draw: st.DrawFn, depth: int = 0) -> Node:
    """A random agent with up to 3 subagents, 3 levels deep at most."""
    node = Node(
        name=f"a{next(_names)}",
        parallel=draw(st.booleans()),
        work=draw(st.booleans()),
        retries=draw(st.integers(0, 1)),
        timeout_ms=draw(st.sampled_from([0, 0, 20])),
        fallback=draw(st.booleans()),
        max_tokens=draw(st.sampled_from([None, None, 40])),
        max_ms=draw(st.sampled_from([None, None, 30.0])),
        reuse=draw(st.booleans()),
        fails=depth > 0 and draw(st.sampled_from([False, False, True])),
    )
    if depth < 2:
        node.children = draw(st.lists(trees(depth + 1), max_size=3 - depth))
    return node


def _all(node: Node) -> list[Node]:
    return [node, *(n for child in node.children for n in _all(child))]


def _model(node: Node, plan: Plan, transfer_to: str | None) -> FunctionModel:
    async def answer(messages: list[Message], tools: Any, settings: Any) -> ModelResponse:
        await plan.at(f"model:{node.name}")
        if node.fails:
            raise ModelError("upstream returned 503", "server_error", 503)
        usage = ModelUsage(input_tokens=10, output_tokens=5)
        if messages[-1].role == "tool":
            return ModelResponse(text="done", usage=usage)
        calls = [ToolCall("", f"delegate.{child.name}", '{"task": "go"}') for child in node.children]
        # A reused session called twice in one round: the second call waits for the first's lock.
        calls += [
            ToolCall("", f"delegate.{child.name}", '{"task": "again"}')
            for child in node.children
            if child.reuse
        ]
        if node.work:
            calls.append(ToolCall("", "work", "{}"))
        if transfer_to is not None:
            calls.append(ToolCall("", f"handoff.{transfer_to}", "{}"))
        numbered = tuple(ToolCall(f"{node.name}-{i}", c.name, c.arguments) for i, c in enumerate(calls))
        return ModelResponse(text="", tool_calls=numbered, usage=usage, finish_reason="tool_calls")

    return FunctionModel(answer, model_name=f"m-{node.name}")


def _agent(node: Node, plan: Plan, *, root: bool, transfer: bool) -> Agent:
    @function_tool
    async def work() -> str:
        """Some work that awaits."""
        await plan.at(f"tool:{node.name}")
        return "worked"

    async def fallback(record: Any, arguments: Any) -> str:
        await plan.at("fallback")
        return "served by the primary"

    async def listener(event: dict[str, Any]) -> None:
        await plan.at(f"listener:{event['event']}")

    target = Agent("desk", model=_model(Node("desk"), plan, None)) if transfer else None
    on_error = OnFailure.FALLBACK_TO_PRIMARY if any(c.fallback for c in node.children) else OnFailure.FAIL
    timeout = max((c.timeout_ms for c in node.children), default=0)
    return Agent(
        node.name,
        model=_model(node, plan, "desk" if transfer else None),
        tools=[work] if node.work else [],
        subagents=[
            Subagent(
                agent=_agent(child, plan, root=False, transfer=False),
                max_turns=3,
                max_tokens=child.max_tokens,
                max_ms=child.max_ms,
                session=SessionMode.REUSE_SESSION if child.reuse else SessionMode.NEW_SESSION,
            )
            for child in node.children
        ],
        handoffs=[target] if target is not None else [],
        parallel_tool_calls=node.parallel,
        policy=HandoffPolicy(max_depth=3, max_retries=node.retries, timeout_ms=timeout, on_error=on_error),
        fallback_handler=fallback,
        listeners=[listener] if root else [],
    )


def _sites(tree: Node, transfer: bool) -> list[str]:
    sites = ["listener:HANDOFF_START", "listener:HANDOFF_END", "fallback"]
    for node in _all(tree):
        sites.append(f"model:{node.name}")
        if node.work:
            sites.append(f"tool:{node.name}")
    if transfer:
        sites.append("model:desk")
    return sites


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Node, bool, Plan]:
    """A tree, whether its root transfers, and the failure planned for one of its await points."""
    tree = draw(trees())
    transfer = draw(st.booleans())
    site = draw(st.sampled_from(_sites(tree, transfer)))
    return tree, transfer, Plan(site, draw(st.sampled_from(ACTIONS)))


@dataclass
class Outcome:
    """What one run left behind."""

    error: BaseException | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    alive: list[asyncio.Task[Any]] = field(default_factory=list)


async def _run(agent: Agent, plan: Plan, audit: RunAudit, outcome: Outcome) -> None:
    before = asyncio.all_tasks()
    turn = asyncio.create_task(agent.run("go", tracer_provider=audit.provider))
    plan.turn = turn
    try:
        outcome.events = (await turn).handoff_events
    except BaseException as exc:  # every way out is under test
        outcome.error = exc
        outcome.events = getattr(exc, "handoff_events", [])
    outcome.alive = live_tasks(before)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=not NIGHTLY,
)
@given(scenarios())
def test_every_run_closes_what_it_opened_whatever_fails_where(scenario: tuple[Node, bool, Plan]) -> None:
    tree, _, plan = scenario
    outcome = check_run(*scenario)
    event(f"{plan.action} at {plan.site.split(':')[0]}: {'fired' if plan.fired else 'not reached'}")
    event(f"agents: {len(_all(tree))}, ended by {type(outcome.error).__name__}")


def _explicit_tree() -> Node:
    """A root that works and delegates to a subagent that works and delegates in turn, and to one
    whose model fails, retried once and then served by the primary (the fallback site)."""
    leaf = Node(f"a{next(_names)}", work=True)
    middle = Node(f"a{next(_names)}", children=[leaf], work=True)
    failing = Node(f"a{next(_names)}", fails=True, fallback=True, retries=1)
    return Node(f"a{next(_names)}", children=[middle, failing], work=True, retries=1)


def explicit_scenarios() -> list[tuple[Node, bool, Plan]]:
    """Every action at every kind of site (the turn's model, a subagent's model two levels down, a
    tool, each listener event, the fallback handler, the transfer target's model): the random
    examples need not draw each, so each is run here on a tree that reaches it."""
    found = []
    for action in ACTIONS:
        tree = _explicit_tree()
        middle, _ = tree.children
        sites = [f"model:{tree.name}", f"model:{middle.children[0].name}", f"tool:{middle.name}",
                 "listener:HANDOFF_START", "listener:HANDOFF_END", "fallback", "model:desk"]  # fmt: skip
        found += [(_explicit_tree_like(tree), True, Plan(site, action)) for site in sites]
    return found


def _explicit_tree_like(tree: Node) -> Node:
    """A fresh copy of `tree` with the same names (each run builds its own agents from it)."""
    return Node(tree.name, [_explicit_tree_like(c) for c in tree.children], tree.parallel, tree.work,
                tree.retries, tree.timeout_ms, tree.fallback, tree.max_tokens, tree.max_ms, tree.reuse,
                tree.fails)  # fmt: skip


def test_every_action_strikes_at_every_kind_of_site() -> None:
    reached = set()
    for tree, transfer, plan in explicit_scenarios():
        check_run(tree, transfer, plan)
        assert plan.fired, (plan.action, plan.site)  # the planned point was reached: the case ran
        reached.add((plan.action, plan.site.split(":")[0]))
    kinds = ("model", "tool", "listener", "fallback")
    assert reached == {(action, site) for action in ACTIONS for site in kinds}


def check_run(tree: Node, transfer: bool, plan: Plan) -> Outcome:
    """Run `tree` (its root transferring to `desk` when `transfer`) with `plan`'s failure and check
    that the run closed what it opened."""
    agent = _agent(tree, plan, root=True, transfer=transfer)
    audit = RunAudit()
    outcome = Outcome()
    try:
        asyncio.run(_run(agent, plan, audit, outcome))
    except (KeyboardInterrupt, SystemExit) as exc:
        # Raised in a call's own task, they leave the event loop; asyncio.run then cancelled the rest.
        outcome.error = exc
        outcome.events = getattr(exc, "handoff_events", [])
    assert audit.problems() == []
    assert outcome.alive == []
    starts = Counter(e["handoffId"] for e in outcome.events if e["event"] == "HANDOFF_START")
    ends = Counter(e["handoffId"] for e in outcome.events if e["event"] == "HANDOFF_END")
    if outcome.events or outcome.error is None:
        assert starts == ends and all(n == 1 for n in ends.values())
    if plan.fired and plan.action in ("error", "stray") and plan.site not in _turn_models(tree):
        # An Exception or a stray CancelledError below the turn's own loop is absorbed: the turn answers.
        assert outcome.error is None
    return outcome


def _turn_models(tree: Node) -> set[str]:
    """The model sites of the turn's own loop (its entry agent, and the transfer target)."""
    return {f"model:{tree.name}", "model:desk"}
