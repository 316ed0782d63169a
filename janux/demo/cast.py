"""The cast of the demo scenarios: agents, prices, tools and scripted timings.

A help desk: `triage` answers customers and delegates to `researcher` (docs), `writer` (drafts),
`fact_checker` (a local, unpriced model) or transfers to `billing`. Every scenario builds a fresh
cast, so rate limits and sessions never leak between scenarios.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from janux.runtime.agent import Agent
from janux.runtime.definitions import Cost, Handoff, HandoffPolicy, RateLimit, Subagent, ToolFilter
from janux.runtime.testing import ScriptedModel, ScriptStep
from janux.runtime.tools import Tool, make_tool

TRIAGE_COST = Cost(input=0.15, output=0.60)
"""gpt-4o-mini class prices (USD per million tokens)."""
RESEARCHER_COST = Cost(input=2.50, output=10.00)
"""gpt-4o class prices."""
WRITER_COST = Cost(input=0.15, output=0.60)
"""gpt-4o-mini class prices."""
BILLING_COST = Cost(input=2.00, output=8.00)
"""gpt-4.1 class prices."""
# fact_checker runs a local model and has no price: its tokens stay unpriced.


@dataclass(frozen=True, slots=True)
class Stage:
    """Timing of the scenarios: `latency_scale` times a few realistic milliseconds."""

    scale: float
    """Multiplies every scripted delay (0 = no waiting)."""

    def ms(self, milliseconds: float) -> float:
        """A scripted delay in seconds (ScriptedModel scales it)."""
        return milliseconds / 1000

    def deadline_ms(self, milliseconds: float) -> float:
        """A timeout or time budget that stays meaningful at any scale (never below 5 ms)."""
        return max(5.0, milliseconds * self.scale)

    def model(self, name: str, steps: Iterable[ScriptStep | str]) -> ScriptedModel:
        """A scripted model with this stage's latency scale."""
        return ScriptedModel(steps, model_name=name, latency_scale=self.scale)

    def hanging_model(self, name: str, steps: Iterable[ScriptStep | str]) -> ScriptedModel:
        """A model whose slow steps really outlast any deadline, even at scale 0."""
        return ScriptedModel(steps, model_name=name, latency_scale=max(1.0, self.scale))

    def tool(self, name: str, result: Any, milliseconds: float, description: str) -> Tool:
        """A function tool that takes `milliseconds` (scaled) and returns `result`."""
        delay = milliseconds / 1000 * self.scale

        async def run(query: str = "") -> str:
            if delay > 0:
                await asyncio.sleep(delay)
            return result if isinstance(result, str) else json.dumps(result)

        return make_tool(run, name=name, description=description)


def researcher(
    stage: Stage, model: ScriptedModel, *, subagents: Iterable[Subagent] = (), **options: Any
) -> Agent:
    """Reads the help-center docs."""
    return Agent(
        "researcher",
        instructions="You research the help-center documentation and answer with facts and sources.",
        description="Finds facts in the help-center docs.",
        model=model,
        tools=[
            stage.tool("search_docs", {"hits": 3, "top": "Refunds for annual plans"}, 6, "Search the docs.")
        ],
        subagents=list(subagents),
        cost=RESEARCHER_COST,
        **options,
    )


def writer(stage: Stage, model: ScriptedModel) -> Agent:
    """Drafts customer replies."""
    del stage
    return Agent(
        "writer",
        instructions="You draft short, friendly customer replies.",
        description="Drafts customer-facing text.",
        model=model,
        cost=WRITER_COST,
    )


def fact_checker(stage: Stage, model: ScriptedModel) -> Agent:
    """Checks claims on a local model: no price, so its tokens are unpriced."""
    del stage
    return Agent(
        "fact_checker",
        instructions="You check one claim and answer 'confirmed' or 'not confirmed' with a reason.",
        description="Checks a claim against the policy database.",
        model=model,
    )


def billing(stage: Stage, model: ScriptedModel, *, handoffs: Iterable[Agent | Handoff] = ()) -> Agent:
    """The billing specialist conversations are transferred to (and who may pass them on)."""
    return Agent(
        "billing",
        instructions="You are the billing specialist. You can look up invoices and issue refunds.",
        description="Handles invoices, charges and refunds.",
        model=model,
        tools=[
            stage.tool(
                "lookup_invoice",
                {"invoice": "INV-2291", "amount": 49.0, "duplicate": True},
                5,
                "Find an invoice.",
            )
        ],
        handoffs=list(handoffs),
        cost=BILLING_COST,
    )


def refunds(model: ScriptedModel) -> Agent:
    """The refunds desk billing may pass a conversation on to."""
    return Agent(
        "refunds",
        instructions="You issue refunds for charges billing has confirmed.",
        description="Issues refunds.",
        model=model,
        cost=BILLING_COST,
    )


def triage(
    model: ScriptedModel,
    *,
    subagents: Iterable[Subagent] = (),
    handoffs: Iterable[Agent | Handoff] = (),
    policy: HandoffPolicy | None = None,
    tool_filter: ToolFilter | None = None,
    rate_limit: RateLimit | None = None,
    **options: Any,
) -> Agent:
    """The front desk every scenario starts at."""
    return Agent(
        "triage",
        instructions=(
            "You are the help-desk front line. Delegate research and drafting; transfer billing issues."
        ),
        model=model,
        subagents=list(subagents),
        handoffs=list(handoffs),
        policy=policy,
        tool_filter=tool_filter,
        rate_limit=rate_limit,
        cost=TRIAGE_COST,
        **options,
    )
