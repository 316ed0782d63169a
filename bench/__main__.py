"""Run every benchmark in turn: `python -m bench [--quick]` (each prints its own table)."""

from __future__ import annotations

import subprocess
import sys

BENCHES = (
    "bench_runtime",
    "bench_openai_agents",
    "bench_telemetry",
    "bench_reconstruct",
    "bench_ingest",
    "bench_agent_map",
    "bench_find",
    "bench_hostile",
    "bench_derive_write",
    "bench_clickhouse",
    "bench_explorer",
)
"""Benchmark modules, cheapest first."""


def main(argv: list[str]) -> int:
    """Run each benchmark in its own process (no shared warm caches) and return the worst status."""
    status = 0
    for name in BENCHES:
        print(f"\n## {name}\n", flush=True)
        status = max(status, subprocess.call([sys.executable, "-m", f"bench.{name}", *argv]))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
