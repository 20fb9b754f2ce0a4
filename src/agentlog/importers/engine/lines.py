"""Converting one source line of a session: a line already held is
counted as a duplicate, a line that is not JSON or has a shape its
converter did not expect is kept whole beside the timeline (a ``custom``
event saying why), and what a reader should know of a line is a warning
in its file's report. A line is converted all or nothing (the builder's
journal), so nothing is lost and nothing half-written."""

from __future__ import annotations

from ..base import Importer, custom_record
from ..builder import SessionBuilder
from ..model import FileReport, SourceLine, file_name
from ..repeats import Repeats
from ..salvage import top_level_strings

__all__ = ["SHAPE_ERRORS", "LineConverter"]

#: Exceptions a converter raises on a line whose shape it did not expect;
#: the line is then kept whole and reported, and the import goes on.
SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError)


class LineConverter:
    """Converts the lines of one run with its importer. ``owner`` is the
    run's map of which session each source key belongs to (the run fills
    it before any line is converted)."""

    def __init__(self, importer: Importer, owner: dict[str, str]) -> None:
        self.importer = importer
        self.owner = owner

    def convert(self, b: SessionBuilder, source_id: str, fr: FileReport, line: SourceLine, repeats: Repeats) -> None:
        """Convert ``line`` (of ``fr``'s file, source session ``source_id``) into ``b``."""
        assert b.report is not None
        # A line already held by its place: the file's state was not saved
        # after its events (a crash between the two writes of a flush).
        if (file_name(line.path), line.lineno) in b.seen_lines:
            b.report.duplicates += 1
            return
        if line.obj is None:
            self.keep_malformed(b, fr, line)
            return
        key = self.importer.line_key(source_id, line.obj)
        if key and (key in b.keys or self.owner.get(key, b.session_id) != b.session_id):
            conflict = repeats.conflict(key, line)
            if conflict is None:
                b.report.duplicates += 1
                return
            fr.warnings.append((line.lineno, conflict))
            self.keep_whole(b, line, conflict)  # the id stays with the first line
            return
        if key:
            repeats.keyed(key, line)
        if line.repaired:
            fr.warnings.append((line.lineno, line.repaired))
        if key is None and not self.importer.restates(line.obj) and (repeated := repeats.check(line)) is not None:
            fr.warnings.append((line.lineno, repeated))
        b.begin_line()
        try:
            self.importer.convert(b, line)
        except SHAPE_ERRORS as exc:
            b.rollback_line()  # all or nothing: the line is kept whole instead
            reason = f"unexpected shape ({type(exc).__name__}: {exc})"
            fr.malformed.append((line.lineno, reason))
            self.keep_whole(b, line, reason, self.own_keys(b, self.importer.event_key(b, line, line.obj)))
        else:
            self.note_detached(b, fr, line)
        finally:
            b.end_line()

    def keep_whole(self, b: SessionBuilder, line: SourceLine, error: str, keys: tuple[str, ...] = ()) -> None:
        """A parsed line that could not be converted, kept as it is beside
        the timeline (a ``custom`` event saying why), so nothing is lost."""
        assert line.obj is not None
        record = custom_record(line.obj)
        record["error"] = error
        b.emit("custom", None, record, line, side=True, ts_ns=self.importer.line_time(line.obj), keys=keys)

    def keep_malformed(self, b: SessionBuilder, fr: FileReport, line: SourceLine) -> None:
        """A line that is not JSON: kept as its raw text. The source id it
        was written with, if its top level still shows it, names the kept
        event, so the lines after it stay attached."""
        fr.malformed.append((line.lineno, line.error or "malformed"))
        key = self.importer.event_key(b, line, top_level_strings(line.text))
        if key is None:
            b.lost_key_at = (file_name(line.path), line.lineno)
        keys = self.own_keys(b, key)
        b.emit("custom", None, {"type": None, "raw": line.text, "error": line.error}, line, side=True, keys=keys)

    def own_keys(self, b: SessionBuilder, key: str | None) -> tuple[str, ...]:
        """``key`` as the keys of an event replacing a line, unless another
        event (here or in another session) holds it."""
        if key and key not in b.keys and self.owner.get(key, b.session_id) == b.session_id:
            return (key,)
        return ()

    def note_detached(self, b: SessionBuilder, fr: FileReport, line: SourceLine) -> None:
        """A line naming a source id no line holds, after a malformed line
        whose own id could not be read: say that the chain may break here."""
        if b.missed and b.lost_key_at is not None:
            name, lineno = b.lost_key_at
            missing = ", ".join(repr(k) for k in dict.fromkeys(b.missed))
            where = f"line {lineno}" if name == file_name(line.path) else f"{name}:{lineno}"
            fr.warnings.append(
                (
                    line.lineno,
                    f"refers to {missing}, which no line holds; {where} (malformed, kept raw) may have"
                    " held it, so the history is broken here",
                )
            )
