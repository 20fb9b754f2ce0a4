"""The files a tool call read or modified, from its name and arguments:
a file tool's path arguments, or what a shell command reads and writes."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["PATH_PATTERN", "call_files"]

#: A file path in free text (``src/a.py``, ``~/x/y``, ``notes.md``).
PATH_PATTERN = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+"
    r"|(?<![\w/.-])[\w-]+\.(?:py|md|rst|txt|json|jsonl|toml|ya?ml|cfg|ini|js|ts|tsx|"
    r"rs|go|c|h|cc|cpp|java|rb|sh|sql|html|css|lock)\b"
)

_READ_TOOLS = re.compile(r"read|view|cat|open|grep|search|glob|find|list|ls", re.I)
_WRITE_TOOLS = re.compile(r"write|edit|create|patch|replace|insert|delete|remove|move|rename|save", re.I)
_SHELL_TOOLS = re.compile(r"bash|shell|exec|run|terminal|command", re.I)
_PATH_ARGS = ("path", "file", "file_path", "filepath", "filename", "target_file", "paths", "files")
# A redirection's target is a whole word: ``>alert(2)`` names no file.
_ARG = r"([^\s;&|<>()'\"]+)(?=$|[\s;&|<>)])"
_SHELL_WRITE = re.compile(
    r">>?\s*"
    + _ARG  # redirection (not 2>&1)
    + r"|\b(?:tee(?:\s+-a)?|touch|rm(?:\s+-\w+)*)\s+"
    + _ARG
    + r"|\bsed\s+-i\S*\s+(?:'[^']*'|\"[^\"]*\"|\S+)\s+"
    + _ARG
)  # in-place edit
_SHELL_READ = re.compile(r"(?:^|[;&|]\s*)(?:cat|head|tail|less|more|wc|grep|rg|diff|ls)\b([^;&|>]*)")
# Text a shell does not read as redirections: a quoted string, and an HTML
# tag (``<script>``, ``<img src=x>``), which in a tool's arguments is
# almost always markup being written or echoed, not ``< file > file``.
_QUOTED = re.compile(r"'([^']*)'|\"((?:[^\"\\]|\\.)*)\"")
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s+[\w:-]+=[^\s<>]*)*/?>")
_PLAIN_WORD = re.compile(r"[^\s;&|<>()'\"`$]+")
_NOT_A_PATH = re.compile(r"[<>\x00-\x1f]")


def _shell_words(command: str) -> str:
    """``command`` with quoted strings and HTML tags made inert: a quoted
    plain word (``'file.txt'``) keeps its text, any other quoted string
    becomes ``''``, and a tag becomes spaces."""

    def unquote(m: re.Match[str]) -> str:
        text = m.group(1) if m.group(1) is not None else m.group(2)
        return text if _PLAIN_WORD.fullmatch(text) else "''"

    return _TAG.sub(lambda m: " " * len(m.group()), _QUOTED.sub(unquote, command))


def call_files(name: str, arguments: Any) -> tuple[list[str], list[str]]:
    """(read, modified) paths named by one tool call."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        args = {}
    args = args if isinstance(args, dict) else {}
    shell = args.get("command") or args.get("cmd")
    if _SHELL_TOOLS.search(name) and isinstance(shell, str):
        shell = _shell_words(shell)
        written = [next(g for g in m.groups() if g) for m in _SHELL_WRITE.finditer(shell)]
        read = [
            tok
            for m in _SHELL_READ.finditer(shell)
            for tok in m.group(1).split()
            if not tok.startswith("-") and PATH_PATTERN.fullmatch(tok)
        ]
        return read, [w for w in written if not w.startswith("/dev/")]
    paths: list[str] = []
    for key in _PATH_ARGS:
        value = args.get(key)
        values = value if isinstance(value, list) else [value]
        # A value with markup or a line break in it is not a path to report.
        paths += [v for v in values if isinstance(v, str) and v and not _NOT_A_PATH.search(v)]
    command = args.get("command")  # an editor tool's sub-command, e.g. view / str_replace
    if command in ("view", "read"):
        return paths, []
    if command in ("create", "str_replace", "insert", "write", "edit", "undo_edit"):
        return [], paths
    if _WRITE_TOOLS.search(name):
        return [], paths
    if _READ_TOOLS.search(name):
        return paths, []
    return [], []
