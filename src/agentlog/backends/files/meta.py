"""session.json: the metadata document of a file session."""

from __future__ import annotations

import errno
from typing import Any

import orjson

from ..._fs import OsFs
from ...errors import CorruptionError, StorageError

__all__ = ["encode_meta", "parse_meta", "read_meta_file"]


def read_meta_file(fs: OsFs, path: str) -> dict[str, Any]:
    try:
        data = fs.read_file(path)
    except StorageError as exc:
        if exc.errno != errno.ENOENT:
            raise  # the OS failed (EIO...): say so, not that the file is damaged
        raise CorruptionError(path, None, f"cannot read session.json: {exc.detail}") from None
    return parse_meta(path, data)


def parse_meta(path: str, data: bytes) -> dict[str, Any]:
    try:
        meta = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CorruptionError(path, None, f"session.json does not parse: {exc}") from None
    if not isinstance(meta, dict):
        raise CorruptionError(path, None, "session.json is not a JSON object")
    return meta


def encode_meta(meta: dict[str, Any]) -> bytes:
    return orjson.dumps(meta, option=orjson.OPT_INDENT_2)
