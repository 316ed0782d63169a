"""Shared parts of the foreign-trace fixture generators: a capturing tracer provider with
deterministic ids, the OTLP/JSON-lines writer (the real `opentelemetry-exporter-otlp-json-file`
encoder) and the truth files.

A fixture is `<name>.jsonl` (one OTLP/JSON line per scenario, each scenario one trace) plus
`<name>.truth.json`: per trace id, what the library itself says happened (token sums over its
inference calls, agents, delegation and transfer edges, errors), computed from the library's own
records (scripted usage ledgers, raw SDK spans), never from Janux's reading of the OTLP data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.foreign.isolated import SeededIds as SeededIds
from tests.support.foreign.truth import Truth as Truth

FIXTURES = Path(__file__).parent / "fixtures"
"""Where the committed fixtures live."""


class Capture:
    """A tracer provider with seeded ids that keeps every finished span in memory."""

    def __init__(self, seed: int, service: str) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            id_generator=SeededIds(seed), resource=Resource.create({"service.name": service})
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def take(self) -> list[ReadableSpan]:
        """The spans finished since the last call."""
        spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        return spans


def otlp_line(spans: list[ReadableSpan]) -> str:
    """One OTLP/JSON line of `spans`, as the Collector's file exporter writes it."""
    return json.dumps(encode_spans(spans).to_dict(), separators=(",", ":"))


def trace_id_of(spans: list[ReadableSpan]) -> str:
    """The hex trace id the spans share."""
    ids = {format(s.context.trace_id, "032x") for s in spans if s.context is not None}
    if len(ids) != 1:
        raise ValueError(f"a scenario must be one trace, got {len(ids)}")
    return ids.pop()


@dataclass
class FixtureWriter:
    """Collects the scenarios of one fixture and writes its two files."""

    name: str
    lines: list[str] = field(default_factory=list)
    truths: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, spans: list[ReadableSpan], truth: Truth) -> None:
        """One scenario: its spans (one trace) and its truth."""
        self.lines.append(otlp_line(spans))
        self.truths[trace_id_of(spans)] = asdict(truth)

    def write(self, directory: Path = FIXTURES) -> tuple[Path, Path]:
        """Write `<name>.jsonl` and `<name>.truth.json`; returns both paths."""
        directory.mkdir(parents=True, exist_ok=True)
        lines = directory / f"{self.name}.jsonl"
        truth = directory / f"{self.name}.truth.json"
        lines.write_text("\n".join(self.lines) + "\n")
        truth.write_text(json.dumps(self.truths, indent=2, sort_keys=True) + "\n")
        return lines, truth


@contextmanager
def swallow(truth: Truth) -> Iterator[None]:
    """Run a scenario that may raise; a raise is part of the truth, not a generator failure."""
    try:
        yield
    except Exception:
        truth.raised = True


def load_truth(name: str, directory: Path = FIXTURES) -> dict[str, dict[str, Any]]:
    """The committed truth of fixture `name`, keyed by trace id."""
    loaded: dict[str, dict[str, Any]] = json.loads((directory / f"{name}.truth.json").read_text())
    defaults = asdict(Truth(scenario="", library=""))  # fields added since a truth was written
    return {trace_id: {**defaults, **truth} for trace_id, truth in loaded.items()}
