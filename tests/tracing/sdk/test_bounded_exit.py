"""With default settings and a collector that is down or hangs, an agent program finishes within
the shutdown budget (3 s), whether it calls `shutdown()` or just exits, and says in one line how
many spans it dropped."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.support.otlp_sink import refused_port
from tests.support.paths import REPO_ROOT

BUDGET_S = 3.0
"""The default `shutdown_timeout_ms`."""
NO_HANG_S = 20.0
"""Only "no hang": the program ends about `BUDGET_S` after its work (interpreter teardown aside);
before the budget, it took 32-41 s."""

_PROGRAM = """
import logging, sys, time
from janux.tracing.sdk import configure_telemetry
logging.basicConfig(level=logging.WARNING, format="%(name)s %(message)s")
telemetry = configure_telemetry(service_name="exit-test", endpoint=sys.argv[1], protocol=sys.argv[2])
tracer = telemetry.tracer_provider.get_tracer("exit-test")
for n in range(50):
    with tracer.start_as_current_span(f"step {n}"):
        pass
time.sleep(0.2)  # let the first export start and hang
print("done", flush=True)
if sys.argv[3] == "shutdown":
    started = time.monotonic()
    ok = telemetry.shutdown()
    print(f"shutdown {ok} {time.monotonic() - started:.2f} {telemetry.dropped_spans}", flush=True)
"""


@pytest.fixture
def hanging_port() -> Iterator[int]:
    """A port that accepts connections (the kernel completes them) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
@pytest.mark.parametrize("ending", ["shutdown", "exit"])
@pytest.mark.parametrize("collector", ["hanging", "down"])
def test_a_program_ends_within_the_budget_and_reports_its_drops_once(
    protocol: str, ending: str, collector: str, hanging_port: int
) -> None:
    port = hanging_port if collector == "hanging" else refused_port()
    child = subprocess.Popen(
        [sys.executable, "-c", _PROGRAM, f"http://127.0.0.1:{port}", protocol, ending],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"PATH": "/usr/bin:/bin", "OTEL_METRICS_EXPORTER": "none"},
    )  # fmt: skip
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "done"
    done_at = time.monotonic()
    out, err = child.communicate(timeout=120)
    ending_s = time.monotonic() - done_at
    assert child.returncode == 0, err
    assert ending_s < NO_HANG_S, f"{ending} took {ending_s:.1f} s\n{err}"
    summary = [line for line in err.splitlines() if "dropped in all" in line]
    assert len(summary) == 1, err
    assert summary[0].startswith("janux.tracing.sdk.telemetry telemetry: ")
    if ending == "shutdown":
        ok, took, dropped = out.split()[1:]
        assert ok == "False" and float(took) < NO_HANG_S / 2 and int(dropped) == 50
        assert "50 span(s) dropped in all" in summary[0]


def test_the_budget_is_configurable_and_a_bad_value_keeps_the_default() -> None:
    from janux.tracing.sdk.settings import SettingsOverrides, resolve_settings

    assert resolve_settings(env={}).shutdown_timeout_ms == 3000
    assert resolve_settings(env={"JANUX_SHUTDOWN_TIMEOUT_MS": "1500"}).shutdown_timeout_ms == 1500
    bad = resolve_settings(env={"JANUX_SHUTDOWN_TIMEOUT_MS": "soon"})
    assert bad.shutdown_timeout_ms == 3000 and any("JANUX_SHUTDOWN_TIMEOUT_MS" in w for w in bad.warnings)
    overrides = SettingsOverrides(shutdown_timeout_ms=250)
    explicit = resolve_settings(overrides, env={"JANUX_SHUTDOWN_TIMEOUT_MS": "9"})
    assert explicit.shutdown_timeout_ms == 250
