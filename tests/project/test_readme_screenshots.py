"""The README's screenshots show the dashboard as a person sees it on the window the design brief
names (1440x900, issue 31): each one the README links exists and was taken at that size."""

from __future__ import annotations

import re

from PIL import Image

from tests.dashboard.browser.test_dashboard_in_chromium import WINDOW
from tests.support.paths import REPO_ROOT

LINKED = re.compile(r"\]\((docs/screenshots/[\w.-]+\.png)\)")
"""A markdown image link to a screenshot."""


def test_every_readme_screenshot_is_taken_on_the_1440x900_window() -> None:
    linked = sorted(set(LINKED.findall((REPO_ROOT / "README.md").read_text(encoding="utf-8"))))
    assert linked, "the README links no screenshot"
    sizes = {}
    for path in linked:
        with Image.open(REPO_ROOT / path) as shot:
            sizes[path] = shot.size
    wrong = {path: size for path, size in sizes.items() if size != (WINDOW["width"], WINDOW["height"])}
    assert not wrong, f"screenshots not taken at {WINDOW['width']}x{WINDOW['height']}: {wrong}"
