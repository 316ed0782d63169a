"""Entry point of the `janux` console script (subcommands are filled in as components land)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the `janux` command line and return its exit status."""
    del argv
    print("janux: no subcommands yet", file=sys.stderr)
    return 2
