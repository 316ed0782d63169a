"""The price line of one model round in the span inspector: recorded, estimated (and from where), or not."""

from __future__ import annotations

from janux.tracing.analysis import formatting as fmt
from janux.tracing.analysis import spanread as sr
from janux.tracing.analysis.costs import price_round
from janux.tracing.analysis.trace_view import TraceView
from janux.tracing.records import SpanRecord


def _in_janux_loop(view: TraceView, span: SpanRecord) -> bool:
    """True when the round belongs to a loop with janux accounting (never priced from the table here)."""
    pos = view.index.by_id.get(span.span_id)
    return any(node.janux and pos in node.chat_spans for node in view.nodes)


def round_price_text(view: TraceView, span: SpanRecord) -> str | None:
    """How the dashboard prices this span when it is a model round (None for any other span)."""
    if not sr.is_inference(sr.operation(span)):
        return None
    state, tokens_in, tokens_out = sr.round_usage(span)
    if state in ("unread", "absent"):
        return f"Price: {fmt.UNKNOWN} (this call's usage could not be read)."
    if state == "failed":
        return "Price: none (the call failed and returned no usage)."
    price = price_round(span, tokens_in, tokens_out, table=not _in_janux_loop(view, span))
    if price.kind == "recorded":
        return f"Price: {fmt.usd(price.usd)}, recorded (janux.round.cost)."
    if price.kind == "estimated":
        return (
            f"Price: {fmt.usd(price.usd, estimated=True)}, an estimate from {price.source}: "
            "not a recorded cost."
        )
    return f"Price: {fmt.UNPRICED} (no recorded cost and no estimate): its tokens count as unpriced."
