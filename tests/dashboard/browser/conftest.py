"""The browser tests share one way to serve the demo and drive Chromium (defined in the main test)."""

from tests.dashboard.browser.test_dashboard_in_chromium import browser, page, served

__all__ = ["browser", "page", "served"]
