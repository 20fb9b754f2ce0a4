"""The text tree, and the HTML export's sidebar, off the active path: the
long chain goes on at its depth and the short retries hang. Going on with
the newest child (a leaf) put the chain a level deeper at every retry:
8,000 events drew 240 MB, and the sidebar nested past what browsers draw."""

from __future__ import annotations

import re
from pathlib import Path

from agentlog import Store
from cli_support import ok
from helpers import retry_stair


def test_a_chain_with_a_retry_at_every_step_stays_flat(tmp_path: Path) -> None:
    retry_stair(Store(tmp_path / "home", durability="off"), "st", 60)
    lines = ok(tmp_path / "home", "tree", "st").splitlines()
    assert len(lines) > 2 * 60
    indent = max(len(line) - len(line.lstrip(" │├└─")) for line in lines)
    assert indent <= 24, indent  # a few levels, not one per step (240 before)
    assert any("end" in line for line in lines)


def test_the_html_sidebar_stays_flat_for_the_same_shape(tmp_path: Path) -> None:
    retry_stair(Store(tmp_path / "home", durability="off"), "st", 60)
    page = tmp_path / "st.html"
    ok(tmp_path / "home", "export", "st", "--format", "html", "-o", str(page))
    depth = deepest = 0
    for tag in re.finditer(r"<(/?)ul\b", page.read_text()):
        depth += -1 if tag.group(1) else 1
        deepest = max(deepest, depth)
    assert deepest <= 6, deepest  # 2 a step before: 120 here
