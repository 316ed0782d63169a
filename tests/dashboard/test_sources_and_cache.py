"""Source configuration from env/arguments, and the cache of rebuilt traces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from janux.dashboard.ui.view_cache import SPAN_OVERHEAD_BYTES, ViewCache, view_bytes
from janux.tracing.analysis.trace_view import reconstruct
from janux.tracing.records import EventRecord, SpanRecord
from janux.tracing.sources.memory import MemoryTraceSource
from janux.tracing.sources.source_config import SourceUnavailable, config_from_env, open_source
from tests.support.contract_traces import contract_trace


def test_defaults_to_the_embedded_store(tmp_path: Path) -> None:
    cfg = config_from_env({"JANUX_DATA_DIR": str(tmp_path)}, [])
    assert cfg.kind == "store" and cfg.resolved_data_dir() == tmp_path
    assert cfg.key() == f"store:{tmp_path}"


def test_arguments_win_over_the_environment(tmp_path: Path) -> None:
    cfg = config_from_env({"JANUX_DATA_DIR": "/elsewhere", "JANUX_SOURCE": "clickhouse"},
                          ["--data-dir", str(tmp_path), "--source", "store"])  # fmt: skip
    assert (cfg.kind, cfg.data_dir) == ("store", str(tmp_path))


def test_clickhouse_settings_and_key_without_password() -> None:
    env = {"JANUX_SOURCE": "clickhouse", "JANUX_CLICKHOUSE_HOST": "ch", "JANUX_CLICKHOUSE_PORT": "9000",
           "JANUX_CLICKHOUSE_PASSWORD": "secret"}  # fmt: skip
    cfg = config_from_env(env, [])
    assert (cfg.kind, cfg.clickhouse.host, cfg.clickhouse.port) == ("clickhouse", "ch", 9000)
    assert "secret" not in cfg.key()


@pytest.mark.parametrize(
    ("env", "field"),
    [({"JANUX_SOURCE": "mysql"}, "JANUX_SOURCE"), ({"JANUX_CLICKHOUSE_PORT": "x"}, "JANUX_CLICKHOUSE_PORT")],
)
def test_bad_settings_name_the_field(env: dict[str, str], field: str) -> None:
    with pytest.raises(SourceUnavailable, match=field):
        config_from_env(env, [])


def test_memory_file_source_must_exist(tmp_path: Path) -> None:
    cfg = config_from_env({"JANUX_SOURCE": f"memory-file:{tmp_path / 'none.jsonl'}"}, [])
    with pytest.raises(SourceUnavailable, match="no such trace file"):
        open_source(cfg)


def test_store_source_opens(tmp_path: Path) -> None:
    source = open_source(config_from_env({"JANUX_DATA_DIR": str(tmp_path / "d")}, []))
    assert source.ingest_stats().spans == 0


class _Counting(MemoryTraceSource):
    reads = 0

    def get_traces(self, trace_ids: list[str]) -> dict[str, list]:  # type: ignore[type-arg]
        self.reads += 1
        return super().get_traces(trace_ids)


def test_cache_reuses_until_expiry() -> None:
    now = [0.0]
    cache = ViewCache(ttl_s=10, clock=lambda: now[0])
    source = _Counting(contract_trace())
    trace_id = contract_trace()[0].trace_id
    first = cache.view(source, "k", trace_id)
    assert cache.view(source, "k", trace_id) is first and source.reads == 1
    now[0] = 11
    assert cache.view(source, "k", trace_id) is not first and source.reads == 2
    assert cache.view(source, "other-key", trace_id) is not first


def test_cache_span_budget_drops_least_recent() -> None:
    cache = ViewCache(max_spans=len(contract_trace()) + 1)
    a, b = contract_trace(seed=1), contract_trace(seed=2)
    source = _Counting(a + b)
    cache.view(source, "k", a[0].trace_id)
    cache.view(source, "k", b[0].trace_id)
    cache.view(source, "k", b[0].trace_id)
    assert source.reads == 2
    cache.view(source, "k", a[0].trace_id)
    assert source.reads == 3


def test_the_memory_estimate_counts_each_value_by_its_kind() -> None:
    """`view_bytes` counts text by its length and every other value at a fixed size, inline or not:
    the same figure for every kind a span or event attribute may hold."""

    class Label(str):
        """Text of a subclass (counted as text, through the general rule)."""

    values: dict[str, Any] = {
        "text": "abcd", "raw": b"xy", "int": 7, "float": 1.5, "flag": True, "list": ["ab", 3],
        "tuple": ("abc",), "label": Label("hello"), "none": None,
    }  # fmt: skip
    span = SpanRecord("a" * 32, "b" * 16, "", "span", 0, 1, attributes=values,
                      events=[EventRecord(0, "event", {"e": "xyz", "n": 2})])  # fmt: skip
    each = 54 + 52 + 32 + 32 + 32 + (56 + 52 + 32) + (56 + 53) + 55 + 32
    assert view_bytes(reconstruct([span])) == SPAN_OVERHEAD_BYTES + each + 200 + 53 + 32
