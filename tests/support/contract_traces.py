"""Contract-shaped test traces with hand-checked numbers (shared by the dashboard tests)."""

from __future__ import annotations

import copy
import dataclasses

from janux.tracing import conventions as c
from janux.tracing.records import SpanRecord
from janux.tracing.testing import DelegationSpec, LoopSpec, RoundSpec, build_trace

# Prices are chosen so sums are exact in binary floating point.
PLANNER_ROUNDS = [RoundSpec(1000, 100, 0.25), RoundSpec(500, 50, 0.125)]
RESEARCHER_TIMEOUT = LoopSpec(
    "researcher", rounds=[RoundSpec(200, 0, 0.0625)], error_type=c.ERROR_TIMEOUT, budget=(4, 5000, 2000.0)
)
RESEARCHER_OK = LoopSpec("researcher", rounds=[RoundSpec(300, 40, 0.5)], budget=(4, 5000, 2000.0))
WRITER_CUT = LoopSpec(
    "writer",
    rounds=[RoundSpec(100, 10, 0.0625), RoundSpec(100, 10, 0.0625)],
    stop_reason=c.STOP_MAX_TURNS,
    budget=(2, None, None),
)
TRANSLATOR_UNPRICED = LoopSpec("translator", rounds=[RoundSpec(70, 30, None, model="local-llm")])

# Inclusive totals of the contract trace, computed by hand.
TOTAL_INPUT = 1000 + 500 + 200 + 300 + 100 + 100 + 70
TOTAL_OUTPUT = 100 + 50 + 0 + 40 + 10 + 10 + 30
TOTAL_COST = 0.25 + 0.125 + 0.0625 + 0.5 + 0.0625 + 0.0625
TOTAL_UNPRICED = 100
DENY_RULE = c.DENY_DENIED_TOOLS
TASK_TEXT = "find three sources on tail latency"


def contract_root() -> LoopSpec:
    """planner -> researcher (2 attempts, first timed out), coder (denied), writer (cut),
    translator (unpriced), billing (transfer, denied then served by fallback). A fresh deep copy."""
    return copy.deepcopy(_contract_root())


def _contract_root() -> LoopSpec:
    return LoopSpec(
        "planner",
        rounds=[dataclasses.replace(r) for r in PLANNER_ROUNDS],
        delegations=[
            DelegationSpec(
                "researcher",
                attempts=[dataclasses.replace(RESEARCHER_TIMEOUT), dataclasses.replace(RESEARCHER_OK)],
                task=TASK_TEXT,
            ),
            DelegationSpec(
                "coder",
                status=c.STATUS_DENIED,
                deny_reason=DENY_RULE,
                error="delegate.coder is on the policy's deny list",
            ),
            DelegationSpec(
                "writer",
                attempts=[dataclasses.replace(WRITER_CUT)],
                status=c.STATUS_CUT,
                stop_reason=c.STOP_MAX_TURNS,
            ),
            DelegationSpec("translator", attempts=[dataclasses.replace(TRANSLATOR_UNPRICED)]),
            DelegationSpec(
                "billing",
                kind=c.KIND_TRANSFER,
                status=c.STATUS_FALLBACK,
                deny_reason=c.DENY_RATE_LIMITED,
                error="rate limit reached; served by the primary executor",
            ),
        ],
    )


def contract_trace(seed: int = 1, conversation_id: str = "conv-1") -> list[SpanRecord]:
    """The contract-shaped demo trace (see `contract_root`)."""
    return build_trace(contract_root(), seed=seed, conversation_id=conversation_id)


def plain_root() -> LoopSpec:
    """Another runtime's trace: planner retries `researcher` once, one round on an unknown model."""
    return LoopSpec(
        "planner",
        rounds=[RoundSpec(1000, 200, None, model="gpt-4o"), RoundSpec(500, 100, None, model="gpt-4o")],
        delegations=[
            DelegationSpec(
                "researcher",
                attempts=[
                    LoopSpec(
                        "researcher",
                        rounds=[RoundSpec(400, 0, None, model="no-such-model-xyz", provider="acme")],
                        error_type=c.ERROR_TIMEOUT,
                    ),
                    LoopSpec("researcher", rounds=[RoundSpec(300, 60, None, model="gpt-4o")]),
                ],
            )
        ],
    )


def plain_trace(seed: int = 2) -> list[SpanRecord]:
    """A plain GenAI-semconv trace whose root agent span carries aggregated usage."""
    return build_trace(plain_root(), janux=False, seed=seed, service="other-app")


def stringify(spans: list[SpanRecord]) -> list[SpanRecord]:
    """The same spans as ClickHouse returns them: every attribute value a string."""
    out = []
    for span in spans:
        copy = dataclasses.replace(
            span,
            attributes={k: _s(v) for k, v in span.attributes.items()},
            events=[
                dataclasses.replace(e, attributes={k: _s(v) for k, v in e.attributes.items()})
                for e in span.events
            ],
        )
        out.append(copy)
    return out


def _s(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
