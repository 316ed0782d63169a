"""The run machinery behind `Agent.run` (private: nothing here is public API).

Read bottom-up: `context` (run state) and `events` (HANDOFF events) -> the steps a loop takes for
tool calls (`executor`, `primary`, `delegation`, `attempts`, `handoff`) -> `loop` (the agent loop)
-> `turn` (one user turn). A step never imports the loop: delegation attempts run their subagent's
loop through `TurnContext.run_loop`, which the turn hands down.
"""
