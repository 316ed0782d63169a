"""`janux collect`: placeholder until its component lands (replaced by the real command)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    """Add the `collect` subcommand."""
    parser = subparsers.add_parser("collect", help="(not built yet)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    del args
    raise SystemExit("janux collect: not built yet")
