"""The viewer's full-text search, large sessions and the caching of its files.

Browser tests in a real headless Chromium (Debian's package, driven by
Playwright), skipped loudly without one, as in ``test_server_browser.py``.
They assert behaviour, never timings; the timings are measured by running
this file as a script against a real server (figures in docs/server.md)::

    .venv/bin/python tests/test_viewer_search_scale.py [--events 20000] [--burst 300]
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_support import live_server  # noqa: E402

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (extra 'server-test')"
)

import httpx  # noqa: E402

from agentlog import Session, Store  # noqa: E402
from browser_support import ARGS, CHROMIUM, chromium, needs_chromium, until, watched_page  # noqa: E402

API = "/api/v1"


def build_big(session: Session, n: int) -> dict[str, Any]:
    """``n`` events in turns of user, assistant, tool call and tool result,
    with a side branch every 2,000 events; HEAD on the main line.
    Returns the ids the tests look for."""
    ids: dict[str, Any] = {"main": [], "side": []}
    written = 0
    turn = 0
    while written < n:
        records: list[tuple[str, Any, str]] = [
            ("message", {"content": f"question {turn}: " + "words of the user " * 6}, "user"),
            ("message", {"content": f"answer {turn}: " + "words of the model " * 8}, "assistant"),
            ("tool_call", {"id": f"c{turn}", "name": "read_file", "arguments": '{"path": "a.py"}'}, "assistant"),
            ("tool_result", {"tool_call_id": f"c{turn}", "name": "read_file", "content": "x = 1\n" * 5}, "tool"),
        ]
        for kind, record, role in records[: n - written]:
            ids["main"].append(session.append(kind, record, role=role).id)
            written += 1
        turn += 1
        if written % 2000 == 0 and written < n - 10:
            fork = session.head
            # Three events on a branch off an earlier event, then back.
            session.select(ids["main"][-9])
            for i in range(3):
                ids["side"].append(session.append("message", {"content": f"SIDE-{turn}-{i}"}, role="user").id)
                written += 1
            session.select(fork)
    ids["head"] = session.head
    return ids


pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(sync_api) as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    # The page's own Content-Security-Policy stays on (no bypass_csp): what
    # the viewer draws must work under it. Hence no wait_for_function(str) here.
    with watched_page(browser, width=1400, height=900, dialogs=True) as (opened, errors):
        yield opened
    # A refused search is a 400 the browser logs as a failed resource: expected.
    errors = [e for e in errors if "status of 400" not in e]
    assert errors == [], f"the page logged errors: {errors}"


def poll(check: Any) -> Any:
    return until(check, timeout=10.0)


def in_viewport(page: Any, selector: str) -> bool:
    return bool(
        page.evaluate(
            """(sel) => { const n = document.querySelector(sel); if (!n) return false;
            const r = n.getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight; }""",
            selector,
        )
    )


# --- static files -------------------------------------------------------------------------


def test_viewer_files_are_revalidated_so_an_upgrade_takes_effect() -> None:
    """index.html is no-store; the files it loads must not outlive it in a
    cache: ``no-cache`` (kept, but revalidated by ETag before each use)."""
    with live_server(Store.memory()) as url, httpx.Client(base_url=url) as client:
        assert client.get("/").headers["cache-control"] == "no-store"
        for name in ("viewer.js", "viewer.css"):
            first = client.get(f"/static/{name}")
            assert first.status_code == 200
            assert first.headers["cache-control"] == "no-cache"
            etag = first.headers["etag"]
            again = client.get(f"/static/{name}", headers={"If-None-Match": etag})
            assert again.status_code == 304
            assert again.headers["cache-control"] == "no-cache"
            assert again.headers["etag"] == etag
        assert client.get("/static/missing.js").status_code == 404


# --- full-text search ---------------------------------------------------------------------

HOSTILE = "😀😀 naïve <img src=x onerror=alert(1)> ZEBRACORN here, <b>and</b> zebracorn again"


@needs_chromium
def test_search_box_lists_event_hits_and_opens_them(page: Any, tmp_path: Path) -> None:
    store = Store(tmp_path / "home")
    with store.create(name="hostile & <tagged> session") as s:
        hostile_sid = s.id
        for i in range(40):
            s.append("message", {"content": f"filler {i}"}, role="user")
        hostile = s.append("message", {"content": HOSTILE}, role="assistant").id
        for i in range(40):
            s.append("message", {"content": f"later {i}"}, role="user")
    with store.create(name="branching session") as s:
        branch_sid = s.id
        fork = s.append("message", {"content": "the start"}, role="user").id
        off_path = s.append("message", {"content": "QUOKKA abandoned attempt"}, role="assistant").id
        s.select(fork)
        on_path = s.append("message", {"content": "the kept reply"}, role="assistant").id
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        refused = client.get(f"{API}/search", params={"q": "AND"})
        assert refused.status_code == 400
        refusal = refused.json()["error"]["message"]

        page.goto(f"{url}/")
        page.wait_for_selector(f"#sessions tr[data-id='{hostile_sid}']")
        page.keyboard.press("/")
        page.keyboard.type("zebracorn")
        hit = page.locator(f"#hits li.hit[data-event='{hostile}']")
        hit.wait_for()
        assert page.locator("#hits li.hit").count() == 1
        # The snippet is text: the markup in the record is not parsed, and
        # the highlights fall on the words (offsets in code points, past the emoji).
        assert page.locator("#hits img, #hits b").count() == 0
        assert [m.inner_text() for m in hit.locator("mark").all()] == ["ZEBRACORN", "zebracorn"]
        assert "<img src=x onerror=alert(1)>" in hit.locator(".snippet").inner_text()
        poll(lambda: "hostile & <tagged> session" in hit.locator(".hit-title").inner_text())
        assert "hostile & <tagged> session" in hit.locator(".hit-title").inner_text()
        assert hostile_sid in hit.inner_text()
        assert "assistant" in hit.locator(".hit-kind").inner_text()
        assert hit.locator("time").get_attribute("datetime")

        # Open it: the session, with the hit's event drawn, marked and on screen.
        hit.locator("a").click()
        target = f"#conversation li.target[data-id='{hostile}']"
        page.wait_for_selector(target)
        assert "ZEBRACORN" in page.inner_text(target)
        assert in_viewport(page, target)
        assert page.locator("#viewing-note").is_hidden()  # on the active path
        assert page.locator(f"#tree li.node.cursor[data-id='{hostile}']").count() == 1

        # Back to the list: the query and its hits are still there.
        page.keyboard.press("u")
        page.wait_for_selector("#list-view:not([hidden])")
        assert page.input_value("#search") == "zebracorn"
        assert page.locator("#hits li.hit").count() == 1

        # A hit off the active path opens the path to it, as a branch would.
        page.fill("#search", "quokka")
        page.locator(f"#hits li.hit[data-event='{off_path}']").wait_for()
        page.locator(f"#hits li.hit[data-event='{off_path}'] a").click()
        page.wait_for_selector(f"#conversation li.target[data-id='{off_path}']")
        assert page.locator("#viewing-note").is_visible()
        assert off_path[-8:] in page.inner_text("#viewing-note")
        assert page.locator(f"#tree li.node.viewing[data-id='{off_path}']").count() == 1
        assert page.locator(f"#conversation li[data-id='{on_path}']").count() == 0
        assert page.url.endswith(f"#/s/{branch_sid}/e/{off_path}")

        # A query the server refuses shows why, not an empty list.
        page.keyboard.press("u")
        page.wait_for_selector("#list-view:not([hidden])")
        page.fill("#search", "AND")
        page.locator("#search-error").wait_for()
        assert refusal in page.inner_text("#search-error")
        assert page.locator("#hits li.hit").count() == 0
        # Then a good one replaces the message.
        page.fill("#search", "zebracorn")
        page.locator("#hits li.hit").first.wait_for()
        assert page.locator("#search-error").is_hidden()

        # Keyboard: Escape leaves the box (the query kept, j walks the rows and
        # then the hits); Escape again clears the search.
        page.keyboard.press("Escape")
        assert page.evaluate("document.activeElement.id") != "search"
        assert page.input_value("#search") == "zebracorn"
        page.wait_for_selector("#list-empty:not([hidden])")  # no session's title says zebracorn
        assert page.locator("#sessions tbody tr").count() == 0
        page.keyboard.press("j")
        assert page.locator("#hits li.hit.selected").count() == 1
        page.keyboard.press("Escape")
        assert page.input_value("#search") == ""
        assert page.locator("#search-results").is_hidden()
        poll(lambda: page.locator("#sessions tbody tr").count() == 2)
        assert page.locator("#sessions tbody tr").count() == 2
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.id") == "search"
        page.goto("about:blank")


# --- large sessions -----------------------------------------------------------------------

SCROLL_TO_TOP = """async () => {
  // Scroll up until the conversation stops growing upwards.
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  for (let i = 0; i < 400; i++) {
    window.scrollTo(0, 0);
    await frame();
    if (view.win.start === 0) break;
  }
  window.scrollTo(0, 0);
  return view.win.start;
}"""

SWEEP_TREE = """async () => {
  // Scroll the tree pane from top to bottom; every row drawn on the way, in order.
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const pane = document.getElementById("tree-pane");
  const seen = [];
  let most = 0;
  pane.scrollTop = 0;
  for (let i = 0; i < 2000; i++) {
    await frame();
    const ids = Array.from(document.querySelectorAll("#tree li.node"), (n) => n.dataset.id);
    most = Math.max(most, ids.length);
    seen.push(...ids);
    if (pane.scrollTop + pane.clientHeight >= pane.scrollHeight - 1) break;
    pane.scrollTop += pane.clientHeight;
  }
  return { seen, most };
}"""


@needs_chromium
def test_search_box_finds_a_word_inside_chinese_and_japanese_text(page: Any, tmp_path: Path) -> None:
    """In a real browser: a word inside a run of Chinese or Japanese is
    found and marked (the index sees each character; the marks come back
    as code-point offsets, past an emoji)."""
    store = Store(tmp_path / "home")
    with store.create(name="数据库会话") as s:
        sid = s.id
        zh = s.append("message", {"content": "😀 数据库连接失败，请重试"}, role="user").id
        ja = s.append("message", {"content": "データベースの接続がタイムアウトしました"}, role="assistant").id
    with live_server(store) as url:
        page.goto(f"{url}/")
        page.wait_for_selector(f"#sessions tr[data-id='{sid}']")
        page.fill("#search", "连接")
        hit = page.locator(f"#hits li.hit[data-event='{zh}']")
        hit.wait_for()
        assert page.locator("#hits li.hit").count() == 1
        assert [m.inner_text() for m in hit.locator("mark").all()] == ["连接"]
        page.fill("#search", "タイムアウト")
        hit = page.locator(f"#hits li.hit[data-event='{ja}']")
        hit.wait_for()
        assert [m.inner_text() for m in hit.locator("mark").all()] == ["タイムアウト"]


def conversation_ids(page: Any) -> list[str]:
    return list(page.evaluate("Array.from(document.querySelectorAll('#conversation li[data-id]'), n => n.dataset.id)"))


@needs_chromium
def test_a_large_session_is_drawn_in_part_yet_all_of_it_is_reachable_and_live(page: Any, tmp_path: Path) -> None:
    store = Store(tmp_path / "home", durability="off")  # no fsync per event: a fast setup
    with store.create(name="large") as s:
        sid = s.id
        ids = build_big(s, 3000)
    with store.open(sid, readonly=True) as s:
        all_ids = [e.id for e in s.entries()]
    with live_server(store) as url, httpx.Client(base_url=url) as client:
        path = [e["id"] for e in client.get(f"{API}/sessions/{sid}/path").json()["events"]]
        assert len(path) == 3000 - len(ids["side"])
        page.goto(f"{url}/#/s/{sid}")
        page.wait_for_selector(f"#conversation li[data-id='{ids['head']}']")
        page.wait_for_selector("#live-state.on")
        assert page.inner_text("#event-count") == str(len(all_ids))
        # Opened at its end, drawn in part: the newest events, on screen.
        assert in_viewport(page, f"#conversation li[data-id='{ids['head']}']")
        drawn = conversation_ids(page)
        assert drawn == path[-len(drawn) :] and len(drawn) < len(path)
        assert page.locator("#tree li.node").count() < 300

        # Scrolled up to the start: every event of the path, once, in order.
        assert page.evaluate(SCROLL_TO_TOP) == 0
        assert conversation_ids(page) == path
        # The tree, swept from top to bottom: every event, once, never all drawn at once.
        swept = page.evaluate(SWEEP_TREE)
        assert set(swept["seen"]) == set(all_ids)
        assert swept["most"] < 300
        order = list(dict.fromkeys(swept["seen"]))
        main_rows = [i for i in order if i not in set(ids["side"])]
        assert main_rows == path  # the main line in order, branches set in beside it

        # Live: a batch and single appends are added to what is drawn, in order.
        batch = client.post(
            f"{API}/sessions/{sid}/batch",
            json={"events": [{"kind": "message", "role": "user", "record": {"content": f"B{i}"}} for i in range(200)]},
        )
        assert batch.status_code == 201
        singles = [
            client.post(
                f"{API}/sessions/{sid}/events",
                json={"kind": "message", "role": "assistant", "record": {"content": f"S{i}"}},
            ).json()["event"]["id"]
            for i in range(5)
        ]
        page.wait_for_selector(f"#conversation li[data-id='{singles[-1]}']")
        expected = path + [e["id"] for e in batch.json()["events"]] + singles
        assert conversation_ids(page) == expected
        assert poll(lambda: page.inner_text("#event-count") == str(len(all_ids) + 205))
        assert page.inner_text("#head-id") == singles[-1][-8:]

        # A hit deep in the session: the chunk around it is drawn, it is on screen.
        early = path[123]
        page.goto(f"{url}/#/s/{sid}/e/{early}")
        target = f"#conversation li.target[data-id='{early}']"
        page.wait_for_selector(target)
        assert in_viewport(page, target)
        drawn = conversation_ids(page)
        assert drawn == expected[expected.index(drawn[0]) : expected.index(drawn[0]) + len(drawn)]
        assert len(drawn) < len(expected)
        # Live events while the end is not drawn are not lost: scrolling down reaches them.
        late = client.post(
            f"{API}/sessions/{sid}/events", json={"kind": "message", "role": "user", "record": {"content": "LATE"}}
        ).json()["event"]["id"]
        assert poll(lambda: page.inner_text("#event-count") == str(len(all_ids) + 206))
        page.evaluate(
            """async () => { for (let i = 0; i < 400 && view.win.end < view.path.length; i++) {
              window.scrollTo(0, document.documentElement.scrollHeight);
              await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))); } }"""
        )
        drawn = conversation_ids(page)
        assert drawn[-1] == late and drawn == (expected + [late])[-len(drawn) :]
        assert len(set(drawn)) == len(drawn)
        page.goto("about:blank")


# --- measurement (run as a script) ---------------------------------------------------------


def measure(events: int, burst: int) -> None:  # pragma: no cover - a script, not a test
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "home")
        with store.create(name="big session") as s:
            sid = s.id
            ids = build_big(s, events)
        with store.open(sid, readonly=True) as s:
            total = len(s.entries())
        print(f"session of {total} events")
        with live_server(store) as url, sync_api.sync_playwright() as p, httpx.Client(base_url=url) as client:
            t = time.perf_counter()
            client.get(f"{API}/sessions/{sid}/entries").raise_for_status()
            print(f"GET entries: {time.perf_counter() - t:.2f} s")
            t = time.perf_counter()
            client.get(f"{API}/sessions/{sid}/path").raise_for_status()
            print(f"GET path: {time.perf_counter() - t:.2f} s")
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_context(viewport={"width": 1400, "height": 1000}, bypass_csp=True).new_page()
            idle = "new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))"
            opens = []
            for _ in range(3):
                page.goto(f"{url}/")
                page.wait_for_selector(f"#sessions tr[data-id='{sid}']")
                t = time.perf_counter()
                page.evaluate(f"location.hash = '#/s/{sid}'")
                page.wait_for_selector(f"#conversation li[data-id='{ids['head']}']", timeout=120_000)
                page.wait_for_function(f"document.getElementById('event-count').textContent === '{total}'")
                page.evaluate(idle)
                opens.append(time.perf_counter() - t)
            print("open: " + ", ".join(f"{x:.2f}" for x in opens) + " s")
            page.wait_for_function("document.getElementById('live-state').textContent === 'on'", timeout=60_000)
            redraw = page.evaluate(
                "(() => { const t = performance.now(); renderTree(); return performance.now() - t; })()"
            )
            print(f"renderTree(): {redraw:.0f} ms")
            side = ids["side"][0]
            t = time.perf_counter()
            page.evaluate(f"loadPath('{side}')")
            page.wait_for_selector(f"#conversation li[data-id='{side}']", timeout=120_000)
            page.evaluate(idle)
            print(f"path to a side branch: {time.perf_counter() - t:.2f} s")
            page.evaluate("loadPath(null)")
            page.wait_for_selector(f"#conversation li[data-id='{ids['head']}']", timeout=120_000)
            page.evaluate(idle)

            count = total
            # A burst through the API: one batch of `burst` events.
            t = time.perf_counter()
            response = client.post(
                f"{API}/sessions/{sid}/batch",
                json={
                    "events": [
                        {"kind": "message", "role": "user", "record": {"content": f"BATCH {i}"}} for i in range(burst)
                    ]
                },
            )
            response.raise_for_status()
            count += burst
            last = response.json()["events"][-1]["id"]
            page.wait_for_selector(f"#conversation li[data-id='{last}']", timeout=300_000)
            page.wait_for_function(f"document.getElementById('event-count').textContent === '{count}'")
            page.evaluate(idle)
            print(f"batch of {burst} events: all shown after {time.perf_counter() - t:.2f} s")

            # A burst from an agent in another thread: `burst` appends, one commit each.
            posted: list[str] = []

            def write() -> None:
                with store.open(sid) as writer:
                    for i in range(burst):
                        posted.append(writer.append("message", {"content": f"BURST {i}"}, role="user").id)

            t = time.perf_counter()
            thread = threading.Thread(target=write)
            thread.start()
            thread.join()
            written = time.perf_counter() - t
            count += burst
            page.wait_for_selector(f"#conversation li[data-id='{posted[-1]}']", timeout=300_000)
            page.wait_for_function(f"document.getElementById('event-count').textContent === '{count}'")
            page.evaluate(idle)
            shown = time.perf_counter() - t
            print(
                f"{burst} appends by a writer: written in {written:.2f} s, all shown after {shown:.2f} s "
                f"({shown - written:.2f} s after the last was written)"
            )
            page.goto("about:blank")
            browser.close()


if __name__ == "__main__":  # pragma: no cover
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--burst", type=int, default=300)
    options = parser.parse_args()
    measure(options.events, options.burst)
