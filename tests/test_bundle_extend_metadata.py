"""A bundle that extends a session brings its metadata, as `copy` does.

Importing a newer bundle of a session moved HEAD but left the title and
labels set since the first transfer behind; a fresh import of the same
bundle had them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import error, ok, ok_json, run


def test_an_extending_bundle_brings_title_and_labels(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    sid = ok(src, "new", "--name", "bs").strip()
    for i in range(3):
        ok(src, "append", "bs", "message", json.dumps({"content": f"m{i}"}), "--role", "user")
    ok(src, "export", "bs", "--format", "bundle", "-o", str(tmp_path / "b3.bundle"))
    ok(src, "append", "bs", "message", '{"content": "m4"}', "--role", "user")
    ok(src, "label", "bs", "four")
    ok(src, "rename", "bs", "newtitle")
    ok(src, "export", "bs", "--format", "bundle", "-o", str(tmp_path / "b4.bundle"))

    ok(dst, "import", "--from", "bundle", str(tmp_path / "b3.bundle"))
    ok(dst, "import", "--from", "bundle", str(tmp_path / "b4.bundle"))
    (listed,) = ok_json(dst, "ls")
    assert listed["id"] == sid and listed["title"] == "newtitle" and listed["event_count"] == 4
    assert ok_json(dst, "label", sid) == ok_json(src, "label", sid)


@pytest.mark.parametrize("field", ["name", "working_dir"])
def test_a_header_whose_metadata_cannot_be_stored_is_refused_with_its_line(tmp_path: Path, field: str) -> None:
    src = tmp_path / "src"
    ok(src, "new", "--name", "bs")
    ok(src, "append", "bs", "message", '{"content": "m"}', "--role", "user")
    bundle = tmp_path / "b.bundle"
    ok(src, "export", "bs", "--format", "bundle", "-o", str(bundle))
    lines = bundle.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["session"][field] = 5
    bundle.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    line = error(run(tmp_path / "dst", "import", "--from", "bundle", str(bundle)))
    assert f"{bundle}:1:" in line and repr(field) in line


def test_an_integer_beyond_64_bits_or_a_version_of_true_is_refused(tmp_path: Path) -> None:
    """orjson read the integer as a rounded float, which was imported (append
    refuses it); "agentlog_bundle": true read as version 1."""
    import orjson

    from agentlog import BundleError, Store
    from agentlog.export import export_session
    from agentlog.export.bundle import import_bundle

    store = Store(tmp_path / "home")
    with store.create() as s:
        s.append("message", {"content": "x", "n": 1}, role="user")
        sid = s.id
    path = tmp_path / "s.bundle"
    with path.open("wb") as out, store.open(sid, readonly=True) as reader:
        export_session(reader, "bundle", out)
    lines = path.read_bytes().splitlines()
    big = tmp_path / "big.bundle"
    edited = lines[1].replace(b'"n":1', b'"n":1180591620717411303424')
    big.write_bytes(b"\n".join([lines[0], edited, *lines[2:]]) + b"\n")
    target = Store(tmp_path / "other")
    with pytest.raises(BundleError, match=r"big.bundle:2: an integer beyond 64 bits, 1180591620717411303424"):
        import_bundle(target, big)
    header = orjson.loads(lines[0])
    header["agentlog_bundle"] = True
    odd = tmp_path / "odd.bundle"
    odd.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:]]) + b"\n")
    with pytest.raises(BundleError, match="bundle version True is not supported"):
        import_bundle(target, odd)
    assert target.list() == []
