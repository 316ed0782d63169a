"""Tests of runtime.threads."""
