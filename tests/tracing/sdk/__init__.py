"""Tests of the telemetry setup at the edge (tracing/setup*.py)."""
