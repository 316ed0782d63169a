"""Damaged traces: orphans, duplicates, cycles, clock skew, unfinished spans and handoffs."""

from __future__ import annotations

import dataclasses

from janux.tracing import conventions as c
from janux.tracing.analysis import reconstruct
from janux.tracing.testing import build_trace
from tests.support.contract_traces import contract_root, contract_trace


def _find(spans, prefix: str, agent: str | None = None):  # type: ignore[no-untyped-def]
    return next(
        s
        for s in spans
        if s.name.startswith(prefix) and (agent is None or s.attributes.get(c.GEN_AI_AGENT_NAME) == agent)
    )


def test_orphans_hang_under_the_incomplete_marker_with_a_count() -> None:
    spans = contract_trace()
    tool = next(s for s in spans if s.attributes.get(c.GEN_AI_TOOL_NAME) == "delegate.researcher")
    view = reconstruct([s for s in spans if s is not tool])
    assert sorted(view.issues.orphans) == sorted(s.span_id for s in spans if s.parent_span_id == tool.span_id)
    assert len(view.issues.orphans) == 2
    assert view.issues.incomplete
    assert sorted(n.agent for n in view.incomplete_roots) == ["researcher", "researcher"]
    assert all(n.incomplete and n.parent is None for n in view.incomplete_roots)
    # Their cost is still counted in the computed total; the bill check names the gap.
    assert view.computed.input_tokens == view.bill.input_tokens  # type: ignore[union-attr]
    assert [chk.name for chk in view.failed_checks] == []


def test_missing_root_keeps_every_loop() -> None:
    spans = contract_trace()
    root = next(s for s in spans if not s.parent_span_id)
    view = reconstruct([s for s in spans if s is not root])
    assert view.roots == []
    assert len(view.issues.orphans) == 7  # the planner's 2 chat spans and 5 tool spans
    assert view.bill is None
    assert sum(len(n.chat_spans) for n in view.nodes) == 7
    assert "(no agent)" in [n.agent for n in view.incomplete_roots]


def test_duplicates_are_kept_once_and_counted() -> None:
    spans = contract_trace()
    view = reconstruct(spans + spans[:5] + spans[:2])
    assert view.issues.duplicates == 7
    assert len(view.index.spans) == len(spans)
    assert view.failed_checks == []


def test_duplicate_with_an_end_replaces_an_open_copy() -> None:
    spans = contract_trace()
    open_copy = dataclasses.replace(spans[0], duration_ns=-spans[0].start_ns)
    view = reconstruct([open_copy, *spans])
    assert view.issues.duplicates == 1 and view.issues.open_spans == []


def test_cycles_are_broken_and_reported() -> None:
    spans = contract_trace()
    root = next(s for s in spans if not s.parent_span_id)
    child = next(s for s in spans if s.parent_span_id == root.span_id)
    looped = [dataclasses.replace(s, parent_span_id=child.span_id) if s is root else s for s in spans]
    view = reconstruct(looped)
    assert view.issues.cycles == [root.span_id]
    assert sorted(view.index.order) == list(range(len(spans)))
    assert [n.agent for n in view.incomplete_roots] == ["planner"]


def test_self_parent_is_a_cycle() -> None:
    spans = contract_trace()
    victim = spans[0]
    looped = [dataclasses.replace(victim, parent_span_id=victim.span_id), *spans[1:]]
    view = reconstruct(looped)
    assert view.issues.cycles == [victim.span_id]


def test_clock_skew_is_flagged_not_shifted() -> None:
    spans = contract_trace()
    chat = _find(spans, c.OP_CHAT, "writer")
    skewed_start = chat.start_ns - 10**12
    shifted = [dataclasses.replace(s, start_ns=skewed_start) if s is chat else s for s in spans]
    view = reconstruct(shifted)
    assert view.issues.clock_skew == [chat.span_id]
    assert view.span(chat.span_id).start_ns == skewed_start  # type: ignore[union-attr]
    assert view.failed_checks == []


def test_open_span_and_missing_handoff_end_are_shown() -> None:
    root = contract_root()
    root.delegations[0].drop_end = True
    spans = build_trace(root, seed=1)
    writer = _find(spans, c.OP_INVOKE_AGENT, "writer")
    spans = [dataclasses.replace(s, duration_ns=-1) if s is writer else s for s in spans]
    view = reconstruct(spans)
    researcher = view.delegations[0]
    assert researcher.status == "open" and researcher.has_start and not researcher.has_end
    assert view.issues.open_handoffs == [researcher.tool_span_id]
    assert view.issues.open_spans == [writer.span_id]
    open_rows = [f for f in view.failures if f.kind == "open"]
    assert [f.reason for f in open_rows] == ["missing HANDOFF_END"]
    writer_node = next(n for n in view.nodes if n.agent == "writer")
    assert writer_node.status == "open"
    attempt = view.delegations[2].attempts[0]
    assert attempt.status == "open" and attempt.duration_ms is None


def test_handoff_end_without_start_is_reported() -> None:
    spans = contract_trace()
    tool = next(s for s in spans if s.attributes.get(c.GEN_AI_TOOL_NAME) == "delegate.writer")
    trimmed = dataclasses.replace(tool, events=[e for e in tool.events if e.name != c.EVENT_HANDOFF_START])
    view = reconstruct([trimmed if s is tool else s for s in spans])
    assert view.issues.unpaired_ends == [tool.span_id]


def test_garbage_attribute_values_do_not_crash() -> None:
    spans = contract_trace()
    broken = [
        dataclasses.replace(
            s,
            attributes={
                **s.attributes,
                c.JANUX_TURN_INPUT_TOKENS: "many",
                c.GEN_AI_USAGE_OUTPUT_TOKENS: [1, 2],
                c.JANUX_HANDOFF_ATTEMPT: None,
                c.JANUX_HANDOFF_DURATION_MS: "fast",
            },
        )
        for s in spans
    ]
    view = reconstruct(broken)
    assert len(view.nodes) == 5
    assert any(not chk.ok for chk in view.checks)


def test_spans_of_another_trace_are_counted() -> None:
    spans = contract_trace()
    stray = dataclasses.replace(spans[0], trace_id="f" * 32, span_id="a" * 16)
    view = reconstruct([*spans, stray])
    assert view.issues.foreign_trace_ids == 1
