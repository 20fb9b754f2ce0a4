"""Fast positional constructors for frozen slotted dataclasses.

A frozen dataclass's ``__init__`` stores each field through
``object.__setattr__``, a generic attribute lookup per field: about five
times the cost of a plain slot store. The append path builds three such
objects per event (``StagedEvent``, ``Commit``, ``Event``), which made
them a fifth of an append's CPU. ``slot_constructor`` writes the slots
through their descriptors instead, which is what ``__init__`` ends up
doing, without the lookups. The result is the same object: same class,
same field values, still frozen afterwards.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["slot_constructor"]

T = TypeVar("T")


def slot_constructor(cls: type[T]) -> Callable[..., T]:
    """``build(*values)``: a ``cls`` with every field set, in field order.

    Every field must be given (defaults are not applied: pass ``{}`` for a
    ``default_factory=dict`` field). A class whose slots are not exactly
    its fields, or that validates in ``__post_init__``, gets its own
    constructor back: correct, only slower."""
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    if set(getattr(cls, "__slots__", ())) != set(names) or hasattr(cls, "__post_init__"):
        return cls
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    for i, name in enumerate(names):
        scope[f"_set{i}"] = getattr(cls, name).__set__
    params = ", ".join(f"v{i}" for i in range(len(names)))
    stores = "".join(f"    _set{i}(obj, v{i})\n" for i in range(len(names)))
    exec(f"def build({params}):\n    obj = _new(_cls)\n{stores}    return obj\n", scope)  # noqa: S102 - built from field names only
    build: Callable[..., T] = scope["build"]
    build.__qualname__ = f"slot_constructor({cls.__name__})"
    return build
