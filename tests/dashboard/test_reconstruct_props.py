"""Property tests of reconstruction on random delegation trees (hypothesis)."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from janux.tracing import conventions as c
from janux.tracing.analysis import reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.testing import DelegationSpec, LoopSpec, RoundSpec, build_trace, loop_inclusive_usage

AGENTS = st.sampled_from(["planner", "researcher", "coder", "writer"])
ROUNDS = st.lists(
    st.builds(
        RoundSpec,
        st.integers(0, 5000),
        st.integers(0, 1000),
        st.sampled_from([None, 0.001, 0.25, 1e-7, 3.3]),
    ),
    max_size=3,
)


def _loop(agent: str, rounds: list[RoundSpec], groups: list[list[LoopSpec]], failed: bool) -> LoopSpec:
    delegations = []
    for attempts in groups:
        for attempt in attempts[:-1]:
            attempt.error_type = c.ERROR_TIMEOUT
        status = c.STATUS_DENIED if not attempts else c.STATUS_COMPLETED
        target = attempts[-1].agent if attempts else "denied-agent"
        delegations.append(DelegationSpec(target, attempts=attempts, status=status))
    return LoopSpec(agent, rounds=rounds, delegations=delegations, error_type="boom" if failed else None)


LOOPS = st.recursive(
    st.builds(LoopSpec, AGENTS, ROUNDS),
    lambda kids: st.builds(
        _loop, AGENTS, ROUNDS, st.lists(st.lists(kids, max_size=3), max_size=3), st.booleans()
    ),
    max_leaves=25,
)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _count_loops(loop: LoopSpec) -> int:
    return 1 + sum(_count_loops(a) for d in loop.delegations for a in d.attempts)


def _attempt_counts(loop: LoopSpec) -> list[int]:
    out = []
    for d in loop.delegations:
        out.append(len(d.attempts))
        for a in d.attempts:
            out.extend(_attempt_counts(a))
    return out


@SETTINGS
@given(LOOPS, st.booleans())
def test_sums_and_attempts_hold_on_any_tree(root: LoopSpec, janux: bool) -> None:
    spans = build_trace(root, janux=janux)
    view = reconstruct(spans, estimate=False)
    assert view.failed_checks == []
    assert len(view.nodes) == _count_loops(root)
    expected = sorted(_attempt_counts(root))
    if not janux:
        # Without janux events a tool call that ran no agent is an ordinary tool call.
        expected = [n for n in expected if n]
    assert sorted(len(d.attempts) for d in view.delegations) == expected
    tin, tout, cost, unpriced = loop_inclusive_usage(root)
    top = view.nodes[0].inclusive
    assert (top.input_tokens, top.output_tokens) == (tin, tout)
    assert (view.computed.input_tokens, view.computed.output_tokens) == (tin, tout)
    if janux:
        assert view.bill is not None
        assert top.unpriced_tokens == unpriced
        assert (top.cost is None) == (cost is None)
        if cost is not None:
            assert top.cost == pytest.approx(cost, rel=1e-9, abs=1e-12)
    for node in view.nodes:
        assert node.inclusive.total_tokens >= node.own.total_tokens
    for delegation in view.delegations:
        assert [a.number for a in delegation.attempts] == list(range(1, len(delegation.attempts) + 1))


@SETTINGS
@given(LOOPS, st.randoms(use_true_random=False))
def test_order_and_duplicates_do_not_change_the_result(root: LoopSpec, rnd: random.Random) -> None:
    spans = build_trace(root)
    dupes = [s for s in spans if rnd.random() < 0.3]
    mixed = spans + dupes
    rnd.shuffle(mixed)
    a, b = reconstruct(spans, estimate=False), reconstruct(mixed, estimate=False)
    assert b.issues.duplicates == len(dupes)
    assert [(n.agent, n.own, n.inclusive) for n in a.nodes] == [
        (n.agent, n.own, n.inclusive) for n in b.nodes
    ]
    assert [(d.target, d.status, len(d.attempts)) for d in a.delegations] == [
        (d.target, d.status, len(d.attempts)) for d in b.delegations
    ]


@SETTINGS
@given(LOOPS, st.randoms(use_true_random=False))
def test_dropped_spans_become_counted_orphans(root: LoopSpec, rnd: random.Random) -> None:
    spans = build_trace(root, janux=False)  # own usage then comes from the surviving chat spans
    kept = [s for s in spans if rnd.random() < 0.7]
    ids = {s.span_id for s in kept}
    view = reconstruct(kept, estimate=False)
    expected = sorted(s.span_id for s in kept if s.parent_span_id and s.parent_span_id not in ids)
    assert sorted(view.issues.orphans) == expected
    assert sorted(view.index.order) == list(range(len(kept)))
    chats = [s for s in kept if s.name.startswith(c.OP_CHAT)]
    # An agent whose model calls were all dropped (nothing below it carries usage) reports what it
    # aggregated: that is its own usage then (`readers.agent_usage`), unless spans are orphaned.
    adopted = [pos for n, pos in zip(view.nodes, view.tree.node_span, strict=True) if pos in n.chat_spans]
    assert not adopted or not view.issues.orphans
    reported = sum(view.index.spans[pos].attributes[c.GEN_AI_USAGE_INPUT_TOKENS] for pos in adopted)
    read = sum(s.attributes[c.GEN_AI_USAGE_INPUT_TOKENS] for s in chats)
    assert view.computed.input_tokens == read + reported
    assert sum(len(n.chat_spans) for n in view.nodes) == len(chats) + len(adopted)


def _acyclic(parent: list[int]) -> bool:
    for start in range(len(parent)):
        seen = 0
        node = start
        while node != -1:
            node = parent[node]
            seen += 1
            if seen > len(parent):
                return False
    return True


@SETTINGS
@given(LOOPS, st.randoms(use_true_random=False))
def test_random_parent_links_never_loop_or_lose_spans(root: LoopSpec, rnd: random.Random) -> None:
    spans = build_trace(root)
    ids = [s.span_id for s in spans]
    rewired = [
        dataclasses.replace(s, parent_span_id=rnd.choice(ids)) if rnd.random() < 0.5 else s for s in spans
    ]
    view = reconstruct(rewired, estimate=False)
    index = view.index
    assert sorted(index.order) == list(range(len(spans)))
    assert _acyclic(index.parent)
    cut = set(view.issues.cycles)
    for pos, span in enumerate(index.spans):
        if index.parent[pos] == -1 and span.parent_span_id:
            assert span.span_id in cut or span.span_id in view.issues.orphans
    assert len(cut) == len(view.issues.cycles)


@SETTINGS
@given(LOOPS, st.randoms(use_true_random=False))
def test_skew_is_flagged_and_timestamps_kept(root: LoopSpec, rnd: random.Random) -> None:
    spans = build_trace(root)
    children = [s for s in spans if s.parent_span_id]
    if not children:
        return
    victim = rnd.choice(children)
    early = victim.start_ns - 10**9
    moved: list[SpanRecord] = [dataclasses.replace(s, start_ns=early) if s is victim else s for s in spans]
    view = reconstruct(moved, estimate=False)
    assert victim.span_id in view.issues.clock_skew
    assert view.span(victim.span_id).start_ns == early  # type: ignore[union-attr]
