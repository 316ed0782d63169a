"""The client against a local server: replies, tool calls, usage and the request body on the wire."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable

import httpx2
import pytest

from janux.runtime.model import Message, Model, ModelError, ModelSettings, ModelUsage, ToolCall, ToolSpec
from janux.runtime.openai_client import OpenAIChatModel, shared_http_client

from .chat_server import ChatServer, completion, json_reply, wire_call

ModelFactory = Callable[..., OpenAIChatModel]
NO_SETTINGS = ModelSettings()
SEARCH = ToolSpec("search", "Search the web.", {"type": "object", "properties": {"q": {"type": "string"}}})
RESEARCHER = ToolSpec(
    "delegate.researcher",
    "Delegate to the researcher.",
    {"type": "object", "properties": {"task": {"type": "string"}}, "required": ["task"]},
)


def test_implements_the_model_protocol(make_model: ModelFactory) -> None:
    model = make_model()
    assert isinstance(model, Model)
    assert model.model_name == "test-model"
    assert model.provider_name == "openai"
    assert make_model(provider_name="vllm").provider_name == "vllm"


async def test_text_reply(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(
        completion("Hello there.", usage={"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15})
    )
    response = await make_model().request([Message(role="user", content="Hi")], [], NO_SETTINGS)
    assert response.text == "Hello there."
    assert response.tool_calls == ()
    assert response.usage == ModelUsage(input_tokens=12, output_tokens=3)
    assert response.model_name == "served-model"
    assert response.finish_reason == "stop"
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert "authorization" not in request.headers  # local servers need no key
    assert request.body == {
        "model": "test-model",
        "stream": False,
        "messages": [{"role": "user", "content": "Hi"}],
    }


async def test_api_key_is_sent_as_bearer(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(completion("ok"))
    model = make_model(api_key="sk-test", extra_headers={"x-team": "janux"})
    await model.request([Message(role="user", content="Hi")], [], NO_SETTINGS)
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    assert server.requests[0].headers["x-team"] == "janux"


async def test_parallel_tool_calls_with_dotted_names_round_trip(
    server: ChatServer, make_model: ModelFactory
) -> None:
    server.queue(
        completion(
            None,
            finish_reason="tool_calls",
            tool_calls=[
                wire_call("call_a", "delegate__2e__researcher", '{"task": "find prices"}'),
                wire_call("call_b", "search", '{"q": "prices"}'),
                wire_call("call_c", "delegate__2e__researcher", '{"task": "find reviews"}'),
            ],
            usage={"prompt_tokens": 40, "completion_tokens": 30},
        )
    )
    settings = ModelSettings(parallel_tool_calls=True)
    response = await make_model().request(
        [Message(role="user", content="go")], [RESEARCHER, SEARCH], settings
    )
    assert response.text == ""
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == (
        ToolCall("call_a", "delegate.researcher", '{"task": "find prices"}'),
        ToolCall("call_b", "search", '{"q": "prices"}'),
        ToolCall("call_c", "delegate.researcher", '{"task": "find reviews"}'),
    )
    body = server.requests[0].body
    assert body["parallel_tool_calls"] is True
    assert [t["function"]["name"] for t in body["tools"]] == ["delegate__2e__researcher", "search"]


async def test_long_tool_names_round_trip_through_the_request_map(
    server: ChatServer, make_model: ModelFactory
) -> None:
    long_tool = ToolSpec("delegate." + "very_long_specialist_name_" * 4, "Long.", {"type": "object"})
    server.queue(completion("first"))
    model = make_model()
    await model.request([Message(role="user", content="go")], [long_tool], NO_SETTINGS)
    wire_name = server.requests[0].body["tools"][0]["function"]["name"]
    assert len(wire_name) <= 64 and wire_name != long_tool.name
    server.queue(completion(None, tool_calls=[wire_call("c1", wire_name, "{}")]))
    response = await model.request([Message(role="user", content="go")], [long_tool], NO_SETTINGS)
    assert response.tool_calls[0].name == long_tool.name


async def test_request_body_shape(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(completion("done"))
    history = [
        Message(role="system", content="You are the front desk."),
        Message(role="user", content="Research prices"),
        Message(
            role="assistant",
            content="",
            tool_calls=[
                ToolCall("call_a", "delegate.researcher", '{"task": "prices"}'),
                ToolCall("call_b", "search", '{"q": "x"}'),
            ],
            name="front_desk",
        ),
        Message(role="tool", content='{"text": "42"}', tool_call_id="call_a", name="delegate.researcher"),
        Message(role="tool", content="results", tool_call_id="call_b", name="search"),
        Message(role="assistant", content="Prices are 42.", name="front_desk"),
    ]
    settings = ModelSettings(temperature=0.2, max_output_tokens=256, parallel_tool_calls=False)
    await make_model().request(history, [SEARCH, RESEARCHER], settings)
    body = server.requests[0].body
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 256
    assert body["parallel_tool_calls"] is False
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": SEARCH.description,
                "parameters": SEARCH.parameters,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "delegate__2e__researcher",
                "description": RESEARCHER.description,
                "parameters": RESEARCHER.parameters,
            },
        },
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are the front desk."},
        {"role": "user", "content": "Research prices"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "delegate__2e__researcher", "arguments": '{"task": "prices"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q": "x"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": '{"text": "42"}'},
        {"role": "tool", "tool_call_id": "call_b", "content": "results"},
        {"role": "assistant", "content": "Prices are 42."},
    ]


async def test_max_tokens_field_is_configurable(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(completion("ok"))
    model = make_model(max_tokens_field="max_completion_tokens", extra_body={"seed": 3})
    await model.request([Message(role="user", content="Hi")], [], ModelSettings(max_output_tokens=9))
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body
    assert body["seed"] == 3


async def test_parallel_flag_is_not_sent_without_tools(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(completion("ok"))
    await make_model().request(
        [Message(role="user", content="Hi")], [], ModelSettings(parallel_tool_calls=True)
    )
    assert "parallel_tool_calls" not in server.requests[0].body
    assert "tools" not in server.requests[0].body


async def test_tool_message_without_call_id_is_refused_naming_the_field(
    server: ChatServer, make_model: ModelFactory
) -> None:
    history = [Message(role="user", content="Hi"), Message(role="tool", content="x")]
    with pytest.raises(ModelError, match=r"messages\[1\]\.tool_call_id") as caught:
        await make_model().request(history, [], NO_SETTINGS)
    assert caught.value.error_type == "bad_request"
    assert server.requests == []


async def test_usage_is_optional_and_validated(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(
        completion("no usage"), completion("bad", usage={"prompt_tokens": "12", "completion_tokens": 1})
    )
    model = make_model()
    first = await model.request([Message(role="user", content="Hi")], [], NO_SETTINGS)
    assert first.usage == ModelUsage()
    with pytest.raises(ModelError, match=r"usage\.prompt_tokens"):
        await model.request([Message(role="user", content="Hi")], [], NO_SETTINGS)


async def test_local_server_quirks_are_tolerated(server: ChatServer, make_model: ModelFactory) -> None:
    # Ollama-era shapes: arguments as an object, no call id, no finish_reason, content parts.
    body = {
        "model": "llama3.2",
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Let me "}, {"type": "text", "text": "check."}],
                    "tool_calls": [
                        {"type": "function", "function": {"name": "search", "arguments": {"q": "x"}}}
                    ],
                },
            }
        ],
    }
    server.queue(json_reply(200, body))
    response = await make_model().request([Message(role="user", content="Hi")], [SEARCH], NO_SETTINGS)
    assert response.text == "Let me check."
    assert response.tool_calls == (ToolCall("call_0", "search", json.dumps({"q": "x"})),)
    assert response.finish_reason == "tool_calls"


def test_one_model_serves_successive_event_loops(server: ChatServer, make_model: ModelFactory) -> None:
    # A sync wrapper calls asyncio.run per turn; the pooled client of a closed loop must not be reused.
    server.queue(completion("one"), completion("two"))
    model = make_model()
    for expected in ("one", "two"):
        response = asyncio.run(model.request([Message(role="user", content="Hi")], [], NO_SETTINGS))
        assert response.text == expected
    assert len(server.requests) == 2


async def test_one_pooled_connection_serves_successive_rounds(
    server: ChatServer, make_model: ModelFactory
) -> None:
    server.queue(completion("one"), completion("two"), completion("three"))
    model = make_model()
    texts = [
        (await model.request([Message(role="user", content="Hi")], [], NO_SETTINGS)).text for _ in range(3)
    ]
    assert texts == ["one", "two", "three"]
    ports = {request.client_port for request in server.requests}
    assert len(server.requests) == 3 and len(ports) == 1
    await model.aclose()


async def test_concurrent_rounds_share_one_model(server: ChatServer, make_model: ModelFactory) -> None:
    # Parallel subagents may share a model: the first calls must not race to build two clients.
    server.queue(*(completion(f"r{n}") for n in range(6)))
    model = make_model()
    replies = await asyncio.gather(
        *(model.request([Message(role="user", content=str(n))], [], NO_SETTINGS) for n in range(6))
    )
    assert sorted(r.text for r in replies) == [f"r{n}" for n in range(6)]
    assert sorted(r.body["messages"][0]["content"] for r in server.requests) == [str(n) for n in range(6)]


def test_the_pool_closes_with_its_event_loop(server: ChatServer, make_model: ModelFactory) -> None:
    server.queue(completion("ok"))

    async def one_round() -> httpx2.AsyncClient:
        await make_model().request([Message(role="user", content="Hi")], [], NO_SETTINGS)
        return await shared_http_client()  # the model is garbage by now; its pool must not leak

    pool = asyncio.run(one_round())
    assert pool.is_closed


ODD_NAMES = [
    "delegate.Fact Checker",
    "handoff.billing",
    "ünïcode tool",
    "__2e__",  # looks like an escape already
    "delegate." + "very_long_specialist_name_" * 4,  # past the 64-character limit
    "a/b:c",
]


async def test_tool_calls_with_odd_names_round_trip_over_the_wire(
    server: ChatServer, make_model: ModelFactory
) -> None:
    specs = [ToolSpec(name, "Odd.", {"type": "object"}) for name in ODD_NAMES]
    server.queue(completion("first"))
    model = make_model()
    await model.request([Message(role="user", content="go")], specs, NO_SETTINGS)
    wire_names = [tool["function"]["name"] for tool in server.requests[0].body["tools"]]
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", wire) for wire in wire_names)
    assert len(set(wire_names)) == len(ODD_NAMES)
    calls = [wire_call(f"c{i}", wire, json.dumps({"i": i})) for i, wire in enumerate(wire_names)]
    server.queue(completion(None, tool_calls=calls, finish_reason="tool_calls"))
    response = await model.request([Message(role="user", content="go")], specs, NO_SETTINGS)
    assert [call.name for call in response.tool_calls] == ODD_NAMES
    assert [json.loads(call.arguments)["i"] for call in response.tool_calls] == list(range(len(ODD_NAMES)))
