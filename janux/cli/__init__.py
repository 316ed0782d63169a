"""The `janux` command line: the edge where SDK, exporters, receiver and dashboard are wired together."""
