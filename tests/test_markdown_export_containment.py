"""One event's Markdown cannot take over the rest of the document.

A reply that opened a code fence and never closed it turned every later
event into code, and newlines in a session's name made headings of their
own in the export's header."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agentlog import Store
from agentlog.export import export_session


def _markdown(store: Store, sid: str) -> str:
    out = io.BytesIO()
    with store.open(sid, readonly=True) as s:
        export_session(s, "md", out)
    return out.getvalue().decode()


def test_a_fence_a_reply_left_open_is_closed_at_its_end(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(name="title line1\n## injected heading") as s:
        s.append("message", {"content": "Here:\n```python\nprint(1)"}, role="assistant")
        s.append("message", {"content": "after the fence"}, role="user")
        sid = s.id
    text = _markdown(store, sid)
    assert text.startswith("# title line1 ## injected heading\n")
    assert "\n## injected heading" not in text
    body = text[text.index("print(1)") :]
    assert body.startswith("print(1)\n```\n")  # closed right after the reply
    assert "### user" in body and "after the fence" in body
    assert text.count("```") % 2 == 0


def test_a_carriage_return_in_a_name_makes_no_heading(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(name="a\r## injected") as s:
        s.append("message", {"content": "x"}, role="user")
        sid = s.id
    text = _markdown(store, sid)
    assert text.startswith("# a ## injected\n") and "\r" not in text.splitlines()[0]


@pytest.mark.parametrize(
    "opening",
    [
        "<?php\necho $x;",
        "<!-- TODO: finish",
        "<script>\nlet x = 1;",
        "<style>",
        "<textarea>",
        "<pre>",
        "<![CDATA[",
        "<!X",
    ],
)
@pytest.mark.parametrize("where", ["reply", "reasoning", "summary"])
def test_an_html_block_a_message_leaves_open_ends_with_it(tmp_path: Path, opening: str, where: str) -> None:
    """A CommonMark HTML block of types 1-5 runs to its own end marker: a
    PHP file without "?>" in a question hid every later event of the
    rendered document. Its "<" is escaped, so the line reads as text."""
    markdown_it = pytest.importorskip("markdown_it")
    store = Store(tmp_path / "home")
    text = f"Why does this fail?\n{opening}"
    with store.create() as s:
        if where == "reply":
            s.append("message", {"content": text}, role="user")
        elif where == "reasoning":
            s.append("message", {"content": "thinking", "reasoning": text}, role="assistant")
        else:
            s.append("message", {"content": "before"}, role="user")
            s.append("branch_summary", {"summary": text}, role="system")
        s.append("message", {"content": "Because $x is undefined."}, role="assistant")
        s.append("message", {"content": "thanks"}, role="user")
        sid = s.id
    html = markdown_it.MarkdownIt("commonmark").render(_markdown(store, sid))
    assert "<p>Because $x is undefined.</p>" in html
    assert "<p>thanks</p>" in html
    assert html.count("<h3>") >= 3
    first_line = opening.splitlines()[0]
    assert first_line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in html  # shown as text


def test_html_lines_inside_a_code_fence_are_left_as_they_are(tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create() as s:
        s.append("message", {"content": "```php\n<?php\necho 1;\n```"}, role="assistant")
        sid = s.id
    assert "```php\n<?php\necho 1;\n```" in _markdown(store, sid)


def test_the_html_export_shows_controls_instead_of_obeying_them(tmp_path: Path) -> None:
    """Bidi overrides in a title or a message made text read backwards in a
    shared export ("Trojan Source"; the viewer already showed marks), and a
    tool's colour codes and NULs reached the page raw."""
    store = Store(tmp_path / "home")
    with store.create(name="pay \u202eevil\u202c now") as s:
        s.append("message", {"content": "run: rm -rf /tmp/x \u202e; ls -la #\u202c ok"}, role="user")
        s.append("tool_result", {"tool_call_id": "c", "content": "\x1b[1mPostToolUse\x1b[22m nul\x00here"}, role="tool")
        sid = s.id
    out = io.BytesIO()
    with store.open(sid, readonly=True) as reader:
        export_session(reader, "html", out)
    page = out.getvalue().decode()
    assert not any(c in page for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\x1b\x00")
    assert "pay \u27e6U+202E\u27e7evil\u27e6U+202C\u27e7 now" in page
    assert "PostToolUse" in page and "[1m" not in page
    assert "nul\u2400here" in page
