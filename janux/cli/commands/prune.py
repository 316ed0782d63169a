"""`janux prune --older-than-days N`: delete traces that ended more than N days ago."""

from __future__ import annotations

import argparse
from typing import Any

from janux.tracing.sources.store import DATA_DIR_ENV, open_store


def register(subparsers: Any) -> None:
    """Add the `prune` subcommand."""
    parser = subparsers.add_parser(
        "prune",
        help="delete traces older than N days from the embedded store",
        description=(
            "Delete every trace (its spans and its summary) whose last span ended more than N days "
            "ago. Safe while `janux collect` and the dashboard run: it deletes in short transactions."
        ),
    )
    parser.add_argument(
        "--older-than-days",
        type=float,
        required=True,
        metavar="N",
        help="retention in days (fractions allowed)",
    )
    parser.add_argument(
        "--data-dir", default=None, help=f"store directory (default: ${DATA_DIR_ENV} or ~/.janux/data)"
    )
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.older_than_days < 0:
        raise SystemExit("janux prune: --older-than-days must be >= 0")
    with open_store(args.data_dir) as store:
        result = store.prune(args.older_than_days)
    print(f"janux prune: deleted {result.traces} trace(s), {result.spans} span(s)")
    return 0
