"""A small trace with a failed model round, for the Trace page's search, icons and "errors only".

planner delegates to researcher twice: the first attempt's model round fails (status message
`upstream returned 503 Service Unavailable`, an `exception` event, its tokens recorded) and the
attempt fails with it; the second attempt completes (the delegation was retried). The planner's
first round carries captured content. Each text below is in one place only, so a search for it
can only find that place.
"""

from __future__ import annotations

from janux.tracing import conventions as c
from janux.tracing.records import STATUS_ERROR, EventRecord, SpanRecord
from janux.tracing.testing import DelegationSpec, LoopSpec, RoundSpec, build_trace

STATUS_MESSAGE = "upstream returned 503 Service Unavailable"
"""The failed round's status message (on no other span, in no attribute)."""
EXCEPTION_TYPE = "GatewayUnavailableError"
"""The failed round's exception event's `exception.type`."""
EXCEPTION_MESSAGE = "model gateway said: try again later"
"""The failed round's exception event's `exception.message`."""
CAPTURED_TEXT = "compare volcano eruptions since 1900"
"""Captured content of the planner's first round (`gen_ai.input.messages`)."""
FAILED_TOKENS = (200, 10)
"""Tokens in / out of the failed round (the model read the prompt before it failed)."""


def failed_round_trace(seed: int = 31) -> list[SpanRecord]:
    """The trace described above (a fresh copy)."""
    failed = LoopSpec("researcher", rounds=[RoundSpec(*FAILED_TOKENS, 0.0625, error_type=c.ERROR_MODEL)])
    failed.error_type = c.ERROR_MODEL
    second = LoopSpec("researcher", rounds=[RoundSpec(300, 40, 0.5)])
    retried = DelegationSpec("researcher", attempts=[failed, second])
    rounds = [RoundSpec(1000, 100, 0.25), RoundSpec(500, 50, 0.125)]
    root = LoopSpec("planner", rounds=rounds, delegations=[retried])
    spans = build_trace(root, seed=seed, conversation_id="conv-search")
    bad = next(s for s in spans if s.status_code == STATUS_ERROR and s.name.startswith(c.OP_CHAT))
    bad.status_message = STATUS_MESSAGE
    exception = {"exception.type": EXCEPTION_TYPE, "exception.message": EXCEPTION_MESSAGE}
    bad.events.append(EventRecord(bad.end_ns, "exception", exception))
    first = min((s for s in spans if s.name.startswith(c.OP_CHAT)), key=lambda s: s.start_ns)
    first.attributes[c.GEN_AI_INPUT_MESSAGES] = f'[{{"role": "user", "content": "{CAPTURED_TEXT}"}}]'
    return spans
