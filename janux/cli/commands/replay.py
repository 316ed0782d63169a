"""`janux replay TRACE_ID`: run a recorded trace again offline and compare the outcome with the recording.

    janux replay 4bf92f35 --delegation 1
    janux replay 4bf92f35 --set researcher.max_turns=4 --cost researcher=0.15/0.60
    janux replay 4bf92f35 --model researcher=gpt-4o-mini
    janux replay 4bf92f35 --write-test tests/test_refund_handoff.py
    janux replay 4bf92f35 --agents myapp.agents:registry --live-tools --write-test tests/test_fix.py
    janux replay 4bf92f35 --agents myapp.agents:triage    # an OpenAI Agents SDK trace, on the SDK
    janux replay 4bf92f35 --set researcher.max_turns=5 --model-url http://localhost:11434/v1

The trace must have been recorded with content capture on (each round's messages and outputs, tool
arguments and results, the agents' definitions). Exit status: 0 when the replay ends as recorded,
1 when it differs or needs a model output the trace never recorded (`recording ends at round N`),
2 when the trace cannot be replayed (no such trace, no captured content, a bad what-if).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from janux.cli.source_options import add_source_arguments, open_from_args

EXIT_MATCH = 0
"""The replay ended as the recording did."""
EXIT_DIFFERS = 1
"""The replay ended differently, or the recording ended before the run did."""
EXIT_UNAVAILABLE = 2
"""The trace cannot be replayed (the message says why)."""


def register(subparsers: Any) -> None:
    """Add the `replay` subcommand."""
    parser = subparsers.add_parser(
        "replay",
        help="run a trace recorded with content capture on again, offline; what-if budgets, policy, prices",
        description=(
            "Rebuild the agents and every recorded model output of a trace (recorded with "
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true), run it offline on the runtime, and "
            "print the replayed outcome beside the recorded one: the turn, the bill, and each delegation's "
            "outcome, attempts, tokens and cost. Exit 0 when they match, 1 when they differ or the run "
            "needs a model output the trace never recorded, 2 when the trace cannot be replayed."
        ),
    )
    parser.add_argument(
        "trace_id", help="the trace id (32 hex characters), or a prefix of it only one id has"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--delegation",
        type=int,
        metavar="N",
        help="compare only delegation N (as `janux trace` numbers them)",
    )
    which.add_argument(
        "--span", metavar="SPAN_ID", help="compare only the delegation whose tool span is SPAN_ID"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="AGENT.FIELD=VALUE",
        help="what-if: a budget line (researcher.max_tokens=8000, max_turns, max_ms) or a policy field "
        "(policy.max_retries=2, policy.timeout_ms=..., triage.policy.on_error=fallback_to_primary); "
        "repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--cost", action="append", default=[], metavar="AGENT=IN/OUT",
        help="what-if: an agent's price in USD per million input/output tokens (researcher=0.15/0.60); "
        "repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--model", action="append", default=[], metavar="AGENT=MODEL",
        help="what-if: price an agent's recorded rounds as MODEL's, from the genai-prices table "
        "(researcher=gpt-4o-mini); an unknown or tiered model is refused; repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--agents", metavar="MODULE:NAME",
        help="take the agents from your code (a mapping name -> janux Agent, or a callable returning "
        "one, e.g. myapp.agents:registry) instead of the definitions the trace recorded: the replay "
        "and a written test run your prompts, guardrails and budgets; for a trace of the OpenAI Agents "
        "SDK, your entry agents.Agent (myapp.agents:triage), replayed on the SDK; the working directory "
        "is importable",
    )  # fmt: skip
    parser.add_argument(
        "--live-tools", action="store_true",
        help="run the real tools of --agents instead of answering each call with its recorded result",
    )  # fmt: skip
    parser.add_argument(
        "--model-url", metavar="URL",
        help="where the recording ends, continue on a live OpenAI-compatible chat-completions server "
        "(http://localhost:11434/v1, https://api.openai.com/v1, ...) instead of stopping there",
    )  # fmt: skip
    parser.add_argument(
        "--api-key-env", metavar="NAME", default="OPENAI_API_KEY",
        help="environment variable holding the --model-url server's API key (default OPENAI_API_KEY; "
        "optional for local servers)",
    )  # fmt: skip
    parser.add_argument(
        "--write-test", metavar="PATH", help="write the replay as a self-contained pytest file"
    )
    add_source_arguments(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # Imported here: the runtime and the analysis are not needed by the other subcommands' start.
    from janux.cli.commands.trace import full_trace_id
    from janux.replay.runner import live_models, replay_trace, test_source
    from janux.replay.user_agents import RegistryError
    from janux.replay.whatif import WhatIfError, parse_cost, parse_model, parse_set
    from janux.tracing.analysis.replay_plan import NeedsSdkAgents, ReplayUnavailable

    source = open_from_args(args, "replay")
    trace_id = full_trace_id(source, str(args.trace_id).strip().lower(), "replay")
    if trace_id is None:
        return EXIT_UNAVAILABLE
    spans = source.get_trace(trace_id)
    if not spans:
        print(f"janux replay: no spans stored for trace {trace_id}")
        return EXIT_UNAVAILABLE
    try:
        changes = [parse_set(text) for text in args.set]
        costs = [parse_cost(text) for text in args.cost]
        models = [parse_model(text) for text in args.model]
        live = live_models(args.model_url, args.api_key_env) if args.model_url else None
        report = replay_trace(
            spans, changes=changes, costs=costs, models=models, delegation=args.delegation,
            span_id=args.span, agents_from=args.agents, live_tools=args.live_tools, live=live,
        )  # fmt: skip
    except NeedsSdkAgents as exc:
        if not args.agents:
            print(f"janux replay: {exc}")
            return EXIT_UNAVAILABLE
        return _replay_sdk(args, spans, trace_id)
    except (ReplayUnavailable, WhatIfError, RegistryError) as exc:
        print(f"janux replay: {exc}")
        return EXIT_UNAVAILABLE
    status = _print_report(report, trace_id, [*args.set, *args.cost, *args.model], args.model_url)
    if args.write_test:
        command = "janux replay " + shlex.join([trace_id, *_what_if_args(args)])
        _write(Path(args.write_test), test_source(report, command))
        if args.set or args.cost or args.model:
            print("note: its agents carry the what-if changes and it asserts the recorded outcome, so it "
                  "fails until you edit the assertion to the outcome you expect")  # fmt: skip
    return status


SDK_UNSUPPORTED = {
    "set": "--set (the SDK run's budgets and policy are your code: change them there)",
    "model_url": "--model-url",
}
"""Options refused for a trace of the OpenAI Agents integration, as named in the refusal."""


def _replay_sdk(args: argparse.Namespace, spans: Any, trace_id: str) -> int:
    """Replay a trace of the OpenAI Agents integration on the user's SDK agents (`--agents`)."""
    from janux.replay.runner import replay_sdk_trace
    from janux.replay.user_agents import RegistryError
    from janux.replay.whatif import parse_cost, parse_model
    from janux.tracing.analysis.replay_plan import ReplayUnavailable

    refused = [name for option, name in SDK_UNSUPPORTED.items() if getattr(args, option)]
    if refused:
        print(f"janux replay: an OpenAI Agents SDK trace replays on your agents as they are; not "
              f"available for it: {', '.join(refused)}")  # fmt: skip
        return EXIT_UNAVAILABLE
    try:
        prices = _sdk_prices([parse_cost(text) for text in args.cost], [parse_model(t) for t in args.model])
        report = replay_sdk_trace(
            spans, args.agents, live_tools=args.live_tools, delegation=args.delegation, span_id=args.span,
            prices=prices,
        )  # fmt: skip
    except (ReplayUnavailable, RegistryError) as exc:
        print(f"janux replay: {exc}")
        return EXIT_UNAVAILABLE
    status = _print_report(report, trace_id, [*args.cost, *args.model], None)
    if args.write_test:
        from janux.replay.runner import sdk_test_source

        command = "janux replay " + shlex.join([trace_id, *_what_if_args(args)])
        _write(Path(args.write_test), sdk_test_source(report, command, args.live_tools))
        if prices:
            print("note: it bills with the what-if prices and asserts the recorded outcome, so it fails "
                  "until you edit the assertion to the outcome you expect")  # fmt: skip
    return status


def _sdk_prices(
    costs: list[tuple[str, dict[str, float] | None]], models: list[Any]
) -> dict[str, tuple[float, float] | None]:
    """`--cost` and `--model` as the SDK replay's what-if prices: agent -> USD per million input and
    output tokens (None: unpriced); a later option for the same agent wins, as in the runtime's replay."""
    prices: dict[str, tuple[float, float] | None] = {}
    for agent, cost in costs:
        prices[agent] = None if cost is None else (cost["input"], cost["output"])
    for model in models:
        prices[model.agent] = (model.cost["input"], model.cost["output"])
    return prices


def _what_if_args(args: argparse.Namespace) -> list[str]:
    flags = [
        *(("--set", value) for value in args.set),
        *(("--cost", value) for value in args.cost),
        *(("--model", value) for value in args.model),
        *([("--agents", args.agents)] if args.agents else []),
    ]
    live = ["--live-tools"] if args.live_tools else []
    return [part for flag, value in flags for part in (flag, value)] + live


def _print_report(report: Any, trace_id: str, what_ifs: list[str], model_url: str | None) -> int:
    from janux.tracing.analysis.replay_outcome import render_comparison

    plan = report.plan
    answered = sum(1 for r in plan.rounds if r.answered)
    print(f"janux replay {trace_id}: {plan.entry}, {len(plan.rounds)} recorded rounds ({answered} answered), "
          f"{len(report.recorded.delegations)} delegation(s)")  # fmt: skip
    if what_ifs:
        print("what-if: " + ", ".join(what_ifs))
    print(render_comparison(report.recorded, report.replayed, report.only))
    if report.ended is not None:
        print(report.ended)
        if report.live_rounds:
            print(f"continued on {model_url}: {report.live_rounds} live round(s) past the recording, "
                  "counted in the replayed outcome and bill")  # fmt: skip
        print("the replay went past the recording: the outcome after that point is not a replay of it")
        return EXIT_DIFFERS
    if report.differences:
        print("the replay differs from the recording:")
        for line in report.differences:
            print(f"  {line}")
        return EXIT_DIFFERS
    print("the replay matches the recording")
    return EXIT_MATCH


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise SystemExit(f"janux replay: cannot write {path}: {exc}") from exc
    print(f"wrote {path}: run it with `pytest {path}`")
