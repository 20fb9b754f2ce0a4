"""One source line, all or nothing: between ``begin_line`` and ``end_line``
a journal (journal.py) records every change the builder makes, each
earlier pending event an importer ``edit``s and each value it ``put``s in
its ``state``; ``rollback_line`` undoes them when the line turns out to
have a shape the importer did not expect."""

from __future__ import annotations

from typing import Any

from .base import BuilderBase
from .pending import Pending

__all__ = ["BuilderLines"]


class BuilderLines(BuilderBase):
    """The journal of the line being converted, and the changes made through it."""

    def begin_line(self) -> None:
        """Start journalling: what follows, up to ``end_line``, is one line."""
        r = self.report
        counts = (r.events, r.kinds.copy(), r.merged, r.copied) if r is not None else None
        self._mark = (len(self.pending), self.cursor, self.has_chain, self.ids.last, self.last_ts, counts)
        self._journal.open()
        self.missed.clear()

    def rollback_line(self) -> None:
        """Undo everything since ``begin_line``: the line's events, the maps
        they entered, the earlier pending events it edited, the report."""
        self._journal.undo()
        size, self.cursor, self.has_chain, self.ids.last, self.last_ts, counts = self._mark
        del self.pending[size:]
        if counts is not None and self.report is not None:
            self.report.events, self.report.kinds, self.report.merged, self.report.copied = counts

    def end_line(self) -> None:
        self._journal.close()

    def put(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        """``mapping[key] = value``, undone if the line is rolled back (for
        importers' own ``state``, and every map of the builder)."""
        self._journal.put(mapping, key, value)

    def set_label(self, target: str, name: str | None) -> None:
        """Name the event ``target`` (None: clear its name) in the session's
        labels, as the source tool labels an entry: one name an event, so a
        new name replaces the event's old ones (``apply_labels``)."""
        self.put(self.label_changes, len(self.label_changes), (target, name))

    def edit(self, p: Pending) -> dict[str, Any]:
        """The record of an earlier pending event, to change in place (a
        merge); its state before the line is kept, to restore on rollback."""
        self._journal.keep_record(p)
        return p.record

    def remember_tool(self, call_id: Any, name: Any) -> None:
        """A tool call's name, for the results naming its id. Only a string
        id is remembered: any other is stored on the event, and names nothing."""
        if isinstance(call_id, str):
            self.put(self.tool_names, call_id, name)

    def tool_name(self, call_id: Any) -> Any:
        return self.tool_names.get(call_id) if isinstance(call_id, str) else None
