"""Janux delegation runtime: agents, subagents under budgets, handoffs and a governance policy.

See docs/runtime.md for the API and a runnable example.
"""

from janux.runtime.agent import Agent
from janux.runtime.definitions import (
    Cost,
    DelegationRequest,
    Handoff,
    HandoffPolicy,
    OnFailure,
    RateLimit,
    SessionMode,
    Subagent,
    ToolFilter,
)
from janux.runtime.dispatch import dispatch_and_synthesize
from janux.runtime.errors import (
    DefinitionError,
    GuardrailRefused,
    HandoffError,
    JanuxError,
    ModelUnavailableError,
    UnknownAgentError,
    handoff_events_of,
)
from janux.runtime.handoff_record import HandoffRecord
from janux.runtime.model import (
    Message,
    Model,
    ModelError,
    ModelResponse,
    ModelSettings,
    ModelUsage,
    ToolCall,
    ToolSpec,
)
from janux.runtime.result import RunResult
from janux.runtime.tools import Tool, function_tool
from janux.runtime.usage import Usage

__all__ = [
    "Agent",
    "Cost",
    "DefinitionError",
    "DelegationRequest",
    "GuardrailRefused",
    "Handoff",
    "HandoffError",
    "HandoffPolicy",
    "HandoffRecord",
    "JanuxError",
    "Message",
    "Model",
    "ModelError",
    "ModelResponse",
    "ModelSettings",
    "ModelUnavailableError",
    "ModelUsage",
    "OnFailure",
    "RateLimit",
    "RunResult",
    "SessionMode",
    "Subagent",
    "Tool",
    "ToolCall",
    "ToolFilter",
    "ToolSpec",
    "UnknownAgentError",
    "Usage",
    "dispatch_and_synthesize",
    "function_tool",
    "handoff_events_of",
]
