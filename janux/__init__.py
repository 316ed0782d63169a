"""Janux: a delegation runtime for LLM agents, traced with OpenTelemetry, and a dashboard that audits it.

The names a user starts from are importable from here (lazily: `import janux` stays cheap):

    from janux import Agent, Subagent, HandoffPolicy, Cost           # the runtime
    from janux import configure_telemetry, instrument_openai_agents  # sending traces
    from janux import open_store, start_receiver                     # receiving and keeping them
    from janux import reconstruct, analyse                           # reading one trace
    from janux import JanuxError                                     # the one error base

Everything else stays importable from its module. One import name, four parts: `janux.runtime`
(agents, subagents, handoffs, policy), `janux.tracing` (the trace contract, instrumentation, SDK
setup, OTLP decoding, the receiver, the trace sources and the analysis layer), `janux.dashboard`
(the Streamlit app) and `janux.cli` (the `janux` command). `janux.demo` holds the built-in scenarios.

The folders `runtime/`, `tracing/` and `dashboard/` stay at the repository root; `janux/` links to
them, so every tool (the interpreter, mypy, import-linter, setuptools) sees one package tree.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__: str = version("janux")
    """The installed distribution's version."""
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0.0.0+unknown"

# Name -> (module, attribute). Imported on first use, so `import janux` (and the `janux` command's
# start) never loads the runtime, the SDK or the dashboard it does not need.
_FRONT_DOOR: dict[str, tuple[str, str]] = {
    "Agent": ("janux.runtime", "Agent"),
    "Subagent": ("janux.runtime", "Subagent"),
    "HandoffPolicy": ("janux.runtime", "HandoffPolicy"),
    "Cost": ("janux.runtime", "Cost"),
    "configure_telemetry": ("janux.tracing.sdk", "configure_telemetry"),
    "instrument_openai_agents": ("janux.integrations.openai_agents", "instrument"),
    "open_store": ("janux.tracing.sources.store", "open_store"),
    "start_receiver": ("janux.tracing.receiver", "start_receiver"),
    "reconstruct": ("janux.tracing.analysis.trace_view", "reconstruct"),
    "analyse": ("janux.tracing.analysis.trace_facts", "analyse"),
    "JanuxError": ("janux.errors", "JanuxError"),
}

__all__ = [
    "Agent",
    "Cost",
    "HandoffPolicy",
    "JanuxError",
    "Subagent",
    "__version__",
    "analyse",
    "configure_telemetry",
    "instrument_openai_agents",
    "open_store",
    "reconstruct",
    "start_receiver",
]


def __getattr__(name: str) -> Any:
    """The front door's names, imported from their modules on first use."""
    target = _FRONT_DOOR.get(name)
    if target is None:
        raise AttributeError(f"module 'janux' has no attribute {name!r}")
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_FRONT_DOOR))
