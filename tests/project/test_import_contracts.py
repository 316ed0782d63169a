"""`make lint`'s import contracts hold on this checkout and fail on a planted violation.

Each case copies the package tree (links resolved) to a temporary folder, plants one import and
runs `lint-imports` with the project's own configuration on the copy.
"""

from __future__ import annotations

import os
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
        ("tracing/records_planted.py", "import janux.tracing.spantree.index\n", "no import cycles"),
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
