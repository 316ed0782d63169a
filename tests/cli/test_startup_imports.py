"""What starting the `janux` command loads: the receiver and the importer stay lean.

`janux` registers every subcommand before parsing, so a subcommand module that imports the
dashboard's data stack at the top makes `janux collect` and `janux import` carry it (pandas and
numpy are about 80 MiB of resident memory per process, pydantic and yaml another 9 MiB, and a
collector runs several processes).
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.paths import REPO_ROOT

_HEAVY = ("pandas", "numpy", "streamlit", "chdb", "pyarrow", "pydantic", "yaml")

_PROBE = """
import json, sys
from janux.cli.main import build_parser
build_parser()
import janux.cli.commands.collect, janux.cli.commands.import_files
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_building_the_command_line_loads_no_data_stack() -> None:
    """Every subcommand registered (as `janux collect` / `janux import` start): none of the
    dashboard's heavy libraries is imported; `janux trace(s)` import them when they run."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert loaded.isdisjoint(_HEAVY), sorted(loaded & set(_HEAVY))
