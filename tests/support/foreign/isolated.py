"""The fixture-writing half of a generator that runs inside a library's own virtualenv.

Imports only the standard library, the OpenTelemetry SDK and its OTLP protobuf encoder (which
every such virtualenv has), so it works whatever OpenTelemetry version the library pins. It
writes the same two files as `common.FixtureWriter`: OTLP/JSON lines (ids in hex, as the
Collector's file exporter writes them) and the truth per trace id.
"""

from __future__ import annotations

import base64
import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from tests.support.foreign.truth import Truth

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


class SeededIds(IdGenerator):
    """Trace and span ids from a seeded generator, so a regenerated fixture has the same ids."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._rng.getrandbits(128) or 1


def provider(seed: int, service: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A tracer provider with seeded ids keeping every finished span in memory."""
    exporter = InMemorySpanExporter()
    made = TracerProvider(id_generator=SeededIds(seed), resource=Resource.create({"service.name": service}))
    made.add_span_processor(SimpleSpanProcessor(exporter))
    return made, exporter


def _hex_ids(node: Any) -> Any:
    """Protobuf JSON writes bytes ids in base64; the Collector writes them in hex."""
    if isinstance(node, dict):
        return {
            key: base64.b64decode(value).hex()
            if key in _ID_FIELDS and isinstance(value, str)
            else _hex_ids(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(item) for item in node]
    return node


def otlp_line(spans: list[ReadableSpan]) -> str:
    """One OTLP/JSON line of `spans`."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return json.dumps(_hex_ids(MessageToDict(encode_spans(spans))), separators=(",", ":"))


def _agents_run(spans: list[ReadableSpan], order: list[str]) -> list[str]:
    """The traces (in `order`) joined by span links to the first trace holding an agent span: the
    scenario's run (traces of messages no link joins to it are written, not part of the truth)."""
    partners: dict[str, set[str]] = {}
    agent_traces = []
    for span in spans:
        own = format(span.context.trace_id, "032x") if span.context is not None else ""
        if (span.attributes or {}).get("gen_ai.operation.name") == "invoke_agent":
            agent_traces.append(own)
        for link in span.links:
            other = format(link.context.trace_id, "032x")
            partners.setdefault(own, set()).add(other)
            partners.setdefault(other, set()).add(own)
    start = min(agent_traces, key=order.index)
    joined, todo = {start}, [start]
    while todo:
        for other in partners.get(todo.pop(), ()):
            if other not in joined:
                joined.add(other)
                todo.append(other)
    return [trace_id for trace_id in order if trace_id in joined]


@dataclass
class Writer:
    """Collects the scenarios of one fixture and writes `<name>.jsonl` and `<name>.truth.json`."""

    name: str
    lines: list[str] = field(default_factory=list)
    truths: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, spans: list[ReadableSpan], truth: Truth) -> None:
        """One scenario: its spans (one trace) and its truth."""
        ids = {format(s.context.trace_id, "032x") for s in spans if s.context is not None}
        if len(ids) != 1:
            raise ValueError(f"scenario {truth.scenario}: must be one trace, got {len(ids)}")
        self.lines.append(otlp_line(spans))
        self.truths[ids.pop()] = asdict(truth)

    def take_run(self, exporter: Any, truth: Truth) -> None:
        """One scenario whose run the library split across traces (joined by span links): one line
        per trace, the truth under the run's first trace, naming the others (`linked_trace_ids`)."""
        spans = list(exporter.get_finished_spans())
        truth.errors = sum(1 for s in spans if not s.status.is_ok)
        by_trace: dict[str, list[ReadableSpan]] = {}
        for span in sorted(spans, key=lambda s: (s.start_time or 0)):
            if span.context is not None:
                by_trace.setdefault(format(span.context.trace_id, "032x"), []).append(span)
        run = _agents_run(spans, list(by_trace))
        truth.linked_trace_ids = run[1:]
        self.lines.extend(otlp_line(part) for part in by_trace.values())
        self.truths[run[0]] = asdict(truth)
        exporter.clear()

    def take(self, exporter: Any, truth: Truth) -> None:
        """One scenario from what `exporter` (an `InMemorySpanExporter`) holds: its spans, the count of
        those that ended in error into `truth.errors`; the exporter is cleared for the next one."""
        spans = list(exporter.get_finished_spans())
        truth.errors = sum(1 for s in spans if not s.status.is_ok)
        self.add(spans, truth)
        exporter.clear()

    def write(self, directory: Path) -> None:
        """Write both files under `directory`."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"{self.name}.jsonl").write_text("\n".join(self.lines) + "\n")
        truth = json.dumps(self.truths, indent=2, sort_keys=True) + "\n"
        (directory / f"{self.name}.truth.json").write_text(truth)
