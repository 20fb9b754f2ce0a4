"""`agentlog import`: output, one-line errors, --json, --follow."""

from __future__ import annotations

import json

from click.testing import CliRunner

from agentlog import Store
from agentlog.cli import main
from agentlog.importers import FORMATS, follow
from importers_support import copy_fixture, load, source_lines

pytest_plugins = ["importers_store"]  # its `store` fixture: file and memory stores

FORK = "claude-code_synthetic_dag_fork.jsonl"


def run(home, *args, env=None):
    runner = CliRunner(env={"AGENTLOG_HOME": None, **(env or {})})
    return runner.invoke(main, ["--home", str(home), *args])


def test_import_prints_counts_by_kind(tmp_path):
    path = copy_fixture(FORK, tmp_path / "src")
    result = run(tmp_path / "home", "import", "--from", "claude", str(path))
    assert result.exit_code == 0, result.output
    assert "claude: 19 new events in 3 session(s) (3 new) from 1 file(s)" in result.output
    assert "message 19" in result.output
    assert "claude-s2: 8 events (new); 5 copied" in result.output
    again = run(tmp_path / "home", "import", "--from", "claude", str(path))
    assert "0 new events" in again.output and again.exit_code == 0


def test_import_json(tmp_path):
    fixture = copy_fixture("codex_rollout_0.104_redacted_019c8bfe.jsonl", tmp_path / "src")
    path = fixture.rename(tmp_path / "src" / "rollout-2026-02-23T20-34-25-x.jsonl")
    result = run(tmp_path / "home", "import", "--from", "codex", str(tmp_path / "src"), "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["format"] == "codex" and doc["events"] == sum(doc["kinds"].values())
    assert doc["files"][0]["lines"] == len(source_lines(path))
    assert doc["sessions"][0]["session"] == "codex-019c8bfe-ec25-79e0-97d7-bda6a9c575ff"


def test_missing_file_is_one_line(tmp_path):
    result = run(tmp_path / "home", "import", "--from", "pi", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2  # a usage error, as for a missing bundle (docs/cli.md, exit status)
    assert result.stderr.strip().count("\n") == 0
    assert "no such file or directory:" in result.stderr and result.stderr.startswith("agentlog: error:")


def test_unknown_format_is_one_line(tmp_path):
    result = run(tmp_path / "home", "import", "--from", "cursor", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0
    assert "'cursor' is not one of 'bundle', 'claude', 'codex', 'pi'" in result.stderr


def test_a_directory_without_session_files_is_one_line(tmp_path):
    copy_fixture(FORK, tmp_path / "src")
    result = run(tmp_path / "home", "import", "--from", "codex", str(tmp_path / "src"))
    assert result.exit_code == 1
    assert result.stderr == f"agentlog: error: no codex session files (**/rollout-*.jsonl) under {tmp_path / 'src'}\n"


def test_missing_default_location_is_one_line(tmp_path):
    result = run(tmp_path / "home", "import", "--from", "claude", env={"CLAUDE_CONFIG_DIR": str(tmp_path / "none")})
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0
    assert "default location of claude sessions" in result.stderr


def test_malformed_lines_and_changed_files_are_reported(tmp_path):
    path = copy_fixture(FORK, tmp_path / "src")
    with path.open("a") as f:
        f.write("{oops\n")
    result = run(tmp_path / "home", "import", "--from", "claude", str(path))
    assert result.exit_code == 0
    assert f"agentlog: warning: {path}:12: invalid JSON" in result.stderr
    path.write_text(path.read_text().replace("Start", "Begin"))
    result = run(tmp_path / "home", "import", "--from", "claude", str(path))
    assert result.exit_code == 1
    assert "changed since session" in result.stderr


def test_follow_imports_what_grows(store, tmp_path):
    path = copy_fixture(FORK, tmp_path / "src")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:5]))
    rest = iter(lines[5:])
    seen = []

    def grow(_interval):  # between polls the source tool writes a line (or two)
        with path.open("a") as f:
            for line in [next(rest, ""), next(rest, "")]:
                f.write(line)

    total = follow(
        store,
        FORMATS["claude"],
        [str(tmp_path / "src")],
        interval=0.0,
        max_polls=5,
        on_report=seen.append,
        sleep=grow,
    )
    assert total.events == 19 and len(seen) == 4  # the 5th poll found nothing new
    assert len(load(store, "claude-s3").path()) == 6
    assert total.errors == [] and total.malformed == []


def test_follow_command_is_bounded_by_polls(tmp_path):
    copy_fixture(FORK, tmp_path / "src")
    result = run(
        tmp_path / "home",
        "import",
        "--from",
        "claude",
        "--follow",
        "--polls",
        "2",
        "--interval",
        "0.05",
        "--json",
        str(tmp_path / "src"),
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["events"] == 19
    assert len(Store(tmp_path / "home").list()) == 3


def _grower(path, chunks):
    pending = iter(chunks)

    def grow(_interval):
        chunk = next(pending, None)
        if chunk is not None:
            chunk(path)

    return grow


def test_follow_reads_only_what_was_appended(store, tmp_path, monkeypatch):
    from agentlog.importers import reader

    path = copy_fixture(FORK, tmp_path / "src")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:6]))
    parsed = []
    real = reader._parse
    monkeypatch.setattr(reader, "_parse", lambda body: parsed.append(body) or real(body))

    def append(p):
        with p.open("a") as f:
            f.write("".join(lines[6:]))

    total = follow(store, FORMATS["claude"], [str(path)], interval=0, max_polls=2, sleep=_grower(path, [append]))
    assert len(parsed) == len(lines)  # each line parsed once, over two polls
    assert total.events == 19 and total.errors == []


def test_follow_reports_a_rewritten_file(store, tmp_path):
    path = copy_fixture(FORK, tmp_path / "src")
    original = path.read_text()

    def rewrite(p):
        p.write_text(original.replace("Reply 1", "Reply X") + original.splitlines(keepends=True)[0])

    total = follow(store, FORMATS["claude"], [str(path)], interval=0, max_polls=2, sleep=_grower(path, [rewrite]))
    assert total.events == 19
    # one error per session that holds lines of it; nothing more imported
    assert len(total.errors) == 3 and all("changed since session" in e for e in total.errors)


def test_follow_sees_a_renamed_title_slot(store, tmp_path):
    sid = "5e551011-0000-4000-8000-000000000009"

    def slot(title):
        body = {"type": "title", "v": 1, "title": title, "updatedAt": "x", "pad": ""}
        body["pad"] = " " * (200 - len(json.dumps(body)))
        return json.dumps(body) + "\n"

    header = {"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}
    entry = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:01Z",
        "message": {"role": "user", "content": "hi"},
    }
    path = tmp_path / "s.jsonl"
    path.write_text(slot("one") + json.dumps(header) + "\n")

    def rename_and_append(p):
        text = p.read_text().splitlines(keepends=True)
        p.write_text(slot("two") + "".join(text[1:]) + json.dumps(entry) + "\n")

    total = follow(store, FORMATS["pi"], [str(path)], interval=0, max_polls=2, sleep=_grower(path, [rename_and_append]))
    assert total.errors == [] and total.events == 3
    assert store.meta(f"pi-{sid}")["name"] == "two"


def test_follow_keeps_a_bounded_number_of_sessions_open(store, tmp_path, monkeypatch):
    from agentlog.importers import following

    monkeypatch.setattr(following, "KEEP_OPEN", 1)
    path = copy_fixture(FORK, tmp_path / "src")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:8]))

    def append(p):
        with p.open("a") as f:
            f.write("".join(lines[8:]))

    total = follow(store, FORMATS["claude"], [str(path)], interval=0, max_polls=2, sleep=_grower(path, [append]))
    assert total.events == 19 and total.errors == []
    assert [len(load(store, s).path()) for s in ("claude-s1", "claude-s2", "claude-s3")] == [5, 8, 6]


def test_a_repaired_line_is_reported_on_stderr(tmp_path):
    path = copy_fixture(FORK, tmp_path / "src")
    text = path.read_text()
    assert text.count('"text":"Start"') == 1
    # an emoji cut in half, as JavaScript's JSON.stringify writes it: a lone surrogate escape
    path.write_text(text.replace('"text":"Start"', '"text":"Start \\ud83d"'))
    result = run(tmp_path / "home", "import", "--from", "claude", str(path))
    assert result.exit_code == 0
    assert f"agentlog: warning: {path}:1: 1 lone surrogate escape(s) replaced by U+FFFD" in result.stderr
