"""The committed fixtures cannot rot: each generator runs again (offline) and must give the committed
truth, and what it writes must still read to that truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from janux.tracing.analysis.readers.structure import structure_facts
from janux.tracing.sources.file_loader import load_trace_file
from tests.support.foreign import generate_hand_built, generate_openai_agents, generate_pydantic_ai
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
            facts = structure_facts([s for s in spans if s.trace_id == trace_id])
            assert (facts.input_tokens or 0, facts.output_tokens or 0) == (
                truth["input_tokens"],
                truth["output_tokens"],
            ), json.dumps(truth)
            assert facts.delegations == len(truth["delegations"])
            assert facts.transfers == len(truth["transfers"])

