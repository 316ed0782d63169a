"""The distribution installs one import name, `janux`, and nothing else at the top level."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `pip wheel .` builds from this checkout (no network: the venv's setuptools)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(REPO_ROOT)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    (built,) = out.glob("janux-*.whl")
    return built


def test_the_wheel_has_one_top_level_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    (dist_info,) = [top for top in tops if top.endswith(".dist-info")]
    assert tops == {"janux", dist_info}
    assert (zipfile.ZipFile(wheel).read(f"{dist_info}/top_level.txt").decode().split()) == ["janux"]
    # The root folders are packaged under the one name, with their files (not as links).
    for module in (
        "runtime/agent.py",
        "tracing/conventions.py",
        "dashboard/streamlit_app.py",
        "cli/main.py",
        "integrations/openai_agents/processor.py",
    ):
        assert f"janux/{module}" in names
    assert "janux/dashboard/app_pages/traces.py" in names


def test_only_janux_imports_from_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip

    def imports(name: str) -> subprocess.CompletedProcess[str]:
        # From an empty folder, so the checkout is not on sys.path.
        return subprocess.run(
            [str(python), "-c", f"import {name}"], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )

    assert imports("janux").returncode == 0, imports("janux").stderr
    for generic in ("runtime", "tracing", "dashboard", "cli"):
        failed = imports(generic)
        assert failed.returncode != 0 and "ModuleNotFoundError" in failed.stderr, generic
