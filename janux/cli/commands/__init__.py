"""The `janux` subcommands, one module each, each exposing `register(subparsers)` (see `janux.cli.main`)."""
