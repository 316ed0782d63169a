"""Instrumentation of the delegation runtime through the OpenTelemetry API only.

The one part of `janux.tracing` the runtime imports (besides `janux.tracing.conventions`): it never
installs a provider or an exporter, so an application without telemetry set up pays for no-op
spans only. `RunInstrumentation` is one run's spans and events; `ContentCapture` decides whether
any prompt or output text may reach them.
"""

from janux.tracing.instrument.content import ContentCapture, resolve_capture
from janux.tracing.instrument.run import RunInstrumentation, instrumentation_for_run, trace_id_hex

__all__ = [
    "ContentCapture",
    "RunInstrumentation",
    "instrumentation_for_run",
    "resolve_capture",
    "trace_id_hex",
]
