"""The reference agent's parts: the model interface, models, and the live hub."""

from ..tokens import Usage
from .hub import Dropped, LiveHub, Subscription
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
from .scripted import ScriptedModel, ToolUse, Turn

__all__ = [
    "Completion",
    "Delta",
    "Dropped",
    "LiveHub",
    "Model",
    "OpenAICompatModel",
    "ScriptedModel",
    "StreamItem",
    "Subscription",
    "ToolCall",
    "ToolCallDelta",
    "ToolUse",
    "Turn",
    "Usage",
    "check_messages",
    "checked_stream",
    "complete",
    "estimate_request_tokens",
]
