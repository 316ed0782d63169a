"""Suite-wide settings: in CI a skipped test is a failure, since it proves nothing."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("suite", deadline=None)
"""No per-example deadline: a property test proves what it asserts, not a time (timing is bench/'s,
and a loaded machine must not fail a test)."""
settings.register_profile("nightly", max_examples=1500, deadline=None)
"""Many more examples for the property tests (`make test-nightly`)."""
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "suite")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run in CI when any test was skipped (missing set-up must not pass silently)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or not os.environ.get("CI"):
        return
    skipped = reporter.stats.get("skipped", [])
    if skipped and exitstatus == 0:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; failing the run", red=True)
        session.exitstatus = 1
