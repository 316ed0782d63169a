"""Conversations (`gen_ai.conversation.id`) as sessions: their turns in order, each turn's cost,
handoffs and failures, read off the trace list's rows (one trace is one turn)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis.facts import TraceSummary


@dataclass(slots=True)
class Conversation:
    """One conversation and its turns, oldest first."""

    conversation_id: str
    """`gen_ai.conversation.id` of its turns' roots."""
    turns: list[TraceSummary] = field(default_factory=list)
    """Its traces, oldest first."""

    @property
    def cost(self) -> float | None:
        """Summed recorded bill; None when no turn recorded one."""
        billed = [t.bill_cost for t in self.turns if t.bill_cost is not None]
        return sum(billed) if billed else None

    @property
    def unbilled_turns(self) -> int:
        """Turns without a recorded bill (their cost is not in `cost`)."""
        return sum(1 for t in self.turns if t.bill_cost is None)


def conversations(summaries: list[TraceSummary]) -> list[Conversation]:
    """The conversations of these traces (traces without a conversation id left out), the most
    recently active first, each with its turns oldest first."""
    found: dict[str, Conversation] = {}
    for summary in summaries:
        if summary.conversation_id:
            found.setdefault(summary.conversation_id, Conversation(summary.conversation_id)).turns.append(
                summary
            )
    for conversation in found.values():
        conversation.turns.sort(key=lambda t: (t.start_ns, t.trace_id))
    return sorted(found.values(), key=lambda conv: -conv.turns[-1].start_ns)


_CONVERSATION_COLUMNS = [
    "conversation", "turns", "first turn (UTC)", "last turn (UTC)", "cost USD", "turns without a bill",
    "delegations", "failed handoffs", "error spans",
]  # fmt: skip


def conversations_frame(found: list[Conversation]) -> pd.DataFrame:
    """One row per conversation: turns, first and last turn, summed bill, handoffs and failures."""
    rows = [
        {
            "conversation": conv.conversation_id,
            "turns": len(conv.turns),
            "first turn (UTC)": fmt.utc(conv.turns[0].start_ns),
            "last turn (UTC)": fmt.utc(conv.turns[-1].start_ns),
            "cost USD": conv.cost,
            "turns without a bill": conv.unbilled_turns,
            "delegations": sum(t.delegations for t in conv.turns),
            "failed handoffs": sum(t.failed_handoffs for t in conv.turns),
            "error spans": sum(t.error_spans for t in conv.turns),
        }
        for conv in found
    ]
    return pd.DataFrame(rows, columns=_CONVERSATION_COLUMNS)


def turns_frame(conversation: Conversation) -> pd.DataFrame:
    """One row per turn, in order: its root agent, cost, handoffs and failures, and its trace."""
    rows = [
        {
            "turn": number,
            "started (UTC)": fmt.utc(t.start_ns),
            "agents": t.agents_shown,
            "cost USD": t.bill_cost,
            "delegations": t.delegations,
            "transfers": t.transfers,
            "attempts": t.attempts,
            "failed handoffs": t.failed_handoffs,
            "error spans": t.error_spans,
            "duration": fmt.ms(t.duration_ns / 1e6),
            "trace": t.trace_id,
        }
        for number, t in enumerate(conversation.turns, start=1)
    ]
    return pd.DataFrame(rows)
