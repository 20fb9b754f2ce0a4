"""Short ids and ref resolution (agentlog.shortid, agentlog.cli.refs)."""

from __future__ import annotations

import random
import uuid

import pytest

from agentlog import Store
from agentlog.cli.refs import AmbiguousRef, BadRef, resolve_event, resolve_session
from agentlog.errors import EventNotFound, SessionNotFound
from agentlog.shortid import SHORT_LEN, short_ids


@pytest.fixture(params=["files", "memory"])
def store(request, tmp_path):
    if request.param == "files":
        return Store(tmp_path / "home")
    return Store.memory()


def _uuid(hex32: str) -> str:
    return str(uuid.UUID(hex32))


def _names(ids: list[str], short: str) -> list[str]:
    """Every id ``short`` names, as refs match it: tail or prefix."""
    return [i for i in ids if i.replace("-", "").endswith(short) or i.replace("-", "").startswith(short)]


def test_short_ids_are_8_digit_tails_when_those_are_unique():
    ids = [str(uuid.uuid4()) for _ in range(200)]
    shorts = short_ids(ids)
    assert all(len(s) == SHORT_LEN for s in shorts.values())
    assert all(i.replace("-", "").endswith(s) for i, s in shorts.items())


def test_shared_tails_are_lengthened_until_unique():
    a = _uuid("0" * 20 + "aaaa" + "12345678")
    b = _uuid("1" * 20 + "bbbb" + "12345678")
    c = _uuid("2" * 20 + "cbbb" + "12345678")
    shorts = short_ids([a, b, c])
    assert shorts[a] == "a12345678"
    assert shorts[b] == "bbbb12345678" and shorts[c] == "cbbb12345678"
    for i, s in shorts.items():
        assert _names([a, b, c], s) == [i]


def test_a_tail_that_is_another_ids_prefix_is_lengthened():
    a = _uuid("deadbeef" + "0" * 12 + "cafe" + "01a22c40")
    b = _uuid("01a22c40" + "1" * 24)
    shorts = short_ids([a, b])
    assert _names([a, b], shorts[a]) == [a] and len(shorts[a]) > SHORT_LEN


def test_random_scopes_are_always_unique():
    rng = random.Random(7)
    for _ in range(20):
        # Few random digits so tails collide often.
        ids = list({_uuid("".join(rng.choice("01") for _ in range(32))) for _ in range(60)})
        for i, s in short_ids(ids).items():
            assert _names(ids, s) == [i], (i, s)


def test_ids_that_are_not_uuids_are_their_own_short_form():
    assert short_ids(["demo", "x-1"]) == {"demo": "demo", "x-1": "x-1"}


def test_sessions_by_id_short_prefix_name_and_title(store):
    with store.create(name="alpha") as a, store.create(name="beta") as b:
        b.set_title("The Beta")
        ids = (a.id, b.id)
    assert resolve_session(store, ids[0]) == ids[0]
    assert resolve_session(store, ids[0].replace("-", "")[-8:]) == ids[0]
    assert resolve_session(store, "alpha") == ids[0]
    assert resolve_session(store, "The Beta") == ids[1]
    with pytest.raises(AmbiguousRef):
        resolve_session(store, ids[0][:6])
    with pytest.raises(SessionNotFound):
        resolve_session(store, "gamma")


def test_events_by_head_ancestry_label_and_short_id(store):
    with store.create() as s:
        ids = [s.append("message", {"content": str(n)}, role="user").id for n in range(5)]
        s.update_meta(labels={"mid": ids[2], "v1.0/final": ids[4]})
        assert resolve_event(s, "HEAD") == ids[4]
        assert resolve_event(s, "head~4") == ids[0]
        assert resolve_event(s, "HEAD~") == ids[3]
        assert resolve_event(s, "HEAD^~2") == ids[1]
        assert resolve_event(s, "mid") == ids[2]
        assert resolve_event(s, "mid~2") == ids[0]
        assert resolve_event(s, "v1.0/final") == ids[4]
        assert resolve_event(s, ids[3].replace("-", "")[-8:]) == ids[3]
        assert resolve_event(s, ids[3].upper()) == ids[3]
        assert resolve_event(s, "root", allow_root=True) == "00000000-0000-0000-0000-000000000000"
        with pytest.raises(BadRef):
            resolve_event(s, "HEAD~5")
        with pytest.raises(AmbiguousRef):
            resolve_event(s, ids[0][:8])
        with pytest.raises(EventNotFound):
            resolve_event(s, "ffffffff")


def test_head_of_an_empty_session_is_a_bad_ref(store):
    with store.create() as s, pytest.raises(BadRef):
        resolve_event(s, "HEAD")


def test_custom_session_ids_keep_their_case(store):
    for sid in ("Alpha-1", "alpha-2"):
        with store.create(session_id=sid):
            pass
    assert resolve_session(store, "Alpha") == "Alpha-1"
    assert resolve_session(store, "alpha") == "alpha-2"
    assert resolve_session(store, "alpha-2") == "alpha-2"
    with pytest.raises(SessionNotFound):
        resolve_session(store, "ALPHA")


def test_short_forms_of_a_few_ids_are_those_of_the_whole_scope():
    """``only`` (what ``log -n 20`` asks for) gives each id the form the
    whole scope gives it: unique among every id, not among the few."""
    rng = random.Random(11)
    for _ in range(50):
        alphabet = rng.choice(["01", "0123456789abcdef"])
        ids = list({_uuid("".join(rng.choice(alphabet) for _ in range(32))) for _ in range(rng.randint(1, 80))})
        ids += rng.sample(["demo", "0000", "1111aaaa", "x-1"], rng.randint(0, 2))
        few = rng.sample(ids, min(len(ids), 5))
        assert short_ids(ids, only=few) == {i: short_ids(ids)[i] for i in few}
        for i, s in short_ids(ids, only=few).items():
            assert _names(ids, s) == [i] or s == i  # a UUID's form names it alone; other ids are their own
