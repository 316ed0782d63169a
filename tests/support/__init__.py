"""Helpers shared by every test folder: OTLP sinks and builders, contract traces, the contract checker,
waiting for a condition (`wait`), and the repository's paths (`paths`)."""
