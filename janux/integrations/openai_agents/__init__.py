"""Janux tracing for the OpenAI Agents SDK: its runs as spans of the Janux trace contract.

    from janux.integrations.openai_agents import instrument
    from janux.runtime import Cost
    from janux.tracing.sdk import configure_telemetry

    telemetry = configure_telemetry(service_name="support-desk")
    instrument(costs={"triage": Cost(input=0.15, output=0.60)})  # the one line (idempotent)
    ...  # Runner.run(...) as usual
    uninstrument()  # optional: new runs are no longer traced
    telemetry.shutdown()

Needs the `openai-agents` extra (`pip install 'janux[openai-agents]'`). The mapping is described in
`janux.integrations.openai_agents.mapper` and in docs/integrations.md.
"""

from __future__ import annotations

try:
    import agents  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "janux.integrations.openai_agents needs the OpenAI Agents SDK: pip install 'janux[openai-agents]'"
    ) from exc

from janux.integrations.openai_agents.install import instrument, uninstrument
from janux.integrations.openai_agents.processor import JanuxProcessor

__all__ = ["JanuxProcessor", "instrument", "uninstrument"]
