"""One query language on every backend: the same events and queries give
the same hits on the file store (SQLite FTS5 index), the SQLite store and
PostgreSQL (its own tsvector index), with FTS5's precedence as the rule
(words side by side, then NOT, then AND, then OR)."""

from __future__ import annotations

import pytest

from agentlog import Store
from agentlog.search import search
from agentlog.search.query import parse_query

TEXTS = {
    "ab": "alpha beta",
    "a": "alpha",
    "bc": "beta gamma",
    "c": "gamma",
    "ac": "alpha gamma",
    "ad": "alpha delta",
    "cd": "gamma delta",
    "abc": "alpha beta gamma",
    "path": "edited src/cache_manager_v1.py and mailed ops@example.com",
    "phrase": "the flaky network test is marked",
    # Scripts written without spaces: a word inside a run is found.
    "zh": "数据库连接失败，请重试",
    "ja": "データベースの接続がタイムアウトしました",
    "ko": "데이터베이스가 연결되지 않았습니다",
    "mixed": "错误error在第3行",
    # Accents as the SQLite index folds them (Latin, composed or not), and
    # a Greek word it does not fold.
    "fr": "le Café rouvre, re\u0301sume\u0301 joint",
    "de": "naïve Ångström Straße",
    "el": "Ωμέγα",
    # Marks that end a word to FTS5: vowel signs, viramas, Hebrew points.
    "hi": "हिन्दी भाषा",
    "ta": "தமிழ் மொழி",
    "he": "עִבְרִית",
    # Thai, Lao, Khmer and Myanmar: no spaces between words either, and a
    # vowel sign or tone mark inside nearly every word.
    "th": "ผมชอบกินข้าวผัด",
    "th2": "กนอื่น",
    "lo": "ສະບາຍດີເພື່ອນ",
    "km": "ខ្ញុំស្រឡាញ់អ្នក",
    "my": "မင်္ဂလာပါခင်ဗျား",
    "thmix": "done: กินข้าวแล้ว123",
    # Symbols FTS5's Unicode 6.1 tables took for letters: an emoji added
    # since, an icon font's glyph (private use), glued to a word.
    "emoji": "🤖agent finished🥲",
    "icon": "branch\ue0a0main",
}

QUERIES = {
    "alpha beta OR gamma": {"ab", "abc", "bc", "c", "ac", "cd"},
    "alpha NOT beta gamma": {"ab", "a", "ac", "ad"},  # alpha without (beta and gamma)
    "alpha NOT beta AND gamma": {"ac"},
    "alpha AND NOT beta": {"a", "ac", "ad"},
    "alpha NOT beta NOT gamma": {"a", "ad"},
    "alpha OR gamma NOT delta": {"ab", "a", "ac", "ad", "abc", "bc", "c"},
    "cache_manager_v1": {"path"},
    "manager": {"path"},
    "example.com": {"path"},
    '"network test"': {"phrase"},
    '"test network"': set(),
    "flak*": {"phrase"},
    "gam* NOT alpha": {"bc", "c", "cd"},
    "连接": {"zh"},
    "接": {"zh", "ja"},  # 连接 and 接続 share it
    "接続": {"ja"},
    "接连": set(),  # its characters, out of order
    "データ": {"ja"},
    "タイムアウト": {"ja"},
    "데이터베이스": {"ko"},
    "错误": {"mixed"},
    "error": {"mixed"},
    "第3行": {"mixed"},
    "数据*": {"zh"},
    '"失败 请重试"': {"zh"},
    "连接 NOT 重试": set(),
    "连接 OR 연결": {"zh", "ko"},
    "cafe": {"fr"},
    "CAFÉ": {"fr"},
    "resume": {"fr"},
    "résumé": {"fr"},
    '"cafe rouvre"': {"fr"},
    "naive AND angstrom": {"de"},
    "ångst*": {"de"},
    "strasse": set(),  # ß is a letter of its own to both
    "Straße": {"de"},
    "Ωμέγα": {"el"},
    "ωμεγα": set(),  # Greek keeps its accents in both
    "हिन्दी": {"hi"},
    '"हिन्दी भाषा"': {"hi"},
    "தமிழ்": {"ta"},
    "עִבְרִית": {"he"},
    "กิน": {"th", "th2", "thmix"},  # marks are not letters to either index: กน too
    "ข้าว": {"th", "thmix"},
    "ข้าวผัด": {"th"},
    '"ชอบ กิน"': {"th"},
    "กิน NOT 123": {"th", "th2"},
    "ข้*": {"th", "thmix"},
    "แล้ว123": {"thmix"},
    "ข้าวกิน": set(),
    "เพื่อน": set(),  # Thai letters, not the Lao ones that look alike
    "ເພື່ອນ": {"lo"},
    "ສະບາຍ": {"lo"},
    "ស្រឡាញ់": {"km"},
    "អ្នក": {"km"},
    "ခင်ဗျား": {"my"},
    "မင်္ဂလာ": {"my"},
    "agent": {"emoji"},
    "finished": {"emoji"},
    "🤖agent": {"emoji"},
    "agent🥲": {"emoji"},
    '"agent finished"': {"emoji"},
    "main": {"icon"},
    "branch": {"icon"},
}


@pytest.mark.parametrize("query", sorted(QUERIES))
def test_every_backend_finds_the_same_events(store: Store, query: str) -> None:
    with store.create(session_id="corpus") as s:
        ids = {s.append("message", {"content": text}, role="user").id: name for name, text in TEXTS.items()}
    hits = search(store, query, limit=100)
    assert {ids[h.event_id] for h in hits} == QUERIES[query]


def test_precedence_is_fts5s() -> None:
    a, b, c = ((("a",), False), (("b",), False), (("c",), False))
    assert parse_query("a NOT b c") == ("NOT", a, ("AND", b, c))
    assert parse_query("a NOT b AND c") == ("AND", ("NOT", a, b), c)
    assert parse_query("a b OR c") == ("OR", ("AND", a, b), c)
    assert parse_query("cache_manager_v1*") == (("cache", "manager", "v1"), True)
    assert parse_query("错误error") == (("错", "误", "error"), False)


def test_a_word_inside_a_run_of_chinese_is_highlighted(store: Store) -> None:
    with store.create(session_id="zh") as s:
        s.append("message", {"content": "数据库连接失败，请重试"}, role="user")
    (hit,) = search(store, "连接")
    assert hit.snippet == "数据库连接失败，请重试"  # the text as stored, no marks in it
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["连接"]


def test_a_thai_word_is_highlighted_whole_with_its_marks(store: Store) -> None:
    with store.create(session_id="th") as s:
        s.append("message", {"content": "ผมชอบกินข้าวผัด"}, role="user")
    (hit,) = search(store, "กิน ข้าว")
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["กิน", "ข้าว"]


def test_cwd_finds_an_imported_session_by_the_directory_it_was_recorded_in(store: Store) -> None:
    # Importers keep it as source_cwd (a working_dir would make the session
    # what --continue opens); --cwd must still find it.
    with store.create(session_id="imported", source_cwd="/home/ann/project") as s:
        imported = s.append("message", {"content": "flamingo"}, role="user").id
    with store.create(session_id="native", working_dir="/home/ann/other") as s:
        s.append("message", {"content": "flamingo"}, role="user")
    hits = search(store, "flamingo", cwd="/home/ann/project")
    assert [h.event_id for h in hits] == [imported]


def test_state_checkpoints_are_left_out_on_every_backend(store: Store) -> None:
    """PostgreSQL found them where the SQLite index leaves them out."""
    with store.create() as s:
        s.append("message", {"content": "run the tests"}, role="user")
        s.append("state", {"scratchpad": "remember the flamingo", "todos": [], "tool_calls": 0}, role="system")
        s.append("message", {"content": "a flamingo stands on one leg"}, role="assistant")
    hits = store.search("flamingo")
    assert [h.kind for h in hits] == ["message"]
    assert store.search("flamingo", kind="state") == []


def test_a_long_text_naming_a_word_once_ranks_below_a_short_one(store: Store) -> None:
    """PostgreSQL's ts_rank ignored the length: a 9,000-word tool output
    tied with (and, being newer, came before) a message of the one word."""
    with store.create() as s:
        short = s.append("message", {"content": "flamingo"}, role="user")
        s.append("tool_result", {"tool_call_id": "c", "content": "lorem ipsum dolor " * 3000 + "flamingo"}, role="tool")
    hits = store.search("flamingo")
    assert [h.event_id for h in hits][0] == short.id
    assert hits[0].score < hits[1].score  # best first: lower is better, as bm25's
