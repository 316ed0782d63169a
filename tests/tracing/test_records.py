"""The attr_* readers never raise, whatever a sender put in an attribute."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from janux.tracing.records import attr_float, attr_int, attr_list, attr_str

ANY_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@given(ANY_VALUE)
def test_readers_never_raise(value: object) -> None:
    attributes = {"k": value}
    attr_str(attributes, "k")
    attr_int(attributes, "k")
    attr_float(attributes, "k")
    attr_list(attributes, "k")


def test_infinite_and_odd_numbers_are_not_integers() -> None:
    assert attr_int({"k": math.inf}, "k") is None
    assert attr_int({"k": "inf"}, "k") is None
    assert attr_int({"k": "1e400"}, "k") is None
    assert attr_int({"k": True}, "k") is None
    assert attr_int({"k": "12"}, "k") == 12
    assert attr_int({"k": 12.9}, "k") == 12


def test_strings_and_lists_read_either_spelling() -> None:
    assert attr_str({"k": False}, "k") == "false"
    assert attr_list({"k": '["stop"]'}, "k") == ["stop"]
    assert attr_list({"k": "stop"}, "k") == ["stop"]
    assert attr_float({"k": "0.25"}, "k") == 0.25
