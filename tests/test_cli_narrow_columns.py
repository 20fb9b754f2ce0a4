"""Tables on a narrow terminal: text columns narrow, then columns are left
out in a set order, so the columns that stay are whole (docs/cli.md,
"Output"). The line used to be cut at the edge: on 80 columns a listing
of imported sessions (ids of 40-odd characters) showed no dates."""

from __future__ import annotations

import pytest

from agentlog.cli import render
from agentlog.cli.housekeeping import _DU_HEADERS
from agentlog.cli.render import Column, columns
from agentlog.cli.sessions import _HEADERS

LONG_ID = "claude-03eb5929-52b3-4b13-ada3-b93ae35806b8"


def ls_row(ident: str, title: str) -> list[tuple[str, str]]:
    return [
        (ident, "yellow"),
        (title, ""),
        ("~/src/project", ""),
        ("2026-12-06 04:32", "dim"),
        ("57", ""),
        ("active", ""),
        ("a summary of what happened in the session", ""),
    ]


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render, "_on_terminal", lambda: True)


def lines(text: str) -> list[str]:
    return text.split("\n")


def test_wide_terminal_keeps_every_column(terminal: None) -> None:
    out = columns(_HEADERS, [ls_row(LONG_ID, "fix the parser")], width=200).plain
    assert lines(out)[0].split() == ["ID", "TITLE", "WORKING", "DIR", "UPDATED", "EVENTS", "STATUS", "SUMMARY"]
    assert "a summary of what happened in the session" in out


def test_eighty_columns_keeps_id_title_and_date_whole(terminal: None) -> None:
    out = columns(_HEADERS, [ls_row(LONG_ID, "a long title about fixing the parser")], width=80).plain
    header, row = lines(out)
    assert header.split() == ["ID", "TITLE", "UPDATED"]
    assert row.startswith(LONG_ID + "  ")
    assert row.endswith("2026-12-06 04:32")
    assert max(len(line) for line in lines(out)) <= 80
    assert "a long title" in row and "…" in row


def test_narrowing_comes_before_leaving_out(terminal: None) -> None:
    out = columns(_HEADERS, [ls_row("a0cda271", "a long title about fixing the parser")], width=90).plain
    # A short id leaves room for every column once the text ones narrow.
    assert lines(out)[0].split() == ["ID", "TITLE", "WORKING", "DIR", "UPDATED", "EVENTS", "STATUS", "SUMMARY"]
    assert max(len(line) for line in lines(out)) == 90


def test_the_id_is_never_cut_or_left_out(terminal: None) -> None:
    out = columns(_HEADERS, [ls_row(LONG_ID, "t")], width=20).plain
    assert lines(out) == ["ID", LONG_ID]


def test_du_keeps_the_total(terminal: None) -> None:
    cells = [LONG_ID, "title", "1.0 MiB", "2.0 KiB (1)", "64 KiB", "-", "9.9 MiB"]
    row = [(cell, "") for cell in cells]
    out = columns(_DU_HEADERS, [row], width=70).plain
    header, shown = lines(out)
    assert header.split()[0] == "ID" and header.split()[-1] == "TOTAL"
    assert shown.endswith("9.9 MiB")
    assert "INDEX" not in header  # the first left out


def test_piped_output_is_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render, "_on_terminal", lambda: False)
    out = columns(_HEADERS, [ls_row(LONG_ID, "a long title " * 10)], width=40).plain
    assert "SUMMARY" in lines(out)[0]
    assert "a long title " * 9 in out


def test_a_cut_cell_does_not_end_in_a_space(terminal: None) -> None:
    out = columns([Column("A", 8, "<")], [[("abcdef gh", "")]]).plain
    assert lines(out)[1] == "abcdef…"


def test_bidirectional_controls_are_shown_not_obeyed(terminal: None) -> None:
    # U+202E (right-to-left override) in a title turned the rest of its row around.
    title = "fix \u202eevil\u202c and \u2067isolated\u2069"
    out = columns(_HEADERS, [ls_row("a0cda271", title)], width=200).plain
    assert not any(chr(c) in out for c in render.BIDI_CONTROLS)
    assert "fix �evil� and �isolated�" in out
    assert render.safe_text("שלום עולם") == "שלום עולם"  # right-to-left text itself is kept


TEXTS = ["ab cd\n" * 100, "a" * 20, "a" * 21, " x ", "a b c d e f g h i j k", "数据 库 " * 30, ""]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("limit", [5, 20, 120])
def test_one_line_reads_only_the_words_it_shows(text: str, limit: int) -> None:
    # The same line as flattening the whole text first, which for a 48 MB
    # tool output took 1.3 GB to show 100 characters of it.
    flat = " ".join(text.split())
    assert render.one_line(text, limit) == (flat if len(flat) <= limit else flat[: limit - 1] + "…")
