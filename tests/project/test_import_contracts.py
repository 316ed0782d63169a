"""`make lint`'s import contracts hold on this checkout and fail on a planted violation.

Each case copies the package tree (links resolved) to a temporary folder, plants one import and
runs `lint-imports` with the project's own configuration on the copy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(REPO_ROOT / "pyproject.toml"), "--no-cache"],
        cwd=tree, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the `janux` package tree with the root folders copied in place of the links."""
    tree = tmp_path_factory.mktemp("pristine")
    shutil.copytree(REPO_ROOT / "janux", tree / "janux", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    return tree


def _planted(pristine: Path, tmp_path: Path, module: str, source: str) -> Path:
    tree = tmp_path / "planted"
    shutil.copytree(pristine, tree)
    (tree / "janux" / module).write_text(source)
    return tree


def test_the_checkout_keeps_every_contract(pristine: Path) -> None:
    result = _lint(pristine)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


@pytest.mark.parametrize(
    ("module", "source", "contract"),
    [
        ("dashboard/_planted.py", "import janux.runtime\n", "never imports the runtime"),
        ("tracing/_planted.py", "from janux.dashboard.views import fmt\n", "tracing is below"),
        ("runtime/_planted.py", "from janux.tracing.sdk import configure_telemetry\n", "runtime uses only"),
        ("tracing/instrument/_planted.py", "import janux.tracing.sources\n", "never installs a provider"),
        ("tracing/records_planted.py", "import janux.tracing.analysis.span_index\n", "no import cycles"),
        ("integrations/_planted.py", "import janux.tracing.sdk\n", "integrations write traces"),
        ("dashboard/_planted.py", "import janux.integrations\n", "nothing in janux depends on an"),
    ],
)
def test_a_planted_violation_breaks_its_contract(
    pristine: Path, tmp_path: Path, module: str, source: str, contract: str
) -> None:
    tree = _planted(pristine, tmp_path, module, source)
    if module == "tracing/records_planted.py":
        # A cycle: spantree.index imports records; make records import (via its sibling) spantree.
        records = tree / "janux" / "tracing" / "records.py"
        records.write_text(records.read_text() + "\nfrom janux.tracing import records_planted  # noqa\n")
    result = _lint(tree)
    assert result.returncode != 0, result.stdout
    assert contract in " ".join(result.stdout.split()), result.stdout


RUNTIME_CYCLES = "no import cycles inside the runtime"
RUNTIME_LAYERS = "the runtime reads bottom-up"
LOOP_LAYERS = "the run machinery reads bottom-up"
TYPE_ONLY_FACADE = (
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from janux.runtime.agent import Agent\n"
)


@pytest.mark.parametrize(
    ("module", "appended", "broken"),
    [
        # Two steps of one layer importing each other: no layer is crossed, only the cycle rule sees it.
        ("_loop/primary.py", "from janux.runtime._loop import delegation\n", {RUNTIME_CYCLES}),
        # The cycle this layering removed: a delegation attempt importing the loop back.
        ("_loop/attempts.py", "import janux.runtime._loop.loop\n", {RUNTIME_CYCLES, LOOP_LAYERS}),
        # A base module reaching up to the agent core: no cycle, a lower layer importing a higher one.
        ("model_registry.py", "from janux.runtime.agent_core import AgentCore\n", {RUNTIME_LAYERS}),
        # Inside the run machinery: run state importing a step.
        ("_loop/context.py", "from janux.runtime._loop import primary\n", {LOOP_LAYERS}),
        # A type-only import of the facade still counts (grimp reads TYPE_CHECKING blocks); through the
        # facade, run state now reaches the turn, so the inner layering breaks too.
        ("_loop/context.py", TYPE_ONLY_FACADE, {RUNTIME_CYCLES, RUNTIME_LAYERS, LOOP_LAYERS}),
    ],
)
def test_a_planted_runtime_violation_breaks_exactly_its_contracts(
    pristine: Path, tmp_path: Path, module: str, appended: str, broken: set[str]
) -> None:
    tree = tmp_path / "planted"
    shutil.copytree(pristine, tree)
    target = tree / "janux" / "runtime" / module
    target.write_text(target.read_text() + "\n" + appended)
    result = _lint(tree)
    assert result.returncode != 0, result.stdout
    report = " ".join(result.stdout.split())
    for name in (RUNTIME_CYCLES, RUNTIME_LAYERS, LOOP_LAYERS):
        verdict = "BROKEN" if name in broken else "KEPT"
        assert re.search(re.escape(name) + r"[^.]*? " + verdict, report), (name, verdict, result.stdout)
