"""Regressions found auditing issue 10 (search, export, housekeeping, refs)
by using the commands as a demanding user would: each test failed before
its fix."""

from __future__ import annotations

import io
import json
import time
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from agentlog import Store
from agentlog.cli import housekeeping, main
from agentlog.export import export_session
from agentlog.export.redact import Redactor
from agentlog.search import SearchError, search
from cli_support import ok, ok_json, run

ESC = "\x1b"
#: An RSA key's shape (the body is not a real key; the detector keys on the marker).
KEY_BODY = [
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCyhMBBjPcljK+2",
    "SYEoK8z4BYReDqC1HQU3UOMfOTW7eyUzPDk64FO5Qyu8bS38Jyld0hHw2/b3IM9z",
]
PEM = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(KEY_BODY) + "\n-----END PRIVATE KEY-----"
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


def one_error(result, code=1):
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentlog: error: "), result.stderr
    return lines[0]


# --- redaction ---------------------------------------------------------------------
def test_redact_removes_the_whole_private_key_not_only_its_begin_marker(home):
    redactor = Redactor()
    out = redactor.text(f"my key:\n{PEM}\nand after it")
    assert out == "my key:\n[REDACTED:Private Key]\nand after it"
    assert redactor.counts == {"Private Key": 1}
    # Inside JSON text (escaped newlines, one line), and cut short (no END).
    escaped = Redactor().text('{"key": "' + PEM.replace("\n", "\\n") + '", "n": 1}')
    assert escaped == '{"key": "[REDACTED:Private Key]", "n": 1}'
    cut = Redactor().text("head -3 id_rsa:\n" + PEM.split("\n-----END")[0])
    assert cut == "head -3 id_rsa:\n[REDACTED:Private Key]"
    # Through an export, too: no line of the key reaches the file.
    store = Store(home)
    with store.create(name="keys") as s:
        s.append("tool_result", {"name": "cat", "content": PEM}, role="tool")
    buf = io.BytesIO()
    with store.open(s.id, readonly=True) as opened:
        report = export_session(opened, "md", buf, redact=True)
    assert not any(line in buf.getvalue().decode() for line in KEY_BODY)
    assert report.redactions == {"Private Key": 1}


def test_redact_replaces_a_jwt_with_its_signature():
    redactor = Redactor()
    out = redactor.text(f"Authorization: Bearer {JWT}. Done.")
    assert out == "Authorization: Bearer [REDACTED:JSON Web Token]. Done."
    assert "dozjgNryP4J3" not in out


# --- terminal output ---------------------------------------------------------------
def test_control_characters_in_records_never_reach_the_terminal(home):
    store = Store(home)
    hostile = f"hello {ESC}]0;PWNED\x07 {ESC}[2J world"
    with store.create(name=f"t{ESC}[31mitle") as s:
        s.append("message", {"content": hostile}, role="user")
    for args in (["log", s.id], ["tree", s.id], ["context", s.id], ["search", "hello"], ["ls"]):
        out = ok(home, *args)
        assert ESC not in out and "\x07" not in out, (args, out)
    assert "␛]0;PWNED␇ ␛[2J world" in ok(home, "log", s.id)
    listed = run(home, "rm", s.id, input="n\n")
    assert ESC not in listed.stderr and ESC not in listed.stdout
    # A snippet is the indexed text, which leaves a terminal's codes out, a
    # cursor move or erase (ESC[2J) as a space (docs/cli.md); the JSON of
    # the event keeps what was stored.
    assert ok_json(home, "search", "hello")[0]["snippet"] == "hello    world"
    assert ok_json(home, "log", s.id)[0]["record"]["content"] == hostile


def test_ls_and_du_never_cut_an_id_so_it_can_be_typed_back(home):
    long_id = "claude-326189cf-5676-4237-8cde-1ce80aae4a9f-imported"
    Store(home).create(session_id=long_id, name="imported").close()
    for command in ("ls", "du"):
        first = ok(home, command).splitlines()[1].split()[0]
        assert first == long_id, (command, first)
    assert ok_json(home, "log", first) == []


# --- times -----------------------------------------------------------------------------
def test_since_and_older_than_before_the_epoch_mean_all_history(home):
    store = Store(home)
    with store.create(name="old") as s:
        s.append("message", {"content": "ancient words"}, role="user")
    for since in ("0001-01-01", "99999999999y"):
        hits = ok_json(home, "search", "ancient", "--since", since)
        assert [h["session_id"] for h in hits] == [s.id], since
    doc = ok_json(home, "prune", "--older-than", "99999999999y", "--dry-run")
    assert doc["sessions"] == [] and doc["cutoff"] == "1970-01-01T00:00:00.000000000Z"


# --- prune -------------------------------------------------------------------------------
def test_prune_keeps_a_session_used_while_the_question_waited(home, monkeypatch):
    store = Store(home)
    with store.create(name="stale") as s:
        s.append("message", {"content": "old work"}, role="user")
    sid = s.id
    other = store.create(name="really stale")
    other.close()
    time.sleep(1.1)  # both older than the --older-than below

    def answer_yes_after_work(*args, **kwargs):
        # Another process resumes the session while prune asks.
        with Store(home).open(sid) as resumed:
            resumed.append("message", {"content": "new work"}, role="user")
        return True

    monkeypatch.setattr(housekeeping.click, "confirm", answer_yes_after_work)
    result = run(home, "prune", "--older-than", "1s", "--json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    doc = json.loads(result.stdout)
    assert doc["changed"] == [sid] and doc["deleted"] == [other.id]
    assert store.exists(sid) and not store.exists(other.id)


# --- shell completion ---------------------------------------------------------------
def test_completion_offers_the_sessions_of_the_store_named_by_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with Store(url).create(name="in-sqlite"):
        pass
    Store(tmp_path / "default").create(name="in-default-home").close()
    for env, words in (
        ({"AGENTLOG_HOME": str(tmp_path / "default")}, f"agentlog --store {url} log "),
        ({"AGENTLOG_HOME": str(tmp_path / "default"), "AGENTLOG_STORE": url}, "agentlog log "),
    ):
        cword = str(len(words.split()))
        runner = CliRunner(env={**env, "_AGENTLOG_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": cword})
        offered = runner.invoke(main, [], prog_name="agentlog").stdout.splitlines()
        assert "plain,in-sqlite" in offered and "plain,in-default-home" not in offered, (words, offered)


# --- HTML export ---------------------------------------------------------------------
class _Sidebar(HTMLParser):
    """The sidebar's list items as (depth, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = False
        self.depth = 0
        self.items: list[tuple[int, str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "aside":
            self.inside = True
        elif self.inside and tag == "ul":
            self.depth += 1
        elif self.inside and tag == "li":
            self.items.append((self.depth, ""))

    def handle_endtag(self, tag):
        if tag == "aside":
            self.inside = False
        elif self.inside and tag == "ul":
            self.depth -= 1

    def handle_data(self, data):
        if self.inside and self.items:
            depth, text = self.items[-1]
            self.items[-1] = (depth, text + data)


def test_html_sidebar_shows_where_each_branch_and_root_begins(home):
    store = Store(home)
    with store.create(name="branches") as s:
        a = s.append("message", {"content": "alpha"}, role="user")
        s.append("message", {"content": "first try"}, role="assistant")
        s.checkout(a.id)
        s.append("message", {"content": "second try"}, role="assistant")
        s.checkout("00000000-0000-0000-0000-000000000000")
        s.append("message", {"content": "another root"}, role="user")
    buf = io.BytesIO()
    with store.open(s.id, readonly=True) as opened:
        export_session(opened, "html", buf)
    parser = _Sidebar()
    parser.feed(buf.getvalue().decode())
    texts = [(depth, " ".join(text.split())) for depth, text in parser.items]
    titles = [t for _, t in texts if t.startswith(("root ", "branch "))]
    # Side branches are labelled lists; the branch that goes on (toward
    # HEAD, else the newest) stays at its branch point's level, marked.
    assert titles == ["root 1/2", "branch 1/2"], texts
    depth = dict((t, d) for d, t in texts)
    alpha = next(d for d, t in texts if "alpha" in t)
    first = next(d for d, t in texts if "first try" in t)
    (second, second_text) = next((d, t) for d, t in texts if "second try" in t)
    (other, other_text) = next((d, t) for d, t in texts if "another root" in t)
    assert first == depth["branch 1/2"] + 1  # the side try, in its own labelled branch
    assert second == alpha and "↳ branch 2/2" in second_text  # the newest try goes on
    assert other == depth["2 roots"] and "↳ root 2/2 (active)" in other_text


# --- query syntax -------------------------------------------------------------------
def test_a_query_without_a_word_is_an_error_not_no_matches(home):
    store = Store(home)
    with store.create(name="q") as s:
        s.append("message", {"content": "star * and dots ..."}, role="user")
    for query in ("*", "...", '"..."'):
        with pytest.raises(SearchError, match="no words"):
            search(store, query)
        assert "no words" in one_error(run(home, "search", query))
    assert [h.event_id for h in search(store, "star ...")] == [e.id for e in store.open(s.id, readonly=True).entries()]


def test_a_backend_with_its_own_index_gets_only_queries_agentlog_accepts(home, monkeypatch):
    store = Store(home)
    asked: list[str] = []

    def native(query, **options):
        asked.append(query)
        return []

    monkeypatch.setattr(store.backend, "search", native)
    for query in ("NOT timeout", "*", "OR NOT x"):
        with pytest.raises(SearchError):
            search(store, query)
    assert asked == []
    assert search(store, "error NOT timeout") == [] and asked == ["error NOT timeout"]


def test_fsck_repair_also_fixes_what_fsck_only_warns_of(home):
    # A torn tail and a missing index are warnings (the next writer's to
    # fix); --repair fixes them now, quarantining the torn bytes.
    store = Store(str(home))
    with store.create(session_id="s") as s:
        s.append("message", {"content": "hi"}, role="user")
    chunk = home / "sessions" / "s" / "chunks" / "000000.jsonl"
    with open(chunk, "ab") as f:
        f.write(b'{"id":"torn')
    (home / "sessions" / "s" / "index.bin").unlink()
    before = ok_json(home, "fsck", "--json")
    assert before["ok"] and {p["severity"] for p in before["problems"]} == {"warning"}
    doc = ok_json(home, "fsck", "--repair", "--json")
    assert doc["ok"] and doc["after_repair"] == [] and doc["repairs"][0]["session"] == "s"
    assert (home / "sessions" / "s" / "chunks" / "000000.jsonl.quarantine").read_bytes().endswith(b'{"id":"torn\n')
    assert ok_json(home, "fsck", "--json")["problems"] == []


def test_fsck_repair_leaves_a_written_session_with_only_warnings_to_its_writer(home):
    store = Store(str(home))
    with store.create(session_id="s") as s:
        s.append("message", {"content": "hi"}, role="user")
    (home / "sessions" / "s" / "index.bin").unlink()
    with store.open("s"):  # this process writes it: the lease is held
        (home / "sessions" / "s" / "index.bin").unlink()
        result = run(home, "fsck", "--repair")
    assert result.exit_code == 0, result.stderr
    assert "in use; its warnings are its writer's to fix" in result.stderr


def test_checkout_takes_the_nil_id_as_root(home):
    store = Store(str(home))
    with store.create(session_id="s") as s:
        s.append("message", {"content": "hi"}, role="user")
    ok(home, "checkout", "s", "00000000-0000-0000-0000-000000000000")
    with store.open("s", readonly=True) as s:
        assert s.head == "00000000-0000-0000-0000-000000000000"


def test_fsck_repair_does_not_redo_a_repair_for_what_no_repair_changes(home):
    # A branch that starts at a record an earlier repair quarantined stays a
    # warning for good; --repair must not rewrite the session every run.
    store = Store(str(home))
    with store.create(session_id="s") as s:
        s.append("message", {"content": "first"}, role="user")
        s.append("message", {"content": "second"}, role="assistant")
    chunks = home / "sessions" / "s" / "chunks"
    first, rest = (chunks / "000000.jsonl").read_bytes().split(b"\n", 1)
    (chunks / "000000.jsonl").write_bytes(rest)  # the parent's record is gone...
    (chunks / "000000.jsonl.quarantine").write_bytes(first + b"\n")  # ...into quarantine
    ok_json(home, "fsck", "--repair", "--json")  # the index and HEAD are made whole once
    doc = ok_json(home, "fsck", "--repair", "--json")
    assert [p["repairable"] for p in doc["problems"]] == [False]
    assert "this branch now starts here" in doc["problems"][0]["message"]
    assert doc["repairs"] == []
