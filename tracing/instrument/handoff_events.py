"""HANDOFF_START / HANDOFF_END event attributes, and the final outcome copied onto the tool span.

The runtime describes one delegation or transfer with any object shaped like `HandoffMark`
(its own `HandoffEvent` dataclass); this module maps it to the `janux.handoff.*` attributes of the
trace contract. Absent values are left out, never written as empty strings.
"""

from __future__ import annotations

from typing import Any, Protocol

from janux.tracing.conventions import (
    EVENT_HANDOFF_END,
    EVENT_HANDOFF_START,
    JANUX_HANDOFF_ATTEMPTS,
    JANUX_HANDOFF_CALL_ID,
    JANUX_HANDOFF_DENY_REASON,
    JANUX_HANDOFF_DEPTH,
    JANUX_HANDOFF_DURATION_MS,
    JANUX_HANDOFF_ERROR,
    JANUX_HANDOFF_ID,
    JANUX_HANDOFF_KIND,
    JANUX_HANDOFF_OUTPUT,
    JANUX_HANDOFF_SESSION_MODE,
    JANUX_HANDOFF_STATUS,
    JANUX_HANDOFF_STOP_REASON,
    JANUX_HANDOFF_TARGET,
    JANUX_HANDOFF_TOOL,
    STATUS_STARTING,
)
from janux.tracing.instrument.content import ContentCapture


class HandoffMark(Protocol):
    """What the runtime knows about one delegation or transfer at START and at END."""

    @property
    def id(self) -> str:
        """Unique id of the delegation."""
        ...

    @property
    def call_id(self) -> str:
        """The model's tool-call id."""
        ...

    @property
    def kind(self) -> str:
        """`delegate` or `transfer`."""
        ...

    @property
    def tool(self) -> str:
        """Tool name (`delegate.researcher`)."""
        ...

    @property
    def target(self) -> str:
        """Subagent or transfer target name."""
        ...

    @property
    def status(self) -> str:
        """`starting`, or the final status at END."""
        ...

    @property
    def depth(self) -> int:
        """Depth the delegated agent runs at."""
        ...

    @property
    def session_mode(self) -> str:
        """`new_session` or `reuse_session`."""
        ...

    @property
    def attempts(self) -> int:
        """Attempts run (END)."""
        ...

    @property
    def duration_ms(self) -> float:
        """Wall clock of the whole delegation (END)."""
        ...

    @property
    def error(self) -> str | None:
        """Human-readable error when failed or denied."""
        ...

    @property
    def deny_reason(self) -> str | None:
        """Rule that denied it."""
        ...

    @property
    def stop_reason(self) -> str | None:
        """Budget line that cut it."""
        ...

    @property
    def output(self) -> str | None:
        """Output text (recorded only with content capture on)."""
        ...


def _common(mark: HandoffMark) -> dict[str, Any]:
    return {
        JANUX_HANDOFF_ID: mark.id,
        JANUX_HANDOFF_CALL_ID: mark.call_id,
        JANUX_HANDOFF_KIND: mark.kind,
        JANUX_HANDOFF_TOOL: mark.tool,
        JANUX_HANDOFF_TARGET: mark.target,
        JANUX_HANDOFF_DEPTH: mark.depth,
        JANUX_HANDOFF_SESSION_MODE: mark.session_mode,
    }


def start_attributes(mark: HandoffMark) -> tuple[str, dict[str, Any]]:
    """(event name, attributes) of HANDOFF_START."""
    attributes = _common(mark)
    attributes[JANUX_HANDOFF_STATUS] = STATUS_STARTING
    return EVENT_HANDOFF_START, attributes


def end_attributes(mark: HandoffMark, capture: ContentCapture) -> tuple[str, dict[str, Any]]:
    """(event name, attributes) of HANDOFF_END; the output only when capture allows it."""
    attributes = _common(mark)
    attributes[JANUX_HANDOFF_STATUS] = mark.status
    attributes[JANUX_HANDOFF_ATTEMPTS] = mark.attempts
    attributes[JANUX_HANDOFF_DURATION_MS] = mark.duration_ms
    _add_outcome(attributes, mark)
    output = capture.capture(mark.output)
    if output is not None:
        attributes[JANUX_HANDOFF_OUTPUT] = output
    return EVENT_HANDOFF_END, attributes


def tool_span_attributes(mark: HandoffMark) -> dict[str, Any]:
    """Final status, attempts and target (plus deny/error/stop reason) for the execute_tool span."""
    attributes: dict[str, Any] = {
        JANUX_HANDOFF_STATUS: mark.status,
        JANUX_HANDOFF_ATTEMPTS: mark.attempts,
        JANUX_HANDOFF_TARGET: mark.target,
    }
    _add_outcome(attributes, mark)
    return attributes


def counter_attributes(mark: HandoffMark) -> dict[str, Any]:
    """Attributes of one `janux.handoffs` counter point."""
    return {JANUX_HANDOFF_STATUS: mark.status, JANUX_HANDOFF_KIND: mark.kind}


def _add_outcome(attributes: dict[str, Any], mark: HandoffMark) -> None:
    if mark.error is not None:
        attributes[JANUX_HANDOFF_ERROR] = mark.error
    if mark.deny_reason is not None:
        attributes[JANUX_HANDOFF_DENY_REASON] = mark.deny_reason
    if mark.stop_reason is not None:
        attributes[JANUX_HANDOFF_STOP_REASON] = mark.stop_reason
