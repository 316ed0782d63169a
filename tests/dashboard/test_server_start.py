"""What the dashboard does before it takes visitors (`server_app`'s lifespan)."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import gc, json, sys
from janux.dashboard.ui.state import load_page_modules
names = ("altair", "janux.dashboard.views.charts")
before = [name in sys.modules for name in names]
frozen_before = gc.get_freeze_count()
load_page_modules()
print(json.dumps([before, [name in sys.modules for name in names], frozen_before, gc.get_freeze_count()]))
"""


def test_page_modules_are_loaded_and_kept_out_of_the_collectors_scans() -> None:
    """The pages' modules (Altair among them) are imported up front, and the objects they made are
    frozen, so the full collection Streamlit runs after each script run does not walk them."""
    probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True)
    before, after, frozen_before, frozen_after = json.loads(probe.stdout)
    assert before == [False, False] and after == [True, True]
    assert frozen_before == 0 and frozen_after > 100_000  # Streamlit, pandas, Altair: ~130,000 objects
