"""The reference agent loop and its parts: ``Agent``, ``Tool``, ``Limits``,
the model interface, models, and the live hub (docs/agent.md)."""

from ..tokens import Usage
from .hub import Dropped, LiveHub, Subscription
from .loop import Agent, Limits, Tool, TurnResult
from .models import (
    Completion,
    Delta,
    Model,
    StreamItem,
    ToolCall,
    ToolCallDelta,
    check_messages,
    checked_stream,
    complete,
    estimate_request_tokens,
)
from .openai_compat import OpenAICompatModel
from .scripted import ScriptedModel, ScriptStep, ToolUse, Turn

__all__ = [
    "Agent",
    "Completion",
    "Delta",
    "Dropped",
    "Limits",
    "LiveHub",
    "Model",
    "OpenAICompatModel",
    "ScriptStep",
    "ScriptedModel",
    "StreamItem",
    "Subscription",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolUse",
    "Turn",
    "TurnResult",
    "Usage",
    "check_messages",
    "checked_stream",
    "complete",
    "estimate_request_tokens",
]
