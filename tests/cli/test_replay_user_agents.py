"""`janux replay --agents module:attr [--live-tools]`: a recorded trace replayed on the user's own agents.

The user's code here is a small help desk module written into a temporary folder (the demo's triage and
researcher as a user would define them, with a real `search_docs` function): the replay and a written test
take its prompts, tools and budgets, so a fix made in that module is what the replay checks.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from janux.replay.runner import replay_trace
from janux.replay.support import Recording
from janux.replay.user_agents import RegistryError, user_agents
from janux.replay.whatif import parse_set
from janux.tracing.records import SpanRecord
from tests.support.demo_traces import demo_traces

from .helpers import janux, report_rows

CAPTURE = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
NO_BYTECODE = {"PYTHONDONTWRITEBYTECODE": "1"}
"""The help desk is rewritten within a second at the same size: a cached .pyc would hide the change."""

HELP_DESK = '''"""The help desk as its developer defines it."""

import json
import os

from janux.runtime import Agent, Cost, Subagent

RESEARCHER_TURNS = {turns}


def search_docs(query: str = "") -> str:
    """Search the help-center docs."""
    log = os.environ.get("SEARCH_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(query + "\\n")
    return json.dumps({{"hits": 3, "top": {top!r}}})


researcher = Agent(
    "researcher",
    instructions="Research the docs; cite sources.",
    model="gpt-4o",
    tools=[search_docs],
    cost=Cost(input=2.50, output=10.00),
)
triage = Agent(
    "triage",
    instructions="Front line of the help desk.",
    model="gpt-4o-mini",
    subagents=[Subagent(agent=researcher, max_turns=RESEARCHER_TURNS)],
    cost=Cost(input=0.15, output=0.60),
)
registry = {{"triage": triage, "researcher": researcher}}


def make_registry():
    """The same agents, from a factory."""
    return registry


not_agents = {{"triage": "a prompt, not an agent"}}
only_triage = {{"triage": Agent("triage", model="gpt-4o-mini")}}
'''

RECORDED_TOP = "Refunds for annual plans"


def _write_help_desk(folder: Path, name: str, *, turns: int = 2, top: str = RECORDED_TOP) -> None:
    (folder / f"{name}.py").write_text(HELP_DESK.format(turns=turns, top=top), encoding="utf-8")


@pytest.fixture
def user_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on sys.path holding the help desk as recorded (budget 2) and fixed (budget 3)."""
    _write_help_desk(tmp_path, "help_desk_recorded")
    _write_help_desk(tmp_path, "help_desk_fixed", turns=3)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _trace(name: str) -> list[SpanRecord]:
    traces = demo_traces(capture_content=True)
    return [s for s in traces.spans if s.trace_id == traces.trace_ids[name]]


def test_the_users_agents_replay_the_recorded_outcome(user_code: Path) -> None:
    for reference in ("help_desk_recorded:registry", "help_desk_recorded:make_registry"):
        report = replay_trace(_trace("cut_max_turns"), agents_from=reference)
        assert report.ended is None and report.differences == [], report.differences
        assert report.replayed.delegations[0].status == "cut"
    assert "from help_desk_recorded import make_registry as user_registry" in report.source
    assert "Agent(" not in report.source


def test_a_fix_in_the_users_code_is_what_the_replay_runs(user_code: Path) -> None:
    report = replay_trace(_trace("cut_max_turns"), agents_from="help_desk_fixed:registry")
    # The fixed budget gives the researcher a third round: the recording never saw its search.
    assert (
        report.ended
        == 'recording ends at round 3: no recorded tool result for search_docs {"query": "refund"}'
    )
    assert report.agents["researcher"]["max_turns"] == 10
    assert report.agents["triage"]["subagents"][0]["max_turns"] == 3


def test_what_ifs_change_the_users_agents(user_code: Path) -> None:
    report = replay_trace(
        _trace("cut_max_turns"),
        agents_from="help_desk_recorded:registry",
        changes=[parse_set("researcher.max_turns=3")],
    )
    assert report.ended is not None and report.ended.startswith("recording ends at round 3")
    assert report.registry is not None and report.registry.overlay is not None
    assert "DEFINITIONS = " in report.source and "definitions=DEFINITIONS" in report.source


def test_live_tools_run_the_users_tools(user_code: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = user_code / "searches.log"
    monkeypatch.setenv("SEARCH_LOG", str(log))
    recorded = replay_trace(_trace("cut_max_turns"), agents_from="help_desk_recorded:registry")
    assert recorded.differences == [] and not log.exists()
    live = replay_trace(_trace("cut_max_turns"), agents_from="help_desk_recorded:registry", live_tools=True)
    assert live.ended is None and live.differences == []
    searched = [t.arguments for t in live.plan.tools if t.tool == "search_docs"]
    assert searched == ['{"query": "refund"}'] and log.read_text().splitlines() == ["refund"]


def test_a_live_tool_answering_otherwise_ends_the_recording(
    user_code: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_help_desk(user_code, "help_desk_changed_docs", top="Refunds take 5 days")
    report = replay_trace(
        _trace("cut_max_turns"), agents_from="help_desk_changed_docs:registry", live_tools=True
    )
    assert report.ended == (
        "recording ends at round 3: researcher's model output for this request was never recorded"
    )


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("no_such_module_here:registry", "--agents no_such_module_here:registry: no module named"),
        ("help_desk_recorded:agents", "module help_desk_recorded has no attribute 'agents'"),
        ("help_desk_recorded:RESEARCHER_TURNS", "expected a mapping of agent name to janux Agent"),
        ("help_desk_recorded:not_agents", "'triage' is a str, not a janux Agent"),
        ("help_desk_recorded:only_triage", "no agent named 'researcher'"),
        ("help_desk_recorded", "expected MODULE:NAME"),
    ],
)
def test_a_registry_that_cannot_serve_is_named(user_code: Path, reference: str, message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        replay_trace(_trace("cut_max_turns"), agents_from=reference)


def test_a_written_test_whose_registry_lost_the_entry_agent_says_so(user_code: Path) -> None:
    from help_desk_recorded import registry  # type: ignore[import-not-found]

    with pytest.raises(
        RegistryError, match="the registry has no agent named 'front' \\(it has: researcher, triage\\)"
    ):
        user_agents(registry, "front", Recording(), {})


# -- the command, end to end ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The cut_max_turns scenario recorded with content capture on, and the help desk beside it."""
    folder = tmp_path_factory.mktemp("user_agents")
    out = folder / "captured.jsonl"
    done = janux(
        "demo", "--out", str(out), "--scenario", "cut_max_turns", "--latency-scale", "0", env=CAPTURE
    )
    assert done.returncode == 0, done.stderr
    _write_help_desk(folder, "help_desk")
    yield folder, report_rows(done.stdout)[0].trace_id


def _replay(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return janux(
        "replay", "--source", f"memory-file:{folder / 'captured.jsonl'}", *args,
        env={"PYTHONPATH": str(folder), **NO_BYTECODE, **(env or {})},
    )  # fmt: skip


def test_the_command_replays_on_the_users_agents_with_live_tools(captured: tuple[Path, str]) -> None:
    folder, trace_id = captured
    log = folder / "command_searches.log"
    done = _replay(
        folder, trace_id, "--agents", "help_desk:registry", "--live-tools", env={"SEARCH_LOG": str(log)}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "the replay matches the recording"
    assert log.read_text().splitlines() == ["refund"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--agents", "help_desk:nothing"),
            "janux replay: --agents help_desk:nothing: module help_desk has no",
        ),
        (
            ("--agents", "help_desk:only_triage"),
            "janux replay: --agents help_desk:only_triage: no agent named",
        ),
        (("--live-tools",), "janux replay: --live-tools needs --agents MODULE:NAME"),
    ],
)
def test_the_command_names_what_is_wrong_with_the_agents(
    captured: tuple[Path, str], args: tuple[str, ...], message: str
) -> None:
    folder, trace_id = captured
    done = _replay(folder, trace_id, *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.startswith(message), done.stdout
    assert len(done.stdout.splitlines()) == 1 and "Traceback" not in done.stdout + done.stderr


def _pytest(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path.name],
        cwd=path.parent, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, **NO_BYTECODE},
    )  # fmt: skip


def test_a_written_test_imports_the_users_agents_and_checks_their_fix(captured: tuple[Path, str]) -> None:
    folder, trace_id = captured
    path = folder / "test_cut_handoff.py"
    done = _replay(folder, trace_id, "--agents", "help_desk:registry", "--write-test", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    source = path.read_text()
    assert "from help_desk import registry as user_registry" in source
    assert "Agent(" not in source and "Subagent(" not in source
    passed = _pytest(path)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    # The fix is made in the user's code, not in the test: the test now runs past the recording.
    _write_help_desk(folder, "help_desk", turns=3)
    failed = _pytest(path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "recording ends at round 3" in failed.stdout
