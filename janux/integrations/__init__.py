"""Janux tracing for agents built on other frameworks.

Each integration turns a framework's own trace events into spans that follow the Janux trace
contract (docs/trace-contract.md), through the OpenTelemetry API only: the application sets up
the SDK and exporters (`janux.tracing.sdk.configure_telemetry` or its own), and the dashboard then
shows the framework's runs like the Janux runtime's: handoff trees, attempts and exact costs.

- `janux.integrations.openai_agents`: the OpenAI Agents SDK (`pip install 'janux[openai-agents]'`).
"""
