"""`janux replay`: a demo trace recorded with content capture on, run again offline on the runtime.

Every demo scenario replays to its recorded outcome (bill, attempts, reasons); a what-if shows the
new outcome up to where the recording ends; a written test passes in a fresh process and fails once
the recorded failure is fixed in its agent definitions.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from janux.demo.scenarios import SCENARIO_NAMES
from janux.replay.runner import replay_trace
from janux.replay.source import expectation
from janux.replay.whatif import WhatIfError, parse_cost, parse_model, parse_set
from janux.runtime import Agent, Cost
from janux.runtime.testing import ScriptedModel, reply
from janux.tracing import conventions as c
from janux.tracing.analysis.replay_plan import ReplayUnavailable
from janux.tracing.records import SpanRecord
from janux.tracing.sdk.convert import span_records_from_readable
from tests.support.demo_traces import demo_traces

from .helpers import janux, report_rows

CAPTURE = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
FAST = ("--latency-scale", "0")


def _trace(name: str) -> list[SpanRecord]:
    traces = demo_traces(capture_content=True)
    return [s for s in traces.spans if s.trace_id == traces.trace_ids[name]]


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_every_demo_scenario_replays_to_its_recorded_outcome(name: str) -> None:
    spans = _trace(name)
    report = replay_trace(spans)
    assert report.ended is None
    assert report.differences == []
    recorded, replayed = report.recorded, report.replayed
    assert replayed.bill_key() == recorded.bill_key()
    assert [d.key() for d in replayed.delegations] == [d.key() for d in recorded.delegations]
    # The replay ran the runtime anew: its own trace, every recorded round answered again.
    assert report.run.result is not None and report.run.result.trace_id != spans[0].trace_id
    assert report.run.result.bill.rounds == sum(1 for r in report.plan.rounds if r.answered)
    # What a written test asserts, read from the recording, is what the runtime reports for the replay.
    expected = expectation(recorded)
    assert (expected.error, expected.delegations) == (report.run.error, report.run.delegations)
    bill = report.run.bill
    assert expected.bill[:3] == (bill.input_tokens, bill.output_tokens, bill.unpriced_tokens)
    assert expected.bill[3] == pytest.approx(bill.cost, rel=1e-9)


def test_a_replay_reproduces_attempts_and_reasons() -> None:
    retry = replay_trace(_trace("retry_then_success")).replayed.delegations[0]
    assert (retry.status, retry.attempts, retry.attempt_ends) == ("completed", 2, ("model_error", "ok"))
    fallback = replay_trace(_trace("timeout_then_fallback")).replayed.delegations[0]
    assert (fallback.status, fallback.attempt_ends) == ("fallback", ("timeout",))
    cut = replay_trace(_trace("cut_max_time")).replayed.delegations[0]
    assert (cut.status, cut.reason) == ("cut", "max_time")
    denied = replay_trace(_trace("denied_guardrail")).replayed.delegations[0]
    assert (denied.status, denied.reason) == ("denied", "guardrail")


def test_raising_a_cut_budget_shows_the_new_outcome_until_the_recording_ends() -> None:
    report = replay_trace(_trace("cut_max_tokens"), changes=[parse_set("researcher.max_tokens=8000")])
    delegation = report.replayed.delegations[0]
    assert delegation.status != "cut" and delegation.reason != "max_tokens"
    # Round 1 of the researcher is replayed as recorded; its search never ran in the recording.
    assert delegation.usage.input_tokens == 1600
    assert (
        report.ended
        == 'recording ends at round 2: no recorded tool result for search_docs {"query": "refund"}'
    )
    assert any(
        line.startswith("delegation 1 (delegate.researcher): cut (max_tokens) -> failed")
        for line in report.differences
    )


def test_a_later_deadline_ends_the_recording_where_the_model_stayed_silent() -> None:
    report = replay_trace(_trace("cut_max_time"), changes=[parse_set("researcher.max_ms=60000")])
    assert report.deadline_raised
    assert report.ended is not None and report.ended.startswith(
        "recording ends at round 2: the recorded round was cut"
    )


def test_more_retries_run_until_the_recording_ends() -> None:
    report = replay_trace(_trace("failed_delegation"), changes=[parse_set("policy.max_retries=1")])
    assert report.replayed.delegations[0].attempts == 2
    assert (
        report.ended
        == "recording ends at round 3: researcher's model output for this request was never recorded"
    )


def test_a_new_price_reprices_the_bill_exactly() -> None:
    recorded = replay_trace(_trace("cut_max_turns"))
    report = replay_trace(_trace("cut_max_turns"), costs=[parse_cost("researcher=0.15/0.60")])
    assert report.ended is None
    researcher = report.replayed.delegations[0].usage
    assert (researcher.input_tokens, researcher.output_tokens) == (1000, 48)
    assert researcher.cost == pytest.approx((1000 * 0.15 + 48 * 0.60) / 1e6, rel=1e-12)
    triage_cost = recorded.recorded.bill.cost - recorded.recorded.delegations[0].usage.cost  # type: ignore[operator]
    assert report.replayed.bill.cost == pytest.approx(triage_cost + researcher.cost, rel=1e-12)
    assert report.replayed.delegations[0].status == "cut"


def _table_price(model: str, input_tokens: int, output_tokens: int) -> float:
    """The genai-prices table's own figure, read without Janux's price module."""
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    usage = PriceUsage(input_tokens=input_tokens, output_tokens=output_tokens)
    return float(calc_price(usage, model).total_price)


def test_another_model_reprices_that_agents_rounds_by_the_price_table() -> None:
    recorded = replay_trace(_trace("cut_max_turns"))
    report = replay_trace(_trace("cut_max_turns"), models=[parse_model("researcher=gpt-4o-mini")])
    assert report.ended is None
    researcher = report.replayed.delegations[0].usage
    assert (researcher.input_tokens, researcher.output_tokens) == (1000, 48)
    assert researcher.cost == pytest.approx(_table_price("gpt-4o-mini", 1000, 48), rel=1e-12)
    assert researcher.cost != pytest.approx(recorded.recorded.delegations[0].usage.cost, rel=1e-3)
    triage_cost = recorded.recorded.bill.cost - recorded.recorded.delegations[0].usage.cost  # type: ignore[operator]
    assert report.replayed.bill.cost == pytest.approx(triage_cost + researcher.cost, rel=1e-12)
    # The replayed rounds carry the model they were priced as; the outcome is the recorded one.
    assert report.agents["researcher"]["cost"] == {"input": 0.15, "output": 0.6}
    assert "recording.model('researcher', 'gpt-4o-mini', [" in report.source
    assert report.replayed.delegations[0].status == "cut"


def test_a_model_what_if_keeps_unpriced_tokens_apart() -> None:
    report = replay_trace(
        _trace("cut_max_turns"),
        costs=[parse_cost("researcher=none")],
        models=[parse_model("triage=gpt-4o")],
    )
    bill, researcher = report.replayed.bill, report.replayed.delegations[0].usage
    assert researcher.cost is None
    assert bill.unpriced_tokens == researcher.input_tokens + researcher.output_tokens == 1048
    triage_in, triage_out = bill.input_tokens - 1000, bill.output_tokens - 48
    assert bill.cost == pytest.approx(_table_price("gpt-4o", triage_in, triage_out), rel=1e-12)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("researcher=gpt-nonexistent-9", "the price table (genai-prices"),
        ("researcher=gemini-1.5-pro", "'gemini-1.5-pro' is priced in tiers or per request"),
        ("researcher", "expected AGENT=MODEL"),
    ],
)
def test_a_model_the_price_table_cannot_price_is_refused(text: str, message: str) -> None:
    with pytest.raises(WhatIfError, match=re.escape(message)):
        parse_model(text)


def test_what_ifs_naming_unknown_things_are_refused() -> None:
    with pytest.raises(WhatIfError, match="the trace has no agent 'writer'"):
        replay_trace(_trace("cut_max_turns"), changes=[parse_set("writer.max_turns=3")])
    with pytest.raises(WhatIfError, match="unknown policy field 'retries'"):
        parse_set("policy.retries=3")
    with pytest.raises(WhatIfError, match="expected AGENT=INPUT/OUTPUT"):
        parse_cost("researcher=0.15")


# -- the command, end to end: `janux demo` writes a captured trace file, `janux replay` reads it ------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """Two demo scenarios recorded with content capture on, and one without."""
    folder = tmp_path_factory.mktemp("replay")
    out = folder / "captured.jsonl"
    done = janux(
        "demo",
        "--out",
        str(out),
        "--scenario",
        "cut_max_turns",
        "--scenario",
        "delegation",
        *FAST,
        env=CAPTURE,
    )
    assert done.returncode == 0, done.stderr
    ids = {row.name: row.trace_id for row in report_rows(done.stdout)}
    bare = folder / "bare.jsonl"
    plain = janux("demo", "--out", str(bare), "--scenario", "delegation", *FAST)
    assert plain.returncode == 0, plain.stderr
    ids["bare"] = report_rows(plain.stdout)[0].trace_id
    yield folder, ids


def _replay(folder: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return janux("replay", "--source", f"memory-file:{folder / name}", *args)


def test_the_command_prints_both_outcomes_and_exits_0_when_they_match(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    folder, ids = recorded
    done = _replay(folder, "captured.jsonl", ids["cut_max_turns"][:10])
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "  outcome    cut (max_turns)                              cut (max_turns)" in lines
    assert "  bill       2,005 in / 95 out, $0.00315895               2,005 in / 95 out, $0.00315895" in lines
    assert lines[-1] == "the replay matches the recording"


def test_the_command_exits_1_when_the_recording_ends(recorded: tuple[Path, dict[str, str]]) -> None:
    folder, ids = recorded
    done = _replay(folder, "captured.jsonl", ids["cut_max_turns"], "--set", "researcher.max_turns=3")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "what-if: researcher.max_turns=3" in done.stdout
    assert "recording ends at round 3: no recorded tool result for search_docs" in done.stdout


def test_the_command_shows_the_bill_repriced_as_another_model(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    folder, ids = recorded
    done = _replay(folder, "captured.jsonl", ids["cut_max_turns"], "--model", "researcher=gpt-4o-mini")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "what-if: researcher=gpt-4o-mini" in done.stdout
    # Recorded at the researcher's own price (2.50/10.00), replayed at gpt-4o-mini's table price.
    usage = "* usage      1,000 in / 48 out, $0.002980                 1,000 in / 48 out, $0.0001788"
    assert usage in done.stdout.splitlines()
    change = "1,000 in / 48 out, $0.00298 -> 1,000 in / 48 out, $0.0001788"
    assert f"  delegation 1 (delegate.researcher): {change}" in done.stdout.splitlines()


def test_the_help_documents_every_option() -> None:
    done = janux("replay", "--help")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for option in (
        "--set AGENT.FIELD=VALUE", "--cost AGENT=IN/OUT", "--model AGENT=MODEL", "--agents MODULE:NAME",
        "--live-tools", "--model-url URL", "--api-key-env NAME", "--write-test PATH",
    ):  # fmt: skip
        assert option in text, option
    assert "genai-prices table" in text and "your code" in text and "chat-completions server" in text


def test_the_command_compares_one_delegation(recorded: tuple[Path, dict[str, str]]) -> None:
    folder, ids = recorded
    done = _replay(folder, "captured.jsonl", ids["delegation"], "--delegation", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  #1 triage -> delegate.researcher (delegation to researcher)" in done.stdout
    assert "  bill" not in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("bare.jsonl", "{bare}"),
            "janux replay: no recorded model outputs: record with content capture on to replay",
        ),
        (("captured.jsonl", "ffffffff"), "janux replay: no trace id starts with ffffffff"),
        (
            ("captured.jsonl", "{cut_max_turns}", "--delegation", "7"),
            "janux replay: the trace has no delegation 7",
        ),
        (
            ("captured.jsonl", "{cut_max_turns}", "--set", "nobody.max_turns=2"),
            "janux replay: --set nobody.max_turns=2: the trace has no agent 'nobody'",
        ),
        (
            ("captured.jsonl", "{cut_max_turns}", "--model", "researcher=gpt-nonexistent-9"),
            "janux replay: --model researcher=gpt-nonexistent-9: the price table (genai-prices",
        ),
        (
            ("captured.jsonl", "{cut_max_turns}", "--model", "nobody=gpt-4o-mini"),
            "janux replay: --model nobody: the trace has no agent 'nobody'",
        ),
    ],
)
def test_what_cannot_be_replayed_exits_2_with_one_clear_line(
    recorded: tuple[Path, dict[str, str]], args: tuple[str, ...], message: str
) -> None:
    folder, ids = recorded
    done = _replay(folder, args[0], *(arg.format(**ids) for arg in args[1:]))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.startswith(message), done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def _pytest(path: Path) -> subprocess.CompletedProcess[str]:
    """The written file run by pytest in a fresh process, from its own folder (no project conftest)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path.name],
        cwd=path.parent, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_a_written_test_passes_as_written_and_fails_once_the_failure_is_fixed(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    folder, ids = recorded
    path = tmp_path / "written" / "test_cut_handoff.py"
    done = _replay(folder, "captured.jsonl", ids["cut_max_turns"], "--write-test", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"wrote {path}" in done.stdout
    source = path.read_text()
    assert "Subagent(agent=researcher, max_turns=2)" in source
    assert "EXPECTED_DELEGATIONS = [('delegate.researcher', 'researcher', 'cut', 1, 'max_turns')]" in source
    passed = _pytest(path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout
    # The fix: give the researcher the round it was cut before. The recording has no answer for it.
    path.write_text(
        source.replace("Subagent(agent=researcher, max_turns=2)", "Subagent(agent=researcher, max_turns=3)")
    )
    failed = _pytest(path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "recording ends at round 3" in failed.stdout


@pytest.mark.parametrize(
    ("definitions", "message"),
    [
        ("not json", "janux.agent.definitions: not valid JSON"),
        ('{"entry": "triage", "agents": {"triage": {"max_turns": "many"}}}', "Agent 'triage': max_turns"),
        ('{"entry": "triage", "agents": {"triage": {"subagents": [{}]}}}', "cannot be rebuilt (KeyError"),
    ],
)
def test_broken_recorded_definitions_are_named_not_raised(definitions: str, message: str) -> None:
    spans = [replace(s, attributes=dict(s.attributes)) for s in _trace("cut_max_turns")]
    root = next(s for s in spans if not s.parent_span_id)
    root.attributes[c.JANUX_AGENT_DEFINITIONS] = definitions
    with pytest.raises(ReplayUnavailable, match=re.escape(message)):
        replay_trace(spans)


def test_a_turn_that_continued_a_thread_replays_with_its_history() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedModel(
        [
            reply("Hello! How can I help?", input_tokens=50, output_tokens=8),
            reply("Refunds take 5 days.", input_tokens=90, output_tokens=6),
        ],
        model_name="gpt-4o-mini",
    )
    agent = Agent("front", model=model, cost=Cost(input=0.15, output=0.60))
    options = {"thread_id": "t-1", "tracer_provider": provider, "capture_content": True}
    agent.run_sync("Hi", **options)
    second = agent.run_sync("How long do refunds take?", **options)
    spans = [
        s for s in span_records_from_readable(exporter.get_finished_spans()) if s.trace_id == second.trace_id
    ]
    report = replay_trace(spans)
    assert report.plan.history == [("user", "Hi"), ("assistant", "Hello! How can I help?")]
    assert report.ended is None and report.differences == []
    assert report.run.result is not None and report.run.result.text == "Refunds take 5 days."
