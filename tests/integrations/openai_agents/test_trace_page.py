"""The dashboard's Trace page (real app, AppTest) on a traced SDK run: the SDK's own numbers, shown.

One run delegates to a researcher through `agent.as_tool` and then hands off to billing; the page
must show that tree, the attempt, every agent's cost and exactly the tokens of the SDK's own
`result.context_wrapper.usage`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agents import Agent
from streamlit.testing.v1 import AppTest

from janux.dashboard.ui.view_cache import SHARED
from janux.tracing.analysis import formatting as fmt
from janux.tracing.sources.memory import MemoryTraceSource
from tests.dashboard.app_helpers import graph_text, run_page, show_section
from tests.integrations.openai_agents.scripts import calls, model, price, reply, run
from tests.integrations.openai_agents.verify import checked
from tests.support.contract_checker import Traced


@pytest.fixture(autouse=True)
def _isolated_app_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The page reads only the source given to it (not ~/.janux nor a configured source)."""
    for name in ("JANUX_SOURCE", "JANUX_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    SHARED.clear()


def _support_desk() -> Agent[None]:
    researcher = Agent(
        name="researcher",
        instructions="Research the help center.",
        model=model("responses", reply("Annual plans: refundable within 30 days.", 300, 8)),
    )
    billing = Agent(
        name="billing",
        instructions="Billing.",
        model=model("chat_completions", reply("Refund of $120 issued.", 700, 25)),
    )
    return Agent(
        name="triage",
        instructions="Front desk.",
        model=model(
            "responses",
            calls(
                ("researcher", {"input": "refund rules for annual plans"}), input_tokens=400, output_tokens=30
            ),
            calls(("transfer_to_billing", {}), input_tokens=600, output_tokens=12),
        ),
        tools=[researcher.as_tool(tool_name="researcher", tool_description="Research the help center.")],
        handoffs=[billing],
    )


def _table(at: AppTest, columns: set[str]) -> dict[str, dict[str, object]]:
    (frame,) = [e.value for e in at.dataframe if columns <= set(e.value.columns)]
    return {str(row["tool"]): row for row in frame.to_dict("records")}


async def test_trace_page_shows_the_sdk_runs_tree_attempts_and_costs(traced: Traced) -> None:
    outcome = await run(_support_desk(), "Refund my annual plan?")
    assert outcome.result.final_output == "Refund of $120 issued."
    records, _ = checked(traced)
    at = run_page(MemoryTraceSource(records), "trace.py", trace_id=records[0].trace_id)
    metrics = {m.label: m.value for m in at.metric}
    usage = outcome.usage  # the SDK's own account: result.context_wrapper.usage
    tokens = next(m for m in at.metric if m.label == "Tokens in / out")
    expected = (f"{usage.input_tokens:,} in", f"{usage.output_tokens:,} out")
    assert (tokens.value, tokens.proto.delta) == expected
    researcher_cost = price("researcher", 300, 8)
    bill = price("triage", 400, 30) + price("triage", 600, 12) + researcher_cost + price("billing", 700, 25)
    assert metrics["Total cost"] == fmt.usd(bill)
    # triage, billing after the transfer (agent segments) and the researcher's attempt
    assert (metrics["Agent loops"], metrics["Delegations"], metrics["Attempts"]) == ("3", "2", "1")
    assert metrics["Unpriced tokens"] == "0" and metrics["Failed handoffs"] == "0"
    assert [s.value for s in at.success] == ["All reconciliation checks pass."]
    delegations = _table(show_section(at, "Delegations & attempts"), {"caller", "tool", "attempt errors"})
    assert delegations["researcher"]["kind"] == "delegate" and delegations["researcher"]["attempts"] == 1
    assert delegations["researcher"]["cost"] == fmt.usd(researcher_cost)
    assert delegations["handoff.billing"]["kind"] == "transfer"
    assert delegations["handoff.billing"]["status"] == "completed"
    dot = graph_text(at)
    assert "researcher" in dot and "billing" in dot and "triage" in dot


async def test_trace_page_shows_a_round_of_unknown_usage_as_unknown_never_zero(traced: Traced) -> None:
    from agents.testing import ScriptedModel as SdkScriptedModel

    silent = SdkScriptedModel([reply("Refunds take 5 days.", 0, 0)], emit_traces=False)  # no span, no usage
    await run(Agent(name="triage", instructions="Front desk.", model=silent), "Refund?")
    records = traced.records()
    at = run_page(MemoryTraceSource(records), "trace.py", trace_id=records[0].trace_id)
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Tokens in / out"] == fmt.UNKNOWN  # no usage read: unknown, never "0 in"
    assert any("1 of 1 model call(s)" in w.value and "unknown" in w.value for w in at.warning)
