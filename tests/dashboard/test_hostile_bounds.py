"""What a page holds for a hostile trace is bounded: the trace cache by bytes as well as spans, the
agent map's paths, the graph and the loop table's indentation by depth; uploads by session and in all."""

from __future__ import annotations

import tracemalloc

from janux.dashboard.gate import MIB, UploadRoom
from janux.dashboard.ui.view_cache import ViewCache, view_bytes
from janux.dashboard.views import tables
from janux.dashboard.views.handoff_chart import handoff_frames
from janux.dashboard.views.handoff_labels import DEFAULT_MAX_NODES, MAX_DRAWN_DEPTH
from janux.tracing.analysis.agentmap.loops import DEEPER, MAX_PATH_DEPTH
from janux.tracing.analysis.formatting import MAX_INDENT_DEPTH
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.protocol import TraceFilter
from tests.support.hostile_traces import huge_values, nested_agents

DEPTH = 10_000


def test_the_trace_cache_drops_traces_past_its_byte_budget() -> None:
    traces = [huge_values(4 << 20, f"{k:x}" * 32) for k in range(3)]
    source = MemoryTraceSource([span for trace in traces for span in trace])
    cache = ViewCache(max_bytes=10 << 20)
    for trace in traces:
        cache.view(source, "k", trace[0].trace_id)
    # 2-span traces of 8 MiB each: far under the span budget, over the byte budget: only the latest stays.
    latest = cache.view(source, "k", traces[2][0].trace_id)
    assert len(cache._entries) == 1 and cache.held_bytes == view_bytes(latest) > 8 << 20


def test_the_agent_map_of_a_chain_10000_deep_keeps_short_paths() -> None:
    source = MemoryTraceSource(nested_agents(DEPTH))
    tracemalloc.start()
    try:
        agent_map = source.agent_map(TraceFilter())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(agent_map.nodes) == DEPTH  # every agent is still on the map
    assert max(len(p.path) for p in agent_map.paths) == MAX_PATH_DEPTH
    deep = next(p for p in agent_map.paths if p.path[-1] == f"agent{DEPTH - 1}")
    assert deep.path[: MAX_PATH_DEPTH - 2] == tuple(f"agent{n}" for n in range(MAX_PATH_DEPTH - 2))
    assert deep.path[-2] == DEEPER
    assert peak < 150 << 20, f"{peak / 2**20:.0f} MiB"  # unbounded paths: ~500 MiB


def test_the_loop_table_indents_at_most_a_bounded_depth() -> None:
    frame = tables.nodes_frame(reconstruct(nested_agents(DEPTH)))
    longest = int(frame["loop"].str.len().max())
    assert len(frame) == DEPTH and longest < 4 * MAX_INDENT_DEPTH + 40  # unbounded: 40,000 characters
    assert frame["loop"].iloc[-1].endswith(f"[depth {DEPTH - 1}] agent{DEPTH - 1}")


def test_the_handoff_graph_of_a_deep_chain_collapses_past_its_depth() -> None:
    points = handoff_frames(reconstruct(nested_agents(DEPTH)), DEFAULT_MAX_NODES).points
    assert (points["kind"] == "loop").sum() == MAX_DRAWN_DEPTH + 1  # levels 0..24, the rest "+N more"
    assert list(points[points["kind"] == "more"]["detail"]) == [
        f"+{DEPTH - MAX_DRAWN_DEPTH - 1:,} more loops"
    ]


def test_uploads_are_capped_per_session_and_in_all() -> None:
    held = {"a": 100 * MIB, "b": 50 * MIB}
    room = UploadRoom(128 * MIB, 200 * MIB, lambda sid: (held.get(sid, 0), sum(held.values())))
    assert room.take("a", 30 * MIB) == "this session's uploads would exceed 128 MiB"
    assert room.take("b", 40 * MIB) is None  # 90 for b, 190 in all
    assert room.take("c", 20 * MIB) == "the dashboard's uploads would exceed 200 MiB; retry later"
    room.give_back("b", 40 * MIB)
    assert room.take("c", 20 * MIB) is None


def test_the_span_detail_shows_huge_values_cut_and_offers_them_whole() -> None:
    from janux.dashboard.views.span_detail import (
        SHOWN_CONTENT_CHARS,
        SHOWN_VALUE_CHARS,
        full_value,
        span_detail,
    )

    spans = huge_values(4 * MIB)
    view = reconstruct(spans)
    agent = next(s for s in spans if s.span_id == "1" * 16)
    chat = next(s for s in spans if s.span_id == "2" * 16)
    detail = span_detail(view, agent, None)
    note = detail.attributes.set_index("attribute").loc["big.note", "value"]
    assert SHOWN_VALUE_CHARS < len(note) < SHOWN_VALUE_CHARS + 100 and note.endswith("more characters]")
    assert detail.cut == ["big.note"]
    assert full_value(agent, "big.note").decode() == agent.attributes["big.note"]
    captured = span_detail(view, chat, None)
    assert all(len(text) < SHOWN_CONTENT_CHARS + 100 for text in captured.content.values())
    assert captured.cut == ["gen_ai.output.messages"]
