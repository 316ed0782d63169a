"""The truth of one fixture scenario: what the library itself says happened.

Standard library only: the generators that run a library in its own virtualenv (whose
OpenTelemetry pins conflict with Janux's) import it there too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Truth:
    """What happened in one scenario, by the library's own account."""

    scenario: str
    """Scenario name (`chain`, `parallel`, `tool_error`, `retry`, `handoff`, `raised`, ...)."""
    library: str
    """Which library and instrumentation produced it."""
    input_tokens: int = 0
    """Input tokens of every inference call the scripted models answered."""
    output_tokens: int = 0
    """Output tokens of those calls."""
    inference_calls: int = 0
    """Inference calls that returned usage."""
    agents: list[str] = field(default_factory=list)
    """Agent runs, in start order."""
    delegations: list[list[str]] = field(default_factory=list)
    """[caller, target] of every delegation (a subagent run inside a tool call or an agent)."""
    transfers: list[list[str]] = field(default_factory=list)
    """[from, to] of every handoff (transfer of the conversation)."""
    errors: int = 0
    """Spans the library marked as failed."""
    raised: bool = False
    """True when the run raised to the caller."""
    unread_calls: int = 0
    """Inference calls whose usage is present only under names Janux must report as unread."""
    unrecognised_spans: int = 0
    """Spans of a kind no convention declares although they carry usage-like attributes."""
    hand_built: bool = False
    """True for fixtures written by hand from the library's published conventions."""
    root_agent: str | None = None
    """The run's first agent, as the trace list names it (None: not stated by this fixture's truth)."""
    agent_path: list[str] | None = None
    """The agents that held the conversation in turn when the run's first agent transferred it
    (`edge` extends it from `root_agent`); None without such a transfer."""
    edges: list[dict[str, Any]] | None = None
    """Every delegation and transfer with its outcome: `caller`, `target`, `kind` (`delegate` |
    `transfer`), `status` (`completed` | `failed`), `attempts` (None: not stated)."""
    unnamed_agents: int = 0
    """Agent runs that nothing in the trace names."""
    linked_trace_ids: list[str] = field(default_factory=list)
    """The other traces of a run the library split across traces joined by span links (the truth
    is kept under the run's first trace, and speaks of the whole run)."""

    def edge(self, caller: str, target: str, kind: str = "delegate", status: str = "completed",
             attempts: int = 1) -> None:  # fmt: skip
        """Record one delegation or transfer (and its pair in `delegations` / `transfers`)."""
        if self.edges is None:
            self.edges = []
        self.edges.append(
            {"caller": caller, "target": target, "kind": kind, "status": status, "attempts": attempts}
        )
        (self.delegations if kind == "delegate" else self.transfers).append([caller, target])
        path = self.agent_path or [self.root_agent]
        if kind == "transfer" and path[-1] == caller:  # the agent holding the run's conversation
            self.agent_path = [*path, target]

    def usage(self, input_tokens: int, output_tokens: int) -> None:
        """One inference call the scripted model answered with this usage."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.inference_calls += 1
