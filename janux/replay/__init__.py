"""`janux replay`: rebuild a run recorded with content capture on and run it offline on the runtime.

`janux.replay.runner.replay_trace` replays one trace's spans and compares the outcome with the
recorded one; `janux.replay.whatif` changes budgets, policy and prices first; `janux.replay.source`
writes the replay as a self-contained pytest file; `janux.replay.support` is what that file (and
the replay) is built from; `janux.replay.user_agents` rebuilds the user's own agents (`--agents`) on it.
"""
