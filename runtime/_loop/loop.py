"""The agent loop as a closed set of small steps.

    ModelRequest -> HandleResponse -> (ModelRequest | End)

`ModelRequest` makes one model round inside a `chat` span and books its usage (the loop's own and
the turn's bill, priced by the agent whose loop made it). `HandleResponse` ends the loop on a final
answer, cuts it when another round would break a budget line (its own, or stops it when a calling
subagent's `max_tokens` is spent by the rounds below it), or runs the requested tools
(fork-join) and applies a transfer before the next round. `run_loop` is the whole orchestrator.
"""

from __future__ import annotations

from dataclasses import dataclass

from janux.runtime._loop.context import BudgetCrossed, End, LoopContext
from janux.runtime._loop.executor import execute_calls
from janux.runtime._loop.handoff import apply_transfer
from janux.runtime.deadline import exit_error_type
from janux.runtime.messages import messages_json
from janux.runtime.model import Message, ModelResponse


@dataclass(slots=True, frozen=True)
class ModelRequest:
    """Make one model round."""

    async def run(self, loop: LoopContext) -> HandleResponse:
        """Call the model with the loop's messages and surface; book usage; next: handle the response."""
        active = loop.active
        obs = loop.turn.obs
        model = active.model
        op = obs.start_chat(
            loop.span,
            agent=active.agent.name,
            request_model=model.model_name,
            provider=model.provider_name,
            system=active.system,
            messages=lambda: messages_json(loop.messages),
        )
        token = obs.activate(op.span)
        try:
            response = await model.request(loop.messages, active.surface.specs, active.settings)
            # Read here, so a response whose usage cannot be counted fails the round, span ended.
            usage = response.usage
            spent = usage.input_tokens + usage.output_tokens
            cost = active.price.of(usage) if active.price is not None else None
        except BaseException as exc:  # a model error, a cancellation, anything passing through
            obs.fail_chat(op, exit_error_type(exc), str(exc) if isinstance(exc, Exception) else None)
            raise
        finally:
            obs.deactivate(token)
        loop.usage.add_round(usage.input_tokens, usage.output_tokens, cost)
        loop.turn.bill.add_round(usage.input_tokens, usage.output_tokens, cost)
        loop.spend(spent)
        loop.agent_rounds += 1
        obs.end_chat(
            op,
            response_model=response.model_name or model.model_name,
            finish_reason=response.finish_reason,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cost=cost,
            output=lambda: _response_json(response),
        )
        return HandleResponse(response)


@dataclass(slots=True, frozen=True)
class HandleResponse:
    """Act on a model response: answer, cut, or run tools and go round again."""

    response: ModelResponse
    """What the round returned."""

    async def run(self, loop: LoopContext) -> ModelRequest | End:
        """End on a final answer; cut when over budget; else run the tool calls (and any transfer)."""
        response = self.response
        name = loop.active.agent.name
        if not response.tool_calls:
            loop.messages.append(Message("assistant", response.text, name=name))
            return End(response.text)
        crossed = loop.crossed_above()
        if crossed is not None:  # a caller's whole-delegation budget is spent: its work stops here
            raise BudgetCrossed(crossed)
        stop = loop.active.limits.check_next_round(loop.agent_rounds, loop.spent_tokens)
        if stop is not None:
            return End(response.text, stop_reason=stop)
        loop.messages.append(
            Message("assistant", response.text, tool_calls=list(response.tool_calls), name=name)
        )
        loop.messages.extend(await execute_calls(loop, response.tool_calls))
        if loop.pending_transfer is not None:
            apply_transfer(loop)
        return ModelRequest()


Step = ModelRequest | HandleResponse
"""Every non-final step."""


async def run_loop(loop: LoopContext, first: Step | None = None) -> End:
    """Run steps until one returns `End`."""
    step: Step = first if first is not None else ModelRequest()
    while True:
        following = await step.run(loop)
        if isinstance(following, End):
            return following
        step = following


def _response_json(response: ModelResponse) -> str:
    message = Message("assistant", response.text, tool_calls=list(response.tool_calls))
    return messages_json([message])
