"""The agent map: which agent delegates to which, how often each edge fails, where the money goes.

`classify` turns one span of a Janux trace into a link row (the one place that says what such a
span is to the map); `foreign_rows` turns a trace without Janux accounting, read whole by
`analysis.readers.structure` (the Trace page's reading), into resolved rows; `build` folds the rows
of many traces into an `AgentMap` (`walk` and `loops` hold the per-trace rules). Every `TraceSource`
feeds it the rows of the traces matching a filter (the embedded store keeps them in `agent_links`).
"""
