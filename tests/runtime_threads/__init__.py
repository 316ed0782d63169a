"""Tests of janux.runtime.threads."""
