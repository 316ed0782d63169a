"""What the analysis layer answers about traces, as the sources serve it: a trace's row in the
trace list (`TraceSummary`), the filters over that list (`TraceFilter`), and one group of `usage_by`
(`UsageAggregate`). `janux.tracing.sources.protocol` serves them through `TraceSource`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(slots=True, kw_only=True)
class TraceFilter:
    """Filters of the trace list; `None` means "no filter"."""

    start_ns: int | None = None
    """Only traces starting at or after this time (Unix ns)."""
    end_ns: int | None = None
    """Only traces starting before this time (Unix ns)."""
    service: str | None = None
    """Only traces whose root span has this `service.name`."""
    root_agent: str | None = None
    """Only traces whose root agent (`TraceSummary.root_agent`: the run's first agent) is this."""
    conversation_id: str | None = None
    """Only traces of this `gen_ai.conversation.id`."""
    status: Literal["ok", "error"] | None = None
    """`error`: traces with at least one ERROR span; `ok`: traces with none."""
    has_failed_handoffs: bool = False
    """Only traces with at least one handoff whose final status is failing."""
    min_cost: float | None = None
    """Only traces whose bill is at least this many USD."""
    trace_id: str | None = None
    """Only traces whose id starts with this hex prefix."""


@dataclass(slots=True, kw_only=True)
class TraceSummary:
    """One row of the trace list."""

    trace_id: str
    """32 lowercase hex characters."""
    start_ns: int
    """Earliest span start in the trace."""
    duration_ns: int
    """Latest span end minus earliest start."""
    service_name: str
    """`service.name` of the root span (or of the earliest span if the root is missing)."""
    root_name: str
    """Name of the root span ("" if the trace has no root yet)."""
    root_agent: str | None
    """The run's first agent: `gen_ai.agent.name` of the root span, or the agent that handed the
    conversation off when the root records a transfer (`janux.handoff.from`); for a root that names
    no agent, the structure's first agent (`summary.root_agent`)."""
    conversation_id: str | None
    """`gen_ai.conversation.id` of the root span."""
    span_count: int
    """Number of stored spans."""
    delegations: int
    """Delegations (`janux.tracing.analysis.readers.structure`): Janux's `delegate` tool spans; for other
    runtimes, tool spans with an agent loop below them and agents nested directly in another."""
    attempts: int
    """Agent loops that ran a delegation (repeated loops under one tool span are its attempts)."""
    failed_handoffs: int
    """Delegations and transfers whose final status is failing (Janux's recorded
    `janux.handoff.status`; for other runtimes, a failed last attempt). A failed turn is not one."""
    error_spans: int
    """Number of spans with status ERROR."""
    bill_cost: float | None
    """`janux.bill.cost` of the root, None when unpriced or absent."""
    bill_input_tokens: int | None
    """`janux.bill.input_tokens` of the root, else the sum over inference spans."""
    bill_output_tokens: int | None
    """`janux.bill.output_tokens` of the root, else the sum over inference spans."""
    bill_unpriced_tokens: int | None
    """`janux.bill.unpriced_tokens` of the root."""
    transfers: int = 0
    """Transfers of the conversation (handoff spans, Janux `handoff` tools)."""
    inference_spans: int = 0
    """Model calls (inference spans under any convention read; failed calls that returned no
    usage are not counted)."""
    usage_read_spans: int = 0
    """Model calls whose usage was read. Fewer than `inference_spans`: part of the usage is
    unknown (under a name Janux does not read, or absent) and shown as such, never as 0."""
    unrecognised_spans: int = 0
    """Spans of a kind Janux does not recognise (an unknown declared kind, or usage-like
    attributes on a span that declares none)."""
    bill_cost_estimate: float | None = None
    """`janux.bill.cost_estimate` of the root: what an integration estimated for the rounds its
    `bill_cost` leaves unpriced (never part of it). None when absent."""
    bill_reconciled: bool | None = None
    """Invariant 2 of the trace contract, the list's reconciliation flag: the root's `janux.bill.*`
    equals the sum of `janux.turn.*` over every `invoke_agent` span of the trace (tokens exactly,
    cost within 1e-9 relative). None when the root carries no bill (other runtimes, or the root not
    received yet). The per-loop checks need the span tree: the dashboard's rebuild runs them."""
    agent_path: tuple[str, ...] = ()
    """The agents that held the conversation in turn when it was transferred (`triage`, `billing`);
    empty when one agent held it throughout (`root_agent` says which). See `summary.agent_path`."""
    linked_traces: int = 0
    """Other traces read with this one as one run (joined by span links, `trace_links`): the list
    shows a run once, on its first trace's row, and its continuations only under it."""

    @property
    def partly_unread(self) -> bool:
        """True when some of the trace's usage could not be read (unknown, shown as such)."""
        return self.usage_read_spans < self.inference_spans or self.unrecognised_spans > 0

    @property
    def agents_shown(self) -> str:
        """The list's agent cell: the path of a transferred conversation (`triage → billing`), else
        the root agent ("" when none is known). One rule for the page, the CLI and the CSV."""
        return " → ".join(self.agent_path) if self.agent_path else (self.root_agent or "")


UsageDimension = Literal["agent", "tool", "model", "conversation"]
"""What `TraceSource.usage_by` groups by."""

USAGE_DIMENSIONS: tuple[UsageDimension, ...] = ("agent", "tool", "model", "conversation")
"""Every accepted `UsageDimension`, in the order the dashboard shows them."""


@dataclass(slots=True, kw_only=True)
class UsageAggregate:
    """Tokens and cost of one group (an agent, a delegation tool, a model or a conversation).

    Follows the accounting rule of the trace contract, so no token or cent is counted twice:
    - `agent`: `janux.turn.*` of every Janux loop, grouped by `gen_ai.agent.name` (each loop's OWN
      rounds); for traces without Janux accounting, each loop's own model calls
      (`janux.tracing.analysis.readers.structure`: the calls whose nearest loop it is, any convention).
    - `model`: the usage (any name read) and `janux.round.cost` of every model call, grouped by the
      requested model; a call without `janux.round.cost` is unpriced; one whose usage is unknown
      counts in `unread`.
    - `conversation`: the root's `janux.bill.*` of every trace, grouped by the root's
      `gen_ai.conversation.id`; a trace without a bill (other runtimes) adds its model calls.
    - `tool`: every delegation, grouped by its tool name (Janux: `delegate` tool spans; other
      runtimes: tool spans with an agent loop below them, or the agent's name for an agent nested
      directly in another), with the own usage of its attempts. A delegation made inside an attempt
      is counted under its own tool, not here.
    The key is "" when the grouping attribute is absent.
    """

    key: str
    """Agent name, delegation tool name, request model or conversation id ("" when absent)."""
    count: int
    """How many: agent loops, delegations (tool spans), model rounds, or traces."""
    failed: int
    """How many of those failed: ERROR agent loops, delegations whose final handoff status is
    failing, ERROR model rounds, or traces with at least one failed handoff (the trace list's
    `failed_handoffs`; error spans alone, such as a retried attempt's, do not fail a trace)."""
    input_tokens: int | None
    """Summed input tokens; None when no counted span reported any."""
    output_tokens: int | None
    """Summed output tokens; None when no counted span reported any."""
    cost: float | None
    """Summed USD cost of the priced part (rounded to 1e-12); None when nothing was priced,
    never 0 for unknown."""
    unpriced_tokens: int | None
    """Tokens (input + output) of rounds that had no price; None when nothing reported usage."""
    unread: int = 0
    """How many of the counted items had usage that could not be read (model calls with unknown
    usage; loops or delegations with such calls; traces partly unread): unknown, never zero."""
