"""A reply's thinking parts (Anthropic's, as imported Claude Code and pi
replies hold them) are shown as its reasoning, folded apart from the
answer, by the Markdown and HTML exports and by the viewer. Before, the
exports wrote a line ``[thinking]`` at the head of the answer and the
viewer drew each thinking part as JSON inside it, signature included."""

from __future__ import annotations

import io
from typing import Any

import pytest

from agentlog import Store
from agentlog.export import export_session

pytest_plugins = ["browser_support"]  # its `browser` and `page` fixtures

SIGNATURE = "EqsCCkYIBxgCKkDsignaturebytes"
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 50}}
#: A reply as Claude Code records it: thinking with its text, the answer.
THOUGHT = [
    {"type": "thinking", "thinking": "The user wants the tests run.", "signature": SIGNATURE},
    {"type": "text", "text": "I'll run the tests now."},
]
#: Thinking whose text was not kept (only its signature), and a redacted one.
UNRECORDED = [
    {"type": "thinking", "thinking": "", "signature": SIGNATURE},
    {"type": "redacted_thinking", "data": "c2VjcmV0"},
    {"type": "text", "text": "Done."},
]


def _session(store: Store, content: list[dict[str, Any]]) -> str:
    with store.create(name="thinking") as session:
        session.append("message", {"content": [{"type": "text", "text": "run them"}, IMAGE]}, role="user")
        session.append("message", {"content": content}, role="assistant")
        return session.id


def _export(store: Store, sid: str, fmt: str) -> str:
    out = io.BytesIO()
    with store.open(sid, readonly=True) as session:
        export_session(session, fmt, out)
    return out.getvalue().decode()


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_an_export_shows_thinking_as_reasoning_not_in_the_answer(fmt: str) -> None:
    store = Store.memory()
    text = _export(store, _session(store, THOUGHT), fmt)
    assert "[thinking]" not in text
    assert "The user wants the tests run." in text and "I'll run the tests now." in text.replace("&#x27;", "'")
    assert text.index("<summary>reasoning</summary>") < text.index("The user wants the tests run.")
    assert SIGNATURE not in text


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_thinking_without_text_is_noted_in_the_reasoning(fmt: str) -> None:
    store = Store.memory()
    text = _export(store, _session(store, UNRECORDED), fmt)
    assert "[thinking]" not in text and "[redacted_thinking]" not in text
    assert "the model reasoned here; its text was not recorded" in text
    assert "Done." in text and "c2VjcmV0" not in text


# --- the viewer ------------------------------------------------------------------------------

pytest.importorskip("starlette")

from server_support import live_server  # noqa: E402


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("content", "reasoning"),
    [(THOUGHT, "The user wants the tests run."), (UNRECORDED, "the model reasoned here; its text was not recorded")],
)
def test_the_viewer_folds_thinking_into_the_reasoning(page: Any, content: list[dict[str, Any]], reasoning: str) -> None:
    store = Store.memory()
    sid = _session(store, content)
    with live_server(store) as url:
        page.goto(f"{url}/#/s/{sid}")
        page.wait_for_selector("#conversation details summary:text('reasoning')")
        shown = page.inner_text("#conversation")
        folded = page.locator("#conversation details:has(summary:text('reasoning')) div").text_content()
        page.goto("about:blank")
    assert reasoning in folded
    assert SIGNATURE not in shown and '"thinking"' not in shown and "c2VjcmV0" not in shown
    assert "[image]" in shown and "iVBORw0KGgo" not in shown  # the prompt's image is named, not drawn as base64
