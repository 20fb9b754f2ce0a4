"""The text tree off the active path: the long chain goes on at its depth
and the short retries hang. Going on with the newest child (a leaf) put
the chain a level deeper at every retry: 8,000 events drew 240 MB."""

from __future__ import annotations

from pathlib import Path

from agentlog import Store
from cli_support import ok


def test_a_chain_with_a_retry_at_every_step_stays_flat(tmp_path: Path) -> None:
    store = Store(tmp_path / "home", durability="off")
    steps = 60
    with store.create(session_id="st") as s:
        node = s.append("message", {"content": "n0"}, role="user")
        first_leaf = None
        for i in range(steps):
            following = s.append("message", {"content": f"n{i + 1}"}, role="user")
            s.select(node.id)
            leaf = s.append("message", {"content": f"leaf{i}"}, role="assistant")
            first_leaf = first_leaf or leaf.id
            s.select(following.id)
            node = following
        s.append("message", {"content": "end"}, role="assistant")
        assert first_leaf is not None
        s.checkout(first_leaf)  # HEAD on the first retry: the chain is off the active path
    lines = ok(tmp_path / "home", "tree", "st").splitlines()
    assert len(lines) > 2 * steps
    indent = max(len(line) - len(line.lstrip(" │├└─")) for line in lines)
    assert indent <= 24, indent  # a few levels, not one per step (240 before)
    assert any("end" in line for line in lines)


def test_the_html_sidebar_stays_flat_for_the_same_shape(tmp_path: Path) -> None:
    """The sidebar nested two lists per step the same way; browsers
    re-parent what nests past 512 levels, so its tree was drawn wrong."""
    import re

    store = Store(tmp_path / "home", durability="off")
    with store.create(session_id="st") as s:
        node = s.append("message", {"content": "n0"}, role="user")
        first_leaf = None
        for i in range(60):
            following = s.append("message", {"content": f"n{i + 1}"}, role="user")
            s.select(node.id)
            leaf = s.append("message", {"content": f"leaf{i}"}, role="assistant")
            first_leaf = first_leaf or leaf.id
            s.select(following.id)
            node = following
        assert first_leaf is not None
        s.checkout(first_leaf)
    page = tmp_path / "st.html"
    ok(tmp_path / "home", "export", "st", "--format", "html", "-o", str(page))
    depth = deepest = 0
    for tag in re.finditer(r"<(/?)ul\b", page.read_text()):
        depth += -1 if tag.group(1) else 1
        deepest = max(deepest, depth)
    assert deepest <= 6, deepest  # 2 a step before: 120 here
