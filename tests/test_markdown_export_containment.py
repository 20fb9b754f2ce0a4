"""One event's Markdown cannot take over the rest of the document.

A reply that opened a code fence and never closed it turned every later
event into code, and newlines in a session's name made headings of their
own in the export's header."""

from __future__ import annotations

import io
from pathlib import Path

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
