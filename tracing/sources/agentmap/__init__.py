"""The agent map: which agent delegates to which, how often each edge fails, where the money goes.

`classify` turns one span into a link row (the one place that says what a span is to the map),
`build` folds the link rows of many traces into an `AgentMap`; every `TraceSource` feeds it the
rows of the traces matching a filter (the embedded store keeps them in `agent_links` at write time).
"""
