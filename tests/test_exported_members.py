"""The public surface is pinned: changing it means changing this test too.

Like httpx's test of the same name. A new export, a removed one or a
public name imported into ``agentlog`` without being exported all fail
here, so a change to the surface is always a deliberate one.
"""

from __future__ import annotations

import inspect

import agentlog
import agentlog.errors

PUBLIC = [
    "AgentlogError",
    "AmbiguousRef",
    "Backend",
    "BadRef",
    "BlobCopy",
    "BlobIntegrityError",
    "BrokenSession",
    "BundleError",
    "Checkpoint",
    "Commit",
    "CompactionPolicy",
    "ContextMismatch",
    "ContextOverflow",
    "CopyDiverged",
    "CopyReport",
    "CorruptionError",
    "Event",
    "EventNotFound",
    "ExtractiveSummarizer",
    "FileBackend",
    "HeadConflict",
    "ImportSourceError",
    "IndexEntry",
    "InvalidEvent",
    "InvalidEventId",
    "InvalidMeta",
    "InvalidName",
    "InvalidOption",
    "InvalidSessionId",
    "KINDS",
    "LLMSummarizer",
    "LeaseLost",
    "MemoryBackend",
    "ModelError",
    "NIL_ID",
    "NewEvent",
    "NoSourceFiles",
    "NothingToContinue",
    "Problem",
    "ReadOnlySession",
    "RecoveryWarning",
    "RedactionUnavailable",
    "SearchError",
    "SearchHit",
    "SearchWarning",
    "Session",
    "SessionClosed",
    "SessionExists",
    "SessionInfo",
    "SessionLocked",
    "SessionNotFound",
    "SessionPoisoned",
    "SessionStats",
    "SessionStorage",
    "SourceChanged",
    "SourceNotFound",
    "StagedEvent",
    "StorageError",
    "Store",
    "StreamedDeltaError",
    "Summarizer",
    "SummarizerError",
    "Summary",
    "Ticket",
    "Todo",
    "UnknownBackend",
    "UnknownFormat",
    "Usage",
    "UsageTotals",
    "default_home",
    "default_location",
]


def test_all_is_pinned():
    assert PUBLIC == sorted(PUBLIC)
    assert sorted(agentlog.__all__) == PUBLIC
    assert len(set(agentlog.__all__)) == len(agentlog.__all__)


def test_every_export_exists():
    for name in agentlog.__all__:
        assert getattr(agentlog, name, None) is not None, name


def test_no_public_name_is_left_unexported():
    """Submodules aside, whatever ``agentlog`` offers without an underscore is in __all__."""
    offered = {
        name for name, value in vars(agentlog).items() if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert offered == set(agentlog.__all__)


def test_every_error_of_the_tree_is_exported():
    """One exception tree, all of it catchable from the top-level package."""
    for name in agentlog.errors.__all__:
        assert getattr(agentlog, name) is getattr(agentlog.errors, name), name
    tree = {
        name
        for name, value in vars(agentlog.errors).items()
        if inspect.isclass(value)
        and issubclass(value, (agentlog.AgentlogError, Warning))
        and value.__module__ == "agentlog.errors"
    }
    assert tree <= set(agentlog.__all__)


def test_exported_errors_share_one_root():
    for name in agentlog.__all__:
        value = getattr(agentlog, name)
        if inspect.isclass(value) and issubclass(value, Exception) and not issubclass(value, Warning):
            assert issubclass(value, agentlog.AgentlogError), name
