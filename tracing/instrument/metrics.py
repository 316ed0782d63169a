"""The GenAI client metrics and the handoff counter, through the OpenTelemetry metrics API only.

Instruments are created once per MeterProvider and cached, so a run pays for a dictionary lookup,
not for instrument registration.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics

from janux.tracing.conventions import (
    INSTRUMENTATION_SCOPE,
    METRIC_HANDOFFS,
    METRIC_OPERATION_DURATION,
    METRIC_TOKEN_USAGE,
    OPERATION_DURATION_BUCKETS,
    TOKEN_USAGE_BUCKETS,
)


@dataclass(frozen=True, slots=True)
class Instruments:
    """The three instruments the runtime records to."""

    token_usage: metrics.Histogram
    """`gen_ai.client.token.usage`: tokens per round, by `gen_ai.token.type`."""
    duration: metrics.Histogram
    """`gen_ai.client.operation.duration`: seconds per model round."""
    handoffs: metrics.Counter
    """`janux.handoffs`: delegations and transfers by final status."""


_CACHE: weakref.WeakKeyDictionary[Any, Instruments] = weakref.WeakKeyDictionary()


def instruments_for(meter_provider: metrics.MeterProvider | None) -> Instruments:
    """The instruments of `meter_provider` (the global one when `None`), created on first use."""
    provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
    try:
        cached = _CACHE.get(provider)
    except TypeError:  # provider not weak-referenceable: no caching, still correct
        return _create(provider)
    if cached is None:
        cached = _create(provider)
        _CACHE[provider] = cached
    return cached


def _create(provider: metrics.MeterProvider) -> Instruments:
    meter = provider.get_meter(INSTRUMENTATION_SCOPE)
    return Instruments(
        token_usage=meter.create_histogram(
            METRIC_TOKEN_USAGE,
            unit="{token}",
            description="Number of input and output tokens used per model round.",
            explicit_bucket_boundaries_advisory=[float(b) for b in TOKEN_USAGE_BUCKETS],
        ),
        duration=meter.create_histogram(
            METRIC_OPERATION_DURATION,
            unit="s",
            description="Duration of one model round.",
            explicit_bucket_boundaries_advisory=list(OPERATION_DURATION_BUCKETS),
        ),
        handoffs=meter.create_counter(
            METRIC_HANDOFFS,
            unit="{handoff}",
            description="Delegations and transfers, by final status.",
        ),
    )
