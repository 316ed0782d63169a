"""How Janux reads traces from every instrumentation, its own included: one documented mapping per convention.

- `genai`: the OpenTelemetry GenAI semantic conventions, current and older names (Janux's own
  traces, Pydantic AI, Strands, the OTel OpenAI Agents bridge, ...);
- `openinference`: OpenInference (Arize Phoenix, smolagents, the OpenInference OpenAI Agents bridge);
- `openllmetry`: OpenLLMetry (Traceloop);
- `named_agents`: agents where no span says "agent" (a task, chain or workflow span naming one);
- `spans`: one span read with all of them (`read_span`): its role, names, usage and what was left unread;
- `structure`: one trace read (`structure_facts`): agents, delegation and transfer edges, attempts, own usage
  per agent and coverage, the numbers every source and the CLI report.

docs/trace-contract.md lists every attribute read, per convention.
"""
