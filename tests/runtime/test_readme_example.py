"""The README's runtime example runs and prints exactly what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
import textwrap

from tests.support.paths import REPO_ROOT

README = REPO_ROOT / "README.md"


def _example() -> str:
    section = README.read_text().split("## The runtime in one example", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README.md: no python block under 'The runtime in one example'"
    return textwrap.dedent(match.group(1))


def test_the_readme_example_runs_and_prints_what_it_promises() -> None:
    code = _example()
    expected = [line.split("#", 1)[1].strip() for line in code.splitlines() if line.startswith("print(")]
    assert len(expected) == 3
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "readme_example"})  # our own README
    assert out.getvalue().splitlines() == expected
