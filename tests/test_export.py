"""Exports (Markdown, one-file HTML, bundle), bundle import, redaction."""

from __future__ import annotations

import hashlib
import io
from html.parser import HTMLParser

import orjson
import pytest

from agentlog import Store
from agentlog.export import (
    BundleError,
    UnknownFormat,
    export_session,
    import_bundle,
    totals,
)
from agentlog.export.redact import Redactor
from agentlog.recordtext import readable_content

BIG = 20_000
SECRETS = {
    "AWS Access Key": "AKIAIOSFODNN7EXAMPLE",
    "GitHub Token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
}


@pytest.fixture(params=["files", "memory"])
def store(request, tmp_path):
    if request.param == "files":
        return Store(tmp_path / "home")
    return Store.memory()


@pytest.fixture
def other(request, tmp_path):
    return Store(tmp_path / "other")


def _session(store: Store) -> str:
    with store.create(name="export <me>", working_dir="/w", model="m1") as s:
        user = s.append("message", {"content": "please <b>fix</b> calc.py"}, role="user")
        s.append(
            "message",
            {
                "content": "looking",
                "reasoning": "think first",
                "usage": {"input_tokens": 100, "output_tokens": 10, "cost_usd": 0.25},
            },
            role="assistant",
        )
        s.append(
            "tool_call",
            {"id": "c1", "name": "read_file", "arguments": '{"path": "calc.py"}'},
            role="assistant",
        )
        s.append(
            "tool_result",
            {"tool_call_id": "c1", "name": "read_file", "content": "def add(a, b): return a - b"},
            role="tool",
        )
        s.append("message", {"content": "abandoned idea"}, role="assistant")
        s.select(user.id)
        s.summarize_branch()
        for n in range(10):
            s.append(
                "message",
                {"content": f"turn {n} " + "text " * 30, "usage": {"input_tokens": 10, "output_tokens": 1}},
                role="assistant" if n % 2 else "user",
            )
        assert s.compact(keep_tokens=40) is not None
        s.append("message", {"content": "y" * BIG + " tail"}, role="assistant")
        s.append("state", {"scratchpad": "", "usage": {"input_tokens": 1, "cost_usd": 9.0}}, role="system")
        s.update_meta(labels={"start": user.id})
        return s.id


def _export(store: Store, sid: str, fmt: str, **options) -> tuple[str, object]:
    out = io.BytesIO()
    with store.open(sid, readonly=True) as s:
        report = export_session(s, fmt, out, **options)
    return out.getvalue().decode("utf-8"), report


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in ("meta", "br", "input"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def test_html_parses_holds_every_active_message_and_is_offline(store):
    sid = _session(store)
    page, report = _export(store, sid, "html")
    parser = _Page()
    parser.feed(page)
    parser.close()
    assert parser.stack == []  # every element closed, in order
    text = "".join(parser.text)
    with store.open(sid, readonly=True) as s:
        active = [s.resolve(e) for e in s.path()]
        everything = [s.resolve(s.event(e.id)) for e in s.entries()]
    for event in active:
        if event.kind == "message":
            assert readable_content(event.record["content"]) in text, event.id
    assert "abandoned idea" in text  # other branches are there too
    assert "please <b>fix</b> calc.py" in text  # escaped, shown as typed
    # No network reference of any kind.
    for tag, attrs in parser.tags:
        for name in ("src", "href"):
            value = attrs.get(name)
            assert value is None or value.startswith("#"), (tag, attrs)
    assert "http://" not in page and "https://" not in page and "@import" not in page
    # Sidebar tree with HEAD marked, compaction and branch summary, tool details, totals.
    assert "<aside>" in page and ">HEAD<" in page and ">start<" in page
    sidebar = page[page.index("<aside>") : page.index("</aside>")]
    assert "state/system" not in sidebar  # checkpoints stay out of the tree
    assert sidebar.count('class="head">HEAD<') == 1  # HEAD is a state: marked on the event before
    assert "⇤ compaction" in page and "↩ branch summary" in page
    assert page.count("<details>") >= 2 and "tool call <b>read_file</b>" in page
    t = totals(active)
    assert f"{t.input_tokens:,}" in text and f"${t.cost_usd:.4f}" in text
    assert report.events == len(everything)


def test_markdown_active_path_and_all_branches(store):
    sid = _session(store)
    page, _ = _export(store, sid, "md")
    assert page.startswith("# export <me>\n")
    assert "please <b>fix</b> calc.py" in page and "⇤ compaction" in page
    assert "abandoned idea" not in page  # the active path only
    everything, _ = _export(store, sid, "md", all_branches=True)
    assert "abandoned idea" in everything and "## Branch 1" in everything
    assert "tool call `read_file`" in everything


def test_unknown_format_is_a_typed_error(store):
    sid = _session(store)
    with pytest.raises(UnknownFormat):
        _export(store, sid, "pdf")


def _all_events(store: Store, sid: str) -> tuple[list[dict], str, dict]:
    with store.open(sid, readonly=True) as s:
        return (
            [s.resolve(s.event(e.id)).to_dict() for e in s.entries()],
            s.head,
            {k: v for k, v in s.meta.items() if k not in ("updated_at",)},
        )


def test_bundle_round_trip_is_exact_and_idempotent(store, other, tmp_path):
    sid = _session(store)
    with store.open(sid) as s:  # HEAD somewhere other than the last event
        s.checkout(s.entries()[3].id)
    data, report = _export(store, sid, "bundle")
    path = tmp_path / "s.bundle.jsonl"
    path.write_text(data)
    first = import_bundle(other, str(path))
    assert (first.outcome, first.events_added) == ("created", report.events)
    events, head, meta = _all_events(store, sid)
    got_events, got_head, got_meta = _all_events(other, sid)
    assert got_events == events and got_head == head
    assert {k: got_meta.get(k) for k in meta} == meta
    assert any(e["digest"] for e in got_events)  # the blob travelled as a blob
    again = import_bundle(other, str(path))
    assert (again.outcome, again.events_added) == ("unchanged", 0)
    assert _all_events(other, sid)[:2] == (events, head)


def test_a_bundle_with_more_events_extends_the_session(store, other, tmp_path):
    with store.create(session_id="grow") as s:
        s.append("message", {"content": "one"}, role="user")
    path = tmp_path / "b.jsonl"
    path.write_text(_export(store, "grow", "bundle")[0])
    import_bundle(other, str(path))
    with store.open("grow") as s:
        s.append("message", {"content": "two"}, role="assistant")
    path.write_text(_export(store, "grow", "bundle")[0])
    report = import_bundle(other, str(path))
    assert (report.outcome, report.events_added, report.events_total) == ("extended", 1, 2)
    assert _all_events(other, "grow")[:2] == _all_events(store, "grow")[:2]


def test_a_conflicting_session_is_not_overwritten(store, other, tmp_path):
    with store.create(session_id="dup") as s:
        s.append("message", {"content": "mine"}, role="user")
    with other.create(session_id="dup") as s:
        s.append("message", {"content": "theirs"}, role="user")
    path = tmp_path / "b.jsonl"
    path.write_text(_export(store, "dup", "bundle")[0])
    with pytest.raises(BundleError, match="differs"):
        import_bundle(other, str(path))
    with other.open("dup", readonly=True) as s:
        assert [s.event(e.id).record["content"] for e in s.entries()] == ["theirs"]


@pytest.mark.parametrize("damage", ["truncate", "alter", "garbage", "version", "empty"])
def test_damaged_bundles_are_refused(store, other, tmp_path, damage):
    sid = _session(store)
    lines = _export(store, sid, "bundle")[0].splitlines()
    if damage == "truncate":
        lines = lines[:-1]
    elif damage == "alter":
        n = next(i for i, line in enumerate(lines) if '"digest":"sha256:' in line)
        lines[n] = lines[n].replace(" tail", " tale")
    elif damage == "garbage":
        lines[2] = lines[2][:20]
    elif damage == "version":
        header = orjson.loads(lines[0])
        header["agentlog_bundle"] = 99
        lines[0] = orjson.dumps(header).decode()
    else:
        lines = []
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(BundleError):
        import_bundle(other, str(path))
    assert not other.exists(sid)


def test_a_missing_bundle_is_a_typed_error(other, tmp_path):
    with pytest.raises(BundleError, match="cannot read"):
        import_bundle(other, str(tmp_path / "nope.jsonl"))


def test_redaction_counts_every_secret(store, tmp_path):
    with store.create(name="leaky") as s:
        s.append("message", {"content": f"my key is {SECRETS['AWS Access Key']}"}, role="user")
        s.append(
            "tool_result",
            {
                "tool_call_id": "c",
                "content": f"token={SECRETS['GitHub Token']}\nclone https://bob:hunter2pass@example.com/r.git",
            },
            role="tool",
        )
        s.append("message", {"content": 'config: password = "s3cr3tValue!"'}, role="user")
        sid = s.id
    for fmt in ("md", "html", "bundle"):
        page, report = _export(store, sid, fmt, redact=True, all_branches=True)
        for secret in [*SECRETS.values(), "hunter2pass", "s3cr3tValue!"]:
            assert secret not in page, (fmt, secret)
        assert report.redactions["AWS Access Key"] == 1
        assert report.redactions["GitHub Token"] == 1
        assert report.redactions["Basic Auth Credentials"] == 1
        assert report.redactions["Secret Keyword"] == 1
        assert report.redacted == sum(report.redactions.values())
        assert "[REDACTED:AWS Access Key]" in page
    plain, report = _export(store, sid, "md")
    assert SECRETS["AWS Access Key"] in plain and report.redacted == 0


def test_a_redacted_bundle_still_imports(store, other, tmp_path):
    with store.create(name="leaky") as s:
        s.append("message", {"content": f"{SECRETS['AWS Access Key']} " + "z" * BIG}, role="user")
        sid = s.id
    path = tmp_path / "r.jsonl"
    path.write_text(_export(store, sid, "bundle", redact=True)[0])
    import_bundle(other, str(path))
    with other.open(sid, readonly=True) as s:
        (event,) = [s.resolve(s.event(e.id)) for e in s.entries()]
    assert event.record["content"].startswith("[REDACTED:AWS Access Key] zzz")


def test_redactor_leaves_ids_and_ordinary_text_alone():
    r = Redactor()
    value = {
        "id": "01a22c41-1262-7780-ac98-e0d61f046351",
        "digest": "sha256:" + hashlib.sha256(b"x").hexdigest(),
        "text": "the quick brown fox fixed test_add in calc.py",
        "n": 3,
    }
    assert r.value(value) == value and r.total == 0
