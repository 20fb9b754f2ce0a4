"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is one JSON object with ``type`` (user, assistant, system,
summary, progress, file-history-snapshot...), usually ``uuid``,
``parentUuid``, ``sessionId`` and ``timestamp``. Mapping:

- user lines: text and images become a ``message`` (role user); each
  ``tool_result`` block becomes a ``tool_result`` event. ``toolUseResult``,
  ``todos`` and every other field are kept in ``source.fields``.
- assistant lines: one reply is written over several lines sharing
  ``message.id``; they are merged into one ``message`` (role assistant,
  text and thinking parts, usage of the last line) followed by one
  ``tool_call`` per ``tool_use`` block; where a block came before some of
  the text, the message's ``source.calls_at`` says where.
- ``system`` lines with subtype ``compact_boundary`` become ``compaction``
  events under their ``logicalParentUuid``; the ``isCompactSummary`` user
  message after one fills in its summary.
- ``summary`` lines become a ``label`` on their ``leafUuid`` when that
  event is in the session, else a ``custom`` event.
- ``custom-title`` lines (``/rename``) are kept as ``custom`` events and
  set the session's title, which is shown before the summary's name.
- ``ai-title`` lines (Claude Code 2.1's generated title) are kept as
  ``custom`` events and name the session, as a summary does.
- everything else (hook progress, file-history snapshots, other system
  lines, unknown types) is kept whole as a ``custom`` event.

``isSidechain`` lines with an ``agentId`` (subagent files) become their own
session, ``claude-<sessionId>-agent-<agentId>``.

The parts, one concern a module: ``importer`` (files, grouping, session
metadata, and which converter a line goes to), ``lines`` and ``parents``
(what every line keeps, and where its events attach), ``user``,
``assistant``, ``compaction`` and ``side`` (the converters)."""

from __future__ import annotations

from .importer import ClaudeImporter

__all__ = ["ClaudeImporter"]
