"""agentlog: a durable, navigable event timeline for AI agent sessions."""

from .backends import Backend, Draft, FileBackend, MemoryBackend, SessionStorage
from .errors import (
    AgentlogError,
    BlobIntegrityError,
    ContextMismatch,
    CorruptionError,
    EventNotFound,
    InvalidEvent,
    InvalidEventId,
    InvalidSessionId,
    ModelError,
    NothingToContinue,
    ReadOnlySession,
    RecoveryWarning,
    SessionClosed,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    SessionPoisoned,
    StorageError,
    StreamedDeltaError,
    SummarizerError,
)
from .event import KINDS, NIL_ID, Event
from .session import Session
from .store import SessionInfo, Store, default_home

__version__ = "0.1.0"

__all__ = [
    "KINDS",
    "NIL_ID",
    "AgentlogError",
    "Backend",
    "BlobIntegrityError",
    "ContextMismatch",
    "CorruptionError",
    "Draft",
    "Event",
    "EventNotFound",
    "FileBackend",
    "InvalidEvent",
    "InvalidEventId",
    "InvalidSessionId",
    "MemoryBackend",
    "ModelError",
    "NothingToContinue",
    "ReadOnlySession",
    "RecoveryWarning",
    "Session",
    "SessionClosed",
    "SessionExists",
    "SessionInfo",
    "SessionLocked",
    "SessionNotFound",
    "SessionPoisoned",
    "SessionStorage",
    "StorageError",
    "Store",
    "StreamedDeltaError",
    "SummarizerError",
    "default_home",
]
