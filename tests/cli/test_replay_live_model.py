"""`janux replay --model-url URL`: where the recording ends, the run continues on a live endpoint.

The server is a scripted chat-completions endpoint on a real 127.0.0.1 socket (not one of our components);
the replay reaches it through the runtime's own OpenAI-compatible client, so the whole HTTP path runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.replay.runner import live_models, replay_trace
from janux.replay.whatif import parse_set
from janux.tracing.analysis.replay_plan import ReplayUnavailable
from janux.tracing.records import SpanRecord
from tests.runtime.openai_client.chat_server import ChatServer, completion, serve
from tests.support.demo_traces import demo_traces

from .helpers import janux, report_rows

CAPTURE = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
RESEARCHER_LIVE = (700, 30)
TRIAGE_LIVE = (900, 40)


@pytest.fixture
def server() -> Iterator[ChatServer]:
    """A scripted chat-completions server with the two rounds past the recording queued."""
    for running in serve():
        running.queue(
            completion("Annual plans are refundable within 30 days.", usage=_usage(RESEARCHER_LIVE)),
            completion("You can get a refund within 30 days.", usage=_usage(TRIAGE_LIVE)),
        )
        yield running


def _usage(tokens: tuple[int, int]) -> dict[str, int]:
    return {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)}


def _trace(name: str) -> list[SpanRecord]:
    traces = demo_traces(capture_content=True)
    return [s for s in traces.spans if s.trace_id == traces.trace_ids[name]]


def test_a_retry_the_recording_never_saw_runs_on_the_live_model(server: ChatServer) -> None:
    # failed_delegation: the researcher's one attempt hit a rate limit. One retry more needs rounds
    # the trace never recorded: the retried research, then triage's answer to it.
    report = replay_trace(
        _trace("failed_delegation"),
        changes=[parse_set("policy.max_retries=1")],
        live=live_models(server.base_url),
    )
    assert report.ended == (
        "recording ends at round 3: researcher's model output for this request was never recorded"
    )
    assert report.run.live_rounds == 2 and report.run.error is None
    assert report.run.result is not None
    assert report.run.result.text == "You can get a refund within 30 days."
    delegation = report.replayed.delegations[0]
    assert (delegation.status, delegation.attempts, delegation.attempt_ends) == (
        "completed",
        2,
        ("rate_limit", "ok"),
    )
    # Each live request asked the recorded agent's model, with the task it was given.
    asked = [(r.path, r.body["model"]) for r in server.requests]
    assert asked == [("/v1/chat/completions", "gpt-4o"), ("/v1/chat/completions", "gpt-4o-mini")]
    assert server.requests[0].body["messages"][-1]["role"] == "user"
    # The bill: triage's recorded first round, then both live rounds at each agent's own price.
    first = report.plan.rounds[0]
    bill = report.replayed.bill
    assert (bill.input_tokens, bill.output_tokens) == (
        first.input_tokens + RESEARCHER_LIVE[0] + TRIAGE_LIVE[0],
        first.output_tokens + RESEARCHER_LIVE[1] + TRIAGE_LIVE[1],
    )
    triage, researcher = (report.agents[name]["cost"] for name in ("triage", "researcher"))
    expected = (
        (first.input_tokens + TRIAGE_LIVE[0]) * triage["input"]
        + (first.output_tokens + TRIAGE_LIVE[1]) * triage["output"]
        + RESEARCHER_LIVE[0] * researcher["input"]
        + RESEARCHER_LIVE[1] * researcher["output"]
    ) / 1e6
    assert bill.cost == pytest.approx(expected, rel=1e-12)
    assert delegation.usage.input_tokens == RESEARCHER_LIVE[0]


def test_without_a_live_model_the_replay_stops_where_the_recording_ends(server: ChatServer) -> None:
    report = replay_trace(_trace("failed_delegation"), changes=[parse_set("policy.max_retries=1")])
    assert report.ended is not None and report.run.live_rounds == 0
    assert server.requests == []


@pytest.mark.parametrize("url", ["ftp://models.example/v1", "not a url"])
def test_a_bad_model_url_is_named(url: str) -> None:
    with pytest.raises(ReplayUnavailable, match=r"--model-url .*base_url: expected http\(s\)://"):
        live_models(url)


# -- the command -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The failed_delegation scenario recorded with content capture on."""
    out = tmp_path_factory.mktemp("live") / "captured.jsonl"
    done = janux(
        "demo", "--out", str(out), "--scenario", "failed_delegation", "--latency-scale", "0", env=CAPTURE
    )
    assert done.returncode == 0, done.stderr
    return out, report_rows(done.stdout)[0].trace_id


def test_the_command_continues_on_the_model_url_with_the_named_key(
    captured: tuple[Path, str], server: ChatServer
) -> None:
    out, trace_id = captured
    done = janux(
        "replay", "--source", f"memory-file:{out}", trace_id, "--set", "policy.max_retries=1",
        "--model-url", server.base_url, "--api-key-env", "REPLAY_TEST_KEY",
        env={"REPLAY_TEST_KEY": "sk-replay-test", "OPENAI_API_KEY": "sk-must-not-be-sent"},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert (
        f"continued on {server.base_url}: 2 live round(s) past the recording, counted in the " in done.stdout
    )
    assert "* attempts   1: rate_limit                                2: rate_limit, ok" in lines
    assert [r.headers.get("authorization") for r in server.requests] == ["Bearer sk-replay-test"] * 2


def test_the_command_refuses_a_bad_model_url_in_one_line(captured: tuple[Path, str]) -> None:
    out, trace_id = captured
    done = janux("replay", "--source", f"memory-file:{out}", trace_id, "--model-url", "ftp://x/v1")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.startswith("janux replay: --model-url ftp://x/v1: base_url: expected http(s)://")
    assert len(done.stdout.splitlines()) == 1 and "Traceback" not in done.stderr
