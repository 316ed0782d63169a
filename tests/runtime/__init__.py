"""Tests of the delegation runtime (runtime/).

Not named tests/runtime: with tests/ on sys.path that directory would shadow the runtime package.
"""
