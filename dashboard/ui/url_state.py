"""Widgets whose value lives in the URL: a shared link, a reload or the browser's Back button shows
the list as it was left (filters, page, page size).

`seed` gives a widget its value from the URL before it is drawn (only when the session holds none:
Streamlit forgets the widgets of a page once another page ran); `publish` writes the drawn value
back, leaving defaults out so plain addresses stay short.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st


def seed(key: str, param: str, parse: Callable[[str], Any]) -> None:
    """Set widget `key` from the URL's `param` unless the session already holds a value; a value
    `parse` rejects (ValueError) is ignored, the widget then shows its default."""
    if key in st.session_state:
        return
    raw = st.query_params.get(param)
    if raw is None:
        return
    try:
        st.session_state[key] = parse(str(raw))
    except ValueError:
        return


def one_of(options: Sequence[str]) -> Callable[[str], str]:
    """A parser accepting only one of `options` (a drop-down's entries)."""

    def parse(raw: str) -> str:
        if raw not in options:
            raise ValueError(raw)
        return raw

    return parse


def flag(raw: str) -> bool:
    """`1`/`true` -> True, `0`/`false` -> False."""
    if raw.lower() in ("1", "true"):
        return True
    if raw.lower() in ("0", "false"):
        return False
    raise ValueError(raw)


def publish(param: str, value: Any, default: Any) -> None:
    """Put `value` in the URL as `param`, or remove `param` when the value is the default."""
    if value == default or value is None or value == "":
        if param in st.query_params:
            del st.query_params[param]
        return
    text = ("1" if value else "0") if isinstance(value, bool) else str(value)
    if st.query_params.get(param) != text:
        st.query_params[param] = text
