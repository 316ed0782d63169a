"""Run a fixture generator inside a library's own virtualenv.

Agent libraries pin OpenTelemetry (and much else) at versions that cannot install beside
Janux's, and the tests never need them: they read the committed JSONL. A generator therefore
creates a virtualenv with its pinned requirements (once; reused while the pins are unchanged)
under `$JANUX_FOREIGN_VENVS` (default `/tmp/janux-foreign-venvs`) and runs itself there with
`--inner OUT_DIR`. With `--check` it regenerates into a temporary folder and compares the truths
with the committed ones, so a fixture cannot silently drift from its library (the test suite reads
the committed files and installs none of the libraries).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
"""The repository root (the inner run imports `tests.support.foreign` from it)."""
COMMON = ("opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-common")
"""What `isolated` needs besides the library (the library's own pins decide their versions)."""


def venv_dir(name: str) -> Path:
    """Where the virtualenv of generator `name` lives."""
    return Path(os.environ.get("JANUX_FOREIGN_VENVS", "/tmp/janux-foreign-venvs")) / name


def ensure_venv(name: str, requirements: Sequence[str]) -> Path:
    """The python of a virtualenv holding `requirements` (created or updated when the pins changed)."""
    where = venv_dir(name)
    python = where / "bin" / "python"
    stamp = where / "janux-requirements.txt"
    wanted = "\n".join([*requirements, *COMMON]) + "\n"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *requirements, *COMMON], check=True)
    stamp.write_text(wanted)
    return python


def run_inner(name: str, module: str, requirements: Sequence[str], out_dir: Path) -> None:
    """Run `python -m module --inner out_dir` in the virtualenv of `name`."""
    python = ensure_venv(name, requirements)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OTEL_SDK_DISABLED": "false"}
    env.pop("VIRTUAL_ENV", None)
    subprocess.run([str(python), "-m", module, "--inner", str(out_dir.resolve())], check=True, cwd=ROOT,
                   env=env)  # fmt: skip


def check(name: str, module: str, requirements: Sequence[str]) -> list[str]:
    """Regenerate into a temporary folder and compare each truth with the committed one; returns
    the fixtures whose truth differs (the library no longer does what its fixture says)."""
    committed = Path(__file__).parent / "fixtures"
    with tempfile.TemporaryDirectory() as tmp:
        run_inner(name, module, requirements, Path(tmp))
        return [
            fresh.name for fresh in sorted(Path(tmp).glob("*.truth.json"))
            if json.loads(fresh.read_text()) != json.loads((committed / fresh.name).read_text())
        ]  # fmt: skip


def main(name: str, module: str, requirements: Sequence[str], inner: Callable[[Path], None]) -> None:
    """A generator's entry point: `--inner OUT` runs the scenarios (inside the virtualenv);
    `--check` regenerates and compares the truths with the committed ones (exit status 1 when one
    differs); else this sets the virtualenv up and runs itself there, writing into OUT (default:
    the committed fixtures)."""
    args = sys.argv[1:]
    if args[:1] == ["--inner"]:
        inner(Path(args[1]))
        return
    if args[:1] == ["--check"]:
        differing = check(name, module, requirements)
        print("truth differs: " + ", ".join(differing) if differing else "every truth is the committed one")
        sys.exit(1 if differing else 0)
    out = Path(args[0]) if args else Path(__file__).parent / "fixtures"
    run_inner(name, module, requirements, out)
