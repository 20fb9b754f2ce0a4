"""A compaction that arrives live folds the history it summarized into the
collapsible section above it, and the conversation is drawn as a reload
draws it (viewer.js ``appendToPath``). Before, the section appeared only
after a reload, unless some other redraw happened to come first. Real
uvicorn, real Chromium through Playwright."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the 'server' extra is not installed")
pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

from agentlog import Store  # noqa: E402
from browser_support import browser as browser  # noqa: E402,F401  (a fixture)
from browser_support import needs_chromium, watched_page  # noqa: E402
from server_support import live_server  # noqa: E402

pytestmark = [needs_chromium, pytest.mark.timeout(120)]


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with watched_page(browser, width=1300, height=900) as (opened, errors):
        yield opened
    assert errors == [], f"the page logged errors: {errors}"


def _folded(page: Any) -> list[str]:
    return list(
        page.evaluate("Array.from(document.querySelectorAll('.pre-compaction li[data-id]'), n => n.dataset.id)")
    )


def test_a_live_compaction_folds_what_it_summarized(page: Any, tmp_path: Any) -> None:
    store = Store(tmp_path / "home")
    with store.create(name="long") as s:
        sid = s.id
        early = [
            s.append("message", {"content": f"EARLY {i} " + "words " * 60}, role=r).id
            for i, r in enumerate(["user", "assistant"] * 4)
        ]
    with live_server(store) as base:
        page.goto(f"{base}/#/s/{sid}")
        page.wait_for_function("() => document.getElementById('live-state').textContent === 'on'", timeout=15000)
        page.wait_for_selector(f"#conversation li[data-id='{early[-1]}']")
        assert _folded(page) == []
        with store.open(sid) as s:
            compaction = s.compact(keep_tokens=50)
            assert compaction is not None
            kept = compaction.record["first_kept_event_id"]
            latest = s.append("message", {"content": "AFTER the compaction"}, role="user").id
        page.wait_for_selector(f"#conversation li[data-id='{latest}']", timeout=10000)
        live = _folded(page)
        live_order = page.evaluate(
            "Array.from(document.querySelectorAll('#conversation li[data-id]'), n => n.dataset.id)"
        )
        page.reload()
        page.wait_for_selector(f"#conversation li[data-id='{latest}']", timeout=10000)
        assert live == _folded(page) == early[: early.index(kept)]  # as a reload shows it
        assert live_order == page.evaluate(
            "Array.from(document.querySelectorAll('#conversation li[data-id]'), n => n.dataset.id)"
        )
    store.close()


def _top_visible(page: Any) -> str:
    return str(
        page.evaluate(
            """() => { for (const n of document.querySelectorAll('#conversation li[data-id]')) {
                if (n.getBoundingClientRect().bottom > 0) return n.dataset.id; } }"""
        )
    )


def test_a_live_compaction_leaves_a_reader_scrolled_up_where_they_were(page: Any, tmp_path: Any) -> None:
    """400 events (more than one chunk of the window), the reader scrolled
    up to event 300 with its tool output opened: a compaction folds the
    events before its first kept one, and neither moves the reader nor
    closes what they opened (it redrew the window at the end)."""
    store = Store(tmp_path / "home")
    with store.create(name="long") as s:
        sid = s.id
        ids = []
        for i in range(200):
            ids.append(s.append("message", {"content": f"EARLY {i} " + "words " * 30}, role="user").id)
            ids.append(s.append("tool_result", {"tool_call_id": f"c{i}", "content": f"OUTPUT {i}"}, role="tool").id)
    with live_server(store) as base:
        page.goto(f"{base}/#/s/{sid}")
        page.wait_for_function("() => document.getElementById('live-state').textContent === 'on'", timeout=15000)
        page.wait_for_selector(f"#conversation li[data-id='{ids[-1]}']")
        reading = ids[300]
        page.evaluate(
            f"document.querySelector(\"#conversation li[data-id='{reading}']\").scrollIntoView({{block: 'start'}})"
        )
        opened = ids[301]
        page.locator(f"#conversation li[data-id='{opened}'] details summary").first.click()
        page.wait_for_timeout(300)
        assert _top_visible(page) == reading
        before = page.evaluate(f"document.querySelector(\"li[data-id='{reading}']\").getBoundingClientRect().top")
        with store.open(sid) as s:
            compaction = s.compact(keep_tokens=50)
            assert compaction is not None
            latest = s.append("message", {"content": "AFTER"}, role="user").id
        page.wait_for_selector(f"#conversation li[data-id='{latest}']", state="attached", timeout=10000)
        page.wait_for_function(
            f"document.querySelector(\".pre-compaction li[data-id='{reading}']\") !== null", timeout=10000
        )
        page.wait_for_timeout(300)
        after = page.evaluate(f"document.querySelector(\"li[data-id='{reading}']\").getBoundingClientRect().top")
        assert _top_visible(page) == reading and abs(after - before) < 40, (before, after)
        assert page.evaluate(f"document.querySelector(\"li[data-id='{opened}'] details\").open")
        summary = page.inner_text(".pre-compaction > summary")
        kept = ids.index(compaction.record["first_kept_event_id"])
        assert summary == f"History before compaction ({kept} events, summarized for the model)"
    store.close()
