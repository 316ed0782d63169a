"""Alert rules over a range (`janux check` and the agent map's badges): a small YAML file, checked.

    rules:
      - name: researcher keeps failing
        edge_failure_rate: {caller: triage, target: researcher, max: 0.2, min_count: 5}
      - name: budgets cut too often
        budget_cut_rate: {target: "*", max: 0.1}
      - name: turns got expensive
        cost_per_turn_p95: {max_usd: 0.05}
      - name: books balance
        unreconciled_traces: {max: 0}

Each rule names exactly one check. The file is validated with pydantic: an error names the
field (`rules.1.budget_cut_rate.max`). Everything is computed from the source's exact
aggregates (`agent_map`, the trace list), the same as the dashboard shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from janux.errors import JanuxError
from janux.tracing.analysis.agentmap.build import percentile
from janux.tracing.analysis.agentmap.fleet_stats import AgentMap, EdgeStats
from janux.tracing.sources.protocol import TraceFilter, TraceSource

ANY = "*"
"""Matches every caller or target."""
MAX_TRACES_READ = 100_000
"""Most traces `unreconciled_traces` reads from the trace list."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EdgeFailureRate(_Strict):
    """Failed delegations / delegations of the matching edges, each edge on its own."""

    caller: str = ANY
    """Delegating agent (`*`: any)."""
    target: str = ANY
    """Subagent or transfer target (`*`: any)."""
    kind: Literal["delegate", "transfer", "*"] = "*"
    """`delegate`, `transfer` or `*`."""
    max: float = Field(ge=0, le=1)
    """Crossed when an edge's failure rate is above this (0..1)."""
    min_count: int = Field(default=1, ge=1)
    """Edges with fewer delegations in the range are not judged."""


class BudgetCutRate(_Strict):
    """Delegations cut by a budget line / delegations, per matching edge."""

    caller: str = ANY
    """Delegating agent (`*`: any)."""
    target: str = ANY
    """Subagent (`*`: any)."""
    max: float = Field(ge=0, le=1)
    """Crossed when an edge's cut rate is above this (0..1)."""
    min_count: int = Field(default=1, ge=1)
    """Edges with fewer delegations in the range are not judged."""


class CostPerTurnP95(_Strict):
    """The 95th percentile of the inclusive cost of a turn (a top-level agent loop)."""

    max_usd: float = Field(ge=0)
    """Crossed when the p95 is above this many USD."""


class UnreconciledTraces(_Strict):
    """Traces whose bill does not equal the sum of their loops' turns (contract invariant 2)."""

    max: int = Field(default=0, ge=0)
    """Crossed when more traces than this are unreconciled."""


class Rule(_Strict):
    """One named rule holding exactly one check."""

    name: str = Field(min_length=1)
    """Shown in the table and as the badge."""
    edge_failure_rate: EdgeFailureRate | None = None
    budget_cut_rate: BudgetCutRate | None = None
    cost_per_turn_p95: CostPerTurnP95 | None = None
    unreconciled_traces: UnreconciledTraces | None = None

    @model_validator(mode="after")
    def _one_check(self) -> Rule:
        checks = [n for n in _CHECKS if getattr(self, n) is not None]
        if len(checks) != 1:
            raise ValueError(f"a rule holds exactly one of {', '.join(_CHECKS)}; got {len(checks)}")
        return self


_CHECKS = ("edge_failure_rate", "budget_cut_rate", "cost_per_turn_p95", "unreconciled_traces")


class RuleFile(_Strict):
    """The whole YAML file."""

    rules: list[Rule] = Field(min_length=1)
    """The rules, checked in order."""


class RulesError(JanuxError, ValueError):
    """The rules file cannot be used; the message names the file and the field."""


def load_rules(path: Path) -> RuleFile:
    """Read and validate a rules file; raises `RulesError` naming the field that is wrong."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RulesError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise RulesError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return RuleFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise RulesError(f"{path}: {where}: {first['msg']}") from exc


@dataclass(slots=True)
class Finding:
    """One rule evaluated over one subject (an edge, or the whole range)."""

    rule: str
    """Rule name."""
    check: str
    """Which check (`edge_failure_rate`, ...)."""
    subject: str
    """`triage → researcher (delegate)`, or `range`."""
    value: float | None
    """The measured value (None: nothing to measure)."""
    limit: float
    """The rule's limit."""
    crossed: bool
    """True when the value is beyond the limit."""
    edge: tuple[str, str, str] | None = None
    """(caller, target, kind) for edge checks."""
    note: str = ""
    """What the value counts."""
    skipped: bool = False
    """True when the rule did not apply to the subject (below its `min_count`, or no edge
    matched): listed so a quiet rule is never mistaken for a passing one."""


@dataclass(slots=True)
class Report:
    """Every finding of a rules file over one range."""

    findings: list[Finding] = field(default_factory=list)
    """In rule order."""

    @property
    def crossed(self) -> list[Finding]:
        """The findings beyond their limit."""
        return [f for f in self.findings if f.crossed]


def _matches(edge: EdgeStats, caller: str, target: str, kind: str = ANY) -> bool:
    return caller in (ANY, edge.caller) and target in (ANY, edge.target) and kind in (ANY, edge.kind)


def _edge_findings(rule: Rule, agent_map: AgentMap) -> list[Finding]:
    out = []
    check = rule.edge_failure_rate or rule.budget_cut_rate
    assert check is not None
    name = "edge_failure_rate" if rule.edge_failure_rate is not None else "budget_cut_rate"
    kind = rule.edge_failure_rate.kind if rule.edge_failure_rate is not None else "delegate"
    for edge in agent_map.edges:
        if not _matches(edge, check.caller, check.target, kind):
            continue
        subject = f"{edge.caller or '?'} → {edge.target} ({edge.kind})"
        if edge.count < check.min_count:
            note = f"skipped: below min_count {check.min_count} ({edge.count} delegations)"
            out.append(
                Finding(rule.name, name, subject, None, check.max, False, edge.key, note, skipped=True)
            )
            continue
        failed = edge.failed if name == "edge_failure_rate" else edge.failures.get("cut", 0)
        rate = failed / edge.count
        note = f"{failed} of {edge.count} delegations " + ("failed" if name == "edge_failure_rate" else "cut")
        out.append(Finding(rule.name, name, subject, rate, check.max, rate > check.max, edge.key, note))
    if not out:
        wanted = f"{check.caller} → {check.target} ({kind})"
        note = "skipped: no edge in the range matches"
        out.append(Finding(rule.name, name, wanted, None, check.max, False, None, note, skipped=True))
    return out


def evaluate(
    rules: RuleFile, source: TraceSource, flt: TraceFilter, agent_map: AgentMap | None = None
) -> Report:
    """Every rule over the traces matching `flt` (pass the range's `agent_map` when you have it)."""
    agent_map = agent_map if agent_map is not None else source.agent_map(flt)
    report = Report()
    for rule in rules.rules:
        if rule.edge_failure_rate is not None or rule.budget_cut_rate is not None:
            report.findings += _edge_findings(rule, agent_map)
        elif rule.cost_per_turn_p95 is not None:
            p95 = percentile(agent_map.turn_costs, 95)
            limit = rule.cost_per_turn_p95.max_usd
            note = f"{len(agent_map.turn_costs)} priced turns ({agent_map.unpriced_turns} unpriced left out)"
            crossed = p95 is not None and p95 > limit
            report.findings.append(
                Finding(rule.name, "cost_per_turn_p95", "range", p95, limit, crossed, None, note)
            )
        elif rule.unreconciled_traces is not None:
            report.findings.append(_unreconciled(rule, source, flt))
    return report


def _unreconciled(rule: Rule, source: TraceSource, flt: TraceFilter) -> Finding:
    assert rule.unreconciled_traces is not None
    summaries = source.list_traces(flt, limit=MAX_TRACES_READ)
    bad = sum(1 for s in summaries if s.bill_reconciled is False)
    limit = rule.unreconciled_traces.max
    note = f"{bad} of {len(summaries)} traces" + (
        " (newest read)" if len(summaries) >= MAX_TRACES_READ else ""
    )
    return Finding(
        rule.name, "unreconciled_traces", "range", float(bad), float(limit), bad > limit, None, note
    )


def badges(report: Report) -> tuple[dict[str, list[str]], dict[tuple[str, str, str], list[str]]]:
    """Crossed rules as badges: by agent (budget cuts land on the target) and by edge."""
    nodes: dict[str, list[str]] = {}
    edges: dict[tuple[str, str, str], list[str]] = {}
    for finding in report.crossed:
        if finding.edge is not None:
            edges.setdefault(finding.edge, []).append(finding.rule)
            if finding.check == "budget_cut_rate":
                nodes.setdefault(finding.edge[1], []).append(finding.rule)
    return nodes, edges
