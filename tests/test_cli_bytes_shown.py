"""Bytes that are not UTF-8 in an argument are shown as Python shows bytes,
``'lat\\xe9'``, in every error, as docs/cli.md promises; they were shown as
the surrogate Python decoded them to (``'lat\\udce9'``) where a message held
an argument's repr, and `fork --name` failed with a JSON encoder's message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli_support import error, ok, run

LATIN1 = os.fsdecode(b"lat\xe9")


@pytest.mark.parametrize(
    "args",
    [
        ("log", LATIN1),
        ("show", "{sid}", LATIN1),
        ("append", "{sid}", LATIN1, "{{}}"),
        ("append", "{sid}", "message", "{{}}", "--role", LATIN1),
        ("new", "--id", LATIN1),
        ("fork", "{sid}", "--name", LATIN1),
    ],
)
def test_a_byte_that_is_not_utf8_is_shown_as_a_byte(tmp_path: Path, args: tuple[str, ...]) -> None:
    sid = ok(tmp_path, "new", "--name", "x").strip()
    ok(tmp_path, "append", sid, "message", '{"content": "a"}', "--role", "user")
    result = run(tmp_path, *(a.format(sid=sid) for a in args))
    line = error(result, result.exit_code)
    assert "lat\\xe9" in line and "udce9" not in line
