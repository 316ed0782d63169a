"""Tests of the runtime's OpenTelemetry instrumentation against the trace contract."""
