"""`janux collect` on a store it cannot write: one clear message and exit status 1, no traceback."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from janux.tracing.sources.store import open_store
from tests.support.paths import REPO_ROOT


def _without_root_powers() -> list[str]:
    """A command prefix under which file permissions apply (root ignores them unless it drops the
    capabilities that override them)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    # util-linux (essential on Debian) ships it; without it this test could prove nothing as root.
    assert setpriv is not None, "running as root needs setpriv (util-linux) to make a directory read-only"
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def test_collect_on_a_read_only_store_says_so_and_exits_1(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with open_store(data):
        pass
    for path in (*data.iterdir(), data):
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        done = subprocess.run(
            [*_without_root_powers(), sys.executable, "-m", "janux", "collect", "--data-dir", str(data),
             "--http-port", "0", "--grpc-port", "0"],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        for path in (data, *data.iterdir()):
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"janux collect: cannot write to the store in {data}: attempt to write a readonly database. "
        "The receiver needs a writable data directory: check its permissions and free space, or give "
        "another with --data-dir"
    ]
