"""Words in scripts written without spaces (``agentlog.search.scripts``):
the marks put in for FTS5 come out again exactly, and any run of Chinese or
Japanese characters inside a text is found, on the SQLite index."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog.search import search
from agentlog.search.scripts import MARK, pieces, split, unsplit
from index_support import as_older_index, assert_upgraded_in_place, matches

HAN = st.characters(min_codepoint=0x4E00, max_codepoint=0x4E40)
KANA = st.characters(min_codepoint=0x30A1, max_codepoint=0x30B0)
OTHER = st.sampled_from(list("ab1 ,.-_é\n"))
TEXT = st.text(st.one_of(HAN, KANA, OTHER), max_size=40)


@given(TEXT)
def test_split_is_undone_exactly(text: str) -> None:
    assert unsplit(split(text)) == text


@given(TEXT)
def test_each_character_of_those_scripts_stands_alone(text: str) -> None:
    # the words unicode61 sees: runs of letters and digits between separators
    for word in re.findall(r"[^\W_]+", split(text).replace(MARK, " ")):
        if any(0x4E00 <= ord(c) <= 0x9FFF or 0x30A0 <= ord(c) <= 0x30FF for c in word):
            assert len(word) == 1, word


def test_pieces() -> None:
    assert pieces("错误error") == ["错", "误", "error"]
    assert pieces("v1データ2") == ["v1", "デ", "ー", "タ", "2"]
    assert pieces("plain") == ["plain"]


@settings(max_examples=25, deadline=None)
@given(st.text(st.one_of(HAN, KANA), min_size=2, max_size=12), st.data())
def test_every_run_inside_a_text_is_found(run: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(run) - 1))
    end = data.draw(st.integers(start + 1, len(run)))
    store = Store.memory()
    with store.create(session_id="s") as s:
        eid = s.append("message", {"content": f"x{run}, 1"}, role="user").id
    hits = search(store, run[start:end])
    assert [h.event_id for h in hits] == [eid]
    (a, b), *_ = hits[0].highlights
    assert hits[0].snippet[a:b] == run[start:end]
    store.close()


def test_a_korean_syllable_is_highlighted_only_where_it_is() -> None:
    """Folding accents took a Hangul syllable's first part (데 and 도 both
    became ᄃ), so a search for 도 highlighted 데 as well."""
    from agentlog.search.snippet import make_snippet

    snippet, spans = make_snippet("데이터 도구 café", [("도", False), ("cafe", False)])
    assert [snippet[a:b] for a, b in spans] == ["도", "café"]


def test_a_voiced_kana_is_not_its_unvoiced_letter() -> None:
    """Found by the property test above: folding accents took ギ's voicing
    mark away, so a search for ギ highlighted キ, and ranking counted it."""
    from agentlog.search.rank import fold
    from agentlog.search.snippet import make_snippet

    snippet, spans = make_snippet("キーとギター", [("ギ", False)])
    assert [snippet[a:b] for a, b in spans] == ["ギ"]
    assert fold("ギター").count(fold("ギ")) == 1 and fold("キー").count(fold("ギ")) == 0
    assert fold("Café") == "cafe"  # Latin accents still fold, as unicode61 folds them


def test_an_index_of_version_2_is_upgraded_in_place(tmp_path: Path) -> None:
    """Version 2 stored a run of Chinese as one word. Opening such an index
    splits the texts that hold these scripts, in place: nothing is read
    from the sessions again, and the words inside the run are found."""
    store = Store(tmp_path / "home")
    with store.create(session_id="s") as s:
        zh = s.append("message", {"content": "数据库连接失败"}, role="user").id
        s.append("message", {"content": "plain english text"}, role="assistant")
    path = as_older_index(store, "2")
    assert matches(path, '"连"') == 0
    assert_upgraded_in_place(store, path)
    assert [h.event_id for h in search(store, "连接", refresh=False)] == [zh]
    assert [h.event_id for h in search(store, "连接", session="s", role="user", refresh=False)] == [zh]  # tags kept
    assert [h.snippet for h in search(store, "english", refresh=False)] == ["plain english text"]
    store.close()
