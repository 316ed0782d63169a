"""Named row access: positions come from the column list, so reordering it cannot shift values."""

from __future__ import annotations

import pytest

from janux.tracing.analysis.usage_rows import UsageRow
from janux.tracing.columns import names, picker, positions, select_list
from janux.tracing.sources.store.schema import SPAN_AT, SPAN_COLUMNS, USAGE_AT, USAGE_COLUMNS
from janux.tracing.sources.store.summary_rows import ROOT_COLUMNS, ROOT_FIRST, SUMMARY_COLUMNS


def test_positions_name_every_column_once() -> None:
    assert positions(("a", "b", "c")) == {"a": 0, "b": 1, "c": 2}
    with pytest.raises(ValueError, match="'a' is listed twice"):
        positions(("a", "b", "a"))


def test_picker_reads_by_name_whatever_the_order() -> None:
    row = (10, "t", "s")
    assert picker(("start", "trace", "span"), ("span", "start"))(row) == ("s", 10)
    assert picker(("start", "trace", "span"), ("trace",))(row) == ("t",)
    reordered = ("s", 10, "t")
    assert picker(("span", "start", "trace"), ("span", "start"))(reordered) == ("s", 10)
    with pytest.raises(ValueError, match="nope"):
        picker(("a",), ("nope",))


def test_select_list_aliases_expressions_only() -> None:
    columns = (("TraceId", "TraceId"), ("Duration", "EndNs - StartNs"))
    assert select_list(columns) == "TraceId, EndNs - StartNs AS Duration"
    assert select_list(columns, prefix="p.") == "p.TraceId, EndNs - StartNs AS Duration"
    assert names(columns) == ("TraceId", "Duration")


def test_store_row_shapes_are_derived_from_one_list() -> None:
    assert positions(SPAN_COLUMNS) == SPAN_AT
    assert positions(USAGE_COLUMNS) == USAGE_AT
    # A span_usage row is the span's ids, then its UsageRow field by field.
    row = ("Dim", "Key", "InputTokens", "OutputTokens", "Cost", "Unpriced", "Failed", "Unread")
    assert USAGE_COLUMNS[3:] == row
    assert len(UsageRow._fields) == len(USAGE_COLUMNS) - 3
    assert SUMMARY_COLUMNS[ROOT_FIRST:] == ROOT_COLUMNS[2:]
