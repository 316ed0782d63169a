"""OTLP/JSON scalar fields: int64 as string or number, doubles, AnyValue of every kind, attribute lists.

Each function takes the raw JSON value and raises `DecodeError` naming the field (relative to the
caller, which prefixes its own path) when the value is not what the OTLP JSON encoding allows.
"""

from __future__ import annotations

import math
from typing import Any

from janux.tracing.otlp.errors import DecodeError

INT64_MIN = -(2**63)
"""Smallest signed 64-bit integer (`intValue`)."""
UINT64_MAX = 2**64 - 1
"""Largest unsigned 64-bit integer (`fixed64` timestamps)."""
MAX_VALUE_DEPTH = 32
"""Default deepest nesting of arrays/kvlists accepted in one AnyValue (`DecodeLimits.max_depth`)."""

_SPECIAL_DOUBLES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def json_int(value: object, path: str, low: int = INT64_MIN, high: int = UINT64_MAX) -> int:
    """An integer given as a JSON number or a decimal string, within [low, high]."""
    if isinstance(value, bool):
        raise DecodeError(path, "expected an integer, got a boolean")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            raise DecodeError(path, f"expected an integer, got {value[:64]!r}") from None
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        raise DecodeError(path, f"expected an integer, got {type(value).__name__}")
    if not low <= number <= high:
        raise DecodeError(path, f"integer {number} out of range")
    return number


INT64_MAX = 2**63 - 1
"""Largest signed 64-bit integer: the last Unix-nanosecond instant stores can hold (2262-04-11)."""


def check_time(number: int, path: str) -> int:
    """`number` if it is a storable Unix-nanosecond time; the `fixed64` field allows more."""
    if number > INT64_MAX:
        raise DecodeError(path, f"timestamp {number} is after 2262-04-11 (beyond signed 64-bit nanoseconds)")
    return number


def json_time(value: object, path: str) -> int:
    """A `fixed64` Unix-nanosecond timestamp up to `INT64_MAX`; absent means 0."""
    if value is None:
        return 0
    return check_time(json_int(value, path, 0, UINT64_MAX), path)


def json_double(value: object, path: str) -> float:
    """A double given as a number, a numeric string, or "NaN" / "Infinity" / "-Infinity"."""
    if isinstance(value, bool):
        raise DecodeError(path, "expected a number, got a boolean")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        special = _SPECIAL_DOUBLES.get(value)
        if special is not None:
            return special
        try:
            return float(value)
        except ValueError:
            raise DecodeError(path, f"expected a number, got {value[:64]!r}") from None
    raise DecodeError(path, f"expected a number, got {type(value).__name__}")


def json_str(value: object, path: str) -> str:
    """A string field; absent means ""."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise DecodeError(path, f"expected a string, got {type(value).__name__}")


def json_list(value: object, path: str) -> list[Any]:
    """A repeated field; absent means []."""
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise DecodeError(path, f"expected a list, got {type(value).__name__}")


def json_object(value: object, path: str) -> dict[str, Any]:
    """A message field; absent means {}."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    raise DecodeError(path, f"expected an object, got {type(value).__name__}")


def pick(obj: dict[str, Any], camel: str, snake: str) -> Any:
    """Field `camel` of a JSON message, falling back to its proto name `snake` (both are legal)."""
    value = obj.get(camel)
    if value is None and snake != camel:
        value = obj.get(snake)
    return value


def any_value(value: object, depth: int = 0, max_depth: int = MAX_VALUE_DEPTH) -> Any:
    """Decode one OTLP AnyValue: scalars as is, arrays as lists, kvlists as dicts, bytes as base64.

    Errors carry a path relative to the AnyValue (`arrayValue.values[1].intValue`); the caller
    prefixes its own, so no path string is built unless something is wrong.
    """
    if not isinstance(value, dict):
        raise DecodeError("", f"expected an AnyValue object, got {type(value).__name__}")
    if depth > max_depth:
        raise DecodeError("", f"value nested too deeply: more than {max_depth} levels (max_depth)")
    for key, raw in value.items():
        if raw is None:
            continue
        return _any_value_field(key, raw, depth, max_depth)
    return None


def _any_value_field(key: str, raw: object, depth: int, max_depth: int) -> Any:
    """The payload of the one set AnyValue field `key`."""
    if key in ("stringValue", "string_value"):
        if isinstance(raw, str):
            return raw
        return json_str(raw, key)
    if key in ("intValue", "int_value"):
        return json_int(raw, key, INT64_MIN, 2**63 - 1)
    if key in ("doubleValue", "double_value"):
        return json_double(raw, key)
    if key in ("boolValue", "bool_value"):
        if not isinstance(raw, bool):
            raise DecodeError(key, f"expected a boolean, got {type(raw).__name__}")
        return raw
    if key in ("bytesValue", "bytes_value"):
        # Kept as the base64 text the JSON carries: readable, and JSON-serializable downstream.
        return json_str(raw, key)
    if key in ("arrayValue", "array_value"):
        items = json_list(json_object(raw, key).get("values"), f"{key}.values")
        return _array(items, f"{key}.values", depth, max_depth)
    if key in ("kvlistValue", "kvlist_value"):
        items = json_list(json_object(raw, key).get("values"), f"{key}.values")
        return key_values(items, depth + 1, f"{key}.values", max_depth)
    raise DecodeError(key, "unknown AnyValue field")


def _array(items: list[Any], path: str, depth: int, max_depth: int) -> list[Any]:
    """Decode the values of an arrayValue."""
    out: list[Any] = []
    for i, item in enumerate(items):
        try:
            out.append(any_value(item, depth + 1, max_depth))
        except DecodeError as err:
            raise err.under(f"{path}[{i}]") from None
    return out


def key_values(
    items: object, depth: int = 0, path: str = "", max_depth: int = MAX_VALUE_DEPTH
) -> dict[str, Any]:
    """Decode a list of OTLP KeyValue objects into a dict (a repeated key keeps its last value).

    Errors carry a path relative to the list (`[2].value.intValue`) under `path`.
    """
    result: dict[str, Any] = {}
    for i, item in enumerate(json_list(items, path)):
        if not isinstance(item, dict):
            raise DecodeError(f"{path}[{i}]", f"expected a KeyValue object, got {type(item).__name__}")
        key = item.get("key")
        if not isinstance(key, str):
            raise DecodeError(f"{path}[{i}].key", "missing or not a string")
        raw = item.get("value")
        if raw is None:
            result[key] = None
            continue
        try:
            result[key] = any_value(raw, depth, max_depth)
        except DecodeError as err:
            raise err.under(f"{path}[{i}].value") from None
    return result
