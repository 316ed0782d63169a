"""Generate the smolagents fixture: real managed agents traced by OpenInference.

Run offline: `.venv/bin/python -m tests.support.foreign.generate_smolagents [OUT_DIR]`; the
library runs in its own virtualenv (`venvs`), pinned to `REQUIREMENTS`. Every agent uses the
library's own `OpenAIServerModel` on an OpenAI client whose HTTP transport answers from a script
(no network). The truth below is written from what each scenario does.

Scenarios: a manager delegating to a managed researcher (who searches, then answers), and the
same with a researcher whose model request fails (OpenInference never exports the failed
researcher's own AGENT span: only its caller's step shows the failure).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.foreign import venvs
from tests.support.foreign.truth import Truth

NAME = "smolagents_managed"
LIBRARY = "smolagents 1.26.0 (openinference-instrumentation-smolagents 0.1.43)"
REQUIREMENTS = (
    "smolagents==1.26.0",
    "openinference-instrumentation-smolagents==0.1.43",
    "openai==3.57.0",
    "opentelemetry-sdk==1.45.2",
)
"""The pinned versions the fixture was generated with."""

Reply = tuple[list[tuple[str, dict[str, Any]]] | str, int, int] | int
"""A scripted completion: tool calls [(tool, args)] or a text, prompt and completion tokens; or an
HTTP error status (the request fails, no usage)."""


class Script:
    """Chat completions per model name, from a script, over a fake HTTP transport."""

    def __init__(self, truth: Truth, replies: dict[str, list[Reply]]) -> None:
        self.truth = truth
        self.replies = {model: list(steps) for model, steps in replies.items()}
        self.calls = 0

    def handle(self, request: Any) -> Any:
        import httpx2

        body = json.loads(request.content)
        step = self.replies[body["model"]].pop(0)
        if isinstance(step, int):
            return httpx2.Response(step, json={"error": {"message": "overloaded", "type": "server_error"}})
        content, tokens_in, tokens_out = step
        self.calls += 1
        self.truth.usage(tokens_in, tokens_out)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(content, str):
            message["content"], finish = content, "stop"
        else:
            message["tool_calls"] = [
                {
                    "id": f"call_{self.calls}_{i}",
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps(args)},
                }
                for i, (tool, args) in enumerate(content)
            ]
            finish = "tool_calls"
        usage = {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        }
        return httpx2.Response(
            200,
            json={
                "id": f"chatcmpl-{self.calls}",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            },
        )

    def model(self, name: str) -> Any:
        """The library's OpenAI model on a client served by this script."""
        import httpx2
        from smolagents import OpenAIServerModel

        client = httpx2.Client(transport=httpx2.MockTransport(self.handle))
        return OpenAIServerModel(
            model_id=name,
            api_base="http://scripted.invalid/v1",
            api_key="offline",
            client_kwargs={"http_client": client, "max_retries": 0},
        )


def _agents(script: Script) -> Any:
    """A manager with a managed researcher that has a search tool."""
    from smolagents import ToolCallingAgent, tool

    @tool
    def search(query: str) -> str:
        """Search the web.

        Args:
            query: what to look for.
        """
        return f"results for {query}"

    researcher = ToolCallingAgent(
        tools=[search],
        model=script.model("gpt-4o-mini"),
        name="researcher",
        description="Researches a question.",
        max_steps=4,
    )
    return ToolCallingAgent(
        tools=[], model=script.model("gpt-4o"), managed_agents=[researcher], name="manager", max_steps=4
    )


def _answer(text: str) -> list[tuple[str, dict[str, Any]]]:
    return [("final_answer", {"answer": text})]


def _scenario(name: str, researcher_fails: bool) -> tuple[Truth, dict[str, list[Reply]]]:
    truth = Truth(scenario=name, library=LIBRARY, agents=["manager", "researcher"], root_agent="manager")
    truth.edge("manager", "researcher", status="failed" if researcher_fails else "completed")
    ask = ([("researcher", {"task": "find the capital of France"})], 300, 25)
    researcher: list[Reply] = (
        [503]
        if researcher_fails
        else [([("search", {"query": "capital of France"})], 150, 18), (_answer("Paris"), 210, 9)]
    )
    manager: list[Reply] = [ask, (_answer("Paris" if not researcher_fails else "unknown"), 420, 12)]
    return truth, {"gpt-4o": manager, "gpt-4o-mini": researcher}


def inner(out: Path) -> None:
    """Run every scenario (inside the virtualenv) and write the fixture."""
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor

    from tests.support.foreign.isolated import Writer, provider

    tracer_provider, exporter = provider(seed=22_02, service="smolagents-app")
    SmolagentsInstrumentor().instrument(tracer_provider=tracer_provider)
    writer = Writer(NAME)
    for name, fails in (("managed", False), ("managed_failed", True)):
        truth, replies = _scenario(name, fails)
        try:
            _agents(Script(truth, replies)).run("What is the capital of France?")
        except Exception:
            truth.raised = True
        writer.take(exporter, truth)
    writer.write(out)


if __name__ == "__main__":
    venvs.main("smolagents", "tests.support.foreign.generate_smolagents", REQUIREMENTS, inner)
