"""Lines for a terminal are cut and coloured by agentlog itself: rich took
10 s to print the 100,000 lines of a long session's tree or log. What the
terminal gets must be what rich printed."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from agentlog.cli import render
from agentlog.cli.render import Styled, joined, print_styled


def _lines() -> list[Styled]:
    return [
        Styled("big", "bold yellow").add("  (3 events)", "dim"),
        Styled("├── ", "dim").add("abcd1234", "yellow").add("  ").add("message", "bold").add("  a long preview " * 4),
        Styled("└── ", "dim").add("plain text, no style at all, long enough to be cut at forty"),
        Styled("数据库连接失败" * 5, "bold").add(" tail"),  # two cells a character
        Styled(""),
    ]


def _terminal(monkeypatch: pytest.MonkeyPatch, **options: object) -> io.StringIO:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=40, highlight=False, **options)  # type: ignore[arg-type]
    monkeypatch.setattr(render, "console", lambda: console)
    return out


@pytest.mark.parametrize(
    ("colours", "no_color"),
    [("standard", False), ("256", False), ("truecolor", False), (None, False), ("standard", True)],
)
def test_a_terminal_gets_what_rich_printed(
    monkeypatch: pytest.MonkeyPatch, colours: str | None, no_color: bool
) -> None:
    # no_color: what NO_COLOR sets, bold and dim kept, the colours dropped.
    out = _terminal(monkeypatch, color_system=colours, no_color=no_color)
    print_styled(_lines())
    reference = io.StringIO()
    Console(
        file=reference,
        force_terminal=True,
        width=40,
        highlight=False,
        color_system=colours,
        no_color=no_color,  # type: ignore[arg-type]
    ).print(joined(_lines()), no_wrap=True, overflow="ellipsis")
    assert out.getvalue() == reference.getvalue()
    assert all(len(line) <= 40 for line in render.Text.from_ansi(out.getvalue()).plain.splitlines())


def test_a_line_is_never_cut_before_keep(monkeypatch: pytest.MonkeyPatch) -> None:
    out = _terminal(monkeypatch, color_system=None)
    print_styled([Styled("x" * 60, "bold")], keep=50)
    assert out.getvalue() == "x" * 49 + "…\n"


def test_a_pipe_gets_every_line_whole_and_plain(capsys: pytest.CaptureFixture[str]) -> None:
    print_styled(_lines())
    assert capsys.readouterr().out == "".join(line.plain + "\n" for line in _lines())
