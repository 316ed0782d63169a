"""JanuxProcessor beyond the basic scenarios: prices, content, configurations, isolation, setup."""

from __future__ import annotations

import logging
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    RunConfig,
    Runner,
    add_trace_processor,
    custom_span,
    set_trace_processors,
    trace,
)
from agents.tracing import get_trace_provider
from opentelemetry import trace as otel_trace
from opentelemetry.trace import NoOpTracerProvider

from janux.integrations.openai_agents import JanuxProcessor, instrument, uninstrument
from janux.integrations.openai_agents.install import forwarder
from janux.tracing import conventions as c
from janux.tracing.instrument import ContentCapture
from janux.tracing.instrument import run as instrument_run
from janux.tracing.instrument.content import TRUNCATION_MARK
from janux.tracing.prices import estimate_round_cost as estimate_round
from janux.tracing.prices import price_source
from tests.integrations.openai_agents.scripts import COSTS, MODEL_NAME, calls, model, price, reply, run
from tests.integrations.openai_agents.verify import attr, checked, shape, spans_named
from tests.support.contract_checker import Traced


def _delegating(kind: Any = "responses", *, sub: str = "researcher", parent: str = "triage") -> Agent[None]:
    researcher = Agent(name=sub, instructions="Research.", model=model(kind, reply("30 days.", 300, 8)))
    return Agent(
        name=parent,
        instructions="Front desk.",
        model=model(
            kind,
            calls((sub, {"input": "refund rules"}), input_tokens=400, output_tokens=30),
            reply("Yes.", 600, 12),
        ),
        tools=[researcher.as_tool(tool_name=sub, tool_description="Research.")],
    )


def _install(traced: Traced, **options: Any) -> JanuxProcessor:
    processor = JanuxProcessor(tracer_provider=traced.provider, **options)
    set_trace_processors([processor])
    return processor


async def test_an_agent_without_a_cost_gets_a_labelled_estimate_never_a_price(traced: Traced) -> None:
    """The researcher has no Janux Cost: its round is unpriced in the exact accounting, and the
    genai-prices estimate rides alongside in its own attributes."""
    _install(traced, costs={"triage": COSTS["triage"]})
    await run(_delegating(sub="helper"), "Refund?")
    records, view = checked(traced)
    sub_chat = spans_named(records, "invoke_agent helper")[0]
    (chat,) = [s for s in spans_named(records, "chat") if s.parent_span_id == sub_chat.span_id]
    expected = estimate_round(MODEL_NAME, "openai", 300, 8)
    assert expected is not None and expected > 0
    assert c.JANUX_ROUND_COST not in chat.attributes
    assert attr(chat, c.JANUX_ROUND_COST_ESTIMATE) == expected
    assert attr(chat, c.JANUX_PRICE_SOURCE) == price_source()
    assert attr(sub_chat, c.JANUX_TURN_UNPRICED_TOKENS) == 308
    assert (
        attr(sub_chat, c.JANUX_TURN_COST_ESTIMATE) == expected
        and c.JANUX_TURN_COST not in sub_chat.attributes
    )
    root = spans_named(records, "invoke_agent triage")[0]
    assert (
        attr(root, c.JANUX_BILL_UNPRICED_TOKENS) == 308 and attr(root, c.JANUX_BILL_COST_ESTIMATE) == expected
    )
    assert math.isclose(attr(root, c.JANUX_BILL_COST), price("triage", 400, 30) + price("triage", 600, 12))
    (delegation,) = view.delegations
    # The dashboard shows it as an estimate: never as a recorded cost, never as $0.
    assert delegation.cost.cost is None and delegation.cost.estimated_cost == expected
    assert (delegation.cost.unpriced_tokens, delegation.cost.estimated_tokens) == (0, 308)


async def test_without_estimates_or_a_known_model_the_round_stays_unpriced(traced: Traced) -> None:
    _install(traced, estimate_prices=False)
    await run(_delegating(), "Refund?")
    records, view = checked(traced)
    for span in records:
        assert not any(key in span.attributes for key in (*c.ESTIMATE_KEYS, c.JANUX_ROUND_COST))
    assert view.bill is not None and view.bill.cost is None and view.bill.unpriced_tokens == 1350
    assert estimate_round("no-such-model-anywhere", "openai", 10, 10) is None


async def test_estimates_need_no_price_table_lookup_per_round(
    traced: Traced, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Estimating runs on the agent's thread: the table is probed once per model, then every round
    (whatever its token counts) is priced without a lookup, at the table's price."""
    import genai_prices

    lookups = 0
    real = genai_prices.calc_price

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal lookups
        lookups += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(genai_prices, "calc_price", counting)
    _install(traced)  # no Cost at all: every round is estimated
    await run(_delegating(), "Refund?")  # the first rounds on this model may probe the table
    probes = lookups
    traced.clear()
    sub = Agent(name="researcher", instructions="R.", model=model("responses", reply("ok", 911, 17)))
    parent = Agent(
        name="triage",
        instructions="F.",
        model=model("responses", calls(("researcher", {"input": "q"}), input_tokens=733, output_tokens=41),
                    reply("done", 1201, 9)),
        tools=[sub.as_tool(tool_name="researcher", tool_description="R.")],
    )  # fmt: skip
    await run(parent, "Again?")
    assert lookups == probes
    records, _ = checked(traced)
    estimates = {span.attributes[c.GEN_AI_USAGE_INPUT_TOKENS]: attr(span, c.JANUX_ROUND_COST_ESTIMATE)
                 for span in spans_named(records, "chat")}  # fmt: skip
    for tokens_in, tokens_out in ((733, 41), (911, 17), (1201, 9)):
        usage = genai_prices.Usage(input_tokens=tokens_in, output_tokens=tokens_out)
        table = float(real(usage, MODEL_NAME, provider_id="openai").total_price)
        assert math.isclose(estimates[tokens_in], table, rel_tol=1e-9)


async def test_no_content_is_recorded_unless_capture_is_on(traced: Traced) -> None:
    _install(traced, costs=COSTS)
    await run(_delegating(), "My refund question")
    records, _ = checked(traced)
    content_keys = {
        c.GEN_AI_INPUT_MESSAGES,
        c.GEN_AI_OUTPUT_MESSAGES,
        c.GEN_AI_TOOL_CALL_ARGUMENTS,
        c.GEN_AI_TOOL_CALL_RESULT,
        c.JANUX_HANDOFF_OUTPUT,
    }
    for span in records:
        assert not content_keys & set(span.attributes), span.name
        for event in span.events:
            assert not content_keys & set(event.attributes)


async def test_content_capture_redacts_and_truncates(traced: Traced) -> None:
    capture = ContentCapture(enabled=True, max_length=60, redact=lambda text: text.replace("refund", "[x]"))
    _install(traced, costs=COSTS, capture=capture)
    await run(_delegating(), "My refund question " * 5)
    records, _ = checked(traced)
    captured = [
        value
        for span in records
        for key, value in [*span.attributes.items(), *(i for e in span.events for i in e.attributes.items())]
        if key in (c.GEN_AI_INPUT_MESSAGES, c.GEN_AI_OUTPUT_MESSAGES, c.GEN_AI_TOOL_CALL_ARGUMENTS,
                   c.GEN_AI_TOOL_CALL_RESULT, c.JANUX_HANDOFF_OUTPUT)
    ]  # fmt: skip
    assert len(captured) == 3 * 2 + 3  # input and output of 3 rounds; arguments, result, handoff output
    assert all(len(value) <= 60 and "refund" not in value for value in captured)
    first_chat = spans_named(records, "chat")[0]
    assert attr(first_chat, c.GEN_AI_INPUT_MESSAGES).endswith(TRUNCATION_MARK)
    assert "My [x] question" in attr(first_chat, c.GEN_AI_INPUT_MESSAGES)
    (tool,) = spans_named(records, "execute_tool")
    assert attr(tool, c.GEN_AI_TOOL_CALL_ARGUMENTS) == '{"input": "[x] rules"}'
    assert attr(tool, c.GEN_AI_TOOL_CALL_RESULT) == "30 days."
    assert tool.events[-1].attributes[c.JANUX_HANDOFF_OUTPUT] == "30 days."


async def test_the_sdks_sensitive_data_switch_also_keeps_content_out(traced: Traced) -> None:
    _install(traced, costs=COSTS, capture=True)
    await run(_delegating(), "My refund question", run_config=RunConfig(trace_include_sensitive_data=False))
    records, _ = checked(traced)
    assert not any(
        key in span.attributes
        for span in records
        for key in (c.GEN_AI_INPUT_MESSAGES, c.GEN_AI_OUTPUT_MESSAGES, c.GEN_AI_TOOL_CALL_ARGUMENTS)
    )


@pytest.mark.parametrize("kind", ["responses", "chat_completions"])
async def test_without_task_and_turn_spans_the_tree_is_the_same(traced: Traced, kind: Any) -> None:
    _install(traced, costs=COSTS)
    config = RunConfig(tracing={"include_task_and_turn_spans": False})
    outcome = await run(_delegating(kind), "Refund?", run_config=config)
    _, view = checked(traced)
    assert shape(traced) == [
        "invoke_agent triage depth=0",
        f"  chat {MODEL_NAME}",
        "  execute_tool researcher status=completed attempts=1 events=START,END",
        "    invoke_agent researcher depth=1 attempt=1",
        f"      chat {MODEL_NAME}",
        f"  chat {MODEL_NAME}",
    ]
    assert view.total.input_tokens == outcome.usage.input_tokens == 1300


@pytest.mark.parametrize("kind", ["sdk", "responses", "chat_completions"])
async def test_a_streamed_run_is_traced_like_a_plain_one(traced: Traced, kind: Any) -> None:
    _install(traced, costs=COSTS)
    result = Runner.run_streamed(_delegating(kind), "Refund?")
    async for _ in result.stream_events():
        pass
    _, view = checked(traced)
    assert [line.strip().split(" [")[0] for line in shape(traced)][:3] == [
        "invoke_agent triage depth=0",
        f"chat {'unknown' if kind == 'sdk' else MODEL_NAME}",
        "execute_tool researcher status=completed attempts=1 events=START,END",
    ]
    usage = result.context_wrapper.usage
    assert (view.total.input_tokens, view.total.output_tokens) == (usage.input_tokens, usage.output_tokens)


@pytest.mark.parametrize("kind", ["sdk", "responses"])
async def test_a_delegation_inside_a_delegation(traced: Traced, kind: Any) -> None:
    _install(traced, costs=COSTS)
    writer = _delegating(kind, sub="researcher", parent="writer")
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            kind,
            calls(("writer", {"input": "answer the customer"}), input_tokens=100, output_tokens=10),
            reply("Sent.", 200, 5),
        ),
        tools=[writer.as_tool(tool_name="writer", tool_description="Write.")],
    )
    outcome = await run(triage, "Refund?")
    records, view = checked(traced)
    depths = {
        attr(s, c.GEN_AI_AGENT_NAME): attr(s, c.JANUX_AGENT_DEPTH)
        for s in spans_named(records, "invoke_agent")
    }
    assert depths == {"triage": 0, "writer": 1, "researcher": 2}
    costs = {d.tool: d.cost.cost for d in view.delegations}
    writer_own = price("writer", 400, 30) + price("writer", 600, 12)
    assert math.isclose(costs["writer"], writer_own + price("researcher", 300, 8))
    assert math.isclose(costs["researcher"], price("researcher", 300, 8))
    assert view.total.input_tokens == outcome.usage.input_tokens == 1600


async def test_the_trace_group_is_the_conversation_and_the_caller_span_the_parent(traced: Traced) -> None:
    _install(traced, costs=COSTS)
    outer = traced.provider.get_tracer("app").start_span("handle request")
    with otel_trace.use_span(outer, end_on_exit=True), trace("support", group_id="thread-42"):
        await Runner.run(_delegating(), "Refund?")
    records = traced.records()
    root = spans_named(records, "invoke_agent triage")[0]
    assert attr(root, c.GEN_AI_CONVERSATION_ID) == "thread-42"
    assert root.parent_span_id == format(outer.get_span_context().span_id, "016x")
    assert {s.trace_id for s in records} == {root.trace_id}


async def test_runs_without_a_group_have_the_sdk_trace_id_as_conversation(traced: Traced) -> None:
    _install(traced, costs=COSTS)
    await Runner.run(_delegating(), "Refund?")
    root = spans_named(traced.records(), "invoke_agent triage")[0]
    assert attr(root, c.GEN_AI_CONVERSATION_ID).startswith("trace_")


async def test_spans_outside_any_run_are_ignored(traced: Traced) -> None:
    processor = _install(traced, costs=COSTS)
    with trace("batch job"), custom_span("preparing"):
        pass
    assert traced.records() == []
    assert processor._mapper._traces == {}


async def test_nothing_is_kept_after_the_runs(traced: Traced) -> None:
    processor = _install(traced, costs=COSTS)
    for _ in range(3):
        await run(_delegating(), "Refund?")
    assert processor._mapper._traces == {}
    assert len(spans_named(traced.records(), "invoke_agent triage")) == 3


class _BrokenProvider(NoOpTracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        return _BrokenTracer()


class _BrokenTracer(otel_trace.NoOpTracer):
    def start_span(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tracer exploded")


async def test_a_broken_tracer_never_breaks_the_run(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The instrumentation logs each failure once per process: a fresh record for this test only.
    monkeypatch.setattr(instrument_run, "_reported", set())
    set_trace_processors([JanuxProcessor(costs=COSTS, tracer_provider=_BrokenProvider())])
    with caplog.at_level(logging.WARNING, logger="janux"):
        for _ in range(2):
            outcome = await run(_delegating(), "Refund?")
            assert outcome.error is None and outcome.result.final_output == "Yes."
    failures = [r.getMessage() for r in caplog.records if "tracer exploded" in r.getMessage()]
    assert failures and len(failures) == len(set(failures))  # logged, once per entry point


class _ExplodingMapper:
    def trace_started(self, *args: Any) -> None:
        raise KeyError("mapping bug")

    trace_ended = span_started = span_ended = trace_started


async def test_a_failing_mapping_is_logged_once_and_the_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    processor = JanuxProcessor(costs=COSTS, tracer_provider=NoOpTracerProvider())
    processor._mapper = _ExplodingMapper()  # type: ignore[assignment]
    set_trace_processors([processor])
    with caplog.at_level(logging.WARNING, logger="janux.integrations"):
        for _ in range(2):
            assert (await run(_delegating(), "Refund?")).error is None
    logged = [r.getMessage() for r in caplog.records if "mapping bug" in r.getMessage()]
    assert logged == [
        f"janux tracing failed in {where} (logged once; the run continues): KeyError('mapping bug')"
        for where in ("on_trace_start", "on_span_start", "on_span_end", "on_trace_end")
    ]


def test_instrument_adds_or_replaces_the_sdks_processors() -> None:
    provider = get_trace_provider()
    sentinel = JanuxProcessor(tracer_provider=NoOpTracerProvider())
    set_trace_processors([sentinel])
    added = instrument(tracer_provider=NoOpTracerProvider())
    registered = forwarder()
    assert registered is not None and registered.target is added
    assert provider._multi_processor._processors == (sentinel, registered)  # type: ignore[attr-defined]
    uninstrument()
    alone = instrument(tracer_provider=NoOpTracerProvider(), exclusive=True)
    registered = forwarder()
    assert registered is not None and registered.target is alone
    assert provider._multi_processor._processors == (registered,)  # type: ignore[attr-defined]
    add_trace_processor(sentinel)
    assert provider._multi_processor._processors == (registered, sentinel)  # type: ignore[attr-defined]


def test_without_the_extra_the_import_says_what_to_install(tmp_path: Path) -> None:
    hide_sdk = "import sys; sys.modules['agents'] = None; import janux.integrations.openai_agents"
    failed = subprocess.run([sys.executable, "-c", hide_sdk], capture_output=True, text=True, timeout=120)
    assert failed.returncode != 0
    assert "pip install 'janux[openai-agents]'" in failed.stderr


async def test_a_long_trace_with_many_runs_keeps_only_what_is_open(traced: Traced) -> None:
    processor = _install(traced, costs=COSTS)
    with trace("a long chat session", group_id="session-1"):
        for _ in range(100):
            await run(_delegating(), "Refund?")
        (state,) = processor._mapper._traces.values()
        assert len(state.loops) < 64 and state.entries == {}
    assert processor._mapper._traces == {}
    roots = spans_named(traced.records(), "invoke_agent triage")
    assert len(roots) == 100 and {attr(r, c.GEN_AI_CONVERSATION_ID) for r in roots} == {"session-1"}
