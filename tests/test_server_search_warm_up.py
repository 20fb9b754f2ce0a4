"""The server catches the search index up when it starts, so that the
first search of a store nobody has searched does not index every session
inside the request; a search during the warm-up waits for it."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient  # noqa: E402

from agentlog import Store  # noqa: E402
from agentlog.search import catch_up  # noqa: E402
from agentlog.server import create_app  # noqa: E402
from agentlog.server.service import Service  # noqa: E402


def _fill(store: Store, sessions: int) -> None:
    for n in range(sessions):
        with store.create(session_id=f"s{n:03d}") as s:
            s.append("message", {"content": f"the quokka number {n} hops"}, role="user")
            s.append("message", {"content": "a reply about nothing"}, role="assistant")


def _service(store: Store) -> Service:
    return Service(store, hub=None, feeds=None)  # type: ignore[arg-type]  # search needs neither


def test_the_server_indexes_every_session_when_it_starts(store: Store) -> None:
    _fill(store, 12)
    app = create_app(store)
    service = app.state.service
    if not service.own_index:
        pytest.skip("this backend searches with its own index")
    with TestClient(app, base_url="http://localhost") as client:
        assert service._warmer is not None
        service._warmer.join(60)
        assert not service._warmer.is_alive()
        # Every session is in already: catching up again reads nothing.
        again = catch_up(store)
        assert (again.sessions, again.sessions_indexed, again.events_added) == (12, 0, 0)
        hits = client.get("/api/v1/search", params={"q": "quokka"}).json()["hits"]
        assert sorted(hit["session_id"] for hit in hits) == [f"s{n:03d}" for n in range(12)]


def test_a_stopped_warm_up_leaves_an_index_the_next_search_completes(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    _fill(store, 5)
    service = _service(store)
    if not service.own_index:
        pytest.skip("this backend searches with its own index")
    service._stop.set()  # the server stops before the first session is read
    with caplog.at_level(logging.WARNING, logger="agentlog.server"):
        service.warm_search()
        service.stop()
    assert service._warmer is not None and not service._warmer.is_alive()
    assert caplog.records == []  # stopping is not a failure
    assert service.catch_up_search() == ()
    assert len(store.search("quokka", refresh=False)) == 5


def test_a_warm_up_that_fails_says_so_once_and_the_search_reports_it(
    store: Store, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(store, 2)
    service = _service(store)
    if not service.own_index:
        pytest.skip("this backend searches with its own index")

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("agentlog.server.service.catch_up", broken)
    with caplog.at_level(logging.WARNING, logger="agentlog.server"):
        service.warm_search()
        assert service._warmer is not None
        service._warmer.join(30)
    [record] = caplog.records
    assert "could not prepare the search index" in record.getMessage()
    assert "No space left on device" in record.getMessage()
