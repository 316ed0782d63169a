"""Benchmarks: each `bench_<area>` module prints a markdown table with a same-run baseline."""
