"""`janux replay TRACE --agents module:ENTRY_AGENT`: a trace of the OpenAI Agents integration replayed
offline on the SDK itself, with the user's own SDK agents.

Two runs are recorded with content capture on through `JanuxProcessor` into an OTLP/JSON-lines file
(scripted models that report their rounds like the SDK's OpenAI models): a delegation (an agent used as
a tool, whose own function tool runs) and a handoff (the front desk transfers to refunds, which calls a
function tool). The user's code is a module written to tmp_path that defines the same agents with
model names and real tools that must not run offline; the command, in a subprocess, swaps in the
recorded rounds and tool results and compares the outcomes.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents import Agent, function_tool, set_trace_processors
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from janux.cli.main import main
from janux.integrations.openai_agents import JanuxProcessor
from janux.tracing.analysis.replay_plan import NEEDS_SDK_AGENTS, NO_CONTENT
from janux.tracing.records import SpanRecord
from tests.cli.helpers import ROOT, janux
from tests.integrations.openai_agents.scripts import COSTS, calls, failing, model, reply, run
from tests.support.contract_checker import Traced

USER_CODE = '''"""The support desk as its developer defines it (SDK agents, real tools)."""

from agents import Agent, function_tool


@function_tool
def lookup_order(order: str) -> str:
    """Look an order up in the shop's database."""
    raise RuntimeError("the shop database is not reachable offline")


@function_tool
def issue_refund(order: str) -> str:
    """Refund an order."""
    raise RuntimeError("the payment provider is not reachable offline")


researcher = Agent(name="researcher", instructions="Research orders.", model="gpt-4o", tools=[lookup_order])
triage = Agent(
    name="triage",
    instructions="Front desk.",
    model="gpt-4o-mini",
    tools=[researcher.as_tool(tool_name="research", tool_description="Research an order.")],
)
triage_alone = Agent(name="triage", instructions="Front desk.", model="gpt-4o-mini")

refunds = Agent(name="refunds", instructions="Refund orders.", model="gpt-4o", tools=[issue_refund])
desk = Agent(name="desk", instructions="Route the customer.", model="gpt-4o-mini", handoffs=[refunds])
desk_without_handoff = Agent(name="desk", instructions="Route the customer.", model="gpt-4o-mini")
not_an_agent = "a prompt"
'''


@function_tool
def lookup_order(order: str) -> str:
    """Look an order up (as recorded)."""
    return f"order {order}: paid 2026-11-02, annual plan"


@function_tool
def issue_refund(order: str) -> str:
    """Refund an order (as recorded)."""
    return f"refund of order {order} issued"


def _delegating() -> Agent[None]:
    researcher = Agent(
        name="researcher",
        instructions="Research orders.",
        model=model(
            "responses",
            calls(("lookup_order", {"order": "7"}), input_tokens=120, output_tokens=9),
            reply("Order 7 was paid on 2026-11-02 for an annual plan.", 300, 14),
        ),
        tools=[lookup_order],
    )
    return Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            "responses",
            calls(("research", {"input": "order 7"}), input_tokens=400, output_tokens=30),
            reply("Your order qualifies for a refund.", 600, 12),
        ),
        tools=[researcher.as_tool(tool_name="research", tool_description="Research an order.")],
    )


def _failed_delegation() -> Agent[None]:
    """The researcher's model raises: the delegation fails, the front desk answers anyway."""
    researcher = Agent(
        name="researcher",
        instructions="Research orders.",
        model=model("responses", failing(RuntimeError("model overloaded"))),
        tools=[lookup_order],
    )
    return Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            "responses",
            calls(("research", {"input": "order 7"}), input_tokens=400, output_tokens=30),
            reply("Sorry, please try again later.", 600, 12),
        ),
        tools=[researcher.as_tool(tool_name="research", tool_description="Research an order.")],
    )


def _handoff() -> Agent[None]:
    refunds = Agent(
        name="refunds",
        instructions="Refund orders.",
        model=model(
            "chat_completions",
            calls(("issue_refund", {"order": "7"}), input_tokens=500, output_tokens=11),
            reply("Done: order 7 is refunded.", 700, 9),
        ),
        tools=[issue_refund],
    )
    return Agent(
        name="desk",
        instructions="Route the customer.",
        model=model("responses", calls(("transfer_to_refunds", {}), input_tokens=200, output_tokens=6)),
        handoffs=[refunds],
    )


RECORDS: dict[Path, list[SpanRecord]] = {}
"""The recorded spans by fixture folder (the file holds the same, for the command)."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """Both runs recorded with capture on (and the delegation once more without), and the user's code."""
    folder = tmp_path_factory.mktemp("sdk_replay")
    (folder / "support_desk.py").write_text(USER_CODE, encoding="utf-8")
    traced = Traced()
    exporter = FileSpanExporter(str(folder / "traces.jsonl"))
    traced.provider.add_span_processor(SimpleSpanProcessor(exporter))
    ids: dict[str, str] = {}
    for name, agent, capture in (
        ("delegation", _delegating(), True),
        ("handoff", _handoff(), True),
        ("model_failed", _failed_delegation(), True),
        ("uncaptured", _delegating(), False),
    ):
        set_trace_processors([JanuxProcessor(costs=COSTS, tracer_provider=traced.provider, capture=capture)])
        done = asyncio.run(run(agent, "Can I get a refund for order 7?"))
        assert done.error is None, done.error
        ids[name] = _last_trace(traced, ids)
    set_trace_processors([])
    RECORDS[folder] = traced.records()
    traced.provider.shutdown()
    yield folder, ids


def _last_trace(traced: Traced, known: dict[str, str]) -> str:
    new = {s.trace_id for s in traced.records()} - set(known.values())
    assert len(new) == 1, new
    return new.pop()


def _replay_here(
    folder: Path,
    trace_id: str,
    *args: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str]:
    """The command in this process (a subprocess costs seconds): its exit status and output."""
    monkeypatch.syspath_prepend(str(folder))
    status = main(["replay", "--source", f"memory-file:{folder / 'traces.jsonl'}", trace_id, *args])
    return status, capsys.readouterr().out


def _replay(folder: Path, trace_id: str, *args: str) -> subprocess.CompletedProcess[str]:
    return janux(
        "replay", "--source", f"memory-file:{folder / 'traces.jsonl'}", trace_id, *args,
        env={"PYTHONPATH": str(folder), "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip


@pytest.mark.parametrize(("run_name", "entry"), [("delegation", "triage"), ("handoff", "desk")])
def test_a_recorded_sdk_run_replays_on_the_users_agents_to_the_same_outcome(
    recorded: tuple[Path, dict[str, str]], run_name: str, entry: str
) -> None:
    folder, ids = recorded
    done = _replay(folder, ids[run_name], "--agents", f"support_desk:{entry}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the replay matches the recording" in done.stdout
    assert f": {entry}, " in done.stdout.splitlines()[0]
    kind = "delegation to researcher" if run_name == "delegation" else "transfer to refunds"
    assert kind in done.stdout


@pytest.mark.parametrize(
    ("run_name", "entry", "difference"),
    [
        ("delegation", "triage_alone", "delegation 1 (research): not made in the replay"),
        ("handoff", "desk_without_handoff", "delegation 1 (handoff.refunds): not made in the replay"),
    ],
)
def test_a_changed_agent_makes_the_replay_differ(
    recorded: tuple[Path, dict[str, str]],
    run_name: str,
    entry: str,
    difference: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, ids = recorded
    args = ("--agents", f"support_desk:{entry}")
    status, out = _replay_here(folder, ids[run_name], *args, monkeypatch=monkeypatch, capsys=capsys)
    assert status == 1, out
    assert "the replay differs from the recording:" in out
    assert difference in out
    assert "turn error: recorded None, replayed ModelBehaviorError" in out


@pytest.mark.parametrize(
    ("run_name", "args", "shown"),
    [
        ("model_failed", (), "outcome    failed (RuntimeError)"),
        ("delegation", ("--delegation", "1"), "#1 triage -> research (delegation to researcher)"),
    ],
)
def test_a_failed_round_and_one_delegation_replay_as_recorded(
    recorded: tuple[Path, dict[str, str]],
    run_name: str,
    args: tuple[str, ...],
    shown: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, ids = recorded
    status, out = _replay_here(
        folder,
        ids[run_name],
        "--agents",
        "support_desk:triage",
        *args,
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert status == 0, out
    assert shown in out and "the replay matches the recording" in out


def test_live_tools_run_the_users_real_tools(
    recorded: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, ids = recorded
    args = ("--agents", "support_desk:triage", "--live-tools")
    status, out = _replay_here(folder, ids["delegation"], *args, monkeypatch=monkeypatch, capsys=capsys)
    # The user's lookup_order cannot reach its database offline: the SDK hands its error to the model,
    # which is asked otherwise than recorded, and the recording ends there.
    assert status == 1, out
    assert "recording ends at round 3: researcher's model output for this request was never recorded" in out


@pytest.mark.parametrize(
    ("run_name", "args", "message"),
    [
        ("handoff", (), NEEDS_SDK_AGENTS),
        ("uncaptured", ("--agents", "support_desk:triage"), NO_CONTENT),
        ("uncaptured", (), NO_CONTENT),
        (
            "delegation",
            ("--agents", "support_desk:triage", "--delegation", "3"),
            "delegations are numbered 1..1",
        ),
        ("delegation", ("--agents", "support_desk:not_an_agent"), "must name its entry agents.Agent"),
        (
            "delegation",
            ("--agents", "support_desk:desk"),
            "that agent is 'desk', the recorded run started with 'triage'",
        ),
        (
            "delegation",
            ("--agents", "support_desk:triage", "--set", "triage.max_turns=3"),
            "not available for it: --set",
        ),
        (
            "delegation",
            ("--agents", "support_desk:triage", "--cost", "nobody=1/2"),
            "no recorded rounds of agent 'nobody' to price",
        ),
    ],
)
def test_what_cannot_be_replayed_is_one_line_and_exit_2(
    recorded: tuple[Path, dict[str, str]],
    run_name: str,
    args: tuple[str, ...],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, ids = recorded
    status, out = _replay_here(folder, ids[run_name], *args, monkeypatch=monkeypatch, capsys=capsys)
    assert status == 2, out
    assert out.splitlines() == [f"janux replay: {out.strip().removeprefix('janux replay: ')}"]
    assert message in out, out


def test_the_users_agents_and_trace_processors_are_put_back_after_a_replay(
    recorded: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agents.tracing import get_trace_provider

    from janux.replay.runner import replay_sdk_trace

    mine = JanuxProcessor(tracer_provider=Traced().provider)
    set_trace_processors([mine])

    folder, ids = recorded
    monkeypatch.syspath_prepend(str(folder))
    import support_desk  # type: ignore[import-not-found]

    tools = list(support_desk.researcher.tools)
    spans = [s for s in RECORDS[folder] if s.trace_id == ids["delegation"]]
    report = replay_sdk_trace(spans, "support_desk:triage")
    assert report.differences == [] and report.ended is None
    assert support_desk.researcher.model == "gpt-4o" and support_desk.triage.model == "gpt-4o-mini"
    assert support_desk.researcher.tools == tools
    assert list(get_trace_provider()._multi_processor._processors) == [mine]
    assert json.loads(report.plan.input) == [{"content": "Can I get a refund for order 7?", "role": "user"}]


@pytest.mark.parametrize(("run_name", "entry"), [("handoff", "desk")])
def test_a_written_test_passes_as_written_and_fails_once_the_agent_changes(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path, run_name: str, entry: str
) -> None:
    folder, ids = recorded
    written = tmp_path / f"test_{run_name}_replay.py"
    done = _replay(folder, ids[run_name], "--agents", f"support_desk:{entry}", "--write-test", str(written))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"from support_desk import {entry} as entry_agent" in written.read_text(encoding="utf-8")
    assert _pytest(written, folder).returncode == 0
    # The same module name, the agent changed: no research tool, no handoff.
    changed = tmp_path / "changed"
    changed.mkdir()
    source = USER_CODE.replace(
        '    tools=[researcher.as_tool(tool_name="research", tool_description="Research an order.")],\n', ""
    ).replace(", handoffs=[refunds])", ")")
    assert source != USER_CODE
    (changed / "support_desk.py").write_text(source, encoding="utf-8")
    failed = _pytest(written, changed)
    assert failed.returncode == 1, failed.stdout
    assert "ModelBehaviorError" in failed.stdout  # the recorded transfer is to an agent it no longer has


def _pytest(test_file: Path, user_code: Path) -> subprocess.CompletedProcess[str]:
    """Run a written test in a fresh process, the user's code importable."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=test_file.parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(user_code), str(ROOT)]),
             "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


WITHOUT_THE_SDK = """
import sys


class NoSdk:
    def find_spec(self, name, path=None, target=None):
        if name == "agents" or name.startswith("agents."):
            raise ModuleNotFoundError("No module named 'agents'", name="agents")


sys.meta_path.insert(0, NoSdk())
from janux.cli.main import main

sys.exit(main(sys.argv[1:]))
"""


def test_without_the_sdk_installed_janux_imports_and_the_replay_says_what_to_install(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    folder, ids = recorded
    source = f"memory-file:{folder / 'traces.jsonl'}"
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_THE_SDK, "replay", "--source", source, ids["delegation"],
         "--agents", "support_desk:triage"],
        cwd=folder, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "needs the SDK: pip install 'janux[openai-agents]'" in done.stdout
    assert "Traceback" not in done.stderr


def test_a_what_if_price_bills_that_agents_rounds_at_it_and_the_rest_as_recorded(
    recorded: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from janux.replay.runner import replay_sdk_trace
    from janux.tracing.analysis.replay_plan import item_plan

    folder, ids = recorded
    monkeypatch.syspath_prepend(str(folder))
    spans = [s for s in RECORDS[folder] if s.trace_id == ids["delegation"]]
    answered = [r for r in item_plan(spans).rounds if r.answered]
    researcher = [r for r in answered if r.agent == "researcher"]
    assert researcher and len(researcher) < len(answered)
    others = sum(r.cost or 0.0 for r in answered if r.agent != "researcher")

    priced = replay_sdk_trace(spans, "support_desk:triage", prices={"researcher": (1.0, 2.0)})
    expected = others + sum(r.input_tokens * 1.0 + r.output_tokens * 2.0 for r in researcher) / 1e6
    assert priced.replayed.bill.cost == pytest.approx(expected, rel=1e-9)
    assert priced.recorded.bill.cost != pytest.approx(expected, rel=1e-9)  # the recorded rates differ
    assert priced.differences and not priced.ended  # the run went as recorded; only the bill differs

    unpriced = replay_sdk_trace(spans, "support_desk:triage", prices={"researcher": None})
    assert unpriced.replayed.bill.cost == pytest.approx(others, rel=1e-9)
    tokens = sum(r.input_tokens + r.output_tokens for r in researcher)
    assert unpriced.replayed.bill.unpriced_tokens == tokens


def test_the_command_reprices_with_cost_and_model_and_writes_the_prices_into_the_test(
    recorded: tuple[Path, dict[str, str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder, ids = recorded
    written = tmp_path / "test_priced.py"
    args = ("--agents", "support_desk:triage", "--cost", "researcher=1/2", "--write-test", str(written))
    status, out = _replay_here(folder, ids["delegation"], *args, monkeypatch=monkeypatch, capsys=capsys)
    assert status == 1, out  # the bill differs from the recorded one
    assert "the replay differs from the recording:" in out and "bill" in out
    assert "PRICES = {'researcher': (1.0, 2.0)}" in written.read_text(encoding="utf-8")
    status, out = _replay_here(
        folder, ids["delegation"], "--agents", "support_desk:triage", "--model", "researcher=gpt-4o-mini",
        monkeypatch=monkeypatch, capsys=capsys,
    )  # fmt: skip
    assert status == 1 and "bill" in out, out
