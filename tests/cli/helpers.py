"""Running `janux` as a subprocess, a tiny OTLP/HTTP sink, and an OTLP/JSON-lines reader."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.proto_json.trace.v1.trace import TracesData

from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT
_HEX32 = re.compile(r"[0-9a-f]{32}")
_HEX16 = re.compile(r"[0-9a-f]{16}")
_DIGITS = re.compile(r"-?[0-9]+")


def janux(
    *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """Run the installed `janux` script (or `python -m janux.cli.main`) with no OTEL_* variable inherited."""
    script = Path(sys.executable).with_name("janux")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "janux"]
    base = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    return subprocess.run(
        [*command, *args],
        cwd=ROOT,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclass(frozen=True)
class Row:
    """One scenario line of the demo's report."""

    name: str
    trace_id: str
    outcome: str
    design: str = ""
    """What the scenario shows by design (`-` for a plain ending)."""


def report_rows(stdout: str) -> list[Row]:
    """The scenario lines between the header and the summary of `janux demo` output."""
    lines = stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["scenario", "trace", "id"], stdout
    rows = []
    for line in lines[1:-1]:
        name, trace_id, rest = line.split(None, 2)
        outcome, _, design = rest.partition("  ")  # the outcome, then what it shows by design
        rows.append(Row(name, trace_id, outcome.strip(), design.strip()))
    return rows


def read_otlp_json_lines(path: Path) -> list[dict[str, Any]]:
    """Every span of an OTLP/JSON-lines file, after checking each line strictly."""
    spans: list[dict[str, Any]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        document = json.loads(line)
        assert set(document) == {"resourceSpans"}, f"line {number}: top level"
        TracesData.from_dict(document)
        for resource_spans in document["resourceSpans"]:
            resource = {a["key"]: a["value"] for a in resource_spans["resource"]["attributes"]}
            for scope_spans in resource_spans["scopeSpans"]:
                for span in scope_spans["spans"]:
                    _check_span(span, number)
                    spans.append({**span, "_resource": resource})
    return spans


def _check_span(span: dict[str, Any], number: int) -> None:
    assert _HEX32.fullmatch(span["traceId"]), f"line {number}: traceId"
    assert _HEX16.fullmatch(span["spanId"]), f"line {number}: spanId"
    assert not span.get("parentSpanId") or _HEX16.fullmatch(span["parentSpanId"]), f"line {number}"
    assert isinstance(span["kind"], int), f"line {number}: kind"
    assert _DIGITS.fullmatch(span["startTimeUnixNano"]), f"line {number}: startTimeUnixNano"
    assert isinstance(span.get("status", {}).get("code", 0), int), f"line {number}: status.code"
    for attribute in span.get("attributes", []):
        value = attribute["value"]
        assert len(value) == 1, f"line {number}: {attribute['key']}"
        if "intValue" in value:
            assert isinstance(value["intValue"], str), f"line {number}: {attribute['key']} int64 as string"
