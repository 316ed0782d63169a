"""The committed foreign fixtures as span records, with their truth."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from janux.tracing.records import SpanRecord
from janux.tracing.sources.file_loader import load_trace_file
from tests.support.foreign.common import FIXTURES, load_truth

NAMES = (
    "pydantic_ai",
    "openai_agents_openinference",
    "openai_agents_genai",
    "smolagents_openinference",
    "strands",
    "openllmetry",
    "langgraph_openinference",
    "smolagents_managed",
    "adk",
    "strands_agents",
    "autogen_agentchat",
    "crewai_openinference",
    "llamaindex_openinference",
    "langgraph_openllmetry",
    "strands_graph_fanin",
    "openai_agents_openllmetry",
    "crewai_openllmetry",
    "agent_framework",
    "langchain_openinference",
)
"""Every committed fixture (`smolagents_openinference`, `strands` and `openllmetry` are hand-built)."""


@dataclass(frozen=True)
class Case:
    """One fixture trace: its spans and its truth."""

    fixture: str
    trace_id: str
    spans: tuple[SpanRecord, ...]
    truth: dict[str, Any]

    @property
    def id(self) -> str:
        """`fixture/scenario`, for test ids."""
        return f"{self.fixture}/{self.truth['scenario']}"


@cache
def cases(directory: Path = FIXTURES) -> tuple[Case, ...]:
    """Every trace of every fixture."""
    found = []
    for name in NAMES:
        result = load_trace_file(directory / f"{name}.jsonl")
        assert not result.errors, result.errors
        by_trace: dict[str, list[SpanRecord]] = {}
        for span in result.spans:
            by_trace.setdefault(span.trace_id, []).append(span)
        for trace_id, truth in load_truth(name, directory).items():
            found.append(Case(name, trace_id, tuple(by_trace[trace_id]), truth))
    return tuple(found)


def all_spans() -> list[SpanRecord]:
    """The spans of every fixture trace."""
    return [span for case in cases() for span in case.spans]


def edges(pairs: list[list[str]] | list[tuple[str | None, str]]) -> Counter[tuple[str | None, str]]:
    """Edges as a multiset of (from, to)."""
    return Counter((a, b) for a, b in pairs)


def failed_handoffs(truth: dict[str, Any]) -> int:
    """Delegations and transfers that failed, by the truth (older truths state no edges: their
    `raised` scenario is the one failed delegation)."""
    if truth.get("edges") is None:
        return 1 if truth["scenario"] == "raised" else 0
    return sum(1 for edge in truth["edges"] if edge["status"] == "failed")


def stated_edges(truth: dict[str, Any]) -> list[tuple[str, str, str, str, int]]:
    """The truth's edges as sorted (caller, target, kind, status, attempts)."""
    return sorted((e["caller"], e["target"], e["kind"], e["status"], e["attempts"]) for e in truth["edges"])


def tokens(truth: dict[str, Any]) -> tuple[int | None, int | None]:
    """(input, output) tokens of the rebuilt trace by the truth: None when no call's usage can be
    read, or agents ran and no model call was recorded (unknown, never 0)."""
    if truth["inference_calls"] == 0 and (truth["unread_calls"] or truth["agents"]):
        return None, None
    return truth["input_tokens"], truth["output_tokens"]


def listed_tokens(truth: dict[str, Any]) -> tuple[int | None, int | None]:
    """(input, output) tokens of the trace list's row by the truth: None when no call's usage was
    read (unknown, or no model call in the trace at all)."""
    if truth["inference_calls"] == 0:
        return None, None
    return truth["input_tokens"], truth["output_tokens"]
