"""Token and cost accounting, and budget limits.

Each model round is priced by the cost of the agent whose loop made it; a round without a price
adds its tokens to `unpriced_tokens` and nothing to `cost`. Unknown cost stays `None`, never 0.
`Usage` (the project's one usage value, `janux.usage.Usage`) serves both a loop's own rounds
(`janux.turn.*`) and a whole turn's bill (`janux.bill.*`).
"""

from __future__ import annotations

from dataclasses import dataclass

from janux.runtime.model import ModelUsage
from janux.tracing.conventions import STOP_MAX_TOKENS, STOP_MAX_TURNS
from janux.usage import Usage

__all__ = ["Price", "Usage", "UsageLimits"]


@dataclass(slots=True, frozen=True, kw_only=True)
class Price:
    """USD per million tokens (the validated form of an agent's `cost`)."""

    input_per_million: float
    """USD per million input tokens."""
    output_per_million: float
    """USD per million output tokens."""

    def of(self, usage: ModelUsage) -> float:
        """USD of one round."""
        return (
            usage.input_tokens * self.input_per_million + usage.output_tokens * self.output_per_million
        ) / 1e6


@dataclass(slots=True, frozen=True, kw_only=True)
class UsageLimits:
    """Budget lines of one agent loop; `None` means no limit on that line."""

    max_turns: int | None = None
    """Most model rounds the loop may make."""
    max_tokens: int | None = None
    """Most input + output tokens across the loop's rounds and those of every loop it delegates to."""

    def check_next_round(self, rounds: int, spent_tokens: int) -> str | None:
        """The stop reason when another round would break a line (`max_turns`/`max_tokens`), else None.

        `spent_tokens`: input + output tokens of the loop and of everything below it so far.
        """
        if self.max_turns is not None and rounds >= self.max_turns:
            return STOP_MAX_TURNS
        if self.max_tokens is not None and spent_tokens >= self.max_tokens:
            return STOP_MAX_TOKENS
        return None
