"""`janux replay TRACE --agents module:ENTRY_AGENT` on runs recorded through the SDK's chat-completions
model (`OpenAIChatCompletionsModel`, an SDK agent on any OpenAI-compatible server).

Such a model records each round's output as one dumped Chat Completions message (not the Responses
items the SDK's default model records) and its input as the chat messages it sent, the agent's
instructions first. Three runs are recorded with content capture on through `JanuxProcessor`, the
agents on a real `OpenAIChatCompletionsModel` whose client talks over a socket to the local
chat-completions server (tests/runtime/openai_client/chat_server.py): a delegation (an agent used as a
tool, whose own function tool runs), a handoff (the front desk transfers to refunds, which calls a
function tool), and the delegation with the front desk on the SDK's Responses model (both forms in one
trace). The user's code names a server that is not there: the replay must not need it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_trace_processors
from openai import AsyncOpenAI
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from janux.cli.main import main
from janux.integrations.openai_agents import JanuxProcessor
from janux.replay.openai_agents import run_input
from janux.replay.runner import replay_trace
from janux.tracing import conventions as c
from janux.tracing.analysis.replay_plan import (
    NEEDS_SDK_AGENTS,
    NO_DEFINITIONS,
    ReplayUnavailable,
    chat_message,
    item_plan,
)
from janux.tracing.records import SpanRecord
from tests.cli.helpers import ROOT
from tests.integrations.openai_agents.scripts import COSTS, calls, model, reply, run
from tests.runtime.openai_client.chat_server import ChatServer, Reply, completion, wire_call
from tests.support.contract_checker import Traced

USER_CODE = '''"""The support desk as its developer defines it: SDK agents on a chat-completions server."""

from agents import Agent, OpenAIChatCompletionsModel, function_tool
from openai import AsyncOpenAI

# Nothing listens here: a replay that reached the server would fail.
client = AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused", max_retries=0)


def served() -> OpenAIChatCompletionsModel:
    return OpenAIChatCompletionsModel(model="llama-3.1-8b", openai_client=client)


@function_tool
def lookup_order(order: str) -> str:
    """Look an order up in the shop's database."""
    raise RuntimeError("the shop database is not reachable offline")


@function_tool
def issue_refund(order: str) -> str:
    """Refund an order."""
    raise RuntimeError("the payment provider is not reachable offline")


researcher = Agent(name="researcher", instructions="Research orders.", model=served(), tools=[lookup_order])
triage = Agent(
    name="triage",
    instructions="Front desk.",
    model=served(),
    tools=[researcher.as_tool(tool_name="research", tool_description="Research an order.")],
)
triage_alone = Agent(name="triage", instructions="Front desk.", model=served())

refunds = Agent(name="refunds", instructions="Refund orders.", model=served(), tools=[issue_refund])
desk = Agent(name="desk", instructions="Route the customer.", model=served(), handoffs=[refunds])
desk_without_handoff = Agent(name="desk", instructions="Route the customer.", model=served())
'''

QUESTION = "Can I get a refund for order 7?"


@function_tool
def lookup_order(order: str) -> str:
    """Look an order up (as recorded)."""
    return f"order {order}: paid 2026-11-02, annual plan"


@function_tool
def issue_refund(order: str) -> str:
    """Refund an order (as recorded)."""
    return f"refund of order {order} issued"


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def _calls(
    call_id: str, name: str, arguments: dict[str, Any], input_tokens: int, output_tokens: int
) -> Reply:
    return completion(
        None,
        tool_calls=[wire_call(call_id, name, json.dumps(arguments))],
        finish_reason="tool_calls",
        usage=_usage(input_tokens, output_tokens),
    )


def _delegating(served: Callable[[], OpenAIChatCompletionsModel]) -> tuple[Agent[None], list[Reply]]:
    researcher = Agent(
        name="researcher", instructions="Research orders.", model=served(), tools=[lookup_order]
    )
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=served(),
        tools=[researcher.as_tool(tool_name="research", tool_description="Research an order.")],
    )
    replies = [
        _calls("call-1", "research", {"input": "order 7"}, 400, 30),
        _calls("call-2", "lookup_order", {"order": "7"}, 120, 9),
        completion("Order 7 was paid on 2026-11-02 for an annual plan.", usage=_usage(300, 14)),
        completion("Your order qualifies for a refund.", usage=_usage(600, 12)),
    ]
    return triage, replies


def _handoff(served: Callable[[], OpenAIChatCompletionsModel]) -> tuple[Agent[None], list[Reply]]:
    refunds = Agent(name="refunds", instructions="Refund orders.", model=served(), tools=[issue_refund])
    desk = Agent(name="desk", instructions="Route the customer.", model=served(), handoffs=[refunds])
    replies = [
        _calls("call-3", "transfer_to_refunds", {}, 200, 6),
        _calls("call-4", "issue_refund", {"order": "7"}, 500, 11),
        completion("Done: order 7 is refunded.", usage=_usage(700, 9)),
    ]
    return desk, replies


def _mixed(served: Callable[[], OpenAIChatCompletionsModel]) -> tuple[Agent[None], list[Reply]]:
    """The front desk on the SDK's Responses model (scripted), its researcher on a chat-completions server."""
    researcher = Agent(
        name="researcher", instructions="Research orders.", model=served(), tools=[lookup_order]
    )
    triage = Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            "responses",
            calls(("research", {"input": "order 7"}), input_tokens=400, output_tokens=30),
            reply("Your order qualifies for a refund.", 600, 12),
        ),
        tools=[researcher.as_tool(tool_name="research", tool_description="Research an order.")],
    )
    replies = [
        _calls("call-5", "lookup_order", {"order": "7"}, 120, 9),
        completion("Order 7 was paid on 2026-11-02 for an annual plan.", usage=_usage(300, 14)),
    ]
    return triage, replies


RECORDS: dict[Path, list[SpanRecord]] = {}
"""The recorded spans by fixture folder (the file holds the same, for the command)."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """Both runs recorded through the chat-completions model with capture on, and the user's code."""
    folder = tmp_path_factory.mktemp("chat_replay")
    (folder / "chat_desk.py").write_text(USER_CODE, encoding="utf-8")
    traced = Traced()
    traced.provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(str(folder / "traces.jsonl"))))
    ids: dict[str, str] = {}
    with ChatServer() as server:
        for name, build in (("delegation", _delegating), ("handoff", _handoff), ("mixed", _mixed)):
            # One client per run: its connection pool belongs to the run's event loop.
            client = AsyncOpenAI(base_url=server.base_url, api_key="sk-offline-test", max_retries=0)
            agent, replies = build(
                partial(OpenAIChatCompletionsModel, model="gpt-4o-mini", openai_client=client)
            )
            server.queue(*replies)
            set_trace_processors([JanuxProcessor(costs=COSTS, tracer_provider=traced.provider, capture=True)])
            done = asyncio.run(run(agent, QUESTION))
            assert done.error is None, done.error
            new = {s.trace_id for s in traced.records()} - set(ids.values())
            assert len(new) == 1, new
            ids[name] = new.pop()
        assert len(server.requests) == 9  # every chat-completions round went over the socket
    set_trace_processors([])
    RECORDS[folder] = traced.records()
    traced.provider.shutdown()
    yield folder, ids


def _spans(folder: Path, trace_id: str) -> list[SpanRecord]:
    return [s for s in RECORDS[folder] if s.trace_id == trace_id]


def _replay_here(
    folder: Path,
    trace_id: str,
    *args: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str]:
    """The command in this process: its exit status and output."""
    monkeypatch.syspath_prepend(str(folder))
    status = main(["replay", "--source", f"memory-file:{folder / 'traces.jsonl'}", trace_id, *args])
    return status, capsys.readouterr().out


def test_the_rounds_are_recorded_as_chat_completions_messages(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    """What this file replays: every round's output a dumped Chat Completions message, not items."""
    folder, ids = recorded
    plan = item_plan(_spans(folder, ids["delegation"]))
    messages = [chat_message(r) for r in plan.rounds]
    assert all(m is not None for m in messages)
    assert messages[0] is not None and messages[0]["tool_calls"][0]["function"]["name"] == "research"
    assert plan.chat_input
    assert json.loads(plan.input) == [
        {"content": "Front desk.", "role": "system"},
        {"content": QUESTION, "role": "user"},
    ]
    # The run's input given back to the SDK: the instructions' system message is the agent's own.
    assert run_input(plan, Agent(name="triage", instructions="Front desk.")) == [
        {"content": QUESTION, "role": "user"}
    ]
    # Without instructions the system message was the input's own: kept.
    assert len(run_input(plan, Agent(name="triage"))) == 2


@pytest.mark.parametrize(
    ("run_name", "entry", "kind"),
    [
        ("delegation", "triage", "delegation to researcher"),
        ("handoff", "desk", "transfer to refunds"),
        ("mixed", "triage", "delegation to researcher"),
    ],
)
def test_a_chat_completions_run_replays_on_the_users_agents_to_the_same_outcome(
    recorded: tuple[Path, dict[str, str]],
    run_name: str,
    entry: str,
    kind: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, ids = recorded
    status, out = _replay_here(
        folder, ids[run_name], "--agents", f"chat_desk:{entry}", monkeypatch=monkeypatch, capsys=capsys
    )
    assert status == 0, out
    assert "the replay matches the recording" in out
    assert f": {entry}, " in out.splitlines()[0]
    assert kind in out


@pytest.mark.parametrize(
    ("run_name", "entry", "difference"),
    [
        ("delegation", "triage_alone", "delegation 1 (research): not made in the replay"),
        ("handoff", "desk_without_handoff", "delegation 1 (handoff.refunds): not made in the replay"),
    ],
)
def test_a_changed_agent_makes_the_chat_completions_replay_differ(
    recorded: tuple[Path, dict[str, str]],
    run_name: str,
    entry: str,
    difference: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, ids = recorded
    args = ("--agents", f"chat_desk:{entry}")
    status, out = _replay_here(folder, ids[run_name], *args, monkeypatch=monkeypatch, capsys=capsys)
    assert status == 1, out
    assert "the replay differs from the recording:" in out
    assert difference in out
    # The recorded round calls a tool (or transfer) the changed agent no longer has.
    assert "turn error: recorded None, replayed ModelBehaviorError" in out


def test_without_agents_the_refusal_says_to_pass_them(
    recorded: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, ids = recorded
    status, out = _replay_here(folder, ids["handoff"], monkeypatch=monkeypatch, capsys=capsys)
    assert status == 2, out
    assert NEEDS_SDK_AGENTS in out
    assert NO_DEFINITIONS not in out


def test_chat_messages_in_a_trace_not_written_by_janux_keep_the_no_definitions_refusal(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    """The same messages, the turn span without the Janux contract's accounting (as another OpenAI
    instrumentation would write it): not read as the plugin's trace."""
    folder, ids = recorded
    spans = [replace(s, attributes=dict(s.attributes)) for s in _spans(folder, ids["delegation"])]
    root = next(s for s in spans if not s.parent_span_id)
    for key in [k for k in root.attributes if k.startswith(("janux.turn.", "janux.bill."))]:
        del root.attributes[key]
    assert c.JANUX_TURN_ROUNDS not in root.attributes
    with pytest.raises(ReplayUnavailable) as refused:
        replay_trace(spans)
    assert str(refused.value) == NO_DEFINITIONS
    with pytest.raises(ReplayUnavailable, match="not in the OpenAI Agents SDK's item or chat-completions"):
        item_plan(spans)


def test_a_written_test_of_a_chat_completions_run_passes_as_written(
    recorded: tuple[Path, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, ids = recorded
    written = tmp_path / "test_chat_replay.py"
    args = ("--agents", "chat_desk:triage", "--write-test", str(written))
    status, out = _replay_here(folder, ids["delegation"], *args, monkeypatch=monkeypatch, capsys=capsys)
    assert status == 0, out
    assert "chat_input=True" in written.read_text(encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(written)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)]),
             "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def _altered(
    spans: list[SpanRecord], first_input: str | None = None, output: str | None = None
) -> list[SpanRecord]:
    """The trace with its first round's recorded input or output replaced."""
    first = min((s for s in spans if s.name.startswith("chat ")), key=lambda s: (s.start_ns, s.span_id))
    changed = {c.GEN_AI_INPUT_MESSAGES: first_input, c.GEN_AI_OUTPUT_MESSAGES: output}
    attributes = {**first.attributes, **{k: v for k, v in changed.items() if v is not None}}
    return [replace(s, attributes=attributes) if s is first else s for s in spans]


def test_an_unreadable_message_or_an_input_with_tool_calls_is_refused_before_the_run(
    recorded: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from janux.replay.runner import replay_sdk_trace

    folder, ids = recorded
    monkeypatch.syspath_prepend(str(folder))
    spans = _spans(folder, ids["delegation"])
    no_call_id = json.dumps(
        [{"content": None, "refusal": None, "role": "assistant",
          "tool_calls": [{"type": "function", "function": {"name": "research"}}]}]
    )  # fmt: skip
    with pytest.raises(ReplayUnavailable, match="a recorded chat message of triage is unreadable"):
        replay_sdk_trace(_altered(spans, output=no_call_id), "chat_desk:triage")
    earlier_call = {"id": "c0", "type": "function", "function": {"name": "research", "arguments": "{}"}}
    continued = json.dumps(
        [{"content": "Front desk.", "role": "system"}, {"content": QUESTION, "role": "user"},
         {"role": "assistant", "content": None, "tool_calls": [earlier_call]},
         {"role": "tool", "tool_call_id": "c0", "content": "earlier"}]
    )  # fmt: skip
    with pytest.raises(ReplayUnavailable, match="the run began with tool calls in the chat-completions"):
        replay_sdk_trace(_altered(spans, first_input=continued), "chat_desk:triage")
