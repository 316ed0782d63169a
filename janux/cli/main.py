"""Entry point of the `janux` console script.

Each subcommand lives in its own module of `janux.cli.commands` and exposes `register(subparsers)`,
which adds its parser and sets `func(args) -> int` as the default to call.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

SUBCOMMAND_MODULES = (
    "demo", "collect", "import_files", "ui", "serve", "prune", "traces", "trace", "replay", "export",
    "check", "clickhouse", "derive",
)  # fmt: skip
"""Modules of `janux.cli.commands` that each contribute one subcommand, in the order `--help` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="janux",
        description="Janux: a delegation runtime for LLM agents and a dashboard for its traces.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        module = importlib.import_module(f"janux.cli.commands.{name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the `janux` command line and return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_went_away()


def _reader_went_away() -> int:
    """The reader of our output closed it (`janux traces --json | head`): stop quietly, as Unix tools
    do. Further writes, including the interpreter's final flush of stdout, go to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141  # 128 + SIGPIPE, what a shell reports for a tool stopped by a closed pipe


if __name__ == "__main__":
    sys.exit(main())
