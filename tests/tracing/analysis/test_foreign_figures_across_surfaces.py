"""Issue 28's one figure on every foreign fixture (other runtimes' traces): each agent's own tokens,
recorded cost and unpriced tokens on the Trace page's model, the structure, `janux trace --json`,
`usage_by("agent")` and the agent map of every source (memory, embedded store, ClickHouse), and the
Costs page's by-agent CSV (exact digits; `unknown` where nothing was read, never 0), all equal.
The same checks as the runtime's random runs (test_figures_across_surfaces.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from janux.dashboard.views.usage_tables import range_usage
from janux.tracing.analysis.readers.structure import structure_facts
from janux.tracing.analysis.report import trace_report
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import SpanRecord
from janux.tracing.sources.protocol import TraceFilter
from tests.support.foreign.load import all_spans, cases
from tests.support.three_sources import three_sources
from tests.tracing.analysis.test_figures_across_surfaces import (
    Figures,
    _csv_cost_matches,
    _csv_figures,
    _per_agent,
    _same,
    source_figures,
)

CASES = cases()


def _page_figures(spans: list[SpanRecord]) -> dict[str, Figures]:
    view = reconstruct(spans)
    # The page prices what the recording left unpriced from the price table (estimated): the
    # recording's unpriced tokens are its unpriced plus its estimated ones.
    return _per_agent([(n.agent, (n.own.input_tokens, n.own.output_tokens, n.own.cost,
                                  n.own.unpriced_tokens + n.own.estimated_tokens))
                       for n in view.nodes if n.agent])


def _recorded(own: dict[str, Any]) -> Figures:
    """A `janux trace --json` node's own figures as the recording has them (null tokens: unknown)."""
    return (own["input_tokens"] or 0, own["output_tokens"] or 0, own["recorded_cost_usd"],
            (own["unpriced_tokens"] or 0) + (own["estimated_tokens"] or 0))


def test_every_fixture_says_the_same_per_agent_on_every_surface(tmp_path: Path) -> None:
    with three_sources(all_spans(), tmp_path) as sources:
        for case in CASES:
            want = _page_figures(case.spans)
            facts = [(a.name, (a.input_tokens or 0, a.output_tokens or 0, a.cost, a.unpriced_tokens or 0))
                     for a in structure_facts(case.spans).agents if a.name]
            _same(_per_agent(facts), want, f"{case.id} structure")
            report = trace_report(reconstruct(case.spans))
            nodes = [(n["agent"], _recorded(n["own"])) for n in report["tree"]["nodes"] if n["agent"]]
            _same(_per_agent(nodes), want, f"{case.id} janux trace --json")
            for kind, source in sources.items():
                flt = TraceFilter(trace_id=case.trace_id)
                groups, agent_map = source_figures(source, flt)
                _same({k: v for k, v in groups.items() if k}, want, f"{case.id} {kind} usage_by")
                _same({k: v for k, v in agent_map.items() if k}, want, f"{case.id} {kind} agent map")
                exported = _csv_figures(range_usage(source, flt).tables["agent"], "agent", "own ")
                unread = {g.key for g in source.usage_by("agent", flt) if g.unread}
                for agent, figures in want.items():
                    tokens_in, tokens_out, text, unpriced = exported[agent]
                    assert (tokens_in, tokens_out, unpriced) == (figures[0], figures[1], figures[3]), case.id
                    if agent in unread and figures[2] is None and not figures[3]:
                        assert text == "unknown", (case.id, kind, agent, text)  # never 0 or empty
                    else:
                        assert _csv_cost_matches(text, figures[2], figures[3]), (case.id, kind, agent, text)
