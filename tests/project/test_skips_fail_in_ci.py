"""The suite's own rule: in CI a skipped test fails the run (tests/conftest.py), elsewhere it does not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

SKIPPING_TEST = """
import pytest

def test_runs():
    assert True

def test_needs_something_missing():
    getattr(pytest, "skip")("the set-up is missing")
"""


def _run_suite(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess[str]:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_sample.py").write_text(SKIPPING_TEST)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_skip_fails_the_run_in_ci(tmp_path: Path) -> None:
    result = _run_suite(tmp_path, ci=True)
    assert result.returncode == 1, result.stdout
    assert "skipped; failing the run" in result.stdout


def test_a_skip_is_only_reported_outside_ci(tmp_path: Path) -> None:
    result = _run_suite(tmp_path, ci=False)
    assert result.returncode == 0, result.stdout
    assert "1 skipped" in result.stdout
