"""Content capture (off by default; on, redacted, truncated) and tracing failures never breaking a run."""

from __future__ import annotations

import ast
import json
import logging
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from janux.runtime import Agent, Subagent, function_tool
from janux.runtime.testing import ScriptedModel, call_tools, delegate, reply, tool_call
from janux.tracing import conventions as c
from janux.tracing.instrument.content import ContentCapture, resolve_capture
from tests.support.contract_checker import Traced, outline
from tests.support.paths import REPO_ROOT

SECRET = "PROMPT-SECRET-42"
ROOT = REPO_ROOT


def _agent() -> Agent:
    @function_tool
    def lookup(query: str) -> str:
        """Look up."""
        return f"result for {query}"

    sub = Agent(
        "researcher",
        instructions=f"sub instructions {SECRET}",
        model=ScriptedModel([reply(f"sub answer {SECRET}")]),
    )
    model = ScriptedModel(
        [
            call_tools(tool_call("lookup", {"query": SECRET}), delegate("researcher", f"task {SECRET}")),
            reply(f"final {SECRET}"),
        ]
    )
    return Agent(
        "triage",
        instructions=f"system {SECRET}",
        model=model,
        tools=[lookup],
        subagents=[Subagent(agent=sub, max_turns=1)],
    )


def _all_text(traced: Traced) -> str:
    chunks = []
    for span in traced.records():
        chunks.append(json.dumps(span.attributes, default=str))
        chunks.append(span.status_message)
        chunks += [json.dumps(event.attributes, default=str) for event in span.events]
    return "\n".join(chunks)


async def test_no_content_reaches_spans_or_events_by_default(
    traced: Traced, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(c.CAPTURE_CONTENT_ENV, raising=False)
    result = await _agent().run(f"user {SECRET}", tracer_provider=traced.provider)
    assert SECRET in result.text
    assert SECRET not in _all_text(traced)


async def test_env_switch_captures_content(traced: Traced, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(c.CAPTURE_CONTENT_ENV, "true")
    await _agent().run(f"user {SECRET}", tracer_provider=traced.provider)
    spans = {span.name: span for span in traced.records()}
    chat = next(
        s
        for s in traced.records()
        if s.name.startswith("chat") and s.attributes[c.GEN_AI_AGENT_NAME] == "triage"
    )
    assert SECRET in chat.attributes[c.GEN_AI_SYSTEM_INSTRUCTIONS]
    assert f"user {SECRET}" in chat.attributes[c.GEN_AI_INPUT_MESSAGES]
    assert SECRET in chat.attributes[c.GEN_AI_OUTPUT_MESSAGES]
    tool = spans["execute_tool lookup"]
    assert (
        SECRET in tool.attributes[c.GEN_AI_TOOL_CALL_ARGUMENTS]
        and SECRET in tool.attributes[c.GEN_AI_TOOL_CALL_RESULT]
    )
    end = spans["execute_tool delegate.researcher"].events[1]
    assert end.attributes[c.JANUX_HANDOFF_OUTPUT] == f"sub answer {SECRET}"


async def test_explicit_capture_redacts_first_then_truncates(
    traced: Traced, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(c.CAPTURE_CONTENT_ENV, "false")
    capture = ContentCapture(enabled=True, max_length=12, redact=lambda text: text.replace(SECRET, "[X]"))
    await _agent().run(f"user {SECRET}", tracer_provider=traced.provider, capture_content=capture)
    assert SECRET not in _all_text(traced)
    end = {s.name: s for s in traced.records()}["execute_tool delegate.researcher"].events[1]
    assert end.attributes[c.JANUX_HANDOFF_OUTPUT] == "sub answer …"
    assert len(end.attributes[c.JANUX_HANDOFF_OUTPUT]) == 12


def test_capture_settings_from_the_environment() -> None:
    assert ContentCapture.from_env({}).enabled is False
    on = ContentCapture.from_env({c.CAPTURE_CONTENT_ENV: "TRUE", c.CAPTURE_MAX_LENGTH_ENV: "100"})
    assert on.enabled and on.max_length == 100
    assert (
        ContentCapture.from_env({c.CAPTURE_CONTENT_ENV: "true", c.CAPTURE_MAX_LENGTH_ENV: "-3"}).max_length
        == 4096
    )
    assert resolve_capture(False).enabled is False and resolve_capture(True).enabled is True
    assert ContentCapture(enabled=True).capture(None) is None
    assert ContentCapture(enabled=False).capture("x") is None
    broken = ContentCapture(enabled=True, redact=lambda text: 1 / 0)  # type: ignore[arg-type,return-value]
    assert broken.capture("secret") is None
    with pytest.raises(ValueError, match="max_length"):
        ContentCapture(max_length=0)


class _Exploding(SpanProcessor):
    def on_start(self, span: object, parent_context: object = None) -> None:
        raise RuntimeError("processor on_start bug")

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("processor on_end bug")


async def test_a_raising_span_processor_does_not_fail_the_run(caplog: pytest.LogCaptureFixture) -> None:
    provider = TracerProvider()
    provider.add_span_processor(_Exploding())
    with caplog.at_level(logging.WARNING, logger="janux.tracing"):
        result = await _agent().run("hi", tracer_provider=provider)
    assert result.text == f"final {SECRET}"
    assert any("tracing failed" in record.message for record in caplog.records)


async def test_a_processor_raising_only_on_end_still_leaves_the_other_processor_a_tree() -> None:
    traced = Traced()
    traced.provider.add_span_processor(_EndOnly())
    result = await _agent().run("hi", tracer_provider=traced.provider)
    assert result.text.startswith("final")
    assert outline(traced.tree())[0].startswith("invoke_agent triage")


class _EndOnly(SpanProcessor):
    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("on_end bug")


def test_no_sdk_import_in_the_runtime_or_the_instrumentation() -> None:
    files = [*sorted((ROOT / "runtime").glob("*.py")), *sorted((ROOT / "tracing").glob("instrument*.py"))]
    offenders = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {name}" for name in names if name.startswith("opentelemetry.sdk")]
    assert len(files) > 20 and offenders == []


@pytest.mark.parametrize(
    "redact",
    [lambda text: None, lambda text: 42, lambda text: 1 / 0],
    ids=["returns-None", "returns-int", "raises"],
)
async def test_a_broken_redaction_hook_drops_content_but_never_a_span_or_event(redact: Any) -> None:
    """Every span still ends (an unended span is never exported) and every HANDOFF_END is recorded."""
    reference, broken = Traced(), Traced()
    options: dict[str, Any] = {"thread_id": "t"}
    await _agent().run(f"user {SECRET}", tracer_provider=reference.provider, capture_content=False, **options)
    capture = ContentCapture(enabled=True, redact=redact)
    result = await _agent().run(
        f"user {SECRET}", tracer_provider=broken.provider, capture_content=capture, **options
    )
    assert result.text == f"final {SECRET}"
    assert broken.tree() == reference.tree()  # same spans, attributes and events; no content at all
    assert SECRET not in _all_text(broken)


CONTENT_KEYS = (
    c.GEN_AI_INPUT_MESSAGES,
    c.GEN_AI_OUTPUT_MESSAGES,
    c.GEN_AI_SYSTEM_INSTRUCTIONS,
    c.GEN_AI_TOOL_CALL_ARGUMENTS,
    c.GEN_AI_TOOL_CALL_RESULT,
    c.JANUX_HANDOFF_OUTPUT,
)


def _leaves(value: Any) -> list[str]:
    """Every string inside a captured value (JSON messages and arguments are opened up)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [value]
        return [value, *_leaves(parsed)] if not isinstance(parsed, str) else [value]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return []


async def _demo_records(monkeypatch: pytest.MonkeyPatch, capture: bool) -> list[Any]:
    from janux.demo.scenarios import run_scenarios

    if capture:
        monkeypatch.setenv(c.CAPTURE_CONTENT_ENV, "true")
    else:
        monkeypatch.delenv(c.CAPTURE_CONTENT_ENV, raising=False)  # the default: nothing set
    traced = Traced()
    outcomes = await run_scenarios(tracer_provider=traced.provider, latency_scale=0)
    assert all(outcome.error is None for outcome in outcomes)
    return traced.records()


async def test_a_demo_run_records_no_prompt_task_argument_or_output_text_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What capture on records, capture off must record nowhere: no attribute, event or status."""
    from janux.demo.scenarios import ASK

    captured = await _demo_records(monkeypatch, capture=True)
    names = {str(v) for span in captured for k, v in span.attributes.items() if k not in CONTENT_KEYS}
    names |= {
        str(v)
        for span in captured
        for e in span.events
        for k, v in e.attributes.items()
        if k not in CONTENT_KEYS
    }
    known = {
        leaf
        for span in captured
        for source in (span.attributes, *(event.attributes for event in span.events))
        for key, value in source.items()
        if key in CONTENT_KEYS
        for leaf in _leaves(value)
        if len(leaf) >= 8 and leaf not in names  # tool names and call ids are not content
    }
    assert ASK in known and "Refund rules for annual plans" in known and len(known) > 40

    plain = await _demo_records(monkeypatch, capture=False)
    texts = [span.status_message for span in plain]
    texts += [str(v) for span in plain for v in span.attributes.values()]
    texts += [str(v) for span in plain for e in span.events for v in e.attributes.values()]
    texts += [key for span in plain for key in span.attributes if key in CONTENT_KEYS]
    leaks = sorted({text for text in known if any(text in t for t in texts)})
    assert leaks == []
    assert not any(key in CONTENT_KEYS for span in plain for key in span.attributes)


def test_redaction_sees_the_whole_value_before_truncation() -> None:
    seen: list[str] = []

    def redact(text: str) -> str:
        seen.append(text)
        return text.replace("4111111111111111", "[X]")

    capture = ContentCapture(enabled=True, max_length=16, redact=redact)
    # Truncating first would cut the card number in half, so the hook could not find it.
    assert capture.capture("card 4111111111111111 ok") == "card [X] ok"
    assert seen == ["card 4111111111111111 ok"]
    assert capture.capture("card 4111111111111111 and a long tail") == "card [X] and a …"


async def test_env_capture_truncates_every_value_to_the_configured_length(
    traced: Traced, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(c.CAPTURE_CONTENT_ENV, "true")
    monkeypatch.setenv(c.CAPTURE_MAX_LENGTH_ENV, "20")
    await _agent().run(f"user {SECRET}", tracer_provider=traced.provider)
    values = [
        value
        for span in traced.records()
        for source in (span.attributes, *(event.attributes for event in span.events))
        for key, value in source.items()
        if key in CONTENT_KEYS
    ]
    assert len(values) >= 10 and all(isinstance(v, str) and len(v) <= 20 for v in values)
    assert any(v.endswith("…") for v in values)
