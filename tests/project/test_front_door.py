"""`import janux` offers the names users start from, cheaply; every error derives from `JanuxError`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import janux
from janux.errors import JanuxError

# Modules that run a Streamlit script or a process on import: they define no exception classes.
_NOT_IMPORTED = ("janux.dashboard.app_pages", "janux.dashboard.streamlit_app", "janux.__main__")


def _janux_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(janux.__path__, "janux."):
        if not info.name.startswith(_NOT_IMPORTED):
            names.append(info.name)
    return names


def test_every_exception_janux_defines_derives_from_janux_error() -> None:
    found = []
    for name in _janux_modules():
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException):
                found.append(cls)
    assert len(found) > 20, "the walk found the project's exceptions"
    outside = sorted(
        f"{cls.__module__}.{cls.__qualname__}" for cls in found if not issubclass(cls, JanuxError)
    )
    assert outside == []


def test_specific_errors_keep_their_builtin_bases() -> None:
    from janux.runtime.model import ModelError
    from janux.tracing.otlp.errors import DecodeError

    assert issubclass(DecodeError, ValueError) and issubclass(DecodeError, JanuxError)
    assert issubclass(ModelError, JanuxError)
    assert ModelError("x", error_type="rate_limited").error_type == "rate_limited"


def test_front_door_names_resolve_to_their_modules() -> None:
    from janux.runtime import Agent, HandoffPolicy, Subagent
    from janux.tracing.analysis.trace_view import reconstruct
    from janux.tracing.receiver import start_receiver
    from janux.tracing.sdk import configure_telemetry
    from janux.tracing.sources.store import open_store

    assert janux.Agent is Agent and janux.Subagent is Subagent and janux.HandoffPolicy is HandoffPolicy
    assert janux.configure_telemetry is configure_telemetry
    assert janux.open_store is open_store and janux.start_receiver is start_receiver
    assert janux.reconstruct is reconstruct and janux.JanuxError is JanuxError
    assert callable(janux.analyse) and callable(janux.instrument_openai_agents)
    for name in janux.__all__:
        assert getattr(janux, name) is not None


def test_import_janux_loads_nothing_heavy() -> None:
    code = (
        "import sys, janux; heavy = [m for m in ('janux.runtime', 'janux.tracing.sdk', 'janux.dashboard',"
        " 'streamlit', 'pandas', 'opentelemetry.sdk') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
