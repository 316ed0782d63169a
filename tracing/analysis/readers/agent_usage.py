"""Usage at the finest level that carries it, never two levels.

Model calls carry usage first: a loop's usage is its model calls'. An agent span that reports usage
of its own (accumulated, aggregated) is never added to them. But where no span below an agent run
carries usage (no model call, no sub-agent with usage) and the agent span does, that usage is the
only record of the run's model calls: it is the agent's own, counted once, at the agent. Where
nothing carries usage at all, it stays unknown (never 0): `StructureFacts.coverage` says "model
calls not recorded".
"""

from __future__ import annotations

from dataclasses import replace

from janux.tracing.analysis.readers.loops import Structure
from janux.tracing.analysis.readers.spans import MODEL_KEYS, PROVIDER_KEYS, first_text, read_usage
from janux.tracing.analysis.span_index import NO_PARENT


def _carries_usage_below(s: Structure, top: int) -> bool:
    """True when some span below the span at `top` carries usage read under a known name."""
    stack = list(s.index.children[top])
    seen: set[int] = set()
    while stack:
        pos = stack.pop()
        if pos in seen:
            continue
        seen.add(pos)
        span = s.index.spans[pos]
        if read_usage(span.attributes, span.status_code)[0] == "read":
            return True
        stack.extend(s.index.children[pos])
    return False


def adopt_agent_usage(s: Structure) -> list[int]:
    """Make the usage an agent span reports its loop's own where nothing below it carries usage
    (the span joins its loop's `calls`, read with that usage); returns the positions adopted."""
    adopted: list[int] = []
    if s.index.issues.orphans:
        # Spans hang below a missing parent: what they carry may be inside an agent's aggregate,
        # and "nothing below carries usage" cannot be told. Adopting could count it twice.
        return adopted
    for loop in s.loops:
        if loop.pos == NO_PARENT or any(s.read(pos).usage == "read" for pos in loop.calls):
            continue
        span = s.index.spans[loop.pos]
        state, tokens_in, tokens_out = read_usage(span.attributes, span.status_code)
        if state != "read" or _carries_usage_below(s, loop.pos):
            continue
        attrs = span.attributes
        s._reads[loop.pos] = replace(
            s.read(loop.pos), usage="read", input_tokens=tokens_in, output_tokens=tokens_out,
            model=first_text(attrs, MODEL_KEYS), provider=first_text(attrs, PROVIDER_KEYS),
        )  # fmt: skip
        loop.calls.append(loop.pos)
        adopted.append(loop.pos)
    return adopted
