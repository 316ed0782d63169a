"""Janux: a delegation runtime for LLM agents, traced with OpenTelemetry, and a dashboard that audits it.

One import name, four parts: `janux.runtime` (agents, subagents, handoffs, policy), `janux.tracing`
(the trace contract, instrumentation, SDK setup, OTLP decoding, the receiver and every trace
source), `janux.dashboard` (reconstruction and the Streamlit app) and `janux.cli` (the `janux`
command). `janux.demo` holds the built-in scripted scenarios.

The folders `runtime/`, `tracing/` and `dashboard/` stay at the repository root; `janux/` links to
them, so every tool (the interpreter, mypy, import-linter, setuptools) sees one package tree.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__: str = version("janux")
    """The installed distribution's version."""
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0.0.0+unknown"
