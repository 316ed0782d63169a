"""The committed fixtures cannot rot: each generator runs again (offline) and must give the committed
truth, and what it writes must still read to that truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from janux.tracing.foreign.facts import trace_facts
from janux.tracing.sources.file_loader import load_trace_file
from tests.support.foreign import (
    generate_adk,
    generate_autogen,
    generate_crewai,
    generate_hand_built,
    generate_langgraph,
    generate_llamaindex,
    generate_openai_agents,
    generate_pydantic_ai,
    generate_smolagents,
    generate_strands,
    venvs,
)
from tests.support.foreign.common import load_truth

GENERATORS = {
    "pydantic_ai": lambda out: generate_pydantic_ai.generate(out),
    "openai_agents_openinference": lambda out: generate_openai_agents.generate_bridge("openinference", out),
    "openai_agents_genai": lambda out: generate_openai_agents.generate_bridge("genai", out),
    "hand_built": lambda out: generate_hand_built.generate(out),
}


@pytest.mark.parametrize("name", list(GENERATORS))
def test_regenerated_fixture_gives_the_committed_truth(tmp_path: Path, name: str) -> None:
    GENERATORS[name](tmp_path)
    fixtures = sorted(path.name.removesuffix(".truth.json") for path in tmp_path.glob("*.truth.json"))
    assert fixtures
    for fixture in fixtures:
        fresh = load_truth(fixture, tmp_path)
        assert fresh == load_truth(fixture), fixture  # same seeded ids, same library behaviour
        spans = load_trace_file(tmp_path / f"{fixture}.jsonl").spans
        for trace_id, truth in fresh.items():
            facts = trace_facts([s for s in spans if s.trace_id == trace_id])
            assert (facts.input_tokens or 0, facts.output_tokens or 0) == (
                truth["input_tokens"],
                truth["output_tokens"],
            ), json.dumps(truth)
            assert facts.delegations == len(truth["delegations"])
            assert facts.transfers == len(truth["transfers"])


VENV_GENERATORS = {
    "langgraph_openinference": generate_langgraph, "smolagents_managed": generate_smolagents,
    "adk": generate_adk, "strands_agents": generate_strands, "autogen_agentchat": generate_autogen,
    "llamaindex_openinference": generate_llamaindex, "crewai_openinference": generate_crewai,
}  # fmt: skip
"""Fixtures generated in a library's own virtualenv (`venvs`)."""


@pytest.mark.slow
@pytest.mark.parametrize("fixture", list(VENV_GENERATORS))
def test_a_library_in_its_virtualenv_gives_the_committed_truth(tmp_path: Path, fixture: str) -> None:
    # Runs only where the generator's virtualenv is already set up with its pinned versions (the
    # suite installs nothing); then the library must still give the committed truth.
    module = VENV_GENERATORS[fixture]
    stamp = venvs.venv_dir(_venv_name(module)) / "janux-requirements.txt"
    wanted = "\n".join([*module.REQUIREMENTS, *venvs.COMMON]) + "\n"
    if not stamp.exists() or stamp.read_text() != wanted:
        pytest.skip(f"no virtualenv with the pinned versions of {fixture} on this machine")
    venvs.run_inner(_venv_name(module), module.__name__, module.REQUIREMENTS, tmp_path)
    assert load_truth(fixture, tmp_path) == load_truth(fixture)


def _venv_name(module: object) -> str:
    """The virtualenv a generator module runs in (the name its `__main__` passes to `venvs.main`)."""
    return str(module.__name__).rsplit(".", 1)[-1].removeprefix("generate_")  # type: ignore[attr-defined]
