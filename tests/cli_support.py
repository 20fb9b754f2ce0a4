"""Driving the CLI in-process from tests: ``run`` and the three usual checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from agentlog.cli import main


def run(home: Path | str | None, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """``agentlog --home HOME ARGS`` (``--store`` for a URL string), with the
    environment's store cleared so that only ``home`` is used."""
    runner = CliRunner(env={"AGENTLOG_HOME": None, "AGENTLOG_STORE": None, **(env or {})})
    option = "--store" if isinstance(home, str) else "--home"
    prefix = [] if home is None else [option, str(home)]
    return runner.invoke(main, [*prefix, *args], input=input)


def ok(home: Path | str | None, *args: str, input: str | None = None) -> str:
    result = run(home, *args, input=input)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result.stdout


def ok_json(home: Path | str | None, *args: str, input: str | None = None) -> Any:
    return json.loads(ok(home, *args, "--json", input=input))


def error(result: Result, code: int = 1) -> str:
    """One line on stderr starting 'agentlog: error:', no traceback and no
    internal error; returns the line."""
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentlog: error: "), result.stderr
    assert "Traceback" not in result.stderr
    assert "internal error" not in lines[0]
    return lines[0]
