"""Tests of janux.runtime.openai_client."""
