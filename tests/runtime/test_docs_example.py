"""The runnable example of docs/runtime.md runs, and prints exactly what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
import textwrap

from tests.support.paths import REPO_ROOT

DOC = REPO_ROOT / "docs" / "runtime.md"


def _example() -> str:
    text = DOC.read_text()
    section = text.split("## A runnable example", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "docs/runtime.md: no python block under 'A runnable example'"
    return textwrap.dedent(match.group(1))


def test_the_docs_example_runs_and_prints_what_it_promises() -> None:
    code = _example()
    expected = [
        line.split("#", 1)[1].strip()
        for line in code.splitlines()
        if line.startswith("print(") and "#" in line
    ]
    assert len(expected) >= 5
    out = io.StringIO()
    namespace: dict[str, object] = {"__name__": "docs_example"}
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), namespace)  # our own documentation, trusted
    assert out.getvalue().splitlines() == expected
