"""Tests of `janux demo` (run as a real subprocess)."""
