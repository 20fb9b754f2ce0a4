"""The viewer in a real headless Chromium (Debian's package, driven by Playwright).

Playwright's own browser download does not work here, so the tests use
``/usr/bin/chromium`` (or ``$AGENTLOG_CHROMIUM``); ``make test`` installs it
with apt-get when it can. Without a browser the tests are skipped, loudly,
with the reason. Screenshots land in the test's temporary directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from server_support import build_demo, live_server

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (extra 'server-test')"
)

import httpx  # noqa: E402

from agentlog import Store  # noqa: E402
from browser_support import chromium, needs_chromium, watched_page  # noqa: E402

pytestmark = [needs_chromium, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(sync_api) as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    # bypass_csp: the page forbids eval, which wait_for_function(str) needs.
    with watched_page(browser, width=1400, height=1000, bypass_csp=True) as (opened, errors):
        yield opened
    assert errors == [], f"the page logged errors: {errors}"


def test_list_session_tree_history_and_live_append(page: Any, tmp_path: Any) -> None:
    store = Store(tmp_path / "home", blob_threshold=4096)
    ids = build_demo(store)
    with store.create(name="second session") as other:
        other.append("message", {"content": "hello"}, role="user")
    sid = ids["session"]
    with live_server(store) as url:
        # The list.
        page.goto(f"{url}/")
        page.wait_for_selector(f"#sessions tr[data-id='{sid}']")
        assert page.locator("#sessions tbody tr").count() == 2
        assert "demo: fix the parser" in page.inner_text("#sessions")
        page.screenshot(path=str(tmp_path / "01-list.png"), full_page=True)

        # Open the session from the keyboard: / search, Escape, j, Enter.
        page.keyboard.press("/")
        page.keyboard.type("parser")
        page.wait_for_function("document.querySelectorAll('#sessions tbody tr').length === 1")
        page.keyboard.press("Escape")
        page.keyboard.press("j")
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#conversation li[data-id='{ids['head']}']")

        # Export links: the server's export of this session, each a download (QA finding: none).
        for fmt, marker in (("md", b"#"), ("html", b"<!DOCTYPE html>"), ("bundle", b"{")):
            href = page.get_attribute(f"#export-{fmt}", "href")
            assert href == f"/api/v1/sessions/{sid}/export?format={fmt}"
            response = page.request.get(f"{url}{href}")
            assert response.status == 200 and "attachment" in response.headers["content-disposition"]
            assert response.body().lstrip().startswith(marker), fmt

        # Escape closes the help first, and stays on the session (QA finding).
        page.keyboard.press("?")
        assert page.is_visible("#help")
        page.keyboard.press("Escape")
        assert page.is_hidden("#help") and page.is_hidden("#list-view")

        # The tree: every event, both branches, HEAD, the label, compaction, branch summary.
        tree = page.locator("#tree li.node")
        with store.open(sid, readonly=True) as s:
            assert tree.count() == len(s.entries())
        head_node = page.locator(f"#tree li.node[data-id='{ids['head']}']")
        assert "HEAD" in head_node.inner_text()
        assert page.locator("#tree .badge.head").count() == 1
        assert page.locator(f"#tree li.node[data-id='{ids['abandoned']}']").count() == 1
        assert page.locator("#tree ul.branch").count() >= 1
        assert "fixed" in page.locator(f"#tree li.node[data-id='{ids['compaction']}']").inner_text()
        assert page.locator("#tree .badge.compaction").count() == 1
        assert page.locator("#tree .badge.branch-summary").count() == 1
        assert page.inner_text("#head-id") == ids["head"][-8:]

        # History before the compaction is shown, readable.
        early = page.locator(f".pre-compaction li[data-id='{ids['first']}']")
        assert early.is_visible() and "EARLY-QUESTION" in early.inner_text()
        assert "LATEST-REPLY" in page.inner_text("#conversation")
        assert page.locator(f"#conversation li[data-id='{ids['abandoned']}']").count() == 0
        # Totals: tokens and cost of the active path.
        assert page.inner_text("#tokens") == "9,100 / 290"
        assert page.inner_text("#cost") == "$0.0675"

        # A blob is loaded only when opened.
        blob = page.locator(f"#conversation li[data-id='{ids['blob']}'] details.blob")
        assert "line of parser.py" not in blob.inner_text()
        blob.locator("summary").click()
        page.wait_for_function(
            f"document.querySelector(\"#conversation li[data-id='{ids['blob']}']\").innerText"
            ".includes('line of parser.py')"
        )
        page.screenshot(path=str(tmp_path / "02-session.png"), full_page=True)

        # Live: append through the API and see it appear without a reload.
        page.wait_for_function("document.getElementById('live-state').textContent === 'on'")
        page.evaluate("window.__notReloaded = true")
        with httpx.Client(base_url=url) as client:
            client.post(f"/api/v1/sessions/{sid}/live", json={"items": [{"type": "delta", "text": "TYPING-LIVE "}]})
            page.wait_for_function("document.getElementById('live-delta').textContent.includes('TYPING-LIVE')")
            posted = client.post(
                f"/api/v1/sessions/{sid}/events",
                json={
                    "kind": "message",
                    "role": "assistant",
                    "record": {
                        "content": "APPENDED-LIVE through the API",
                        "usage": {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.001},
                    },
                },
            )
            assert posted.status_code == 201
        new_id = posted.json()["event"]["id"]
        page.wait_for_selector(f"#conversation li[data-id='{new_id}']")
        assert "APPENDED-LIVE" in page.inner_text(f"#conversation li[data-id='{new_id}']")
        page.wait_for_function(f"document.getElementById('head-id').textContent === '{new_id[-8:]}'")
        assert page.evaluate("window.__notReloaded") is True
        assert page.locator("#live-delta").is_hidden()  # the settled reply replaced the preview
        assert page.inner_text("#tokens") == "9,200 / 300"
        page.screenshot(path=str(tmp_path / "03-live.png"), full_page=True)

        # Navigate the tree from the keyboard: the abandoned branch's path.
        page.click(f"#tree li.node[data-id='{ids['abandoned']}']")
        page.wait_for_selector(f"#conversation li[data-id='{ids['abandoned']}']")
        assert "ABANDONED-ATTEMPT" in page.inner_text("#conversation")
        page.keyboard.press("h")
        page.wait_for_selector(f"#conversation li[data-id='{new_id}']")
        page.keyboard.press("u")
        page.wait_for_selector("#list-view:not([hidden])")
        page.goto("about:blank")  # close the stream before the server stops
    for name in ("01-list.png", "02-session.png", "03-live.png"):
        assert (tmp_path / name).stat().st_size > 10_000
