"""The OTLP receiver: OTLP/HTTP (`POST /v1/traces`) and OTLP/gRPC (`TraceService/Export`) into a store.

receiver = start_receiver(store, "127.0.0.1", 4318, 4317, token=None)
...                                   # receiver.http_port / receiver.grpc_port
receiver.stop()
"""

from __future__ import annotations

from janux.tracing.receiver.limits import DEFAULT_MAX_BODY_BYTES, ReceiverLimits
from janux.tracing.receiver.server import (
    DEFAULT_GRPC_PORT,
    DEFAULT_HOST,
    DEFAULT_HTTP_PORT,
    RunningReceiver,
    start_receiver,
)

__all__ = [
    "DEFAULT_GRPC_PORT",
    "DEFAULT_HOST",
    "DEFAULT_HTTP_PORT",
    "DEFAULT_MAX_BODY_BYTES",
    "ReceiverLimits",
    "RunningReceiver",
    "start_receiver",
]
