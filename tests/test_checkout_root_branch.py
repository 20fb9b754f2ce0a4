"""A new root after checkout(NIL_ID) is a branch beside the others, as after select(NIL_ID)."""

from __future__ import annotations

from collections.abc import Callable

from agentlog import NIL_ID, Store


def test_a_root_after_checkout_of_the_root_is_marked_as_a_branch(make_store: Callable[..., Store]) -> None:
    store = make_store()
    with store.create() as s:
        first = s.append("message", {"content": "first root"}, role="user")
        assert first.branch_from is None  # the first root: nothing beside it
        s.select(NIL_ID)
        by_select = s.append("message", {"content": "second root"}, role="user")
        s.checkout(NIL_ID)
        by_checkout = s.append("message", {"content": "third root"}, role="user")
        s.checkout(NIL_ID)
        batch = [("message", {"content": "fourth"}, "user"), ("message", {"content": "x"}, "user")]
        (in_batch, _) = s.append_many(batch)
        for event in (by_select, by_checkout, in_batch):
            assert (event.parent_id, event.branch_from) == (NIL_ID, NIL_ID)
            assert s.event(event.id).branch_from == NIL_ID
