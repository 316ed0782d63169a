"""One call from a trace's spans to everything the Trace page shows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from janux.tracing.analysis.checks import run_checks
from janux.tracing.analysis.costs import assign_costs, billed_spans, computed_total, recorded_bill
from janux.tracing.analysis.failures import budget_burn, trace_failures
from janux.tracing.analysis.handoff_tree import HandoffTree, build_tree
from janux.tracing.analysis.readers.structure import MODEL_CALLS_NOT_RECORDED, span_of_loop_id
from janux.tracing.analysis.span_index import SpanIndex, TraceIssues, build_index
from janux.tracing.analysis.trace_parts import (
    AgentNode,
    BudgetBurn,
    Check,
    Delegation,
    Failure,
    Usage,
)
from janux.tracing.records import SpanRecord


@dataclass(slots=True)
class TraceView:
    """A rebuilt trace: handoff tree, attempts, costs, checks, failures, budgets and damage."""

    trace_id: str
    """The trace id."""
    index: SpanIndex
    """The spans, each once, with their parent structure."""
    tree: HandoffTree
    """Nodes and delegations (with their span positions)."""
    computed: Usage
    """Sum of every loop's own usage."""
    bill: Usage | None
    """`janux.bill.*` as recorded, None for traces from other runtimes."""
    checks: list[Check] = field(default_factory=list)
    """Reconciliation checks, failures first."""
    failures: list[Failure] = field(default_factory=list)
    """Failed, denied, cut, timed-out and unfinished handoffs."""
    budgets: list[BudgetBurn] = field(default_factory=list)
    """Budget burn of every loop with a budget."""
    price_sources: list[str] = field(default_factory=list)
    """Where the estimated costs come from (`genai-prices 0.2.3, recorded in the trace`, or the
    price table applied by the dashboard); empty when nothing was estimated."""

    @property
    def nodes(self) -> list[AgentNode]:
        """Agent loops, parents before children."""
        return self.tree.nodes

    @property
    def delegations(self) -> list[Delegation]:
        """Delegations and transfers."""
        return self.tree.delegations

    @property
    def issues(self) -> TraceIssues:
        """Damage found in the raw spans."""
        return self.index.issues

    @property
    def roots(self) -> list[AgentNode]:
        """Top loops of complete parts of the trace."""
        return [n for n in self.tree.nodes if n.parent is None and not n.incomplete]

    @property
    def incomplete_roots(self) -> list[AgentNode]:
        """Top loops hanging below a missing parent (the "incomplete trace" marker)."""
        return [n for n in self.tree.nodes if n.parent is None and n.incomplete]

    @property
    def total(self) -> Usage:
        """The trace's usage: the recorded bill when there is one, else the computed sum."""
        return self.bill if self.bill is not None else self.computed

    @property
    def failed_checks(self) -> list[Check]:
        """Checks that failed with severity error or warning."""
        return [chk for chk in self.checks if not chk.ok and chk.severity != "info"]

    @property
    def is_janux(self) -> bool:
        """True when the trace carries janux accounting."""
        return self.bill is not None or any(n.janux for n in self.tree.nodes)

    @property
    def attempts(self) -> int:
        """Attempts run by delegations (a transfer's target segment is no attempt: it took the
        conversation over), as every surface counts them."""
        delegations = self.tree.delegations
        return sum(len(d.attempts) for d in delegations if d.kind == "delegate" and not d.shares_run)

    @property
    def model_calls_unrecorded(self) -> bool:
        """True when agents ran but the trace records no model call and no usage anywhere (an
        instrumentation that writes agent spans only): its usage is unknown, never 0."""
        return MODEL_CALLS_NOT_RECORDED in self.tree.coverage

    def span(self, span_id: str) -> SpanRecord | None:
        """The span with this id (or the loop span of an agent segment's id, `structure.loop_id`),
        None when it is not in the trace."""
        pos = self.index.by_id.get(span_id)
        if pos is None and ":" in span_id:
            pos = self.index.by_id.get(span_of_loop_id(span_id))
        return None if pos is None else self.index.spans[pos]


def reconstruct(spans: Iterable[SpanRecord], *, estimate: bool = True) -> TraceView:
    """Rebuild one trace (tree, attempts, costs, checks, failures, budgets) from its spans.

    `estimate=False` skips the price table (costs of other runtimes then stay unpriced).
    """
    index = build_index(spans)
    tree = build_tree(index)
    sources = assign_costs(index, tree, estimate=estimate)
    billed = billed_spans(index)
    computed = computed_total(tree)
    bill = recorded_bill(index, billed)
    if bill is not None:
        # The bill records tokens and money, not rounds: its rounds (and those of unknown usage,
        # unknown in the bill too) are the loops' own.
        bill.unread_rounds = computed.unread_rounds
        bill.rounds = max(bill.rounds, computed.rounds)
    view = TraceView(
        trace_id=index.trace_id,
        index=index,
        tree=tree,
        computed=computed,
        bill=bill,
        price_sources=sources,
    )
    view.checks = run_checks(index, tree, billed)
    view.failures = trace_failures(index.trace_id, tree)
    view.budgets = budget_burn(index, tree)
    view.index.issues.open_handoffs = [
        d.tool_span_id for d in tree.delegations if d.status == "open" and d.has_start and d.tool_span_id
    ]
    view.index.issues.unpaired_ends = [
        d.tool_span_id for d in tree.delegations if d.has_end and not d.has_start and d.tool_span_id
    ]
    return view
