"""The command line loads a command's module only when the command is used:
the table that says where each command lives is held to the modules, and
`agentlog ls` is shown not to load what only other commands need."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import agentlog.cli
from agentlog.cli import COMMAND_MODULES, all_commands


def command_modules() -> dict[str, str]:
    """Each command of the package, by the module whose COMMANDS holds it."""
    found: dict[str, str] = {}
    for info in pkgutil.iter_modules(agentlog.cli.__path__):
        module = importlib.import_module(f"agentlog.cli.{info.name}")
        for command in getattr(module, "COMMANDS", []):
            assert command.name not in found, f"{command.name} is defined twice"
            found[command.name] = info.name
    return found


def test_the_table_names_every_command_and_its_module() -> None:
    assert COMMAND_MODULES == command_modules()
    assert sorted(all_commands()) == sorted(COMMAND_MODULES)


LOADED = """
import json, sys
from agentlog.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded_by(*args: str) -> tuple[int, set[str]]:
    """The exit status of `agentlog ARGS` in a fresh process, and the modules it loaded."""
    done = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=60)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


def test_ls_loads_only_what_listing_needs(tmp_path: Path) -> None:
    code, modules = loaded_by("--home", str(tmp_path), "ls")
    assert code == 0
    assert "agentlog.cli.sessions" in modules
    for unneeded in (
        "agentlog.cli.check",
        "agentlog.cli.housekeeping",
        "agentlog.cli.imports",
        "agentlog.cli.transfer",
        "agentlog.cli.serve",
        "agentlog.cli.progress",
        "rich.progress",
    ):
        assert unneeded not in modules, unneeded


def test_help_and_an_unknown_command_still_see_every_command(tmp_path: Path) -> None:
    listed = subprocess.run(
        [sys.executable, "-c", "from agentlog.cli import main; main()", "--help"], capture_output=True, text=True
    )
    assert listed.returncode == 0
    for name in COMMAND_MODULES:
        assert f"  {name} " in listed.stdout, name
    wrong = subprocess.run(
        [sys.executable, "-c", "from agentlog.cli import main; main()", "--home", str(tmp_path), "lss"],
        capture_output=True,
        text=True,
    )
    assert wrong.returncode == 2 and wrong.stdout == ""
    assert wrong.stderr.startswith("agentlog: error: No such command 'lss'.") and wrong.stderr.count("\n") == 1
    if tuple(int(part) for part in version("click").split(".")[:2]) >= (8, 2):  # click's suggestions
        assert "Did you mean 'ls'?" in wrong.stderr
