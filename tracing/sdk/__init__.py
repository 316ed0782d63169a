"""Telemetry setup at the edge of a program: providers, exporters, the failure-isolated span processor.

    from janux.tracing.sdk import configure_telemetry

    telemetry = configure_telemetry(service_name="support-bot")  # the rest from OTEL_* variables
    ...
    telemetry.shutdown()

The runtime never imports this package (an import contract checks it): applications and the CLI do.
"""

from janux.tracing.sdk.env import TelemetryConfigError
from janux.tracing.sdk.telemetry import Telemetry, configure_telemetry

__all__ = ["Telemetry", "TelemetryConfigError", "configure_telemetry"]
