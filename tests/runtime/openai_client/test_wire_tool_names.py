"""The reversible tool-name escape: valid on the wire, round-trips every name, never collides."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from janux.runtime.chat_wire import ToolNameCodec, decode_tool_name, encode_tool_name
from janux.runtime.model import ModelError

WIRE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
names = st.text(min_size=1, max_size=90)
# Names built from the characters that matter most: dots, underscores, and the escape's own digits.
tricky = st.text(alphabet="._-aeh0x2f", min_size=1, max_size=40)
# No per-example deadline: the machine is shared, and a slow example is not a wrong one.
no_deadline = settings(deadline=None)


@pytest.mark.parametrize(
    ("name", "wire"),
    [
        ("search", "search"),
        ("get_weather", "get_weather"),
        ("delegate.researcher", "delegate__2e__researcher"),
        ("handoff.billing", "handoff__2e__billing"),
        ("delegate.my_agent", "delegate__2e__my_agent"),
        ("a__b", "a__5f____5f__b"),
        ("__2e__", "__5f____5f__2e__5f____5f__"),
        ("tool é", "tool__20____e9__"),
    ],
)
def test_examples(name: str, wire: str) -> None:
    assert encode_tool_name(name) == wire
    assert decode_tool_name(wire) == name


@no_deadline
@given(st.one_of(names, tricky))
def test_every_name_gets_a_valid_wire_name(name: str) -> None:
    assert WIRE.match(encode_tool_name(name))


@no_deadline
@given(st.one_of(names, tricky))
def test_round_trip(name: str) -> None:
    codec = ToolNameCodec()
    wire = codec.encode(name)
    assert codec.decode(wire) == name
    # Without the map a wire name decodes to its own name or to nothing (a hashed name), never
    # to another; up to 6 chars (at most 10 wire chars each) never need the hash.
    assert decode_tool_name(wire) in (name, None)
    if len(name) <= 6:
        assert decode_tool_name(wire) == name


@no_deadline
@given(st.one_of(names, tricky), st.one_of(names, tricky))
def test_distinct_names_never_share_a_wire_name(first: str, second: str) -> None:
    if first != second:
        assert encode_tool_name(first) != encode_tool_name(second)


@no_deadline
@given(tricky)
def test_only_canonical_wire_names_decode(wire: str) -> None:
    name = decode_tool_name(wire)
    if name is not None:
        assert encode_tool_name(name) == wire


def test_too_long_names_are_hashed_and_stay_apart() -> None:
    base = "delegate." + "x" * 80
    first, second = encode_tool_name(base + "1"), encode_tool_name(base + "2")
    assert first != second and len(first) <= 64 and len(second) <= 64
    assert decode_tool_name(first) is None  # only the request's codec knows a hashed name
    codec = ToolNameCodec()
    assert codec.decode(codec.encode(base + "1")) == base + "1"


def test_unknown_wire_names_come_back_unchanged() -> None:
    assert ToolNameCodec().decode("made__up") == "made__up"


def test_empty_name_is_refused() -> None:
    with pytest.raises(ModelError, match="tool name"):
        ToolNameCodec().encode("")
