"""Tests of runtime.openai_client."""
