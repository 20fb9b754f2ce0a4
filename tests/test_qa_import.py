"""Importer fixes from QA round 3: usage in the documented shape (pi, Codex),
names for imported sessions, and id-less lines repeated exactly."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from agentlog.cli import main
from agentlog.export.totals import totals
from agentlog.importers import FORMATS, run_import
from agentlog.tokens import usage_tokens
from importers_support import copy_fixture, do_import, load, snapshot, source_lines, write_lines

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores

PI = "pi_v1_legacy_large-session_head45.jsonl"
CODEX = "codex_rollout_0.104_redacted_019c8bfe.jsonl"
PI_SID = "5e551011-0000-4000-8000-00000000000a"
CODEX_SID = "019c0000-0000-7000-8000-00000000000a"


def _pi_assistant_usages(lines):
    return [o["message"]["usage"] for o in lines if o["type"] == "message" and o["message"]["role"] == "assistant"]


# --- pi usage -------------------------------------------------------------------------
def test_pi_usage_is_stored_in_the_documented_shape_and_counted(store, tmp_path):
    path = copy_fixture(PI, tmp_path)
    lines = source_lines(path)
    (s,) = do_import(store, "pi", path).sessions
    loaded = load(store, s.session_id)
    raw = _pi_assistant_usages(lines)
    replies = [e for e in loaded.events if e.kind == "message" and e.role == "assistant"]
    assert len(replies) == len(raw) == 18
    for event, usage in zip(replies, raw, strict=True):
        prompt = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
        assert event.record["usage"] == {
            "input_tokens": prompt,
            "output_tokens": usage["output"],
            "total_tokens": prompt + usage["output"],
            "cost_usd": usage["cost"]["total"],
        }
        assert event.record["source"]["message"]["usage"] == usage  # pi's own, kept
    t = totals(loaded.events)
    assert (t.input_tokens, t.output_tokens, t.calls) == (
        sum(u["input"] + u["cacheRead"] + u["cacheWrite"] for u in raw),
        6630,
        18,
    )
    assert t.cost_usd == pytest.approx(sum(u["cost"]["total"] for u in raw))
    assert usage_tokens(replies[-1]) is not None


def test_pi_stats_show_the_tokens_and_cost(tmp_path):
    path = copy_fixture(PI, tmp_path / "src")
    runner = CliRunner(env={"AGENTLOG_HOME": None})
    home = str(tmp_path / "home")
    assert runner.invoke(main, ["--home", home, "import", "--from", "pi", str(path)]).exit_code == 0
    sid = f"pi-{source_lines(path)[0]['id']}"
    result = runner.invoke(main, ["--home", home, "stats", sid])
    assert result.exit_code == 0, result.output
    assert "tokens: 483,037 in, 6,630 out (18 calls), $0.6595" in result.output


def test_pi_usage_totaltokens_is_kept_and_a_usage_without_counts_is_left_out(store, tmp_path):
    header = {"type": "session", "version": 3, "id": PI_SID, "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}

    def reply(i, usage):
        message = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "usage": usage}
        return {
            "type": "message",
            "id": f"a{i}",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01Z",
            "message": message,
        }

    usage = {"input": 10, "output": 5, "cacheRead": 100, "cacheWrite": 0, "totalTokens": 115, "cost": {"total": 0.5}}
    path = write_lines(tmp_path / "s.jsonl", [header, reply(1, usage), reply(2, {"output": 3}), reply(3, "n/a")])
    loaded = load(store, do_import(store, "pi", path).sessions[0].session_id)
    first, second, third = (e for e in loaded.events if e.kind == "message")
    assert first.record["usage"] == {"input_tokens": 110, "output_tokens": 5, "total_tokens": 115, "cost_usd": 0.5}
    assert "usage" not in second.record and second.record["source"]["message"]["usage"] == {"output": 3}
    assert "usage" not in third.record and third.record["source"]["message"]["usage"] == "n/a"


# --- Codex token counts --------------------------------------------------------------------
def test_codex_token_counts_become_the_usage_of_their_replies(store, tmp_path):
    path = copy_fixture(CODEX, tmp_path)
    lines = source_lines(path)
    (s,) = do_import(store, "codex", path).sessions
    loaded = load(store, s.session_id)
    counts = [o["payload"]["info"] for o in lines if o["payload"].get("type") == "token_count" and o["payload"]["info"]]
    calls = [c["last_token_usage"] for i, c in enumerate(counts) if i == 0 or c != counts[i - 1]]  # repeats dropped
    with_usage = [e for e in loaded.events if e.kind == "message" and "usage" in e.record]
    assert [e.record["usage"] for e in with_usage] == [
        {"input_tokens": c["input_tokens"], "output_tokens": c["output_tokens"], "total_tokens": c["total_tokens"]}
        for c in calls
    ]
    assert all(e.role == "assistant" for e in with_usage)
    final = counts[-1]["total_token_usage"]
    t = totals(loaded.events)
    assert (t.input_tokens, t.output_tokens, t.calls) == (final["input_tokens"], final["output_tokens"], 6)
    # each token_count line is still its own custom event, kept whole
    kept = [
        e for e in loaded.events if e.kind == "custom" and e.record["original"]["payload"].get("type") == "token_count"
    ]
    assert len(kept) == sum(1 for o in lines if o["payload"].get("type") == "token_count")


def _codex(i, payload, kind="response_item"):
    return {"timestamp": f"2026-02-23T20:00:{i:02d}.000Z", "type": kind, "payload": payload}


def _count(i, inp, out, total_in, total_out):
    last = {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}
    total = {"input_tokens": total_in, "output_tokens": total_out, "total_tokens": total_in + total_out}
    return _codex(
        i, {"type": "token_count", "info": {"last_token_usage": last, "total_token_usage": total}}, "event_msg"
    )


def _codex_turn(i, text):
    return [
        _codex(i, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
        _codex(i, {"type": "user_message", "message": text}, "event_msg"),
        _codex(i, {"type": "agent_message", "message": "x"}, "event_msg"),
        _codex(i, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}),
    ]


def test_codex_usage_waits_for_its_token_count_across_batches(store, tmp_path):
    meta = _codex(0, {"id": CODEX_SID, "cwd": "/w"}, "session_meta")
    lines = [meta, *_codex_turn(1, "one"), _count(2, 10, 1, 10, 1), *_codex_turn(3, "two"), _count(4, 20, 2, 30, 3)]
    path = write_lines(tmp_path / f"rollout-x-{CODEX_SID}.jsonl", lines)
    (s,) = run_import(store, FORMATS["codex"], [str(path)], chunk_events=1).sessions
    loaded = load(store, s.session_id)
    replies = [e for e in loaded.events if e.kind == "message" and e.role == "assistant"]
    assert [e.record["usage"]["input_tokens"] for e in replies] == [10, 20]
    assert [e.record["source"]["usage_line"] for e in replies] == [6, 11]


def test_codex_token_count_after_an_earlier_import_wrote_the_reply_is_only_kept(store, tmp_path):
    meta = _codex(0, {"id": CODEX_SID, "cwd": "/w"}, "session_meta")
    path = tmp_path / f"rollout-x-{CODEX_SID}.jsonl"
    write_lines(path, [meta, *_codex_turn(1, "one")])
    do_import(store, "codex", path)
    with path.open("a") as f:
        f.write(json.dumps(_count(2, 10, 1, 10, 1)) + "\n")
    (s,) = do_import(store, "codex", path).sessions
    loaded = load(store, s.session_id)
    assert not [e for e in loaded.events if "usage" in e.record]  # the stored reply is not rewritten
    assert loaded.events[-1].record["original"]["payload"]["type"] == "token_count"


# --- names --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fmt", "name", "expected"),
    [
        ("claude", "claude-code_v2.1.42_real_03eb5929.jsonl", "Ok, so there's isn't much to see here, mostly one"),
        # the first user lines there are a Caveat note (isMeta) and ! commands with their output
        ("claude", "claude-code_v1.0.51_real_summary-records_326189cf.jsonl", "please fix these"),
        ("codex", CODEX, "[REDACTED_MESSAGE len=98 sha=c002ff99]"),
        ("pi", PI, "/mode"),
    ],
)
def test_an_unnamed_import_is_named_after_its_first_prompt(store, tmp_path, fmt, name, expected):
    path = copy_fixture(name, tmp_path)
    sid = do_import(store, fmt, path).sessions[0].session_id
    info = store.info(sid)
    assert info.name is not None and info.name.startswith(expected) and len(info.name) <= 80
    assert info.title == info.name  # what the listing and the viewer show
    before = snapshot(store)
    do_import(store, fmt, path)
    assert snapshot(store) == before  # a second import changes nothing


def test_a_long_prompt_is_cut_to_one_line_of_80_characters(store, tmp_path):
    header = {"type": "session", "version": 3, "id": PI_SID, "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}
    text = "\n\n  fix   " + "x" * 200 + "\nsecond line"
    prompt = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01Z"}
    prompt["message"] = {"role": "user", "content": text}
    path = write_lines(tmp_path / "s.jsonl", [header, prompt])
    name = store.info(do_import(store, "pi", path).sessions[0].session_id).name
    assert name is not None and name.startswith("fix xxx") and len(name) == 80 and name.endswith("\u2026")


def test_a_name_the_source_gives_wins_and_a_user_title_is_kept(store, tmp_path):
    header = {"type": "session", "version": 3, "id": PI_SID, "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}
    prompt = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01Z"}
    prompt["message"] = {"role": "user", "content": "hello there"}
    path = write_lines(tmp_path / "s.jsonl", [header, prompt])
    sid = do_import(store, "pi", path).sessions[0].session_id
    assert store.meta(sid)["name"] == "hello there"
    with store.open(sid) as s:
        s.set_title("mine")
    info = {"type": "session_info", "id": "i1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02Z", "name": "pi's"}
    with path.open("a") as f:
        f.write(json.dumps(info) + "\n")
    do_import(store, "pi", path)
    meta = store.meta(sid)
    assert (meta["title"], meta["name"]) == ("mine", "pi's")  # the source's name replaces the prompt's
    assert store.info(sid).title == "mine"


def test_a_prompt_in_a_later_import_names_a_session_that_had_none(store, tmp_path):
    header = {"type": "session", "version": 3, "id": PI_SID, "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}
    path = write_lines(tmp_path / "s.jsonl", [header])
    sid = do_import(store, "pi", path).sessions[0].session_id
    assert store.meta(sid)["name"] is None
    prompt = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01Z"}
    prompt["message"] = {"role": "user", "content": [{"type": "text", "text": "first"}]}
    second = {**prompt, "id": "u2", "parentId": "u1", "message": {"role": "user", "content": "second"}}
    with path.open("a") as f:
        f.write(json.dumps(prompt) + "\n")
    do_import(store, "pi", path)
    with path.open("a") as f:
        f.write(json.dumps(second) + "\n")
    do_import(store, "pi", path)
    assert store.meta(sid)["name"] == "first"


# --- id-less lines repeated exactly --------------------------------------------------------
def test_an_exact_repeat_of_an_idless_claude_line_is_kept_and_reported(store, tmp_path):
    snap = {"type": "file-history-snapshot", "messageId": "m1", "snapshot": {"timestamp": "2026-01-01T00:00:00Z"}}
    user = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "main",
        "timestamp": "2026-01-01T00:00:01Z",
        "message": {"role": "user", "content": "hi"},
    }
    path = write_lines(tmp_path / "s.jsonl", [user, snap, snap, user])
    report = do_import(store, "claude", path)
    (s,) = report.sessions
    assert s.duplicates == 1  # the repeated uuid line: skipped, as before
    loaded = load(store, s.session_id)
    assert sum(1 for e in loaded.events if e.kind == "custom") == 2  # both snapshots kept
    assert report.warnings == [
        (
            str(path),
            3,
            "repeats line 2 exactly and has no id to tell the two apart; kept as an event of its own",
        )
    ]


def test_an_exact_repeat_of_a_pi_v1_line_is_kept_in_place_and_reported(store, tmp_path):
    header = {"type": "session", "id": PI_SID, "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}
    prompt = {"type": "message", "timestamp": "2026-01-01T00:00:01Z", "message": {"role": "user", "content": "go"}}
    path = write_lines(tmp_path / "s.jsonl", [header, prompt, prompt])
    report = do_import(store, "pi", path)
    loaded = load(store, report.sessions[0].session_id)
    assert [e.record["content"] for e in loaded.path() if e.kind == "message"] == ["go", "go"]
    assert [(n, w.split(" exactly")[0]) for _, n, w in report.warnings] == [(3, "repeats line 2")]
    # an import of more lines compares them with the lines already imported
    with path.open("a") as f:
        f.write(json.dumps(prompt) + "\n")
    again = do_import(store, "pi", path)
    assert [(n, w.split(" exactly")[0]) for _, n, w in again.warnings] == [(4, "repeats line 2")]
