"""What every run must leave behind, however it ended: every span ended, every HANDOFF_START paired,
and a bill that reconciles with the exported loops (contract invariants 1-3).

`RunAudit` is a local TracerProvider exporting to memory, plus a span processor that remembers which
spans started and have not ended (an unended span is never exported, so the exporter alone cannot
tell).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from janux.tracing import conventions as c
from janux.tracing.records import attr_str
from tests.support.contract_checker import Traced, invariant_problems


class OpenSpans(SpanProcessor):
    """Spans started and not (yet) ended, by span id."""

    def __init__(self) -> None:
        self.open: dict[int, str] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.open[span.context.span_id] = span.name

    def on_end(self, span: ReadableSpan) -> None:
        assert span.context is not None
        self.open.pop(span.context.span_id, None)


@dataclass
class RunAudit(Traced):
    """A provider for `agent.run(..., tracer_provider=audit.provider)` and the checks of its trace."""

    spans: OpenSpans = field(default_factory=OpenSpans)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.provider.add_span_processor(self.spans)

    def problems(self) -> list[str]:
        """Open spans, unpaired HANDOFF events, and broken invariants (empty when all is right)."""
        found = [f"span never ended: {name}" for name in self.spans.open.values()]
        records = self.records()
        for span in records:
            if attr_str(span.attributes, c.GEN_AI_TOOL_TYPE) not in (
                c.TOOL_TYPE_DELEGATE,
                c.TOOL_TYPE_HANDOFF,
            ):
                continue
            names = [event.name for event in span.events]
            if names != [c.EVENT_HANDOFF_START, c.EVENT_HANDOFF_END]:
                found.append(f"{span.name}: events {names}")
        return found + invariant_problems(records)

    def bill_and_turns(self) -> tuple[int, int]:
        """(root's janux.bill.input_tokens, sum of every exported janux.turn.input_tokens)."""
        records = self.records()
        agents = [s for s in records if attr_str(s.attributes, c.GEN_AI_OPERATION_NAME) == c.OP_INVOKE_AGENT]
        ids = {s.span_id for s in records}
        root = next(s for s in agents if not s.parent_span_id or s.parent_span_id not in ids)
        turns = sum(int(s.attributes.get(c.JANUX_TURN_INPUT_TOKENS, 0)) for s in agents)
        return int(root.attributes.get(c.JANUX_BILL_INPUT_TOKENS, 0)), turns

    def named(self, name: str) -> list[Any]:
        """Exported spans called `name`."""
        return [s for s in self.records() if s.name == name]


def live_tasks(before: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    """Tasks started since `before` that are still running (the caller's own task excepted)."""
    return [t for t in asyncio.all_tasks() - before if t is not asyncio.current_task() and not t.done()]
