"""Resolving an agent's `model` (an instance, a registry name, or nothing) to a `Model`."""

from __future__ import annotations

from collections.abc import Mapping

from janux.runtime.model import Model


def resolve_model(
    declared: Model | str | None, registry: Mapping[str, Model], inherited: Model | None
) -> Model | None:
    """The model to use: the declared instance, the registry entry of a declared name, else `inherited`.

    Returns `None` only when a name is declared that the registry does not resolve, or when
    nothing is declared and there is nothing to inherit.
    """
    if declared is None:
        return inherited
    if isinstance(declared, str):
        return registry.get(declared)
    return declared
