"""The one error base of Janux: every exception the project raises derives from `JanuxError`.

Catch `janux.errors.JanuxError` to handle any Janux failure; each error keeps its specific type (and,
where it had one, its built-in base such as `ValueError`), so existing `except` clauses still match.
"""

from __future__ import annotations


class JanuxError(Exception):
    """Base class of every error Janux raises."""

    error_type: str | None = None
    """Short machine-readable class of the failure, recorded as `error.type` by the runtime; None
    where an error declares none (the runtime then records its class name)."""
